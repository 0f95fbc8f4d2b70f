"""Read input files record by record, translate, and append to the store; nothing is lost.

A file is one JSON document (an object is one record, an array holds records) or JSON
Lines. A bad record is reported with its file and line (or array index) and ingests
nothing; every other record still ingests.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from sediment.facts import FactModel
from sediment.ingest import Translation, TranslationError
from sediment.parallel import ordered_chunks
from sediment.store import AppendResult, FactStore

BATCH = 100
READ_BUFFER = 4 * 1024 * 1024  # agent call logs have lines of megabytes


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

    def absorb(self, other: IngestReport) -> None:
        """Add a worker's counts and problems (its stored/duplicate counts come from the writes)."""
        self.records += other.records
        self.skipped.update(other.skipped)
        self.warnings.update(other.warnings)
        self.problems.extend(other.problems)

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
    handle = sys.stdin.buffer if path == "-" else open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115
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
    *,
    workers: int = 1,
) -> IngestReport:
    """Translate every record of every file and append the Facts in batches.

    With ``workers`` > 1, contiguous chunks of files are parsed, translated and encoded in
    forked processes; the parent writes their batches in file order (each chunk as soon as it
    and the ones before it are ready), so what is stored (and which redelivery counts as the
    duplicate) is the same as with one worker.
    """
    files = list(paths)
    if workers <= 1 or len(files) < 2:
        report = IngestReport()
        for path in files:
            _ingest_file(path, translate, lambda facts: _merge(report, store.append(facts)), report)
        return report
    spool = Path(tempfile.mkdtemp(prefix="sediment-ingest-"))
    try:
        def chunk_job(chunk: range) -> tuple[IngestReport, list[Path]]:
            report, batches = IngestReport(), list[Path]()

            def spill(facts: list[FactModel]) -> None:
                batch = spool / f"batch-{chunk.start:06d}-{len(batches):06d}.pickle"
                with batch.open("wb") as handle:
                    pickle.dump(store.prepare(facts), handle, protocol=pickle.HIGHEST_PROTOCOL)
                batches.append(batch)

            for index in chunk:
                _ingest_file(files[index], translate, spill, report)
            return report, batches

        total = IngestReport()
        for report, batches in ordered_chunks(chunk_job, len(files), workers):
            total.absorb(report)
            for batch in batches:
                with batch.open("rb") as handle:
                    _merge(total, store.write(pickle.load(handle)))
                batch.unlink()
        return total
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _merge(report: IngestReport, result: AppendResult) -> None:
    report.stored.update(result.stored)
    report.duplicates.update(result.duplicates)


def _ingest_file(path: str, translate: Callable[[Any], Translation], sink: Callable[[list[FactModel]], None],
                 report: IngestReport) -> None:
    pending: list[FactModel] = []
    try:
        _ingest_stream(path, records(path), translate, sink, report, pending)
    except OSError as exc:
        report.problems.append(InputProblem(path, 0, f"cannot read: {exc.strerror or exc}"))
    if pending:
        sink(pending)


def _ingest_stream(path: str, stream: Iterable[tuple[int, Any]], translate: Callable[[Any], Translation],
                   sink: Callable[[list[FactModel]], None], report: IngestReport, pending: list[FactModel]) -> None:
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
            sink(list(pending))
            pending.clear()


