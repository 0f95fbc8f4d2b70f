"""LiteLLM ``StandardLoggingPayload`` (one gateway log record per call) → InferenceCall.

Fields read:

* input: ``messages`` (Chat messages, possibly with Anthropic-shaped blocks; Responses
  items when any entry has a ``type``; a bare string is one user message), after
  ``model_parameters.system`` (Anthropic pass-through) or ``model_parameters.instructions``
  (Responses) as a leading ``system`` message;
* output: ``response`` — a ``chat.completion`` (``choices``), a Responses object
  (``output``), an Anthropic message (``content``), or a bare string;
* ``model_call_id``: ``litellm_call_id``, else ``response.id``, else the payload ``id``;
* ``model``: ``response.model``, else ``model``; ``model_provider``: ``custom_llm_provider``;
* tokens: ``prompt_tokens`` / ``completion_tokens``, else the response's ``usage``;
* tools: ``model_parameters.tools`` (LiteLLM keeps the rest of the request there), each
  entry read in the shape it was sent: Chat (settings under ``function`` / ``custom``),
  Anthropic (an ``input_schema``, or no ``type``), else Responses (flat, or a built-in tool);
* ``duration_ms``: ``response_time_ms``, else ``response_time`` (seconds), else
  ``endTime - startTime`` (unix seconds or timestamps); ``observed_at``: ``endTime``, else
  ``startTime``, else the capture time. A timestamp string without a UTC offset
  (``2025-06-02T14:03:11.482913``, as a LiteLLM logger writes the proxy's naive datetimes) is
  read as UTC, the proxy's clock (docs/evidence.md); one with an offset keeps it;
* Session, first found: ``metadata.session_id``, ``metadata.requester_metadata.session_id``
  (clients send ``metadata: {"session_id": ...}``), ``metadata.spend_logs_metadata.session_id``
  (the request's or key's spend-log metadata), the ``x-sediment-session`` header, the
  ``session_id`` in Codex's ``x-codex-turn-metadata`` header (client ``x-*`` headers are on
  ``metadata.requester_custom_headers``), then a Claude Code identity (``end_user``,
  ``requester_metadata.user_id``, ``metadata.user_id``) ending in ``session_<uuid>`` or
  holding JSON with a UUID ``session_id``. ``trace_id`` is never used: LiteLLM fills it
  with a fresh UUID when the client sends none, which would invent a Session; neither are the
  key, team and user fields of ``metadata`` (``user_api_key_*``: who called, not which Session).
  A payload with none of these is skipped as ``no_session``;
* ``user_id``: ``requester_metadata.user_id``, ``metadata.user_id``, else ``end_user``
  (a Claude Code identity loses its session suffix; a JSON identity blob is not a user id).

A payload with ``status: "failure"`` is skipped as ``error_response``; one whose
``call_type`` is not a chat/completion/responses/messages call (embeddings, images, audio,
moderation, rerank) as ``not_a_model_call``.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

from sediment.ingest import Translation, TranslationError
from sediment.ingest.calls import anthropic, openai_chat, openai_responses
from sediment.ingest.calls.fields import fail, optional_object, optional_text, token_count
from sediment.ingest.calls.replay import ReplayMemo
from sediment.ingest.calls.tool_definitions import tool_definitions
from sediment.ingest.calls.toolkit import (
    CODEX_TURN_METADATA_HEADER,
    SESSION_HEADER,
    CallContent,
    Notes,
    build_call,
    codex_session,
    content_parts,
    header_value,
    message,
    parse_timestamp,
    resent_messages,
)
from sediment.model.facts import InferenceMessage, ToolDefinition

_HEADERS_PATH = "metadata.requester_custom_headers"

# LiteLLM call types (sync names; the async ones add an ``a`` prefix) that are not a model
# call producing messages.
_OTHER_CALL_TYPES = frozenset(
    {
        "embedding",
        "image_generation",
        "image_edit",
        "image_variation",
        "moderation",
        "transcription",
        "speech",
        "rerank",
    }
)


def _inputs(record: dict[str, Any], parameters: dict[str, Any], notes: Notes) -> list[InferenceMessage]:
    system = parameters.get("system")
    inputs = resent_messages(notes, "system", system,
                             lambda: anthropic.system_message(system, "model_parameters.system", notes))
    instructions = parameters.get("instructions")
    if instructions is not None:
        inputs.extend(openai_responses.input_messages(instructions, None, "model_parameters", notes))
    messages = record.get("messages")
    if messages is None:
        return inputs
    if isinstance(messages, str):
        inputs.append(message("user", content_parts(messages, "messages", notes)))
    elif not isinstance(messages, list):
        fail("messages", "expected a list or a string")
    elif any(isinstance(m, dict) and "type" in m for m in messages):
        inputs.extend(openai_responses.response_items(messages, "messages", notes, replayed=True))
    else:
        inputs.extend(openai_chat.chat_messages(messages, "messages", notes))
    return inputs


def _outputs(response: Any, notes: Notes) -> tuple[list[InferenceMessage], tuple[int | None, int | None]]:
    """Output messages and the response's own ``(input, output)`` token counts."""
    if response is None:
        return [], (None, None)
    if isinstance(response, str):
        return [message("assistant", content_parts(response, "response", notes))], (None, None)
    if not isinstance(response, dict):
        fail("response", "expected an object or a string")
    if "choices" in response:
        return openai_chat.output_messages(response, "response", notes), openai_chat.usage_tokens(response, "response")
    if "output" in response:
        return (
            openai_responses.output_messages(response, "response", notes),
            openai_responses.usage_tokens(response, "response"),
        )
    if "content" in response:
        return anthropic.output_messages(response, "response", notes), anthropic.usage_tokens(response, "response")
    if not response:
        return [], (None, None)
    fail("response", "expected a chat completion (choices), a Responses object (output) or a message (content)")


def _tool_definition(entry: dict[str, Any], path: str) -> ToolDefinition:
    if "function" in entry or "custom" in entry:
        return openai_chat.tool_definition(entry, path)
    if "input_schema" in entry or entry.get("type") is None:
        return anthropic.tool_definition(entry, path)
    return openai_responses.tool_definition(entry, path)


def _session(record: dict[str, Any], metadata: dict[str, Any], requester: dict[str, Any]) -> str | None:
    spend = optional_object(metadata, "spend_logs_metadata", "metadata")
    for value, path in (
        (metadata.get("session_id"), "metadata.session_id"),
        (requester.get("session_id"), "metadata.requester_metadata.session_id"),
        (spend.get("session_id"), "metadata.spend_logs_metadata.session_id"),
    ):
        session = optional_text(value, path)
        if session is not None:
            return session
    headers = optional_object(metadata, "requester_custom_headers", "metadata")
    session = header_value(headers, SESSION_HEADER, _HEADERS_PATH)
    if session is not None:
        return session
    session = codex_session(header_value(headers, CODEX_TURN_METADATA_HEADER, _HEADERS_PATH))
    if session is not None:
        return session
    for identity in (record.get("end_user"), requester.get("user_id"), metadata.get("user_id")):
        session = anthropic.claude_code_session(identity)
        if session is not None:
            return session
    return None


def _user(record: dict[str, Any], metadata: dict[str, Any], requester: dict[str, Any]) -> str | None:
    for value, path in (
        (requester.get("user_id"), "metadata.requester_metadata.user_id"),
        (metadata.get("user_id"), "metadata.user_id"),
        (record.get("end_user"), "end_user"),
    ):
        text = optional_text(value, path)
        if text is None or text.startswith("{"):
            continue
        user = anthropic.strip_session_suffix(text)
        if user:
            return user
    return None


def _milliseconds(value: Any, scale: float, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        fail(path, "expected a non-negative number")
    return round(value * scale)


_NAIVE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?")


def litellm_time(value: str, path: str) -> datetime | None:
    """A LiteLLM timestamp string: RFC 3339, or the same without an offset, which is UTC."""
    text = value.strip()
    if _NAIVE_TIME.fullmatch(text):
        text = f"{text[:10]}T{text[11:]}+00:00"
    return parse_timestamp(text, path)


def _duration(record: dict[str, Any]) -> int | None:
    if record.get("response_time_ms") is not None:
        return _milliseconds(record["response_time_ms"], 1, "response_time_ms")
    if record.get("response_time") is not None:
        return _milliseconds(record["response_time"], 1000, "response_time")
    start, end = record.get("startTime"), record.get("endTime")
    if isinstance(start, str) and isinstance(end, str):
        first, last = litellm_time(start, "startTime"), litellm_time(end, "endTime")
        if first is None or last is None:
            return None
        return _milliseconds((last - first).total_seconds(), 1000, "endTime")
    numbers = all(isinstance(t, int | float) and not isinstance(t, bool) for t in (start, end))
    if start is None or end is None or not numbers:
        return None
    return _milliseconds(end - start, 1000, "endTime")


def _observed_at(record: dict[str, Any], captured_at: datetime) -> datetime:
    for key in ("endTime", "startTime"):
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            return litellm_time(value, key) or captured_at
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            fail(key, "expected unix seconds or an RFC 3339 timestamp")
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            fail(key, "timestamp out of range")
    return captured_at


def translate(record: dict[str, Any], *, org_id: str, captured_at: datetime,
              memo: ReplayMemo | None = None) -> Translation:
    """One payload; a :class:`~sediment.ingest.calls.toolkit.ReplayMemo` shared across a log's
    calls makes the replayed ``messages`` and the tool list resent in ``model_parameters.tools``
    cost one comparison instead of one translation each, as for the request/response formats."""
    call_type = record.get("call_type")
    if isinstance(call_type, str) and call_type.removeprefix("a") in _OTHER_CALL_TYPES:
        return Translation.skip("not_a_model_call")
    if record.get("status") == "failure":
        return Translation.skip("error_response")
    notes = Notes()
    metadata = optional_object(record, "metadata", "")
    requester = optional_object(metadata, "requester_metadata", "metadata")
    parameters = optional_object(record, "model_parameters", "")
    try:  # the Session first, for the memo; a field it cannot read is refused where it always was
        session, unreadable = _session(record, metadata, requester), None
    except TranslationError as exc:
        session, unreadable = None, exc
    notes.use_memo(memo, session)
    inputs = _inputs(record, parameters, notes)
    raw_response = record.get("response")
    outputs, (usage_in, usage_out) = _outputs(raw_response, notes)
    response: dict[str, Any] = raw_response if isinstance(raw_response, dict) else {}
    prompt = token_count(record.get("prompt_tokens"), "prompt_tokens")
    completion = token_count(record.get("completion_tokens"), "completion_tokens")
    content = CallContent(
        input_messages=tuple(inputs),
        output_messages=tuple(outputs),
        model=optional_text(response.get("model"), "response.model") or optional_text(record.get("model"), "model"),
        model_call_id=optional_text(record.get("litellm_call_id"), "litellm_call_id")
        or optional_text(response.get("id"), "response.id")
        or optional_text(record.get("id"), "id"),
        input_tokens=prompt if prompt is not None else usage_in,
        output_tokens=completion if completion is not None else usage_out,
        tools=tool_definitions(parameters.get("tools"), "model_parameters.tools", _tool_definition, notes),
    )
    if unreadable is not None:
        raise unreadable
    user_id = _user(record, metadata, requester)
    model_provider = optional_text(record.get("custom_llm_provider"), "custom_llm_provider")
    duration_ms = _duration(record)
    observed_at = _observed_at(record, captured_at)
    if session is None:
        return Translation.skip("no_session")
    return build_call(
        record,
        content,
        notes,
        org_id=org_id,
        session_id=session,
        gateway_provider="litellm",
        observed_at=observed_at,
        user_id=user_id,
        model_provider=model_provider,
        duration_ms=duration_ms,
    )
