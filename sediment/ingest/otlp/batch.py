"""What every OTLP event translator shares: the batch it reads, how it declines a record, and the
reads of the identity every Fact carries (Session, user, event time)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sediment.ingest.facts_jsonl import PENDING_ID, build_fact, with_natural_id
from sediment.ingest.otlp.envelope import LogRecord, Refused, event_time
from sediment.model.facts import FactModel

_F = TypeVar("_F", bound=FactModel)

SESSION: str = "session.id"
USER: str = "user.id"


class Skip(Exception):
    """A record declined on purpose, with its reason (counted under ``skipped``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Batch:
    """One batch being translated: the acting org, the capture time, and its log records (the
    translators that join a decision to its tool result look the result up here)."""

    org_id: str
    captured_at: datetime
    records: list[LogRecord]
    #: Positions of the tool-result records a decision was joined to.
    joined: set[int] = field(default_factory=set)
    _indexes: dict[str, dict[str, LogRecord]] = field(default_factory=dict)

    def index(self, name: str, build: Callable[[list[LogRecord]], dict[str, LogRecord]]) -> dict[str, LogRecord]:
        """A lookup built once per batch by ``build(records)`` and kept under ``name``."""
        if name not in self._indexes:
            self._indexes[name] = build(self.records)
        return self._indexes[name]


@dataclass(frozen=True)
class Emitted:
    """The Facts one record became, and the warnings it raised."""

    facts: tuple[FactModel, ...]
    warnings: tuple[str, ...] = ()


def session_of(record: LogRecord, key: str = SESSION, *, resource_only: bool = False) -> str:
    """The Session id: the record's attribute ``key``, else the resource's (only the resource's
    with ``resource_only``). A blank or absent one is refused: placeholder Sessions are banned."""
    if not resource_only:
        own = record.attributes.identifier(key)
        if own is not None:
            return own
    found = record.resource.identifier(key)
    if found is None:
        where = "resource.attributes" if resource_only else "attributes"
        also = "" if resource_only else " (nor in resource.attributes)"
        raise Refused(f"{where}[{key}]: missing{also}")
    return found


def user_of(record: LogRecord, *, record_too: bool) -> str | None:
    """The user id: the resource's ``user.id`` (what ``OTEL_RESOURCE_ATTRIBUTES`` sets), else,
    with ``record_too``, the record's; blank is none."""
    found = record.resource.identifier(USER)
    if found is None and record_too:
        found = record.attributes.identifier(USER)
    return found


def occurred(record: LogRecord, *, observed_too: bool = False) -> datetime:
    """The event time: ``timeUnixNano`` (with ``observed_too``, else ``observedTimeUnixNano``:
    Codex leaves the first at 0). Never the ingest time: without one the record is refused."""
    found = event_time(record.record, "timeUnixNano")
    if found is None and observed_too:
        found = event_time(record.record, "observedTimeUnixNano")
        if found is None:
            raise Refused("timeUnixNano: missing or 0, and so is observedTimeUnixNano")
    if found is None:
        raise Refused("timeUnixNano: missing or 0 (unset); the event time is required")
    return found


def build(model: type[_F], fields: Mapping[str, Any], paths: Mapping[str, str], id_field: str) -> _F:
    """The Fact, validated (a failure names the wire field ``paths`` maps its field to), with
    its id derived from its natural key."""
    fact = build_fact(model, {id_field: PENDING_ID, **fields}, paths)
    return with_natural_id(fact, id_field)
