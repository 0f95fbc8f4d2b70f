"""An OTLP/JSON logs export, read exactly: the envelope, attributes, values and times.

One ``ExportLogsServiceRequest`` in its JSON encoding (what an OTLP/HTTP exporter POSTs to
``/v1/logs``, and what the OpenTelemetry Collector's file exporter writes one per line):
``resourceLogs[]`` → ``resource.attributes`` and ``scopeLogs[]`` → ``logRecords[]``. Field
names are lowerCamelCase; unknown fields are ignored, as the OTLP specification requires of a
receiver; a repeated field that is absent or ``null`` is empty.

Attributes are ``[{"key": …, "value": AnyValue}]``; an AnyValue holds one of ``stringValue``,
``boolValue``, ``intValue`` (a decimal string, or a JSON integer, in the signed 64-bit range),
``doubleValue`` (a JSON number, or ``"NaN"``, ``"Infinity"``, ``"-Infinity"``),
``arrayValue``, ``kvlistValue`` or ``bytesValue``. A typed read (:meth:`Attributes.text`,
:meth:`Attributes.boolean`, …) takes only its own kind: an ``intValue`` where a string belongs
is refused, never converted. Times (``timeUnixNano``, ``observedTimeUnixNano``) are unsigned
nanoseconds since the epoch as a decimal string or a JSON integer; ``0`` means unset. A Fact's
time keeps microseconds: the digits below them are dropped (the record in ``raw`` keeps them).

Everything wrong is a :class:`Refused` naming the field (``attributes[session.id]: missing``);
the caller prefixes the log record's locator (``resourceLogs[0].scopeLogs[1].logRecords[3]``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sediment.ingest import TranslationError
from sediment.ingest.reading.json_text import Flaw, FlawedObject, first_flaw

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
UINT64_MAX: Final = 2**64 - 1
VALUE_KINDS: Final = ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue",
                      "bytesValue")
_DECIMAL: Final = re.compile(r"-?[0-9]+")
_UNSIGNED: Final = re.compile(r"[0-9]+")
_SPECIAL_DOUBLES: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


EVENT_NAME: Final = "event.name"


class Refused(TranslationError):
    """One log record cannot be read as its event says: the message names the field."""


def json_kind(value: Any) -> str:
    """A value's JSON type, as messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float | Flaw):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def shown(value: str, limit: int = 60) -> str:
    """A value from input quoted for a message, shortened."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


# --- values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """One decoded AnyValue: its kind (``string``, ``bool``, ``int``, ``double``, ``array``,
    ``kvlist``, ``bytes``, or ``empty`` for an AnyValue holding none) and, for the scalar kinds,
    its value."""

    kind: str
    value: Any = None


def decode_value(any_value: Any, where: str) -> Value:
    """An AnyValue read exactly; a malformed one is :class:`Refused` at ``where``."""
    if any_value is None:
        return Value("empty")
    if not isinstance(any_value, dict):
        raise Refused(f"{where}: expected an AnyValue object, got {json_kind(any_value)}")
    present = [kind for kind in VALUE_KINDS if kind in any_value]
    if not present:
        return Value("empty")
    if len(present) > 1:
        raise Refused(f"{where}: holds more than one value ({', '.join(present)})")
    (kind,) = present
    raw = any_value[kind]
    name = kind.removesuffix("Value")
    if kind == "stringValue":
        if not isinstance(raw, str):
            raise Refused(f"{where}: stringValue must be a string, got {json_kind(raw)}")
        return Value(name, raw)
    if kind == "boolValue":
        if not isinstance(raw, bool):
            raise Refused(f"{where}: boolValue must be true or false, got {json_kind(raw)}")
        return Value(name, raw)
    if kind == "intValue":
        number = _int64(raw)
        if number is None:
            raise Refused(f"{where}: intValue must be a signed 64-bit integer (a decimal string or an integer), "
                          f"got {shown(str(raw)) if isinstance(raw, str) else json_kind(raw)}")
        return Value(name, number)
    if kind == "doubleValue":
        if isinstance(raw, str) and raw in _SPECIAL_DOUBLES:
            return Value(name, _SPECIAL_DOUBLES[raw])
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise Refused(f"{where}: doubleValue must be a number, got {json_kind(raw)}")
        return Value(name, float(raw))
    return Value(name)


def _int64(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        number = raw
    elif isinstance(raw, str) and _DECIMAL.fullmatch(raw) and len(raw) <= 21:
        number = int(raw)
    else:
        return None
    return number if INT64_MIN <= number <= INT64_MAX else None


# --- attributes -----------------------------------------------------------------------------


class Attributes:
    """An attribute list, read lazily: a malformed list, or a key given twice, is refused when
    the record is read, so a record nobody reads is never refused for it."""

    def __init__(self, items: Any, where: str) -> None:
        self.where = where
        self._values: dict[str, Any] = {}
        self._twice: set[str] = set()
        self._error: str | None = None
        if items is None:
            return
        if not isinstance(items, list):
            self._error = f"{where}: expected an array, got {json_kind(items)}"
            return
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                shape = json_kind(item) if not isinstance(item, dict) else "an object without a string key"
                self._error = self._error or f"{where}[{index}]: expected {{key, value}}, got {shape}"
                continue
            key = item["key"]
            if key in self._values:
                self._twice.add(key)
            self._values[key] = item.get("value")

    def check(self) -> None:
        """Refuse a malformed list (every typed read checks it first)."""
        if self._error is not None:
            raise Refused(self._error)

    def _value(self, key: str) -> Value:
        self.check()
        if key in self._twice:
            raise Refused(f"{self.where}[{key}]: the key is given twice")
        if key not in self._values:
            return Value("empty")
        return decode_value(self._values[key], f"{self.where}[{key}]")

    def loose_text(self, key: str) -> str | None:
        """The key's string value when it has one, else None; never refuses (to name an event)."""
        value = self._values.get(key)
        if isinstance(value, dict) and isinstance(value.get("stringValue"), str):
            text: str = value["stringValue"]
            return text
        return None

    def _typed(self, key: str, kind: str, required: bool) -> Any:
        value = self._value(key)
        if value.kind == "empty":
            if required:
                raise Refused(f"{self.where}[{key}]: missing")
            return None
        if value.kind != kind:
            raise Refused(f"{self.where}[{key}]: expected a {kind}Value, got {value.kind}Value")
        return value.value

    def text(self, key: str, *, required: bool = False) -> str | None:
        """A ``stringValue`` (``required``: present, though possibly ``""``)."""
        found: str | None = self._typed(key, "string", required)
        return found

    def identifier(self, key: str, *, required: bool = False) -> str | None:
        """A ``stringValue`` naming something: a blank one is absent (``required``: refused)."""
        found = self.text(key)
        if found is None or not found.strip():
            if required:
                raise Refused(f"{self.where}[{key}]: missing" if found is None else f"{self.where}[{key}]: empty")
            return None
        return found

    def boolean(self, key: str, *, required: bool = False) -> bool | None:
        found: bool | None = self._typed(key, "bool", required)
        return found

    def integer(self, key: str, *, required: bool = False) -> int | None:
        found: int | None = self._typed(key, "int", required)
        return found

    def number(self, key: str, *, required: bool = False) -> int | float | None:
        """An ``intValue`` or a ``doubleValue`` (Copilot sends a rate of 1 as ``intValue``)."""
        value = self._value(key)
        if value.kind == "empty":
            if required:
                raise Refused(f"{self.where}[{key}]: missing")
            return None
        if value.kind not in ("int", "double"):
            raise Refused(f"{self.where}[{key}]: expected an intValue or a doubleValue, got {value.kind}Value")
        found: int | float = value.value
        return found


# --- times ----------------------------------------------------------------------------------


def event_time(record: dict[str, Any], field: str) -> datetime | None:
    """The record's ``field`` (nanoseconds since the epoch) as an aware UTC datetime; None when it
    is absent or ``0`` (unset). Anything else that is not an unsigned 64-bit count is refused."""
    raw = record.get(field)
    if raw is None:
        return None
    if isinstance(raw, bool) or not (isinstance(raw, int) or (isinstance(raw, str) and _UNSIGNED.fullmatch(raw))):
        got = shown(raw) if isinstance(raw, str) else json_kind(raw)
        raise Refused(f"{field}: expected unsigned nanoseconds since the epoch (a decimal string), got {got}")
    nanos = int(raw)
    if nanos < 0 or nanos > UINT64_MAX:
        raise Refused(f"{field}: {raw} is outside the unsigned 64-bit range")
    if nanos == 0:
        return None
    return _EPOCH + timedelta(microseconds=nanos // 1000)  # 2^64 ns is in 2554: always a datetime


# --- the envelope ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LogRecord:
    """One log record of a batch: where it is, the record as sent, and its attribute lists."""

    position: int
    locator: str
    record: dict[str, Any]
    attributes: Attributes
    resource: Attributes

    def check_body(self) -> None:
        """The body named the event (:attr:`body_text`): its AnyValue must hold that
        ``stringValue`` alone (two kinds are :class:`Refused` as ``body: …``)."""
        decode_value(self.record.get("body"), "body")

    def check_event_name(self) -> None:
        """The ``event.name`` attribute names the event: one ``stringValue``, given once."""
        self.attributes.text(EVENT_NAME, required=True)

    @property
    def body_text(self) -> str | None:
        """The body's ``stringValue``, when it is one (never refuses: it routes the record, and
        the route checks it with :meth:`check_body`)."""
        body = self.record.get("body")
        if isinstance(body, dict) and isinstance(body.get("stringValue"), str):
            text: str = body["stringValue"]
            return text
        return None


@dataclass
class Envelope:
    """What a batch held: its log records, the problems of the parts that could not be read
    (each a locator and what is wrong), and how many log records it listed."""

    items: list[LogRecord | str]
    elements: int = 0

    @property
    def records(self) -> list[LogRecord]:
        return [item for item in self.items if isinstance(item, LogRecord)]


def _repeated(container: dict[str, Any], key: str, where: str) -> list[Any] | str:
    """A repeated field: its list, ``[]`` when absent or null, or the problem."""
    value = container.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        return f"{where}.{key}: expected an array, got {json_kind(value)}"
    return value


def _object_problem(value: Any, where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where}: expected an object, got {json_kind(value)}"
    if isinstance(value, FlawedObject):
        return f"{where}: {value.problem}"
    return None


def read_envelope(batch: dict[str, Any]) -> Envelope:
    """Walk ``resourceLogs`` → ``scopeLogs`` → ``logRecords``; a bad part fails alone.

    The batch itself must be an OTLP logs export: a batch without ``resourceLogs`` (a Claude
    Code transcript line, a span export), or whose ``resourceLogs`` is not an array, is refused
    whole (:class:`~sediment.ingest.TranslationError`).
    """
    if isinstance(batch, FlawedObject):
        raise TranslationError(f"record: {batch.problem}")
    if "resourceLogs" not in batch:
        raise TranslationError("resourceLogs: missing: not an OTLP/JSON logs export")
    resource_logs = _repeated(batch, "resourceLogs", "record")
    if isinstance(resource_logs, str):
        raise TranslationError(resource_logs.removeprefix("record."))
    envelope = Envelope([])
    for i, resource_log in enumerate(resource_logs):
        where = f"resourceLogs[{i}]"
        problem = _object_problem(resource_log, where)
        resource = resource_log.get("resource") if problem is None else None
        if problem is None and resource is not None:
            problem = _object_problem(resource, f"{where}.resource")
            flaw = first_flaw(resource) if problem is None else None
            problem = problem or (f"{where}.resource: {flaw}" if flaw else None)
        scope_logs = _repeated(resource_log, "scopeLogs", where) if problem is None else []
        if isinstance(scope_logs, str):
            problem = scope_logs
        if problem is not None:
            envelope.items.append(problem)
            continue
        resource_attributes = Attributes(resource.get("attributes") if resource else None, "resource.attributes")
        for j, scope_log in enumerate(scope_logs):
            scope_where = f"{where}.scopeLogs[{j}]"
            problem = _object_problem(scope_log, scope_where)
            log_records = _repeated(scope_log, "logRecords", scope_where) if problem is None else []
            if isinstance(log_records, str):
                problem = log_records
            if problem is not None:
                envelope.items.append(problem)
                continue
            for k, record in enumerate(log_records):
                envelope.elements += 1
                locator = f"{scope_where}.logRecords[{k}]"
                problem = _object_problem(record, locator)
                flaw = first_flaw(record) if problem is None else None
                if problem is not None or flaw is not None:
                    envelope.items.append(problem or f"{locator}: {flaw}")
                    continue
                envelope.items.append(LogRecord(envelope.elements - 1, locator, record,
                                                Attributes(record.get("attributes"), "attributes"),
                                                resource_attributes))
    return envelope

