"""What a library import reads: canonical JSONL written by Sediment itself, or a source format
read by its importer plugin (:mod:`sediment.trajectory.importing`).

Every refusal is one line naming the file, the line and the field; the good records around a
bad one are still imported.
"""

from __future__ import annotations

import gzip
from collections.abc import Container, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import orjson

from sediment.trajectory.record import Trajectory, TrajectoryError, from_json

if TYPE_CHECKING:
    from sediment.trajectory.store_source import StoreSource

CANONICAL = "canonical-jsonl"
"""Canonical ``Trajectory`` records, one JSON object a line (``.jsonl`` or ``.jsonl.gz``): what a
library's shards and ``all.jsonl.gz`` hold, so one library can be imported into another."""


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def read_canonical(paths: Sequence[Path], problems: list[str], known: Container[str] = (),
                   skipped: list[str] | None = None) -> Iterator[Trajectory]:
    """Stream canonical records, each parsed and validated; append a problem line (file, line,
    field) for each line that is not a valid record. A line whose ``trajectory_id`` is in
    ``known`` (already in the library) is not parsed further: its id goes to ``skipped``."""
    for path in paths:
        try:
            handle = _open(path)
        except OSError as exc:
            problems.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        with handle:
            try:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    if known:
                        tid = _trajectory_id(line)
                        if tid is not None and tid in known:
                            if skipped is not None:
                                skipped.append(tid)
                            continue
                    try:
                        yield from_json(line.rstrip(b"\r\n"))
                    except TrajectoryError as exc:
                        problems.append(f"{path}:{number}: {exc}")
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                problems.append(f"{path}: unreadable: {exc}")


def _trajectory_id(line: bytes) -> str | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    tid = value.get("trajectory_id") if isinstance(value, dict) else None
    return tid if isinstance(tid, str) else None


def known_formats() -> list[str]:
    """``canonical-jsonl`` and the format of every installed importer plugin."""
    from sediment.export.registry import load_registry

    return sorted({CANONICAL, *load_registry().importers})


def check_format(format: str) -> None:
    from sediment.errors import UsageError

    known = known_formats()
    if format not in known:
        raise UsageError(f"unknown trajectory format {format!r}; known: {', '.join(known)}")


def records_for(format: str, paths: Sequence[Path], problems: list[str], known: Container[str] = (),
                skipped: list[str] | None = None) -> Iterator[Trajectory]:
    """The records of ``paths`` in ``format``, each validated; every refusal (file, line, field)
    goes to ``problems``. Canonical lines whose id is ``known`` are skipped unparsed (``skipped``)."""
    check_format(format)
    if format == CANONICAL:
        yield from read_canonical(paths, problems, known, skipped)
        return
    from sediment.trajectory.importing import import_records

    yield from import_records(format, paths, on_refusal=lambda refusal: problems.append(str(refusal)))


def store_records(format: str, source: StoreSource, problems: list[str]) -> Iterator[Trajectory]:
    """The records the importer of ``format`` reads from the fact store's Rollouts, each
    validated; every refusal goes to ``problems``."""
    from sediment.trajectory.importing import import_store_results
    from sediment.trajectory.sources import ImportRefusal

    if format == CANONICAL:
        from sediment.errors import UsageError

        raise UsageError(f"{CANONICAL} is read from files, not from the fact store; drop --from-store")
    results = import_store_results(format, source)

    def records() -> Iterator[Trajectory]:
        for item in results:
            if isinstance(item, ImportRefusal):
                problems.append(str(item))
            else:
                yield item

    return records()
