"""Translators from real wire formats to Facts, one module per source.

Every translator is a pure function from one parsed record (plus the acting ``org_id`` and
the capture time) to a :class:`Translation`: the Facts it yields and, when it declines
the record on purpose, the reason. Malformed input raises :class:`TranslationError` with a
message naming the offending field; the command layer adds the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sediment.errors import ExitCode, SedimentError

if TYPE_CHECKING:  # only an annotation: importing the Fact models (and sqlalchemy) waits for a translator
    from sediment.model.facts import FactModel


class TranslationError(ValueError):
    """A record could not be translated; the message names the field."""


class IngestError(SedimentError):
    """At least one input line failed to ingest (the others were still ingested)."""

    exit_code = ExitCode.INPUT


@dataclass(frozen=True)
class Translation:
    """The Facts one record became, or the reason it was skipped on purpose.

    A record that is a batch of elements (an OTLP export's log records) reports per element:
    ``skips`` holds one reason per element declined on purpose, ``problems`` one line per
    element refused (its locator, field and what is wrong; the command adds the file and line),
    and ``elements`` how many the batch held. The Facts of the other elements are kept.
    """

    facts: tuple[FactModel, ...] = ()
    skipped: str | None = None
    warnings: tuple[str, ...] = field(default=())
    skips: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    elements: int = 0

    @classmethod
    def skip(cls, reason: str) -> Translation:
        return cls(skipped=reason)
