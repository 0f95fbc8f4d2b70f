"""Anthropic Messages (``POST /v1/messages``) request/response → call content.

Inputs are the top-level ``system`` (a string or text blocks, as a leading ``system``
message) then ``request.messages``; the output is one message of the response ``content``
blocks with ``stop_reason`` as its finish reason. Blocks: ``text`` → text (an empty
``{"type": "text", "text": ""}``, which a stream can end with, is an empty text part),
``thinking`` → reasoning (the ``signature`` stays only in ``raw``), ``redacted_thinking`` → dropped with
``opaque_reasoning``, ``tool_use`` → tool call (``input`` object), ``tool_result`` → tool
result keyed by ``tool_use_id`` (``content`` kept as given, a string or a list of blocks, JSON
text never parsed; ``is_error`` only in ``raw``).

``input_tokens`` is the whole prompt: Anthropic's ``input_tokens`` excludes cached tokens,
so ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` are added (the count
OpenAI's ``prompt_tokens`` and LiteLLM report).

Claude Code cannot set our headers, but its ``metadata.user_id`` names its session, either
as ``user_<hash>_account_<uuid>_session_<uuid>`` or as JSON with a ``session_id``; that is
the last Session source for this format.

``request.tools`` entries are client tools ``{"name", "description", "input_schema",
"strict"?}`` (no ``type``, or ``custom``), read as function tools with ``input_schema`` as
their parameters, or server tools (``{"type": "web_search_20250305", "name": "web_search",
…}``), which keep their ``type`` and name.
"""

from __future__ import annotations

import re
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
from sediment.ingest.calls.streams import event_payloads
from sediment.ingest.calls.tool_definitions import builtin_tool, function_tool, tool_definitions, tool_kind
from sediment.ingest.calls.toolkit import (
    CallContent,
    Notes,
    call_content,
    content_parts,
    message,
    resent_messages,
    role_of,
)
from sediment.ingest.reading.json_text import RecordProblem, read_json
from sediment.model.facts import InferenceMessage, TextPart, ToolDefinition

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_SESSION_SUFFIX = re.compile(rf"(?:^|_)session_({_UUID})$")
_UUID_ONLY = re.compile(rf"^{_UUID}$")


def claude_code_session(identity: Any) -> str | None:
    """The session UUID inside a Claude Code identity string, else None.

    Only a UUID at the anchored end of the string (or in the JSON's ``session_id``) counts,
    so an identity that merely mentions a session cannot supply one.
    """
    if not isinstance(identity, str):
        return None
    identity = identity.strip()
    match = _SESSION_SUFFIX.search(identity)
    if match:
        return match.group(1)
    try:
        parsed = read_json(identity)
    except RecordProblem:
        return None
    session = parsed.get("session_id") if isinstance(parsed, dict) else None
    return session if isinstance(session, str) and _UUID_ONLY.match(session) else None


def strip_session_suffix(identity: str) -> str:
    """A Claude Code identity string without its per-session suffix (stable per user)."""
    return _SESSION_SUFFIX.sub("", identity).strip()


def system_message(system: Any, path: str, notes: Notes) -> list[InferenceMessage]:
    """The top-level ``system`` as a leading system message; an empty system prompt (``""``,
    or only empty text blocks) gives none, as an empty Responses ``instructions`` does."""
    parts = content_parts(system, path, notes)
    if all(isinstance(part, TextPart) and not part.content for part in parts):
        return []
    return [message("system", parts)]


def anthropic_messages(items: Any, path: str, notes: Notes) -> list[InferenceMessage]:
    """The request's messages, through the Session's replay memo when the call has one (a
    replayed message is translated once)."""
    listed = as_list(items, path)

    def one(entry: Any, i: int) -> InferenceMessage:
        item_path = f"{path}[{i}]"
        item = as_object(entry, item_path)
        content = required(item, "content", item_path)
        return message(role_of(item, item_path), content_parts(content, child(item_path, "content"), notes))

    return notes.replayed("anthropic", listed, one)


def output_messages(response: dict[str, Any], path: str, notes: Notes) -> list[InferenceMessage]:
    content = as_list(required(response, "content", path), child(path, "content"))
    role = optional_text(response.get("role"), child(path, "role")) or "assistant"
    finish_reason = optional_text(response.get("stop_reason"), child(path, "stop_reason"))
    return [message(role, content_parts(content, child(path, "content"), notes), finish_reason)]


def usage_tokens(response: dict[str, Any], path: str) -> tuple[int | None, int | None]:
    usage = optional_object(response, "usage", path)
    usage_path = child(path, "usage")
    uncached = token_count(usage.get("input_tokens"), child(usage_path, "input_tokens"))
    cached = [
        token_count(usage.get(name), child(usage_path, name))
        for name in ("cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    input_tokens = None if uncached is None else uncached + sum(n for n in cached if n is not None)
    return input_tokens, token_count(usage.get("output_tokens"), child(usage_path, "output_tokens"))


def tool_definition(entry: dict[str, Any], path: str) -> ToolDefinition:
    """One ``tools[]`` entry: a client tool (no ``type``, or ``custom``) or a server tool."""
    kind = tool_kind(entry, path)
    if kind is None or kind == "custom":
        return function_tool(entry, path, schema_key="input_schema")
    return builtin_tool(entry, path, kind)


def translate(request: dict[str, Any], response: dict[str, Any], notes: Notes) -> CallContent:
    system = request.get("system")
    inputs = resent_messages(notes, "system", system, lambda: system_message(system, "request.system", notes))
    inputs.extend(anthropic_messages(required(request, "messages", "request"), "request.messages", notes))
    tools = tool_definitions(request.get("tools"), "request.tools", tool_definition, notes)
    outputs = output_messages(response, "response", notes)
    return call_content(request, response, inputs, outputs, usage_tokens(response, "response"), tools)


def is_error(response: dict[str, Any]) -> bool:
    return response.get("type") == "error"


def request_session(request: dict[str, Any]) -> str | None:
    metadata = optional_object(request, "metadata", "request")
    return claude_code_session(metadata.get("user_id"))


# --- streams -----------------------------------------------------------------------------


def _finish_input(block: dict[str, Any], partial: str) -> None:
    """A streamed ``tool_use`` input from its JSON fragments; unparseable text is kept as a
    string so the translation flags it ``malformed_tool_arguments``."""
    if not partial.strip():
        return
    try:
        block["input"] = read_json(partial)
    except RecordProblem:
        block["input"] = partial


def assemble_stream(text: str) -> dict[str, Any]:
    """The message a streamed call amounts to: ``message_start``'s message, each content
    block from its start event plus its deltas (text, thinking, signature, tool-input JSON
    fragments), then ``message_delta``'s stop reason and usage. An ``error`` event is a
    failed call."""
    result: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, str] = {}
    for position, (name, payload) in enumerate(event_payloads(text)):
        path = f"response(event {position})"
        kind = payload.get("type") or name
        if kind == "error":
            return {"type": "error", "error": payload.get("error")}
        if kind == "message_start":
            result = dict(as_object(payload.get("message"), child(path, "message")))
        elif kind == "content_block_start":
            blocks[payload.get("index", len(blocks))] = dict(
                as_object(payload.get("content_block"), child(path, "content_block"))
            )
        elif kind == "content_block_delta":
            index = payload.get("index")
            if index not in blocks:
                fail(child(path, "index"), "delta for a block that never started")
            block = blocks[index]
            delta = as_object(payload.get("delta"), child(path, "delta"))
            delta_kind = delta.get("type")
            if delta_kind == "text_delta":
                block["text"] = (block.get("text") or "") + delta.get("text", "")
            elif delta_kind == "thinking_delta":
                block["thinking"] = (block.get("thinking") or "") + delta.get("thinking", "")
            elif delta_kind == "signature_delta":
                block["signature"] = delta.get("signature")
            elif delta_kind == "input_json_delta":
                partial_json[index] = partial_json.get(index, "") + delta.get("partial_json", "")
        elif kind == "message_delta":
            if result is None:
                fail(path, "message_delta before message_start")
            result.update(optional_object(payload, "delta", path))
            usage = dict(optional_object(result, "usage", "response"))
            usage.update(optional_object(payload, "usage", path))
            result["usage"] = usage
    if result is None:
        fail("response", "SSE stream has no message_start event")
    for index, partial in partial_json.items():
        _finish_input(blocks[index], partial)
    result["content"] = [blocks[i] for i in sorted(blocks)]
    return result
