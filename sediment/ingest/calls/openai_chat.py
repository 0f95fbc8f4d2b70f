"""OpenAI Chat Completions (``POST /v1/chat/completions``) request/response → call content.

Input messages are ``request.messages``; the output message is ``choices[0].message`` with
``choices[0].finish_reason``. An assistant message's parts are, in order: its reasoning
(``thinking_blocks``, else the flattened ``reasoning_content``), its content (``""`` is an
empty text part, as when a server sends it beside tool calls; null is none), its refusal
(an empty one is none), then one tool-call part per ``tool_calls[]`` entry
(``function.arguments`` parsed from its JSON string). A ``tool`` message becomes one
tool-result part keyed by ``tool_call_id``, its ``content`` kept as sent (JSON text stays a
string).
The same message reader serves LiteLLM, whose payloads are Chat-shaped whatever the provider.

``request.tools`` entries are ``{"type": "function", "function": {"name", "description",
"parameters", "strict"}}``, or ``{"type": "custom", "custom": {"name", "description",
"format"}}`` (its grammar stays in ``raw``); a missing ``type`` reads as ``function``.
"""

from __future__ import annotations

from typing import Any

from sediment.ingest.calls.fields import (
    as_list,
    as_object,
    child,
    optional_object,
    optional_text,
    required,
    token_count,
)
from sediment.ingest.calls.streams import event_payloads
from sediment.ingest.calls.tool_definitions import builtin_tool, function_tool, tool_definitions, tool_kind
from sediment.ingest.calls.toolkit import (
    AnyPart,
    CallContent,
    Notes,
    block_part,
    call_content,
    content_parts,
    message,
    reasoning_part,
    refusal_part,
    role_of,
    tool_call,
    tool_result,
)
from sediment.model.facts import InferenceMessage, ToolDefinition


def _reasoning(obj: dict[str, Any], path: str, notes: Notes) -> list[AnyPart]:
    blocks = obj.get("thinking_blocks")
    if blocks:
        parts = (block_part(b, f"{path}.thinking_blocks[{i}]", notes) for i, b in enumerate(as_list(blocks, path)))
        return [part for part in parts if part is not None]
    if obj.get("reasoning_content") is None:
        return []
    part = reasoning_part(obj.get("reasoning_content"), child(path, "reasoning_content"), notes)
    return [part] if part is not None else []


def _tool_calls(value: Any, path: str, notes: Notes) -> list[AnyPart]:
    parts: list[AnyPart] = []
    for i, entry in enumerate(as_list(value, path)):
        entry_path = f"{path}[{i}]"
        call = as_object(entry, entry_path)
        kind = call.get("type") or "function"
        if kind == "function":
            function = as_object(required(call, "function", entry_path), child(entry_path, "function"))
            arguments = function.get("arguments")
        elif kind == "custom":
            function = as_object(required(call, "custom", entry_path), child(entry_path, "custom"))
            arguments = {"input": function.get("input")}
        else:
            notes.warn("unsupported_item_dropped")
            continue
        part = tool_call(call.get("id"), function.get("name"), arguments, path=entry_path, id_key="id", notes=notes)
        if part is not None:
            parts.append(part)
    return parts


def chat_message(item: Any, path: str, notes: Notes, finish_reason: str | None = None) -> InferenceMessage:
    """One Chat message (also accepts Anthropic-shaped content blocks, as LiteLLM logs them)."""
    obj = as_object(item, path)
    role = role_of(obj, path)
    if role == "tool":
        part = tool_result(obj.get("tool_call_id"), obj.get("content"), path=path, id_key="tool_call_id", notes=notes)
        return message(role, [part] if part is not None else [], finish_reason)
    parts = _reasoning(obj, path, notes)
    parts.extend(content_parts(obj.get("content"), child(path, "content"), notes))
    if obj.get("refusal") is not None:
        refusal = refusal_part(obj["refusal"], child(path, "refusal"))
        if refusal is not None and refusal not in parts:
            parts.append(refusal)
    if obj.get("tool_calls") is not None:
        parts.extend(_tool_calls(obj["tool_calls"], child(path, "tool_calls"), notes))
    if obj.get("function_call") is not None:
        notes.warn("tool_call_without_id")  # the legacy single call carries no id to join on
    return message(role, parts, finish_reason)


def chat_messages(items: Any, path: str, notes: Notes) -> list[InferenceMessage]:
    listed = as_list(items, path)
    return notes.replayed("chat", listed, lambda item, i: chat_message(item, f"{path}[{i}]", notes))


def output_messages(response: dict[str, Any], path: str, notes: Notes) -> list[InferenceMessage]:
    """The message of the first choice (a text completion's ``text`` reads as assistant text)."""
    choices = as_list(required(response, "choices", path), child(path, "choices"))
    if not choices:
        return []
    if len(choices) > 1:
        notes.warn("extra_choices_dropped")
    choice_path = f"{child(path, 'choices')}[0]"
    choice = as_object(choices[0], choice_path)
    finish_reason = optional_text(choice.get("finish_reason"), child(choice_path, "finish_reason"))
    if choice.get("message") is None and isinstance(choice.get("text"), str):
        return [message("assistant", content_parts(choice["text"], child(choice_path, "text"), notes), finish_reason)]
    item = required(choice, "message", choice_path)
    return [chat_message(item, child(choice_path, "message"), notes, finish_reason)]


def usage_tokens(response: dict[str, Any], path: str) -> tuple[int | None, int | None]:
    usage = optional_object(response, "usage", path)
    usage_path = child(path, "usage")
    return (
        token_count(usage.get("prompt_tokens"), child(usage_path, "prompt_tokens")),
        token_count(usage.get("completion_tokens"), child(usage_path, "completion_tokens")),
    )


def tool_definition(entry: dict[str, Any], path: str) -> ToolDefinition:
    """One ``tools[]`` entry; a type other than ``function`` and ``custom`` is a built-in tool."""
    kind = tool_kind(entry, path) or "function"
    if kind in ("function", "custom"):
        settings = as_object(required(entry, kind, path), child(path, kind))
        schema_key = "parameters" if kind == "function" else None
        return function_tool(settings, child(path, kind), kind=kind, schema_key=schema_key)
    return builtin_tool(entry, path, kind)


def translate(request: dict[str, Any], response: dict[str, Any], notes: Notes) -> CallContent:
    inputs = chat_messages(required(request, "messages", "request"), "request.messages", notes)
    tools = tool_definitions(request.get("tools"), "request.tools", tool_definition, notes)
    outputs = output_messages(response, "response", notes)
    return call_content(request, response, inputs, outputs, usage_tokens(response, "response"), tools)


def is_error(response: dict[str, Any]) -> bool:
    return response.get("choices") is None and response.get("error") is not None


def request_session(request: dict[str, Any]) -> str | None:
    return None


# --- streams -----------------------------------------------------------------------------

_TEXT_DELTAS = ("content", "reasoning_content", "refusal")
_CHUNK_FIELDS = ("id", "model", "created", "system_fingerprint", "service_tier")


def _apply_tool_deltas(calls: dict[int, dict[str, Any]], deltas: list[Any], path: str) -> None:
    for i, entry in enumerate(deltas):
        delta = as_object(entry, f"{path}[{i}]")
        index = delta.get("index", i)
        call = calls.setdefault(index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if delta.get("id"):
            call["id"] = delta["id"]
        if delta.get("type"):
            call["type"] = delta["type"]
        function = as_object(delta.get("function") or {}, f"{path}[{i}].function")
        if isinstance(function.get("name"), str) and not call["function"]["name"]:
            call["function"]["name"] = function["name"]
        if isinstance(function.get("arguments"), str):
            call["function"]["arguments"] += function["arguments"]


def assemble_stream(text: str) -> dict[str, Any]:
    """The ``chat.completion`` a streamed call amounts to: deltas concatenated per choice.

    Tool calls are keyed by ``delta.tool_calls[].index``: the id and name come first, the
    argument fragments are concatenated. ``usage`` comes from the last chunk carrying it.
    A chunk carrying ``error`` makes the stream a failed call.
    """
    response: dict[str, Any] = {"object": "chat.completion"}
    choices: dict[int, dict[str, Any]] = {}
    tool_calls: dict[int, dict[int, dict[str, Any]]] = {}
    for position, (_, chunk) in enumerate(event_payloads(text)):
        path = f"response(event {position})"
        if chunk.get("error") is not None:
            return {"error": chunk["error"]}
        for key in _CHUNK_FIELDS:
            if chunk.get(key) is not None:
                response[key] = chunk[key]
        if chunk.get("usage") is not None:
            response["usage"] = chunk["usage"]
        for entry in as_list(chunk.get("choices") or [], child(path, "choices")):
            choice = as_object(entry, child(path, "choices[]"))
            index = choice.get("index", 0)
            state = choices.setdefault(index, {"index": index, "message": {"role": "assistant"}, "finish_reason": None})
            delta = choice.get("delta") or {}
            if delta.get("role"):
                state["message"]["role"] = delta["role"]
            for key in _TEXT_DELTAS:
                if isinstance(delta.get(key), str):
                    state["message"][key] = (state["message"].get(key) or "") + delta[key]
            if delta.get("tool_calls"):
                _apply_tool_deltas(tool_calls.setdefault(index, {}), as_list(delta["tool_calls"], path), path)
            if choice.get("finish_reason") is not None:
                state["finish_reason"] = choice["finish_reason"]
    for index, calls in tool_calls.items():
        choices[index]["message"]["tool_calls"] = [calls[i] for i in sorted(calls)]
    response["choices"] = [choices[i] for i in sorted(choices)]
    return response
