"""Trainer messages as Fireworks dataset messages, and the rows the format refuses.

Every message is deep-copied; an assistant's ``thinking`` becomes ``reasoning_content``; every
tool call's ``arguments`` object becomes its compact JSON text with sorted keys (non-ASCII
kept), as the OpenAI chat format Fireworks reads carries it. Refused, stopping the export
(:class:`~sediment.plugin.IncompatibleRow`): a ``developer`` message (:data:`DEVELOPER`), a
``system`` message anywhere but first (:data:`SYSTEM_NOT_FIRST`) and, in a row's tools, a
provider's built-in tool (:func:`function_tools`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sediment.plugin import IncompatibleRow

#: The claim both profiles make: the documented format, nothing more.
VALIDATION = "Fireworks documented JSONL contract, 2026-09-13"
SUPPORT = "format; hosted acceptance not tested"
DEVELOPER = "Fireworks profiles do not support developer messages"
SYSTEM_NOT_FIRST = "Fireworks profiles require the system message to be first"


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments as compact JSON text, keys sorted, non-ASCII kept."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def fireworks_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One trainer message in Fireworks' shape (key order kept, ``thinking`` renamed in place)."""
    out: dict[str, Any] = {}
    for key, value in message.items():
        if key == "thinking":
            out["reasoning_content"] = value
        elif key == "tool_calls":
            out["tool_calls"] = [{**copy.deepcopy(call), "function": {
                "name": call["function"]["name"], "arguments": arguments_text(call["function"]["arguments"])}}
                for call in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


def function_tools(tools: Sequence[Mapping[str, Any]], row_id: str, refusal: str) -> list[dict[str, Any]]:
    """A deep copy of a row's tools, in order; a tool that is not a function (a provider's
    built-in tool) refuses the export with ``refusal`` naming the row and the tool's index."""
    for index, tool in enumerate(tools):
        if tool.get("type") != "function":
            raise IncompatibleRow(f"{refusal} (row {row_id}, tool {index})")
    return [copy.deepcopy(dict(tool)) for tool in tools]


def check_roles(messages: Sequence[Mapping[str, Any]], row_id: str) -> None:
    """Refuse a developer message, or a system message that is not the first message."""
    for index, message in enumerate(messages):
        if message["role"] == "developer":
            raise IncompatibleRow(f"{DEVELOPER} (row {row_id}, message {index})")
        if message["role"] == "system" and index != 0:
            raise IncompatibleRow(f"{SYSTEM_NOT_FIRST} (row {row_id}, message {index})")


def evidence(row: Mapping[str, Any], tools: str) -> dict[str, Any]:
    """The sidecar evidence: the canonical metadata, and what the data row's tools are
    (``sediment.plugin.tools_state``)."""
    return {"metadata": copy.deepcopy(dict(row["metadata"])), "tool_definitions": tools}
