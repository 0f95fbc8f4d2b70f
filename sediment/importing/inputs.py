"""What a library import reads: canonical JSONL written by Sediment itself, or a source format
read by its importer plugin (:mod:`sediment.importing.run`).

Every refusal is one line naming the file, the line and the field; the good records around a
bad one are still imported.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

import orjson

from sediment.ingest.reading import compressed
from sediment.ingest.reading.wrong_format import FormatWatch
from sediment.trajectory.record import NotJsonRecord, Trajectory, TrajectoryError, from_json

if TYPE_CHECKING:
    from sediment.trajectory.store_source import StoreSource

CANONICAL = "canonical-jsonl"
"""Canonical ``Trajectory`` records, one JSON object a line (plain, gzip or Zstandard): what a
library's shards and ``all.jsonl.gz`` hold, so one library can be imported into another."""


MIB: Final = 1 << 20
MAX_LINE_BYTES: Final = 64 * MIB
"""The longest canonical line read, newline excluded (``sediment ingest``'s limit too): a longer
one is refused in one line and read past in chunks, never held whole."""
MAX_INFLATION: Final = 200
"""A gzip or Zstandard input may inflate to at most this many times the compressed bytes read so
far (once past :data:`MAX_LINE_BYTES`): beyond it the file is a decompression bomb, refused in one
line. Tighter than ``sediment ingest``'s bound: canonical records do not replay one another."""
_SKIP_CHUNK: Final = MIB


class _Input:
    """One input file read a bounded line at a time; a compressed one (gzip or Zstandard, told by
    its magic bytes) is inflated as it is read, watched for bombs."""

    def __init__(self, path: Path, max_line: int, max_inflation: int) -> None:
        self.path, self.max_line = path, max_line
        self.handle: IO[bytes] = compressed.open_input(path, max_inflation=max_inflation, floor=max_line)
        self.number = 0  # the line being read

    def close(self) -> None:
        self.handle.close()

    def _read(self, size: int) -> bytes:
        return self.handle.readline(size)

    def lines(self, problems: list[str]) -> Iterator[tuple[int, bytes]]:
        """Numbered lines of at most ``max_line`` bytes; a longer line is one problem, read past."""
        while True:
            self.number += 1
            line = self._read(self.max_line + 1)
            if not line:
                return
            if len(line) > self.max_line and not line.endswith(b"\n"):
                while (chunk := self._read(_SKIP_CHUNK)) and not chunk.endswith(b"\n"):
                    pass
                problems.append(f"{self.path}:{self.number}: line longer than {_size(self.max_line)}")
                continue
            yield self.number, line


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit} bytes"


def read_canonical(paths: Sequence[Path], problems: list[str], known: Container[str] = (),
                   skipped: list[str] | None = None, *, max_line: int = MAX_LINE_BYTES,
                   max_inflation: int = MAX_INFLATION) -> Iterator[Trajectory]:
    """Stream canonical records, each parsed and validated; append a problem line (file, line,
    field) for each line that is not a valid record. A line whose ``trajectory_id`` is in
    ``known`` (already in the library) is not parsed further: its id goes to ``skipped``.

    A line longer than ``max_line`` is one problem and the next line is read; a file that cannot
    be read on (corrupt or truncated gzip or Zstandard data, a bad checksum, a compressed file
    inflating past ``max_inflation`` times its compressed bytes) is one problem naming the line reached, and
    the records before it are kept."""
    for path in paths:
        try:
            source = _Input(path, max_line, max_inflation)
        except compressed.InputUnreadable as exc:
            problems.append(f"{path}:1: {exc}")
            continue
        except OSError as exc:
            problems.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        watch, held = FormatWatch(), len(problems)
        try:
            for number, line in source.lines(problems):
                watch.line(line)
                if not line.strip():
                    continue
                if known:
                    tid = _trajectory_id(line)
                    if tid is not None and tid in known:
                        watch.saw(syntax=False)
                        if skipped is not None:
                            skipped.append(tid)
                        continue
                try:
                    record = from_json(line.rstrip(b"\r\n"))
                except TrajectoryError as exc:
                    watch.saw(syntax=isinstance(exc, NotJsonRecord))
                    problems.append(f"{path}:{number}: {exc}")
                    continue
                watch.saw(syntax=False)
                yield record
        except compressed.InputUnreadable as exc:
            problems.append(f"{path}:{source.number}: {exc}")
        else:
            wrong = watch.verdict()
            if wrong is not None:  # another format (a YAML file, say): one problem, not one per line
                del problems[held:]
                problems.append(f"{path}: {wrong}")
        finally:
            source.close()


def _trajectory_id(line: bytes) -> str | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    tid = value.get("trajectory_id") if isinstance(value, dict) else None
    return tid if isinstance(tid, str) else None


def known_formats() -> list[str]:
    """``canonical-jsonl`` and the format of every installed importer plugin."""
    from sediment.host.registry import load_registry

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
    from sediment.importing.run import import_records

    yield from import_records(format, paths, on_refusal=lambda refusal: problems.append(str(refusal)))


def store_records(format: str, source: StoreSource, problems: list[str]) -> Iterator[Trajectory]:
    """The records the importer of ``format`` reads from the fact store's Rollouts, each
    validated; every refusal goes to ``problems``."""
    from sediment.importing.run import import_store_results
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
