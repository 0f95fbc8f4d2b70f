"""OTLP/JSON log exports from agent clients (``sediment ingest otlp``) → DeveloperDecision,
EditObservation, RejectedEdit and RetryLinkage Facts (docs/evidence.md).

A record of the input is one batch (an ``ExportLogsServiceRequest``, :mod:`.envelope`); each of
its log records is read on its own, by the translator its event names:

- GitHub Copilot Chat (:mod:`.copilot`): ``copilot_chat.edit.feedback``,
  ``copilot_chat.inline.done``, ``copilot_chat.edit.survival`` (named by ``event.name``) →
  DeveloperDecision;
- Claude Code (:mod:`.claude_code`): ``claude_code.tool_decision`` joined to its
  ``claude_code.tool_result`` (named by the body) → DeveloperDecision;
- Codex CLI (:mod:`.codex`): ``codex.tool_decision`` joined to its ``codex.tool_result`` (named
  by ``event.name``) → one DeveloperDecision per patched file;
- a shim for Cursor's hooks or pi (:mod:`.shims`): ``sediment.tool_decision`` (body) →
  DeveloperDecision;
- Sediment's transcript extractor (:mod:`.transcripts`): ``sediment.edit_observation``,
  ``sediment.rejected_edit``, ``sediment.retry_linkage`` (body) → EditObservation,
  RejectedEdit, RetryLinkage.

Each log record ends one of three ways, and every one is accounted for:

- its Facts are stored (ids derived from their natural keys, so re-ingesting stores nothing new);
- it is skipped on purpose, counted by reason: ``unknown_event:<name>`` (an event no translator
  reads, named by its ``event.name``, else its body when that is an event-like name, else
  ``(unnamed)``), ``tool_result_joined`` / ``tool_result_unjoined`` (a tool result, joined to a
  decision of its batch or not: it is never a Fact itself), and the translators' own
  (``not_an_edit_tool:<tool>``, ``not_a_decision:<value>``, ``survival_not_apply_patch``,
  ``unknown_agent:<name>``, ``not_a_retry_tool:<tool>``);
- it is refused: one problem line naming its locator and field
  (``resourceLogs[0].scopeLogs[0].logRecords[3]: attributes[session.id]: missing``). Nothing of
  it is stored; every other record of the batch still is.

A batch's Facts are stored in event-time order, so the order of the records inside a batch never
matters; of two Facts with one natural key (a redelivery) in different batches, the one stored
first is kept, as on every ingest path.

Values are never coerced (:mod:`.envelope`): a field of the wrong kind refuses its record, while
a value of the right kind outside a client's vocabulary is a named skip.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from sediment.ingest import Translation, TranslationError
from sediment.ingest.facts_jsonl import acting_org
from sediment.ingest.otlp import claude_code, codex, copilot, shims, transcripts
from sediment.ingest.otlp.batch import Batch, Emitted, Skip
from sediment.ingest.otlp.envelope import EVENT_NAME, LogRecord, read_envelope
from sediment.model.facts import FactModel
from sediment.store.keys import table_and_key

__all__ = ["EVENTS", "SKIP_REASONS", "translate_otlp"]

Handler = Callable[[LogRecord, Batch], Emitted]

def _for_event(translate: Callable[[LogRecord, str, Batch], Emitted], event: str) -> Handler:
    return lambda record, batch: translate(record, event, batch)


BODY_EVENTS: Final[dict[str, Handler]] = {
    claude_code.DECISION: claude_code.translate,
    shims.DECISION: shims.translate,
    **{event: _for_event(transcripts.translate, event) for event in transcripts.EVENTS},
}
"""Events named by the record's body."""

ATTRIBUTE_EVENTS: Final[dict[str, Handler]] = {
    codex.DECISION: codex.translate,
    **{event: _for_event(copilot.translate, event) for event in copilot.EVENTS},
}
"""Events named by the record's ``event.name`` attribute."""

RESULT_EVENTS: Final = (claude_code.RESULT, codex.RESULT)
"""Tool-result events: read by the decisions they join, never Facts themselves."""

EVENTS: Final[tuple[str, ...]] = (*BODY_EVENTS, *ATTRIBUTE_EVENTS, *RESULT_EVENTS)

SKIP_REASONS: Final[tuple[str, ...]] = (
    "unknown_event:<name>", "tool_result_joined", "tool_result_unjoined", "not_an_edit_tool:<tool>",
    "not_a_decision:<value>", "survival_not_apply_patch", "unknown_agent:<name>", "not_a_retry_tool:<tool>",
)
"""Why a log record is skipped on purpose (``<…>`` is a value from the record)."""

_EVENT_LIKE: Final = re.compile(r"[A-Za-z0-9_.:-]{1,100}")


@dataclass(frozen=True)
class Route:
    """Where a log record goes: the event it names, and its translator or tool-result check."""

    event: str
    handler: Handler | None = None
    result_check: Callable[[LogRecord], None] | None = None
    #: What named the event, checked exactly before the record is read: the body or ``event.name``.
    named_by: Callable[[LogRecord], None] | None = None


def route(record: LogRecord) -> Route:
    """A record's event: a body event, else an ``event.name`` event (each only where its client
    names it); an unknown one is named by its ``event.name``, else its body when that looks like
    an event name, else ``(unnamed)``."""
    body = record.body_text
    if body is not None and body in BODY_EVENTS:
        return Route(body, handler=BODY_EVENTS[body], named_by=LogRecord.check_body)
    if body == claude_code.RESULT:
        return Route(body, result_check=claude_code.check_result, named_by=LogRecord.check_body)
    name = record.attributes.loose_text(EVENT_NAME)
    if name is not None and name in ATTRIBUTE_EVENTS:
        return Route(name, handler=ATTRIBUTE_EVENTS[name], named_by=LogRecord.check_event_name)
    if name == codex.RESULT:
        return Route(name, result_check=codex.check_result, named_by=LogRecord.check_event_name)
    if name is not None:
        return Route(name)
    return Route(body if body is not None and _EVENT_LIKE.fullmatch(body) else "(unnamed)")


def _stored_order(fact: FactModel) -> tuple[Any, ...]:
    """Facts of a batch are stored in event-time order (then by table and key), so where a record
    sits in its batch never decides which of two Facts with one key is kept."""
    table, fact_id, key = table_and_key(fact)
    return getattr(fact, "occurred_at"), table, key, fact_id  # noqa: B009


def translate_otlp(batch: dict[str, Any], *, org_id: str, captured_at: datetime) -> Translation:
    """One OTLP/JSON logs export → the Facts of its log records, and the skips and problems of
    the others (see the module docstring). A batch that is not an OTLP logs export at all is a
    :class:`~sediment.ingest.TranslationError`."""
    envelope = read_envelope(batch)
    context = Batch(acting_org(org_id), captured_at, envelope.records)
    facts: list[FactModel] = []
    skips: list[str] = []
    warnings: list[str] = []
    problems: list[str] = []
    results: list[LogRecord] = []
    for item in envelope.items:
        if isinstance(item, str):
            problems.append(item)
            continue
        where = route(item)
        try:
            if where.named_by is not None:
                where.named_by(item)
            if where.result_check is not None:
                where.result_check(item)
                results.append(item)
                continue
            if where.handler is None:
                skips.append(f"unknown_event:{where.event}")
                continue
            emitted = where.handler(item, context)
        except Skip as skip:
            skips.append(skip.reason)
            continue
        except (TranslationError, ValidationError) as exc:
            problems.append(f"{item.locator}: {exc}")
            continue
        facts.extend(emitted.facts)
        warnings.extend(emitted.warnings)
    skips.extend("tool_result_joined" if r.position in context.joined else "tool_result_unjoined" for r in results)
    facts.sort(key=_stored_order)
    return Translation(facts=tuple(facts), warnings=tuple(warnings), skips=tuple(skips), problems=tuple(problems),
                       elements=envelope.elements)
