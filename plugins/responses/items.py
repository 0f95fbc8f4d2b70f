"""Recorded messages as OpenAI Responses items, the input and output shape NeMo Gym and
verifiers read.

Each message becomes items in part order:

- system / developer / user text → one message item per run of text parts: ``{"role", "content":
  <text>}`` for one part, ``{"role", "content": [{"type": "input_text", "text"}, …]}`` for several;
- assistant text → ``{"type": "message", "id", "role": "assistant", "status": "completed",
  "content": [{"type": "output_text", "text", "annotations": []}, …]}``;
- assistant reasoning → ``{"type": "reasoning", "id", "summary": [{"type": "summary_text", "text"}]}``;
- assistant tool calls → ``{"type": "function_call", "id", "call_id", "name", "arguments": <JSON text>,
  "status": "completed"}``;
- tool results (in a ``tool`` message, or inside a ``user`` message as Anthropic sends them) →
  ``{"type": "function_call_output", "call_id", "output"}``: a string verbatim, a list of text
  blocks as ``input_text`` parts, anything else as its compact JSON text (counted).

Item ids are deterministic: ``<kind>-<inference call id>-<input|output>-<message>-<part>``.
A part the shape cannot carry (reasoning or a tool call outside an assistant message, a tool
result inside one, text in a tool message, an unknown role) declines the row; nothing is
invented.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sediment.plugin import (
    InferenceMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
)

INPUT_ROLES = frozenset({"system", "developer", "user"})


class Unrepresentable(ValueError):
    """A message the Responses shape cannot carry; ``str(exc)`` is the skip reason."""


@dataclass
class Items:
    """Items being built, with what the conversion had to re-encode."""

    items: list[dict[str, Any]] = field(default_factory=list)
    json_encoded_tool_results: int = 0


def _output(result: Any, built: Items) -> Any:
    if isinstance(result, str):
        return result
    if isinstance(result, list) and result and all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and len(b) == 2
        for b in result
    ):
        return [{"type": "input_text", "text": b["text"]} for b in result]
    built.json_encoded_tool_results += 1
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def add_message(built: Items, message: InferenceMessage, *, call_id: str, side: str, index: int) -> None:
    """Append the items of one message (see the module docstring); raises :class:`Unrepresentable`."""
    role = message.role
    if role not in INPUT_ROLES | {"assistant", "tool"}:
        raise Unrepresentable("unsupported_role")
    texts: list[str] = []
    first_text = 0

    def ident(kind: str, part: int) -> str:
        return f"{kind}-{call_id}-{side}-{index}-{part}"

    def flush() -> None:
        if not texts:
            return
        if role == "assistant":
            built.items.append({"type": "message", "id": ident("msg", first_text), "role": "assistant",
                                "status": "completed",
                                "content": [{"type": "output_text", "text": t, "annotations": []} for t in texts]})
        elif len(texts) == 1:
            built.items.append({"role": role, "content": texts[0]})
        else:
            built.items.append({"role": role, "content": [{"type": "input_text", "text": t} for t in texts]})
        texts.clear()

    for position, part in enumerate(message.parts):
        if isinstance(part, TextPart):
            if role == "tool":
                raise Unrepresentable("unrepresentable_part")
            if not texts:
                first_text = position
            texts.append(part.content)
            continue
        flush()
        if isinstance(part, ReasoningPart) and role == "assistant":
            built.items.append({"type": "reasoning", "id": ident("rs", position),
                                "summary": [{"type": "summary_text", "text": part.content}]})
        elif isinstance(part, ToolCallPart) and role == "assistant":
            built.items.append({"type": "function_call", "id": ident("fc", position), "call_id": part.id,
                                "name": part.name,
                                "arguments": json.dumps(part.arguments, ensure_ascii=False, separators=(",", ":")),
                                "status": "completed"})
        elif isinstance(part, ToolCallResponsePart) and role != "assistant":
            built.items.append({"type": "function_call_output", "call_id": part.id,
                                "output": _output(part.result, built)})
        else:
            raise Unrepresentable("unrepresentable_part")
    flush()
    if not message.parts:  # an empty message still took its place in the conversation
        if role == "assistant":
            built.items.append({"type": "message", "id": ident("msg", 0), "role": "assistant",
                                "status": "completed", "content": []})
        elif role != "tool":
            built.items.append({"role": role, "content": ""})


def message_items(messages: Sequence[InferenceMessage], *, call_id: str, side: str, built: Items | None = None,
                  first_index: int = 0) -> Items:
    """The items of ``messages`` (appended to ``built`` when given)."""
    built = built or Items()
    for offset, message in enumerate(messages):
        add_message(built, message, call_id=call_id, side=side, index=first_index + offset)
    return built


def function_tools(tools: Sequence[ToolDefinition] | None) -> list[dict[str, Any]]:
    """Declared tools as Responses function tools (``parameters`` and ``strict`` always present,
    as NeMo Gym's request model requires); a non-function tool raises :class:`Unrepresentable`."""
    converted = []
    for tool in tools or ():
        if tool.type != "function":
            raise Unrepresentable("unsupported_tool_definition")
        item: dict[str, Any] = {"type": "function", "name": tool.name}
        if tool.description is not None:
            item["description"] = tool.description
        item["parameters"] = tool.parameters
        item["strict"] = tool.strict
        converted.append(item)
    return converted
