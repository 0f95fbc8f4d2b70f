"""Read input files record by record, translate, and append to the store; nothing is lost.

A file is one JSON document (an object is one record, an array holds records) or JSON
Lines. A bad record is reported with its file and line (or array index) and ingests
nothing; every other record still ingests.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sediment.facts import FactModel
from sediment.ingest import Translation, TranslationError
from sediment.store import FactStore

WHOLE_FILE_LIMIT = 64 * 1024 * 1024
BATCH = 500


@dataclass(frozen=True)
class InputProblem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class IngestReport:
    records: int = 0
    stored: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    problems: list[InputProblem] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "records": self.records, "stored": dict(sorted(self.stored.items())),
            "duplicates": dict(sorted(self.duplicates.items())), "skipped": dict(sorted(self.skipped.items())),
            "warnings": dict(sorted(self.warnings.items())), "failed": len(self.problems),
        }


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8")


def records(path: str) -> Iterator[tuple[int, Any | Exception]]:
    """``(line or index, record)`` pairs; an unparseable line yields its exception instead."""
    text = _read_text(path)
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) and len(text) <= WHOLE_FILE_LIMIT:
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        else:
            if isinstance(document, list):
                yield from enumerate(document, start=1)
                return
            yield 1, document
            return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            yield number, exc


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        return f"{where}: {first['msg']}"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} (column {exc.colno})"
    return str(exc)


def ingest_files(
    paths: Iterable[str],
    translate: Callable[[Any], Translation],
    store: FactStore,
) -> IngestReport:
    """Translate every record of every file and append the Facts in batches."""
    report = IngestReport()
    for path in paths:
        try:
            stream = list(records(path))
        except (OSError, UnicodeDecodeError) as exc:
            report.problems.append(InputProblem(path, 0, f"cannot read: {exc}"))
            continue
        pending: list[FactModel] = []
        for number, record in stream:
            report.records += 1
            try:
                if isinstance(record, Exception):
                    raise record
                if not isinstance(record, dict):
                    raise TranslationError(f"a record must be a JSON object, not {type(record).__name__}")
                translation = translate(record)
            except (TranslationError, ValidationError, ValueError, TypeError, KeyError) as exc:
                report.problems.append(InputProblem(path, number, _describe(exc)))
                continue
            if translation.skipped:
                report.skipped[translation.skipped] += 1
            report.warnings.update(translation.warnings)
            pending.extend(translation.facts)
            if len(pending) >= BATCH:
                _flush(store, pending, report)
        _flush(store, pending, report)
    return report


def _flush(store: FactStore, pending: list[Any], report: IngestReport) -> None:
    if pending:
        result = store.append(pending)
        report.stored.update(result.stored)
        report.duplicates.update(result.duplicates)
        pending.clear()
