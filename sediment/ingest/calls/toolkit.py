"""What every call format shares: the envelope, parts, Sessions and the building of the
:class:`~sediment.model.facts.InferenceCall` (field access is in ``fields``, streams in
``streams``, the tool-definition readers in ``tool_definitions``, the replay memo in ``replay``).

The format modules (``openai_chat``, ``openai_responses``, ``anthropic``, and ``litellm``,
which also reads the other three's shapes through their modules) import from here; this module
imports none of them (nor ``tool_definitions``, which imports it), and the package ``__init__``
picks the module for a format. The rules every format shares: the envelope, the Session lookup
(absent, never guessed: no session means ``Translation.skip("no_session")``), deterministic
ids and the part helpers. Content that a part cannot carry
(images, encrypted reasoning, signatures, unknown items) is dropped from the parts with a
warning; the whole record stays in ``raw``, its credentials redacted
(:mod:`sediment.ingest.redaction.credentials`).

Parts keep what the model saw and said: an empty text (``content: ""`` beside tool calls, an
empty ``text`` or ``output_text`` block) is an empty text part, and a tool result is kept as
given, so a result that is JSON text stays that string, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError

from sediment.errors import validation_message
from sediment.identifiers import OrgId
from sediment.ingest import Translation, TranslationError
from sediment.ingest.calls.fields import (
    as_list,
    as_object,
    body_object,
    child,
    fail,
    optional_object,
    optional_text,
    required,
)
from sediment.ingest.calls.replay import Group, ReplayMemo
from sediment.ingest.calls.streams import is_event_stream
from sediment.ingest.reading.json_text import RecordProblem, read_json
from sediment.ingest.redaction.content import ContentCache, redact_call
from sediment.ingest.redaction.credentials import redact_record
from sediment.model.facts import (
    GatewayProvider,
    InferenceCall,
    InferenceMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
)
from sediment.records import canonical_digest
from sediment.store.ids import inference_call_id

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
_Read = TypeVar("_Read")  # what a reader makes of an item or a value
#: A request's declared tools: None when it declared no tool list.
ToolDefinitions = tuple[ToolDefinition, ...] | None

SESSION_HEADER = "x-sediment-session"
CODEX_TURN_METADATA_HEADER = "x-codex-turn-metadata"

_ORG_ID: TypeAdapter[str] = TypeAdapter(OrgId)


# --- results shared by the format modules ----------------------------------------------


class Notes:
    """The warnings one translation raised: each code once, in first-seen order.

    :meth:`replayed`, :meth:`grouped` and :meth:`resent` read what a call sends again through the
    Session's :class:`ReplayMemo` once :meth:`use_memo` gave the call one, and plainly without.
    What the memo reads is read with its warnings kept apart (:meth:`_reading`), and the memo
    gives them back with the reading, new or reused, so the call's warnings are a plain
    translation's, in its order.
    """

    def __init__(self) -> None:
        self._codes: list[str] = []
        self._recording: list[str] | None = None
        self._memo: ReplayMemo | None = None
        self._session = ""
        self.redaction_cache: ContentCache | None = None

    def use_memo(self, memo: ReplayMemo | None, session: str | None) -> None:
        """Translate this call through the Session's view of ``memo`` (nothing without either)."""
        if memo is None or session is None:
            return
        self._memo, self._session = memo, session
        self.redaction_cache = memo.content_cache(session)

    def replayed(self, reader: str, items: list[Any], one: Callable[[Any, int], _Read]) -> list[_Read]:
        """Each of a request's replayed ``items`` read by ``one(item, index)`` (``reader`` names
        how: the memo never gives one reader's reading to another)."""
        if self._memo is None:
            return [one(item, index) for index, item in enumerate(items)]
        read, warned = self._memo.translate(self._session, reader, items,
                                            lambda item, index: self._reading(lambda: one(item, index)))
        for _, codes in warned:
            self._given(codes)
        return read

    def grouped(self, read: list[Any], groups: list[Group],
                build: Callable[[int, int, str], InferenceMessage]) -> list[InferenceMessage]:
        """The messages ``build`` makes of ``groups`` of the readings :meth:`replayed` gave."""
        if self._memo is None:
            return [build(*group) for group in groups]
        return self._memo.grouped(self._session, read, groups, build)

    def resent(self, slot: str, value: Any, read: Callable[[], _Read]) -> _Read:
        """``read()`` of a ``value`` every call sends again whole (``slot``: its tool list, its
        system prompt)."""
        if self._memo is None:
            return read()
        result: _Read
        result, codes = self._memo.resent(self._session, slot, value, lambda: self._reading(read))
        self._given(codes)
        return result

    def _reading(self, read: Callable[[], Any]) -> tuple[Any, tuple[str, ...]]:
        """``read()`` and the warnings it raised, in order, kept from this call's own."""
        outer, self._recording = self._recording, []
        try:
            return read(), tuple(self._recording)
        finally:
            self._recording = outer

    def _given(self, codes: tuple[str, ...]) -> None:
        """The warnings a reading raised (each a :meth:`warn` code), raised again."""
        for code in codes:
            self._add(code)

    def warn(self, code: CallWarning) -> None:
        self._add(code)

    def _add(self, code: str) -> None:
        codes = self._codes if self._recording is None else self._recording
        if code not in codes:
            codes.append(code)

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
    tools: tuple[ToolDefinition, ...] | None = None


def call_content(request: dict[str, Any], response: dict[str, Any], inputs: list[InferenceMessage],
                 outputs: list[InferenceMessage], tokens: tuple[int | None, int | None],
                 tools: tuple[ToolDefinition, ...] | None = None) -> CallContent:
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
        tools=tools,
    )


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
            value = read_json(value)
        except RecordProblem:  # not JSON, a key given twice, nested too deep: not one argument object
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
        fail(child(path, id_key), validation_message(exc.errors()[0]))


def tool_result(call_id: Any, result: Any, *, path: str, id_key: str, notes: Notes) -> ToolCallResponsePart | None:
    """A tool-result part, the result kept exactly as given: JSON text stays a string, never
    parsed (the model saw those bytes); without an id it is dropped with a warning."""
    ident = _tool_id(call_id, child(path, id_key))
    if ident is None:
        notes.warn("tool_result_without_id")
        return None
    try:
        return ToolCallResponsePart(id=ident, result=result)
    except ValidationError as exc:
        fail(child(path, id_key), validation_message(exc.errors()[0]))


def text_part(value: Any, path: str) -> TextPart:
    """A text part, empty text included: the call had that part."""
    if not isinstance(value, str):
        fail(path, "expected a string")
    return TextPart(content=value)


def refusal_part(value: Any, path: str) -> TextPart | None:
    """A refusal as a text part; an empty refusal is no refusal and gives no part."""
    part = text_part(value, path)
    return part if part.content else None


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
        return TextPart(content=block)
    obj = as_object(block, path)
    kind = obj.get("type")
    if not isinstance(kind, str):
        fail(child(path, "type"), "expected a string")
    if kind in _TEXT_BLOCKS:
        return text_part(obj.get("text"), child(path, "text"))
    if kind == "refusal":
        return refusal_part(obj.get("refusal"), child(path, "refusal"))
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
    """Message content (null, a string, or a list of blocks) as parts, in order; ``""`` is one
    empty text part (null is none)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content=content)]
    blocks = as_list(content, path)
    parts = (block_part(block, f"{path}[{i}]", notes) for i, block in enumerate(blocks))
    return [part for part in parts if part is not None]


def message(role: str, parts: list[AnyPart], finish_reason: str | None = None) -> InferenceMessage:
    return InferenceMessage(role=role, parts=tuple(parts), finish_reason=finish_reason)


def resent_messages(notes: Notes, slot: str, value: Any, read: Callable[[], list[InferenceMessage]]
                    ) -> list[InferenceMessage]:
    """``read()``'s messages of a ``value`` every call sends again (a system prompt, instructions),
    through the Session's replay memo when the call has one: the same JSON as the previous call's
    is that call's very messages. A new list either way (the caller adds the call's others)."""
    if value is None:
        return read()
    return list(notes.resent(slot, value, lambda: tuple(read())))


def role_of(obj: dict[str, Any], path: str) -> str:
    role = optional_text(obj.get("role"), child(path, "role"))
    if role is None:
        fail(child(path, "role"), "missing")
    return role


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
        parsed = read_json(turn_metadata)
    except RecordProblem:
        return None
    value = parsed.get("session_id") if isinstance(parsed, dict) else None
    return (value.strip() or None) if isinstance(value, str) else None


# --- building the Fact ----------------------------------------------------------------


def record_digest(record: dict[str, Any]) -> str:
    """The canonical digest of the parsed JSON record (sorted keys, compact, ASCII, NaN kept)."""
    try:
        return canonical_digest(record, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise TranslationError(f"record: not JSON-serializable ({exc})") from None


def _error_path(exc: ValidationError) -> str:
    error = exc.errors()[0]
    path = ""
    for key in error["loc"]:
        path = f"{path}[{key}]" if isinstance(key, int) else child(path, str(key))
    return f"{path or 'record'}: {validation_message(error)}"


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
    """The InferenceCall with its deterministic id; ``raw`` is the whole record, credentials
    redacted (:func:`~sediment.ingest.redaction.credentials.redact_record`), and secrets inside its content
    (parts, tool definitions and ``raw``) redacted (:func:`~sediment.ingest.redaction.content.redact_call`).

    The id is derived from the record as received, before redaction: a keyless call's record
    digest is the digest it always had, so a record stored before redaction existed and the
    same record ingested now are one Fact.
    """
    try:
        org = _ORG_ID.validate_python(org_id)
    except ValidationError as exc:
        raise ValueError(f"org_id: {validation_message(exc.errors()[0])}") from None
    call_id = inference_call_id(org, session_id, gateway_provider, content.model_call_id, lambda: record_digest(record))
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
            tools=content.tools,
            duration_ms=duration_ms,
            model_call_id=content.model_call_id,
            observed_at=observed_at,
            raw=redact_record(record),
        )
    except ValidationError as exc:
        raise TranslationError(_error_path(exc)) from None
    return Translation(facts=(redact_call(call, cache=notes.redaction_cache),), warnings=notes.warnings)


def parse_timestamp(value: Any, path: str) -> datetime | None:
    """An RFC 3339 timestamp with an offset, in UTC, or absent: read as the Fact models read
    times (:func:`sediment.identifiers.parse_rfc3339`: never a number, a date alone or more
    than microsecond precision); a time with no UTC equivalent (``9999-12-31T23:59:59-10:00``)
    is ``timestamp out of range``."""
    from sediment.identifiers import TIMESTAMP_OUT_OF_RANGE, TimestampError, parse_rfc3339

    if value is None:
        return None
    if not isinstance(value, str):
        fail(path, "expected an RFC 3339 timestamp string")
    try:
        parsed = parse_rfc3339(value.strip())
    except TimestampError as exc:
        fail(path, str(exc))
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        fail(path, TIMESTAMP_OUT_OF_RANGE)


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


def translate_pair(record: dict[str, Any], module: PairFormat, *, org_id: str, captured_at: datetime,
                   memo: ReplayMemo | None = None) -> Translation:
    """One request/response envelope read by ``module`` (the format of its bodies)."""
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
    notes.use_memo(memo, session)
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
