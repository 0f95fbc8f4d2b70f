"""The ``tools`` of a training row (SFT sample, DPO pair, diff-SFT sample): the tool
definitions the call's request declared, as chat templates read them.

A function tool becomes the shape chat templates read: ``{"type": "function", "function":
{"name", "description"?, "parameters", "strict"?}}`` (``description`` and ``strict`` only when
the request sent them, ``parameters`` as sent, null when it sent none). Any other tool (a
provider's built-in one) keeps what the record holds of it: ``{"type", "name"}``. The order is
the request's. A call that declared none, or whose capture did not record them (a client
transcript: ``metadata.capture.lacks`` names ``tool_definitions``), has ``[]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sediment.model.facts import ToolDefinition


def chat_tool(tool: ToolDefinition) -> dict[str, Any]:
    """One declared tool as a row holds it (module docstring)."""
    if tool.type != "function":
        return {"type": tool.type, "name": tool.name}
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.parameters
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def chat_tools(tools: Sequence[ToolDefinition] | None) -> list[dict[str, Any]]:
    """The declared tools in request order; ``[]`` when none were declared or recorded."""
    return [chat_tool(t) for t in tools or ()]


def tools_state(tools: Sequence[Any], captures: Iterable[Mapping[str, Any] | None]) -> str:
    """What a row's ``tools`` say, for a profile's evidence: ``declared`` (the request's tool
    definitions), ``not_recorded`` (``tools`` is empty and a call of the row was rebuilt from a
    transcript whose capture ``lacks`` names ``tool_definitions``) or ``none_declared``."""
    if tools:
        return "declared"
    if any("tool_definitions" in (capture or {}).get("lacks", ()) for capture in captures):
        return "not_recorded"
    return "none_declared"
