"""Validated identity types shared by every Fact and derived artifact.

Each type is an ``Annotated`` string (or datetime) whose validator normalizes and
rejects, so a model that carries one can never hold an ill-formed identity.

Times are strict: a :data:`UtcDatetime` is an aware ``datetime`` or an RFC 3339 string with a
UTC offset (``2024-05-01T12:00:00Z``, ``2024-05-01T14:00:00.25+02:00``), never a number (no
unix seconds) and never another string; a time that has no UTC equivalent (year 1 at +14:00)
is refused as out of range instead of overflowing.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, PlainSerializer
from pydantic_core import PydanticCustomError

_ORG_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_SLUG_PART = re.compile(r"^[A-Za-z0-9._-]+$")
FACT_ID_MAX_LENGTH = 200
"""The longest Fact id (``fact_id`` is a ``VARCHAR(200)`` in the store)."""


def has_unpaired_surrogate(text: str) -> bool:
    """True when ``text`` holds a lone UTF-16 surrogate (it cannot be encoded as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _org_id(value: str) -> str:
    normalized = value.strip().lower()
    if not _ORG_ID.fullmatch(normalized):
        raise ValueError(f"org id must match {_ORG_ID.pattern}: {value!r}")
    return normalized


def _non_empty_id(value: str) -> str:
    stripped = value.strip()
    if not stripped:
        raise ValueError("identifier must not be empty")
    if "\x00" in stripped:
        raise ValueError("identifier must not contain NUL")
    if has_unpaired_surrogate(stripped):
        raise ValueError("identifier must not contain unpaired surrogates")
    return stripped


def _fact_id_length(value: str) -> str:
    if len(value) > FACT_ID_MAX_LENGTH:
        raise PydanticCustomError("string_too_long", "String should have at most {max_length} characters",
                                  {"max_length": FACT_ID_MAX_LENGTH})
    return value


def _commit_sha(value: str) -> str:
    normalized = value.strip().lower()
    if not _SHA.fullmatch(normalized):
        raise ValueError(f"commit SHA must be 40 or 64 hex characters: {value!r}")
    return normalized


def normalize_repo_slug(value: str) -> str:
    """Normalize ``owner/repo`` (stripped, lowercased); ``""`` is the explicit absent value."""
    normalized = value.strip().lower()
    if normalized == "":
        return ""
    owner, sep, name = normalized.partition("/")
    if (
        not sep
        or not _SLUG_PART.fullmatch(owner)
        or not _SLUG_PART.fullmatch(name)
        or name in {".", ".."}
        or owner in {".", ".."}
    ):
        raise ValueError(f"repository must be 'owner/repo': {value!r}")
    return normalized


def _non_empty_repo(value: str) -> str:
    normalized = normalize_repo_slug(value)
    if not normalized:
        raise ValueError("repository must not be empty")
    return normalized


def _branch(value: str) -> str:
    stripped = value.strip()
    while stripped.startswith("refs/heads/"):
        stripped = stripped[len("refs/heads/") :]
    return stripped


def to_utc(value: datetime) -> datetime:
    """Normalize an aware datetime to UTC; a time with no UTC equivalent is out of range."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise PydanticCustomError("timestamp_range", TIMESTAMP_OUT_OF_RANGE) from None


_RFC3339 = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})[Tt ]"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})(?:\.(?P<fraction>[0-9]+))?"
    r"(?P<offset>[Zz]|[+-][0-9]{2}:[0-9]{2})?"
)
_JSON_TYPES = {bool: "boolean", int: "number", float: "number", list: "array", dict: "object", type(None): "null"}
TIMESTAMP_OUT_OF_RANGE = "timestamp out of range"


class TimestampError(ValueError):
    """A timestamp that is not RFC 3339 with an offset, or has no UTC equivalent."""


def parse_rfc3339(text: str) -> datetime:
    """An RFC 3339 date-time as an aware datetime in its own offset: ``YYYY-MM-DD``, ``T``
    (or ``t``, or the space RFC 3339 allows), ``HH:MM:SS``, at most six fraction digits, and the
    offset ``Z`` or ``±HH:MM``.

    Nothing is guessed: no offset, a unix time, a date alone, more than microsecond precision
    or an impossible calendar value raise :class:`TimestampError` naming the problem.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise TimestampError("expected an RFC 3339 timestamp")
    offset = match["offset"]
    if offset is None:
        raise TimestampError("timestamp must carry a UTC offset")
    fraction = match["fraction"] or ""
    if len(fraction) > 6:
        raise TimestampError("timestamp has more than microsecond precision")
    if int(match["year"]) == 0:
        raise TimestampError(TIMESTAMP_OUT_OF_RANGE)
    if offset in ("Z", "z"):
        zone = UTC
    else:
        hours, minutes = int(offset[1:3]), int(offset[4:6])
        if hours > 23 or minutes > 59:
            raise TimestampError(f"expected an RFC 3339 timestamp: offset {offset} out of range")
        delta = timedelta(hours=hours, minutes=minutes)
        zone = timezone(-delta if offset[0] == "-" else delta)
    try:
        return datetime(int(match["year"]), int(match["month"]), int(match["day"]), int(match["hour"]),
                        int(match["minute"]), int(match["second"]), int(fraction.ljust(6, "0")), tzinfo=zone)
    except ValueError as exc:
        raise TimestampError(f"expected an RFC 3339 timestamp: {exc}") from None


def utc_timestamp(text: str) -> datetime:
    """:func:`parse_rfc3339` converted to UTC; ``timestamp out of range`` when the time has no
    UTC equivalent (``0001-01-01T00:00:00+14:00``, ``9999-12-31T23:59:59-10:00``)."""
    parsed = parse_rfc3339(text)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise TimestampError(TIMESTAMP_OUT_OF_RANGE) from None


def _timestamp(value: Any) -> Any:
    """A datetime as it is (its awareness is checked next), an RFC 3339 string parsed; nothing else."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        raise PydanticCustomError("timestamp_type", "expected an RFC 3339 timestamp string, got {kind}", {"kind": kind})
    try:
        return parse_rfc3339(value)
    except TimestampError as exc:
        if str(exc) == TIMESTAMP_OUT_OF_RANGE:
            raise PydanticCustomError("timestamp_range", TIMESTAMP_OUT_OF_RANGE) from None
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise PydanticCustomError("timestamp_format", "{problem}, got {value}",
                                  {"problem": str(exc), "value": repr(shown)}) from None


def _exact_int(value: Any) -> Any:
    """Only an int (never a bool, a float or a string) reaches an integer literal's check."""
    if type(value) is not int:
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        raise PydanticCustomError("int_type", "Input should be a valid integer, got {kind}", {"kind": kind})
    return value


def render_datetime(value: datetime) -> str:
    """Render a datetime as UTC ISO-8601 with a ``Z`` suffix (the row and bundle form)."""
    text = value.astimezone(UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


OrgId = Annotated[str, AfterValidator(_org_id)]
NonEmptyId = Annotated[str, AfterValidator(_non_empty_id)]
FactId = Annotated[str, AfterValidator(_non_empty_id), AfterValidator(_fact_id_length)]
"""A :data:`NonEmptyId` that names a Fact: at most :data:`FACT_ID_MAX_LENGTH` characters."""
CommitSha = Annotated[str, AfterValidator(_commit_sha)]
RepoSlug = Annotated[str, AfterValidator(normalize_repo_slug)]
NonEmptyRepoSlug = Annotated[str, AfterValidator(_non_empty_repo)]
BranchName = Annotated[str, AfterValidator(_branch)]
ExactInt = BeforeValidator(_exact_int)
"""Put on a ``Literal`` of integers (a schema version): pydantic would take ``true`` or ``1.0`` for ``1``."""
UtcDatetime = Annotated[
    AwareDatetime,
    BeforeValidator(_timestamp),
    AfterValidator(to_utc),
    PlainSerializer(render_datetime, return_type=str, when_used="json"),
]
