"""One recorded model call → one :class:`~sediment.facts.InferenceCall`.

Four wire formats are read (``CALL_FORMATS``): a LiteLLM ``StandardLoggingPayload`` (one
gateway log record per call), and request/response pairs of the OpenAI Chat Completions,
OpenAI Responses and Anthropic Messages APIs wrapped in a small envelope::

    {"request": {...}, "response": {...}, "session_id"?, "observed_at"?, "headers"?,
     "duration_ms"?, "user_id"?}

A pair's ``response`` may also be the raw SSE text of a streamed call; each format module
assembles its own stream into the response object the API would have returned.

The rules every format shares live here: the envelope, the Session lookup (absent, never
guessed: no session means ``Translation.skip("no_session")``), deterministic ids, and the
part helpers. Content that a part cannot carry (images, encrypted reasoning, signatures,
unknown items) is dropped from the parts with a warning; the whole record stays in ``raw``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NoReturn, Protocol, cast

from pydantic import TypeAdapter, ValidationError

from sediment.facts import (
    GatewayProvider,
    InferenceCall,
    InferenceMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from sediment.identifiers import OrgId
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ids import fact_id

CallFormat = Literal["litellm", "openai-chat", "openai-responses", "anthropic"]
CALL_FORMATS: tuple[CallFormat, ...] = ("litellm", "openai-chat", "openai-responses", "anthropic")

CallSkipReason = Literal["no_session", "error_response", "not_a_model_call"]
CALL_SKIP_REASONS: tuple[CallSkipReason, ...] = ("no_session", "error_response", "not_a_model_call")

CallWarning = Literal[
    "malformed_tool_arguments",
    "tool_call_without_id",
    "tool_result_without_id",
    "non_text_part_dropped",
    "opaque_reasoning",
    "unsupported_item_dropped",
    "extra_choices_dropped",
]
CALL_WARNINGS: tuple[CallWarning, ...] = (
    "malformed_tool_arguments",
    "tool_call_without_id",
    "tool_result_without_id",
    "non_text_part_dropped",
    "opaque_reasoning",
    "unsupported_item_dropped",
    "extra_choices_dropped",
)

AnyPart = TextPart | ReasoningPart | ToolCallPart | ToolCallResponsePart

SESSION_HEADER = "x-sediment-session"
CODEX_TURN_METADATA_HEADER = "x-codex-turn-metadata"

_ORG_ID: TypeAdapter[str] = TypeAdapter(OrgId)


# --- results shared by the format modules ----------------------------------------------


class ReplayMemo:
    """Remembers each Session's previous call so replayed context is translated once.

    An agent's call k repeats the messages of calls 1..k-1. When a message of the current
    call equals the message at the same position of the Session's previous call, the earlier
    translation (and the earlier raw object) is reused; only new messages are translated.
    Holds the last call of at most ``sessions`` Sessions.
    """

    def __init__(self, sessions: int = 8) -> None:
        self._limit = sessions
        self._last: OrderedDict[str, tuple[list[Any], list[InferenceMessage]]] = OrderedDict()

    def translate(self, session: str, items: list[Any],
                  translate_one: Callable[[Any, int], InferenceMessage]) -> list[InferenceMessage]:
        previous_items, previous_messages = self._last.pop(session, ([], []))
        messages: list[InferenceMessage] = []
        for index, item in enumerate(items):
            if index < len(previous_items) and (item is previous_items[index] or item == previous_items[index]):
                items[index] = previous_items[index]
                messages.append(previous_messages[index])
            else:
                messages.append(translate_one(item, index))
        self._last[session] = (list(items), messages)
        while len(self._last) > self._limit:
            self._last.popitem(last=False)
        return messages


class Notes:
    """The warnings one translation raised: each code once, in first-seen order.

    ``replay`` carries the Session's :class:`ReplayMemo` view while a call is translated.
    """

    def __init__(self) -> None:
        self._codes: list[str] = []
        self.replay: Callable[[list[Any], Callable[[Any, int], InferenceMessage]], list[InferenceMessage]] | None = None

    def warn(self, code: CallWarning) -> None:
        if code not in self._codes:
            self._codes.append(code)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._codes)


@dataclass(frozen=True)
class CallContent:
    """What a format module reads from one call's request and response bodies."""

    input_messages: tuple[InferenceMessage, ...] = ()
    output_messages: tuple[InferenceMessage, ...] = ()
    model: str | None = None
    model_call_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


def call_content(request: dict[str, Any], response: dict[str, Any], inputs: list[InferenceMessage],
                 outputs: list[InferenceMessage], tokens: tuple[int | None, int | None]) -> CallContent:
    """The CallContent of a request/response pair: model from the response (else the request),
    the response id as ``model_call_id``."""
    return CallContent(
        input_messages=tuple(inputs),
        output_messages=tuple(outputs),
        model=optional_text(response.get("model"), "response.model")
        or optional_text(request.get("model"), "request.model"),
        model_call_id=optional_text(response.get("id"), "response.id"),
        input_tokens=tokens[0],
        output_tokens=tokens[1],
    )


# --- field access ----------------------------------------------------------------------


def fail(path: str, problem: str) -> NoReturn:
    """Raise the :class:`TranslationError` for ``path`` (``<field path>: <problem>``)."""
    raise TranslationError(f"{path}: {problem}")


def child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def as_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        fail(path, "expected an object")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        fail(path, "expected a list")
    return value


def required(obj: dict[str, Any], key: str, path: str) -> Any:
    """``obj[key]``; a missing or null value fails as ``<path>.<key>: missing``."""
    value = obj.get(key)
    if value is None:
        fail(child(path, key), "missing")
    return value


def optional_object(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """``obj[key]`` as an object; absent or null reads as ``{}``."""
    value = obj.get(key)
    return {} if value is None else as_object(value, child(path, key))


def optional_text(value: Any, path: str) -> str | None:
    """A string stripped of padding; null and blank read as absent, other types fail."""
    if value is None:
        return None
    if not isinstance(value, str):
        fail(path, "expected a string")
    return value.strip() or None


def token_count(value: Any, path: str) -> int | None:
    """A usage counter: a non-negative integer (integral floats accepted), or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(path, "expected a non-negative integer")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        fail(path, "expected a non-negative integer")
    if value < 0:
        fail(path, "expected a non-negative integer")
    return int(value)


def body_object(value: Any, path: str) -> dict[str, Any]:
    """A body that is an object, or the JSON text of one."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            fail(path, "invalid JSON")
    return as_object(value, path)


# --- parts -----------------------------------------------------------------------------


def _tool_id(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        fail(path, "expected a string")
    return value.strip() or None


def parse_arguments(value: Any, notes: Notes) -> dict[str, Any]:
    """Tool-call arguments as an object; malformed JSON or a non-object gives ``{}`` and a warning."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            value = None
    if isinstance(value, dict):
        return value
    notes.warn("malformed_tool_arguments")
    return {}


def tool_call(call_id: Any, name: Any, arguments: Any, *, path: str, id_key: str, notes: Notes) -> ToolCallPart | None:
    """A tool-call part; without an id it can join nothing and is dropped with a warning."""
    ident = _tool_id(call_id, child(path, id_key))
    if ident is None:
        notes.warn("tool_call_without_id")
        return None
    if name is not None and not isinstance(name, str):
        fail(child(path, "name"), "expected a string")
    parsed = parse_arguments(arguments, notes)
    try:
        return ToolCallPart(id=ident, name=name or "", arguments=parsed)
    except ValidationError as exc:
        fail(child(path, id_key), exc.errors()[0]["msg"])


def tool_result(call_id: Any, result: Any, *, path: str, id_key: str, notes: Notes) -> ToolCallResponsePart | None:
    """A tool-result part (the result kept as given); without an id it is dropped with a warning."""
    ident = _tool_id(call_id, child(path, id_key))
    if ident is None:
        notes.warn("tool_result_without_id")
        return None
    try:
        return ToolCallResponsePart(id=ident, result=result)
    except ValidationError as exc:
        fail(child(path, id_key), exc.errors()[0]["msg"])


def text_part(value: Any, path: str) -> TextPart | None:
    """A text part; empty text carries nothing and gives no part."""
    if not isinstance(value, str):
        fail(path, "expected a string")
    return TextPart(content=value) if value else None


def reasoning_part(value: Any, path: str, notes: Notes) -> ReasoningPart | None:
    """Readable reasoning; empty reasoning (a signature or ciphertext only) warns ``opaque_reasoning``."""
    if value is not None and not isinstance(value, str):
        fail(path, "expected a string")
    if not value or not value.strip():
        notes.warn("opaque_reasoning")
        return None
    return ReasoningPart(content=value)


_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})


def block_part(block: Any, path: str, notes: Notes) -> AnyPart | None:
    """One content block of any of the formats (OpenAI content parts, Anthropic blocks).

    Blocks with no part to become (images, audio, files, documents, server tools, unknown
    types) are dropped with ``non_text_part_dropped``.
    """
    if isinstance(block, str):
        return TextPart(content=block) if block else None
    obj = as_object(block, path)
    kind = obj.get("type")
    if not isinstance(kind, str):
        fail(child(path, "type"), "expected a string")
    if kind in _TEXT_BLOCKS:
        return text_part(obj.get("text"), child(path, "text"))
    if kind == "refusal":
        return text_part(obj.get("refusal"), child(path, "refusal"))
    if kind == "thinking":
        return reasoning_part(obj.get("thinking"), child(path, "thinking"), notes)
    if kind == "reasoning":
        return reasoning_part(obj.get("text"), child(path, "text"), notes)
    if kind == "redacted_thinking":
        notes.warn("opaque_reasoning")
        return None
    if kind == "tool_use":
        return tool_call(obj.get("id"), obj.get("name"), obj.get("input"), path=path, id_key="id", notes=notes)
    if kind == "tool_result":
        return tool_result(obj.get("tool_use_id"), obj.get("content"), path=path, id_key="tool_use_id", notes=notes)
    notes.warn("non_text_part_dropped")
    return None


def content_parts(content: Any, path: str, notes: Notes) -> list[AnyPart]:
    """Message content (null, a string, or a list of blocks) as parts, in order."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content=content)] if content else []
    blocks = as_list(content, path)
    parts = (block_part(block, f"{path}[{i}]", notes) for i, block in enumerate(blocks))
    return [part for part in parts if part is not None]


def message(role: str, parts: list[AnyPart], finish_reason: str | None = None) -> InferenceMessage:
    return InferenceMessage(role=role, parts=tuple(parts), finish_reason=finish_reason)


def role_of(obj: dict[str, Any], path: str) -> str:
    role = optional_text(obj.get("role"), child(path, "role"))
    if role is None:
        fail(child(path, "role"), "missing")
    return role


# --- streams -----------------------------------------------------------------------------


def is_event_stream(text: str) -> bool:
    """True when ``text`` reads as Server-Sent Events (its first line is a field or comment)."""
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith(("data:", "event:", ":"))


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """``(event name, data)`` for each event of an SSE stream; comments and ids are ignored."""
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
    return events


def event_payloads(text: str) -> list[tuple[str | None, dict[str, Any]]]:
    """Each SSE event whose data is a JSON object (the ``[DONE]`` sentinel ends the stream)."""
    payloads: list[tuple[str | None, dict[str, Any]]] = []
    for position, (name, data) in enumerate(sse_events(text)):
        if data.strip() == "[DONE]":
            break
        try:
            payload = json.loads(data)
        except ValueError:
            fail(f"response(event {position})", "invalid JSON in SSE data")
        payloads.append((name, as_object(payload, f"response(event {position})")))
    if not payloads:
        fail("response", "empty SSE stream")
    return payloads


# --- sessions --------------------------------------------------------------------------


def header_value(headers: dict[str, Any], name: str, path: str) -> str | None:
    """The first value of header ``name`` (matched case-insensitively); a list takes its first item."""
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            if isinstance(value, list):
                value = value[0] if value else None
            return optional_text(value, child(path, key))
    return None


def codex_session(turn_metadata: str | None) -> str | None:
    """``session_id`` from the JSON of Codex's ``x-codex-turn-metadata`` header.

    The header belongs to Codex, not to us: unreadable JSON or a missing id supplies no
    session rather than failing the record.
    """
    if turn_metadata is None:
        return None
    try:
        parsed = json.loads(turn_metadata)
    except ValueError:
        return None
    value = parsed.get("session_id") if isinstance(parsed, dict) else None
    return (value.strip() or None) if isinstance(value, str) else None


# --- building the Fact ----------------------------------------------------------------


def record_digest(record: dict[str, Any]) -> str:
    """SHA-256 of the record's canonical JSON (sorted keys, compact, ASCII, NaN kept)."""
    try:
        text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    except (TypeError, ValueError) as exc:
        raise TranslationError(f"record: not JSON-serializable ({exc})") from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _error_path(exc: ValidationError) -> str:
    error = exc.errors()[0]
    path = ""
    for key in error["loc"]:
        path = f"{path}[{key}]" if isinstance(key, int) else child(path, str(key))
    return f"{path or 'record'}: {error['msg']}"


def build_call(
    record: dict[str, Any],
    content: CallContent,
    notes: Notes,
    *,
    org_id: str,
    session_id: str,
    gateway_provider: GatewayProvider,
    observed_at: datetime,
    user_id: str | None = None,
    model_provider: str | None = None,
    duration_ms: int | None = None,
) -> Translation:
    """The InferenceCall with its deterministic id; ``raw`` is the whole record."""
    try:
        org = _ORG_ID.validate_python(org_id)
    except ValidationError as exc:
        raise ValueError(f"org_id: {exc.errors()[0]['msg']}") from None
    if content.model_call_id is not None:
        call_id = fact_id("call", org, gateway_provider, content.model_call_id)
    else:
        call_id = fact_id("call", org, session_id, record_digest(record))
    try:
        call = InferenceCall(
            inference_call_id=call_id,
            org_id=org,
            session_id=session_id,
            user_id=user_id,
            gateway_provider=gateway_provider,
            model_provider=model_provider,
            model=content.model,
            input_messages=content.input_messages,
            output_messages=content.output_messages,
            input_tokens=content.input_tokens,
            output_tokens=content.output_tokens,
            duration_ms=duration_ms,
            model_call_id=content.model_call_id,
            observed_at=observed_at,
            raw=record,
        )
    except ValidationError as exc:
        raise TranslationError(_error_path(exc)) from None
    return Translation(facts=(call,), warnings=notes.warnings)


def parse_timestamp(value: Any, path: str) -> datetime | None:
    """An RFC 3339 timestamp with an offset, or absent."""
    if value is None:
        return None
    if not isinstance(value, str):
        fail(path, "expected an RFC 3339 timestamp string")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        fail(path, "expected an RFC 3339 timestamp")
    if parsed.utcoffset() is None:
        fail(path, "timestamp must carry a UTC offset")
    return parsed.astimezone(UTC)


# --- the request/response envelope ----------------------------------------------------


class PairFormat(Protocol):
    """What a request/response format module provides (each module satisfies it)."""

    def assemble_stream(self, text: str) -> dict[str, Any]: ...

    def is_error(self, response: dict[str, Any]) -> bool: ...

    def request_session(self, request: dict[str, Any]) -> str | None: ...

    def translate(self, request: dict[str, Any], response: dict[str, Any], notes: Notes) -> CallContent: ...


def _envelope_session(record: dict[str, Any], request_session: str | None) -> str | None:
    headers = optional_object(record, "headers", "")
    session = optional_text(record.get("session_id"), "session_id")
    if session is not None:
        return session
    session = header_value(headers, SESSION_HEADER, "headers")
    if session is not None:
        return session
    session = codex_session(header_value(headers, CODEX_TURN_METADATA_HEADER, "headers"))
    return session if session is not None else request_session


def _duration(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        fail("duration_ms", "expected a non-negative integer")
    return value


def _translate_pair(record: dict[str, Any], call_format: CallFormat, org_id: str, captured_at: datetime,
                    memo: ReplayMemo | None = None) -> Translation:
    import sediment.ingest.anthropic as anthropic
    import sediment.ingest.openai_chat as openai_chat
    import sediment.ingest.openai_responses as openai_responses

    modules: dict[str, PairFormat] = {
        "openai-chat": openai_chat,
        "openai-responses": openai_responses,
        "anthropic": anthropic,
    }
    module = modules[call_format]
    request = body_object(required(record, "request", ""), "request")
    response_value = required(record, "response", "")
    if isinstance(response_value, str) and is_event_stream(response_value):
        response = module.assemble_stream(response_value)
    else:
        response = body_object(response_value, "response")
    if module.is_error(response):
        return Translation.skip("error_response")
    notes = Notes()
    session = _envelope_session(record, module.request_session(request))
    if memo is not None and session is not None:
        memo_session: str = session
        notes.replay = lambda items, one: memo.translate(memo_session, items, one)
    content = module.translate(request, response, notes)
    observed_at = parse_timestamp(record.get("observed_at"), "observed_at") or captured_at
    user_id = optional_text(record.get("user_id"), "user_id")
    duration_ms = _duration(record.get("duration_ms"))
    if session is None:
        return Translation.skip("no_session")
    return build_call(
        record,
        content,
        notes,
        org_id=org_id,
        session_id=session,
        gateway_provider="unknown",
        observed_at=observed_at,
        user_id=user_id,
        duration_ms=duration_ms,
    )


def translate_call(record: dict[str, Any], *, format: str, org_id: str, captured_at: datetime,
                   memo: ReplayMemo | None = None) -> Translation:
    """Translate one recorded model call in ``format`` (one of ``CALL_FORMATS``).

    Returns one InferenceCall, or a skip (``no_session``: no Session could be read;
    ``error_response``: the call failed and produced no output; ``not_a_model_call``: a
    gateway log of an embedding, image, audio, moderation or rerank call). Malformed input raises
    :class:`TranslationError` naming the field. A :class:`ReplayMemo` shared across the calls of
    a log makes replayed context cost one comparison instead of one translation.
    """
    if format not in CALL_FORMATS:
        raise ValueError(f"format: unknown call format {format!r} (expected one of {', '.join(CALL_FORMATS)})")
    record = as_object(record, "record")
    if format == "litellm":
        import sediment.ingest.litellm as litellm

        return litellm.translate(record, org_id=org_id, captured_at=captured_at)
    return _translate_pair(record, cast(CallFormat, format), org_id, captured_at, memo)
