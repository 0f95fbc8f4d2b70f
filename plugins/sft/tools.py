"""The ``tools`` of an SFT sample: the tool definitions the call's request declared.

A function tool becomes the shape chat templates read: ``{"type": "function", "function":
{"name", "description"?, "parameters", "strict"?}}`` (``description`` and ``strict`` only when
the request sent them, ``parameters`` as sent, null when it sent none). Any other tool (a
provider's built-in one) keeps what the record holds of it: ``{"type", "name"}``. The order is
the request's. A call that declared none, or whose capture did not record them (a client
transcript: ``metadata.capture.lacks`` names ``tool_definitions``), has ``[]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sediment.plugin import ToolDefinition


def sample_tool(tool: ToolDefinition) -> dict[str, Any]:
    """One declared tool as the sample holds it (module docstring)."""
    if tool.type != "function":
        return {"type": tool.type, "name": tool.name}
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.parameters
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def sample_tools(tools: Sequence[ToolDefinition] | None) -> list[dict[str, Any]]:
    """The declared tools in request order; ``[]`` when none were declared or recorded."""
    return [sample_tool(t) for t in tools or ()]
