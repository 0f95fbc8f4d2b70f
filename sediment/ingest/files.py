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
from typing import Any

import orjson
from pydantic import ValidationError

from sediment.facts import FactModel
from sediment.ingest import Translation, TranslationError
from sediment.store import FactStore

BATCH = 100


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


def records(path: str) -> Iterator[tuple[int, Any | Exception]]:
    """``(line or index, record)`` pairs, streamed; an unparseable line yields its exception.

    JSON Lines are read one line at a time (memory holds one record); a file whose first line
    is not a complete JSON value is read as one JSON document (an object, or an array of them).
    """
    handle = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    try:
        first = handle.readline()
        while first and not first.strip():
            first = handle.readline()
        if not first:
            return
        parsed = parse_line(first)
        rest = handle.readline()
        if isinstance(parsed, Exception) or (not rest.strip() and isinstance(parsed, list)):
            text = first + rest + handle.read()
            document = parse_line(text)
            if isinstance(document, list):
                yield from enumerate(document, start=1)
            elif not isinstance(document, Exception):
                yield 1, document
            else:  # neither one document nor a clean first line: report line by line
                for number, line in enumerate(text.splitlines(), start=1):
                    if line.strip():
                        yield number, parse_line(line)
            return
        yield 1, parsed
        number = 1
        line = rest
        while line:
            number += 1
            if line.strip():
                yield number, parse_line(line)
            line = handle.readline()
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def parse_line(line: str | bytes) -> Any | Exception:
    """One JSON value: orjson when it can, the standard parser for what orjson refuses
    (NaN / Infinity tokens, lone surrogate escapes), so nothing is lost."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            return json.loads(line)
        except ValueError as exc:
            return exc


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
        pending: list[FactModel] = []
        try:
            _ingest_stream(path, records(path), translate, store, report, pending)
        except OSError as exc:
            report.problems.append(InputProblem(path, 0, f"cannot read: {exc.strerror or exc}"))
        _flush(store, pending, report)
    return report


def _ingest_stream(path: str, stream: Iterable[tuple[int, Any]], translate: Callable[[Any], Translation],
                   store: FactStore, report: IngestReport, pending: list[FactModel]) -> None:
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


def _flush(store: FactStore, pending: list[Any], report: IngestReport) -> None:
    if pending:
        result = store.append(pending)
        report.stored.update(result.stored)
        report.duplicates.update(result.duplicates)
        pending.clear()
