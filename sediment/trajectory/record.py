"""The canonical trajectory record: one immutable, model-agnostic record per agent attempt.

A :class:`Trajectory` (schema version ``1.0``) is what every importer produces, whatever the
source format: public SWE-agent, OpenHands, SWE-Gym, nebius or ATIF files, or Sediment's own
Rollouts. Its fields are the seed's: identity (``trajectory_id``, ``task_id``, ``task_key``),
origin (``source``, ``task_family``, ``domain``, ``split``), the interaction (``events``,
``tools``, ``artifacts``), what is known about it (``provenance``, ``outcome``,
``verification``, ``completeness``, ``missing_fields``) and how it got here
(``transformations``, ``raw_record``, ``metadata``).

The record's text is :func:`to_json`: canonical JSON (keys sorted at every level, compact,
ASCII escapes), the same bytes for the same record on every run. ``trajectory_id`` is
``"trajectory:"`` plus the first 24 hex digits of the SHA-256 of that text with
``trajectory_id`` left out, so it is content-addressed: the same attempt imported twice gets
the same id, and any change to any field gives another.

:func:`problems` lists every violation of the seed's rules; :func:`validated` raises
:class:`TrajectoryError` on the first. Nothing is ever filled in: a missing outcome stays
``success = null`` (unknown, never failure), a missing tool result is declared in
``missing_fields``, never manufactured.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sediment.errors import validation_message
from sediment.records import decode_record

#: The version of the canonical record these models define.
SCHEMA_VERSION: Literal["1.0"] = "1.0"
#: The ``$id`` of the record's published JSON Schema.
SCHEMA_ID = "https://sediment.so/schemas/trajectories/trajectory/v1.json"
#: Hex digits of the SHA-256 kept in a ``trajectory_id``.
ID_HEX_DIGITS = 24

Role = Literal["system", "user", "assistant", "tool"]
Completeness = Literal["complete", "incomplete", "truncated"]
Demonstrator = Literal["expert", "reference", "agent", "unknown"]
#: What a piece of verification evidence is, strongest kind first.
EvidenceKind = Literal[
    "ci",  # CI runs of the attempt's commit, resolved by Sediment (with reliability)
    "test_execution",  # the source ran the task's tests on the attempt and published the report
    "test_log",  # the source published a test log beside its verdict
    "source_label",  # the source states a verdict without the evidence behind it
    "llm_judgement",  # a model wrote the verdict (e.g. the OpenHands resolver's result_explanation)
    "submission",  # only a submitted patch: no verdict at all
]
#: The four verification strengths, strongest first (what rankings read).
VerificationStrength = Literal["independently_reproduced", "source_evaluator", "source_reported", "unverified"]
VERIFICATION_STRENGTHS: tuple[VerificationStrength, ...] = (
    "independently_reproduced", "source_evaluator", "source_reported", "unverified")
#: Outcome categories (what rankings read): ``success`` is only ever a ``True`` success.
OutcomeCategory = Literal["success", "failure", "unknown"]


class TrajectoryError(ValueError):
    """A record breaks a rule of the canonical schema; the message is one line naming the field."""


class NotJsonRecord(TrajectoryError):
    """A record's text is not UTF-8 JSON at all (so its file may be in another format)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True,
                              json_schema_serialization_defaults_required=True)


class MissingField(_Model):
    """An explicit omission: the field (a dotted path in the record) and why it is absent."""

    field: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class Source(_Model):
    """Where the record came from: a source id, a direct URL, an immutable revision, the
    row/file locator inside it and, when a file was read, that file's SHA-256."""

    source_id: str = Field(min_length=1)
    url: str | None = None
    revision: str | None = None
    locator: str = Field(min_length=1)
    file_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")


class TrajectoryToolCall(_Model):
    """One structured tool call of an assistant event.

    ``call_id`` is unique in the record; ``original_call_id`` is the id the source gave (``None``
    when the source gave none and the call id was assigned). ``arguments`` is what the source
    gave: a JSON object as an object, a JSON-encoded string as that exact string.
    """

    model_config = ConfigDict(title="ToolCall")  # the published schema's name (and validation errors')

    call_id: str = Field(min_length=1)
    original_call_id: str | None = None
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str


class Event(_Model):
    """One causally ordered event: a system/user message, an assistant decision or a tool
    (environment) observation."""

    event_id: str = Field(min_length=1)
    role: Role
    text: str | None = None
    reasoning: str | None = None
    tool_calls: list[TrajectoryToolCall] = Field(default_factory=list)
    #: The ``call_id`` this tool event answers (an earlier call), or ``None``.
    tool_result_of: str | None = None
    source_metadata: dict[str, Any] = Field(default_factory=dict)
    missing_fields: list[MissingField] = Field(default_factory=list)
    supervised: bool = False


class TrajectoryToolDefinition(_Model):
    """A function the source published as available: name, description, JSON Schema parameters."""

    model_config = ConfigDict(title="ToolDefinition")  # the published schema's name (and validation errors')

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Artifact(_Model):
    """An external image/file the record refers to, with its hash when known."""

    artifact_id: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    uri: str | None = None
    media_type: str | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    size: int | None = Field(default=None, ge=0)


class TrajectoryProvenance(_Model):
    """Who produced the attempt: the demonstrator class, the producer/scaffold (and its
    version), the exact model when the source names it, the attempt index, source metadata."""

    model_config = ConfigDict(title="Provenance")  # the published schema's name (and validation errors')

    demonstrator: Demonstrator
    producer: str | None = None
    scaffold: str | None = None
    scaffold_version: str | None = None
    model: str | None = None
    attempt: str | None = None
    source_metadata: dict[str, Any] = Field(default_factory=dict)


class Outcome(_Model):
    """The attempt's independent outcome. ``success = None`` is unknown, never failure;
    ``status`` is the source's own word (e.g. SWE-agent's ``submitted``)."""

    success: bool | None = None
    status: str | None = None
    reward: float | None = None
    termination_reason: str | None = None
    source_metadata: dict[str, Any] = Field(default_factory=dict)


class TrajectoryEvidence(_Model):
    """One piece of verification evidence: its kind, the id of the evidence where it has one
    (a CI resolution, a report), its reliability in [0, 1] when known, whether it was
    reproduced independently of the source, and a short summary."""

    model_config = ConfigDict(title="Evidence")  # the published schema's name (and validation errors')

    kind: EvidenceKind
    evidence_id: str | None = None
    reliability: float | None = Field(default=None, ge=0.0, le=1.0)
    independent: bool = False
    summary: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class Verification(_Model):
    """How the outcome is known: the method, whether the source supplied executable
    verification (tests it ran), whether it was reproduced independently, and the evidence."""

    method: str = Field(min_length=1)
    executable: bool = False
    independently_reproduced: bool = False
    evidence: list[TrajectoryEvidence] = Field(default_factory=list)


class Transformation(_Model):
    """One adapter operation, in the order applied: its name, version and parameters."""

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    detail: dict[str, Any] = Field(default_factory=dict)


class RawRecord(_Model):
    """The original row/document, losslessly: its bytes as UTF-8 ``text`` when they decode,
    else base64 ``data``. ``sha256`` is of the original bytes (before any redaction, which a
    transformation then records)."""

    media_type: str = Field(min_length=1)
    encoding: Literal["utf-8", "base64"]
    content: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @classmethod
    def of(cls, data: bytes, media_type: str = "application/json") -> RawRecord:
        """The raw record of ``data``: text when it is UTF-8, base64-tagged otherwise."""
        digest = hashlib.sha256(data).hexdigest()
        try:
            return cls(media_type=media_type, encoding="utf-8", content=data.decode("utf-8"), sha256=digest)
        except UnicodeDecodeError:
            return cls(media_type=media_type, encoding="base64", content=base64.b64encode(data).decode("ascii"),
                       sha256=digest)

    def data(self) -> bytes:
        """The stored bytes (after redaction, if a transformation says so)."""
        if self.encoding == "utf-8":
            return self.content.encode("utf-8", "surrogatepass")
        return base64.b64decode(self.content, validate=True)


class Trajectory(_Model):
    """One canonical attempt (schema version ``1.0``). Build with :func:`build`, which fills
    the content-addressed ``trajectory_id`` and validates."""

    schema_version: Literal["1.0"] = SCHEMA_VERSION
    trajectory_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    task_key: str = Field(min_length=1)
    source: Source
    task_family: str | None = None
    domain: str | None = None
    split: str | None = None
    events: list[Event] = Field(min_length=1)
    #: Source-published tool definitions; ``None`` when unpublished (declared in missing_fields).
    tools: list[TrajectoryToolDefinition] | None = None
    artifacts: list[Artifact] = Field(default_factory=list)
    provenance: TrajectoryProvenance
    outcome: Outcome
    verification: Verification
    completeness: Completeness
    missing_fields: list[MissingField] = Field(default_factory=list)
    transformations: list[Transformation] = Field(default_factory=list)
    raw_record: RawRecord
    metadata: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> str:
        return to_json(self)

    def event(self, event_id: str) -> Event:
        for event in self.events:
            if event.event_id == event_id:
                return event
        raise KeyError(event_id)


# --- identity and text --------------------------------------------------------------------


def _plain(record: Trajectory) -> dict[str, Any]:
    return record.model_dump(mode="python")


def content_id(body: Mapping[str, Any]) -> str:
    """The content address of a record body (every field but ``trajectory_id``): the SHA-256
    of its canonical text (the text :func:`to_json` writes, without that field)."""
    rest = {key: value for key, value in body.items() if key != "trajectory_id"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)
    return "trajectory:" + hashlib.sha256(text.encode("ascii")).hexdigest()[:ID_HEX_DIGITS]


def to_json(record: Trajectory) -> str:
    """The record's canonical text: sorted keys, compact, ASCII escapes; byte-stable."""
    return json.dumps(_plain(record), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)


def from_json(text: str | bytes) -> Trajectory:
    """Parse and validate a record's text (duplicate keys are errors); raises :class:`TrajectoryError`."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotJsonRecord(f"(record): not UTF-8 (byte {exc.start})") from None
    try:
        value = decode_record(text)
    except ValueError as exc:
        raise NotJsonRecord(f"(record): not JSON: {exc}") from None
    except RecursionError:
        raise TrajectoryError(f"(record): nested deeper than {MAX_RECORD_DEPTH} levels") from None
    return from_plain(value)


def from_plain(value: Any) -> Trajectory:
    """Validate a decoded record (a dict as :func:`to_json` writes it)."""
    if not isinstance(value, dict):
        raise TrajectoryError("(record): not a JSON object")
    try:
        record = Trajectory.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        raise TrajectoryError(f"{where}: {validation_message(first)}") from None
    return validated(record)


def build(**fields: Any) -> Trajectory:
    """A validated record from its fields (``trajectory_id`` is computed, never passed)."""
    if "trajectory_id" in fields:
        raise TrajectoryError("trajectory_id: is computed from the content, not given")
    try:
        draft = Trajectory.model_validate({**fields, "trajectory_id": "trajectory:pending"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        raise TrajectoryError(f"{where}: {validation_message(first)}") from None
    plain = _plain(draft)
    unportable = unportable_value(plain)
    if unportable is not None:
        raise TrajectoryError(unportable)
    record = draft.model_copy(update={"trajectory_id": content_id(plain)})
    for problem in problems(record, check_id=False):  # the id was just computed from the content
        raise TrajectoryError(problem)
    return record


# --- the seed's rules ---------------------------------------------------------------------


#: The deepest nesting of arrays and objects a record may hold: sources are read to 256 levels
#: (:data:`sediment.ingest.reading.json_text.MAX_DEPTH`), a record wraps them in a few more.
MAX_RECORD_DEPTH = 320
#: The integers every reader of the library keeps exact (orjson reads a larger one as a float).
INTEGER_RANGE = (-(2**63), 2**64 - 1)


def _dotted(where: tuple[str | int, ...]) -> str:
    return ".".join(str(step) for step in where) or "(record)"


def unportable_value(body: Any) -> str | None:
    """The first value of a record's plain form (document order) that its canonical text
    cannot carry back exactly to every reader: a number that is not finite (``NaN`` is no JSON
    number), an integer beyond 64 bits, or nesting beyond :data:`MAX_RECORD_DEPTH`; one line
    naming the field, or ``None``. Iterative: no depth exhausts the stack."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(body, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict | list):
            if len(where) >= MAX_RECORD_DEPTH:
                return f"{_dotted(where)}: nested deeper than {MAX_RECORD_DEPTH} levels"
            items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            stack.extend((value, (*where, key)) for key, value in reversed(items))
        elif isinstance(node, float) and not math.isfinite(node):
            return f"{_dotted(where)}: {node!r} is not a finite number (JSON has no NaN or Infinity)"
        elif isinstance(node, int) and not isinstance(node, bool) and not (
                INTEGER_RANGE[0] <= node <= INTEGER_RANGE[1]):
            return f"{_dotted(where)}: the integer {node} does not fit in 64 bits"
    return None


def problems(record: Trajectory, *, check_id: bool = True) -> Iterator[str]:
    """Every violation of the canonical rules, each one line naming the field."""
    plain = _plain(record)
    unportable = unportable_value(plain)
    if unportable is not None:
        yield unportable
        return  # the content address itself cannot be computed portably
    if check_id and record.trajectory_id != content_id(plain):
        yield f"trajectory_id: {record.trajectory_id} is not the content address of the record"
    for name in ("task_id", "task_key"):
        if not getattr(record, name).strip():
            yield f"{name}: is blank"
    seen_events: set[str] = set()
    calls: dict[str, int] = {}
    answered: set[str] = set()
    last_assistant = max((i for i, e in enumerate(record.events) if e.role == "assistant"), default=-1)
    for index, event in enumerate(record.events):
        where = f"events.{index}"
        if not event.event_id.strip():
            yield f"{where}.event_id: is blank"
        if event.event_id in seen_events:
            yield f"{where}.event_id: {event.event_id!r} is not unique"
        seen_events.add(event.event_id)
        if event.supervised and event.role != "assistant":
            yield f"{where}.supervised: only assistant events may be supervised (role {event.role})"
        if event.tool_calls and event.role != "assistant":
            yield f"{where}.tool_calls: only assistant events make tool calls (role {event.role})"
        for position, call in enumerate(event.tool_calls):
            if not call.call_id.strip():
                yield f"{where}.tool_calls.{position}.call_id: is blank"
            if call.call_id in calls:
                yield f"{where}.tool_calls.{position}.call_id: {call.call_id!r} is not unique"
            calls[call.call_id] = index
        link = event.tool_result_of
        if link is not None:
            if event.role != "tool":
                yield f"{where}.tool_result_of: only tool events answer a call (role {event.role})"
            elif link not in calls:
                yield f"{where}.tool_result_of: {link!r} answers no earlier call"
            answered.add(link)
    declared = {m.field for m in record.missing_fields}
    for index, event in enumerate(record.events):
        own = {m.field for m in event.missing_fields}
        for position, call in enumerate(event.tool_calls):
            if call.call_id in answered or index == last_assistant:
                continue  # a final call may end through an externally recorded outcome
            field = f"tool_calls.{position}.result"
            if field not in own and f"events.{index}.{field}" not in declared:
                yield (f"events.{index}.tool_calls.{position}: call {call.call_id!r} has no result and the "
                       "omission is not declared")
    if record.completeness != "complete" and not record.missing_fields:
        yield f"missing_fields: a {record.completeness} record declares what is missing"
    if record.tools is None and "tools" not in declared:
        yield "tools: unpublished tool definitions are declared in missing_fields"
    raw = record.raw_record
    try:
        data = raw.data()
    except ValueError:
        yield "raw_record.content: is not valid base64"
    else:
        redacted = any(t.name == "redact-secrets" for t in record.transformations)
        if not redacted and hashlib.sha256(data).hexdigest() != raw.sha256:
            yield "raw_record: its content does not hash to its sha256 and no redaction is recorded"


def validated(record: Trajectory) -> Trajectory:
    """``record`` when it keeps every rule; else :class:`TrajectoryError` with the first problem."""
    for problem in problems(record):
        raise TrajectoryError(problem)
    return record


# --- what rankings read --------------------------------------------------------------------


def outcome_category(record: Trajectory) -> OutcomeCategory:
    """``success`` / ``failure`` for a stated verdict; ``unknown`` for ``success = null``."""
    if record.outcome.success is None:
        return "unknown"
    return "success" if record.outcome.success else "failure"


_SOURCE_EVALUATOR: frozenset[str] = frozenset({"test_execution", "test_log", "ci"})
_SOURCE_REPORTED: frozenset[str] = frozenset({"source_label", "llm_judgement"})


def verification_strength(record: Trajectory) -> VerificationStrength:
    """The strongest evidence the record carries: ``independently_reproduced`` (a reproduction
    independent of the source, e.g. Sediment's own CI), ``source_evaluator`` (the source ran
    tests), ``source_reported`` (a verdict without executed evidence, or a model's judgement),
    else ``unverified``."""
    evidence = record.verification.evidence
    if record.verification.independently_reproduced or any(e.independent for e in evidence):
        return "independently_reproduced"
    kinds = {e.kind for e in evidence}
    if kinds & _SOURCE_EVALUATOR:
        return "source_evaluator"
    if kinds & _SOURCE_REPORTED:
        return "source_reported"
    return "unverified"
