"""Recorded inference messages as chat-template messages (the shape TRL and HF templates read).

Every message has exactly the keys of :data:`MESSAGE_KEYS`: ``role``; ``content`` (text parts
joined with ``"\\n"``, ``""`` when none); ``tool_calls`` (``[{"id", "type": "function",
"function": {"name", "arguments"}}]``, arguments the compact JSON text of the recorded
argument object, ``[]`` when none); ``tool_call_id`` and ``name`` (set on tool messages: the
answered call and its tool's name, else null); ``reasoning_content`` (reasoning parts joined
with ``"\\n"``, else null).

Tool results (``tool_call_response`` parts, in a ``tool`` message or inside a ``user``
message as Anthropic sends them) become one ``tool`` message each, in order; the other parts
of such a user message stay a user message at their place. A string result is kept verbatim,
a non-empty list of text blocks becomes their texts joined with ``"\\n"``, any other result
its compact JSON text (see :data:`RESULT_ENCODINGS`).

Anything that cannot be represented without inventing a value raises :class:`Decline` with
one reason of :data:`MESSAGE_SKIP_REASONS`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from sediment.plugin import (
    InferenceMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
)
from sediment.plugin import chat_tools as shared_chat_tools

#: The keys of every emitted message, in order.
MESSAGE_KEYS: tuple[str, ...] = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content")
#: The roles a chat message may have; any other declines the row.
ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")
#: How a tool result became a tool message's content (counted in the row evidence).
RESULT_ENCODINGS: tuple[str, ...] = ("string", "text_blocks", "json")
#: Keys a text block may carry beside ``type`` and ``text`` (transport hints, not content).
_TEXT_BLOCK_EXTRA_KEYS = frozenset({"cache_control"})

#: Reasons :meth:`ChatConversation.add` and :func:`chat_tools` decline a row for, in order.
MESSAGE_SKIP_REASONS: tuple[str, ...] = (
    "unsupported_role",             # a role outside ROLES
    "tool_call_outside_assistant",  # a tool call part in a non-assistant message
    "tool_call_without_name",       # a tool call that named no tool (recorded as "")
    "reasoning_outside_assistant",  # a reasoning part in a non-assistant message
    "tool_result_misplaced",        # a tool result in a system/developer/assistant message, or text in a tool message
    "tool_message_without_result",  # a tool message with no tool result (no call id to answer)
    "tool_result_without_call",     # a tool result whose call id matches no earlier tool call
    "duplicate_tool_call_id",       # two tool calls of the conversation share an id
    "non_function_tool",            # a declared tool that is not a function (custom, provider built-in)
)


class Decline(Exception):
    """A row cannot be adapted; ``reason`` is one word of the profile's vocabulary."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def compact_json(value: Any) -> str:
    """``value`` as compact JSON text, keys in recorded order, non-ASCII kept (so the core's
    representation check still sees a lone surrogate); a non-finite number declines the row."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise Decline("non_finite_number") from None


def _text_blocks(result: Any) -> list[str] | None:
    """The texts of a non-empty list of ``{"type": "text", "text": str}`` blocks, else ``None``."""
    if not isinstance(result, list) or not result:
        return None
    texts = []
    for block in result:
        if not (isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
                and set(block) - {"type", "text"} <= _TEXT_BLOCK_EXTRA_KEYS):
            return None
        texts.append(block["text"])
    return texts


def encode_result(result: Any) -> tuple[str, str]:
    """A tool result as message content, and which of :data:`RESULT_ENCODINGS` was used."""
    if isinstance(result, str):
        return result, "string"
    texts = _text_blocks(result)
    if texts is not None:
        return "\n".join(texts), "text_blocks"
    return compact_json(result), "json"


def _message(role: str, content: str = "", *, tool_calls: Sequence[dict[str, Any]] = (),
             tool_call_id: str | None = None, name: str | None = None,
             reasoning: Sequence[str] = ()) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": list(tool_calls), "tool_call_id": tool_call_id,
            "name": name, "reasoning_content": "\n".join(reasoning) if reasoning else None}


class ChatConversation:
    """One conversation being built message by message; it remembers every tool call seen,
    so a later tool result is named after its call (and one with no earlier call declines)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.result_encodings: Counter[str] = Counter()
        self._tool_names: dict[str, str] = {}

    def add(self, messages: Iterable[InferenceMessage]) -> None:
        """Append the chat messages of ``messages``, in order."""
        for message in messages:
            self._add(message)

    def _add(self, message: InferenceMessage) -> None:
        role = message.role
        if role not in ROLES:
            raise Decline("unsupported_role")
        if role == "tool":
            if not message.parts:
                raise Decline("tool_message_without_result")
            if not all(isinstance(p, ToolCallResponsePart) for p in message.parts):
                raise Decline("tool_result_misplaced")
        run: list[Any] = []
        emitted = False
        for part in message.parts:
            if isinstance(part, ToolCallResponsePart):
                if role not in ("user", "tool"):
                    raise Decline("tool_result_misplaced")
                if run:
                    self._flush(role, run)
                    run = []
                self._tool_result(part)
                emitted = True
            else:
                run.append(part)
        if run or not emitted:
            self._flush(role, run)

    def _flush(self, role: str, parts: Sequence[Any]) -> None:
        texts: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, TextPart):
                texts.append(part.content)
            elif isinstance(part, ReasoningPart):
                if role != "assistant":
                    raise Decline("reasoning_outside_assistant")
                reasoning.append(part.content)
            elif isinstance(part, ToolCallPart):
                if role != "assistant":
                    raise Decline("tool_call_outside_assistant")
                calls.append(self._tool_call(part))
        self.messages.append(_message(role, "\n".join(texts), tool_calls=calls, reasoning=reasoning))

    def _tool_call(self, part: ToolCallPart) -> dict[str, Any]:
        if not part.name:  # the ingest records a call that named no tool with name ""
            raise Decline("tool_call_without_name")
        if part.id in self._tool_names:
            raise Decline("duplicate_tool_call_id")
        self._tool_names[part.id] = part.name
        return {"id": part.id, "type": "function",
                "function": {"name": part.name, "arguments": compact_json(part.arguments)}}

    def _tool_result(self, part: ToolCallResponsePart) -> None:
        name = self._tool_names.get(part.id)
        if name is None:
            raise Decline("tool_result_without_call")
        content, encoding = encode_result(part.result)
        self.result_encodings[encoding] += 1
        self.messages.append(_message("tool", content, tool_call_id=part.id, name=name))


def chat_tool(tool: ToolDefinition) -> dict[str, Any]:
    """One declared function tool in chat-template shape: ``{"type": "function", "function":
    {"name", "description"?, "parameters", "strict"?}}``; ``description`` and ``strict`` only
    when the request sent them, ``parameters`` as sent (null when it sent none)."""
    if tool.type != "function":
        raise Decline("non_function_tool")
    return shared_chat_tools((tool,))[0]  # the shape every trainer row holds (sediment.plugin.chat_tools)


def chat_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """Declared tools in chat-template shape, in request order."""
    return [chat_tool(t) for t in tools]
