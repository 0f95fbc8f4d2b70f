"""OpenAI Responses (``POST /v1/responses``) request/response → call content.

Inputs are ``request.instructions`` (a leading ``system`` message) then ``request.input``
(a string is one user message; a list holds typed items); outputs are ``response.output``.
Items become messages:

* ``message`` (or an untyped item with a ``role``): its role and content parts (an
  ``output_text`` of ``""`` is an empty text part);
* ``function_call`` / ``custom_tool_call``: a tool-call part keyed by ``call_id`` (a custom
  tool's free-form ``input`` string becomes the arguments ``{"input": ...}``);
* ``function_call_output`` / ``custom_tool_call_output``: a ``tool`` message with one
  tool-result part keyed by ``call_id``, its ``output`` kept as sent (JSON text stays a string);
* ``reasoning``: readable ``content`` (``reasoning_text``), else ``summary`` texts, as
  reasoning parts; an item with only ``encrypted_content`` warns ``opaque_reasoning``;
* any other item (built-in tools, item references, compaction): dropped with
  ``unsupported_item_dropped``.

Consecutive assistant-side items (assistant messages, reasoning, tool calls) form one
assistant message, so a response's output reads like one Chat or Anthropic assistant turn,
and the replayed input of the next call groups the same way. The response has no per-message
finish reason: the last output message carries ``incomplete_details.reason`` when the
response is incomplete, else its ``status``. Calls continuing server-side state
(``previous_response_id``, ``conversation``) carry only the new items; nothing is rebuilt here.

``request.tools`` entries are flat: ``{"type": "function", "name", "description",
"parameters", "strict"}``, ``{"type": "custom", "name", "description", "format"}`` (its
grammar stays in ``raw``), or a built-in tool (``web_search_preview``, ``file_search``, …),
which keeps its ``type`` and is named by it when it has no ``name``.
"""

from __future__ import annotations

from typing import Any

from sediment.ingest.calls.fields import (
    as_list,
    as_object,
    child,
    fail,
    optional_object,
    optional_text,
    required,
    token_count,
)
from sediment.ingest.calls.replay import Group
from sediment.ingest.calls.streams import event_payloads
from sediment.ingest.calls.tool_definitions import builtin_tool, function_tool, tool_definitions, tool_kind
from sediment.ingest.calls.toolkit import (
    AnyPart,
    CallContent,
    Notes,
    call_content,
    content_parts,
    message,
    resent_messages,
    role_of,
    tool_call,
    tool_result,
)
from sediment.model.facts import InferenceMessage, ReasoningPart, ToolDefinition

_ASSISTANT = "assistant"


def _reasoning(item: dict[str, Any], path: str, notes: Notes) -> list[AnyPart]:
    for key, kind in (("content", "reasoning_text"), ("summary", "summary_text")):
        entries = item.get(key)
        if entries is None:
            continue
        parts: list[AnyPart] = []
        for i, entry in enumerate(as_list(entries, child(path, key))):
            block = as_object(entry, f"{child(path, key)}[{i}]")
            text = block.get("text")
            if block.get("type") == kind and isinstance(text, str) and text.strip():
                parts.append(ReasoningPart(content=text))
        if parts:
            return parts
    notes.warn("opaque_reasoning")
    return []


def _item(entry: Any, path: str, notes: Notes) -> tuple[str, list[AnyPart]] | None:
    """``(role, parts)`` for one item, or None for an item dropped with a warning."""
    item = as_object(entry, path)
    kind = item.get("type")
    if kind is None or kind == "message":
        return role_of(item, path), content_parts(item.get("content"), child(path, "content"), notes)
    if not isinstance(kind, str):
        fail(child(path, "type"), "expected a string")
    if kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments") if kind == "function_call" else {"input": item.get("input")}
        part = tool_call(item.get("call_id"), item.get("name"), arguments, path=path, id_key="call_id", notes=notes)
        return _ASSISTANT, [part] if part is not None else []
    if kind in ("function_call_output", "custom_tool_call_output"):
        result = tool_result(item.get("call_id"), item.get("output"), path=path, id_key="call_id", notes=notes)
        return "tool", [result] if result is not None else []
    if kind == "reasoning":
        return _ASSISTANT, _reasoning(item, path, notes)
    notes.warn("unsupported_item_dropped")
    return None


#: ``(role, parts)`` of one item, or None for an item dropped with a warning (the transcript
#: reader translates each item of a rollout once, and groups them as :func:`response_items` does).
item_parts = _item


def response_items(value: Any, path: str, notes: Notes, *, replayed: bool = False) -> list[InferenceMessage]:
    """Items as messages; consecutive assistant-side items share one assistant message. A
    ``replayed`` list (a request's input) goes through the Session's replay memo, when the call
    has one: an item of the previous call's list is read once, and a group of the very items
    read before is the very message made of them before."""
    listed = as_list(value, path)

    def one(entry: Any, i: int) -> tuple[str, list[AnyPart]] | None:
        return _item(entry, f"{path}[{i}]", notes)

    read = notes.replayed("items", listed, one) if replayed else [one(entry, i) for i, entry in enumerate(listed)]

    def build(start: int, end: int, role: str) -> InferenceMessage:
        return message(role, [part for translated in read[start:end] if translated is not None
                              for part in translated[1]])

    groups = _groups(read)
    return notes.grouped(read, groups, build) if replayed else [build(*group) for group in groups]


def _groups(read: list[tuple[str, list[AnyPart]] | None]) -> list[Group]:
    """Where consecutive assistant-side items join (a dropped item, None, joins its neighbours)."""
    groups: list[list[Any]] = []
    open_assistant = False
    for index, translated in enumerate(read):
        if translated is None:
            continue
        role = translated[0]
        if role == _ASSISTANT and open_assistant:
            groups[-1][1] = index + 1
        else:
            groups.append([index, index + 1, role])
        open_assistant = role == _ASSISTANT
    return [(start, end, role) for start, end, role in groups]


def input_messages(instructions: Any, input_value: Any, path: str, notes: Notes) -> list[InferenceMessage]:
    """``instructions`` as a leading system message (read once while a Session sends the same
    again), then ``input`` (a string or items)."""
    messages = resent_messages(notes, "instructions", instructions,
                               lambda: _instructions(instructions, child(path, "instructions"), notes))
    if isinstance(input_value, str):
        messages.append(message("user", content_parts(input_value, child(path, "input"), notes)))
    elif input_value is not None:
        if not isinstance(input_value, list):
            fail(child(path, "input"), "expected a string or a list of items")
        messages.extend(response_items(input_value, child(path, "input"), notes, replayed=True))
    return messages


def _instructions(instructions: Any, path: str, notes: Notes) -> list[InferenceMessage]:
    if isinstance(instructions, list):
        return response_items(instructions, path, notes)
    if instructions is None:
        return []
    if not isinstance(instructions, str):
        fail(path, "expected a string")
    return [message("system", content_parts(instructions, path, notes))] if instructions else []


def _finish_reason(response: dict[str, Any], path: str) -> str | None:
    status = optional_text(response.get("status"), child(path, "status"))
    details = optional_object(response, "incomplete_details", path)
    reason = optional_text(details.get("reason"), child(path, "incomplete_details.reason"))
    return reason if status == "incomplete" and reason else status


def output_messages(response: dict[str, Any], path: str, notes: Notes) -> list[InferenceMessage]:
    outputs = response_items(required(response, "output", path), child(path, "output"), notes)
    finish_reason = _finish_reason(response, path)
    if outputs and finish_reason is not None:
        last = outputs[-1]
        outputs[-1] = message(last.role, list(last.parts), finish_reason)
    return outputs


def usage_tokens(response: dict[str, Any], path: str) -> tuple[int | None, int | None]:
    """``usage.input_tokens`` / ``output_tokens`` (LiteLLM's Chat-style names as a fallback)."""
    usage = optional_object(response, "usage", path)
    usage_path = child(path, "usage")
    counts: list[int | None] = []
    for names in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        found = None
        for name in names:
            found = token_count(usage.get(name), child(usage_path, name))
            if found is not None:
                break
        counts.append(found)
    return counts[0], counts[1]


def tool_definition(entry: dict[str, Any], path: str) -> ToolDefinition:
    """One ``tools[]`` entry (its ``type`` is required)."""
    kind = tool_kind(entry, path)
    if kind is None:
        fail(child(path, "type"), "missing")
    if kind in ("function", "custom"):
        return function_tool(entry, path, kind=kind, schema_key="parameters" if kind == "function" else None)
    return builtin_tool(entry, path, kind)


def translate(request: dict[str, Any], response: dict[str, Any], notes: Notes) -> CallContent:
    inputs = input_messages(request.get("instructions"), request.get("input"), "request", notes)
    tools = tool_definitions(request.get("tools"), "request.tools", tool_definition, notes)
    outputs = output_messages(response, "response", notes)
    return call_content(request, response, inputs, outputs, usage_tokens(response, "response"), tools)


def is_error(response: dict[str, Any]) -> bool:
    if response.get("status") == "failed":
        return True
    return response.get("output") is None and response.get("error") is not None


def request_session(request: dict[str, Any]) -> str | None:
    return None


_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def assemble_stream(text: str) -> dict[str, Any]:
    """The ``response`` object carried by the stream's final ``response.completed`` event
    (or ``response.incomplete`` / ``response.failed``); an ``error`` event is a failed call."""
    final: dict[str, Any] | None = None
    for position, (name, payload) in enumerate(event_payloads(text)):
        kind = payload.get("type") or name
        if kind in _FINAL_EVENTS:
            final = as_object(payload.get("response"), f"response(event {position}).response")
        elif kind == "error":
            return {"status": "failed", "error": payload}
    if final is None:
        fail("response", "SSE stream has no response.completed event")
    return final
