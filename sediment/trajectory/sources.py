"""Where an import's records come from: canonical JSONL written by Sediment itself, or a
source format read by an importer plugin.

Every refusal is one line naming the file, the line and the field; the good records around a
bad one are still imported.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

CANONICAL = "canonical-jsonl"
"""Canonical ``Trajectory`` records, one JSON object a line (``.jsonl`` or ``.jsonl.gz``): what a
library's shards and ``all.jsonl.gz`` hold, so one library can be imported into another."""


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def read_canonical(paths: Sequence[Path], problems: list[str]) -> Iterator[dict[str, Any]]:
    """Stream canonical records; append a problem line for each line that is not one."""
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
                    try:
                        value = orjson.loads(line)
                    except orjson.JSONDecodeError as exc:
                        problems.append(f"{path}:{number}: not JSON: {exc}")
                        continue
                    if not isinstance(value, dict):
                        problems.append(f"{path}:{number}: not a JSON object")
                        continue
                    tid = value.get("trajectory_id")
                    if not isinstance(tid, str) or not tid:
                        problems.append(f"{path}:{number}: trajectory_id: missing or not a non-empty string")
                        continue
                    yield value
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                problems.append(f"{path}: unreadable: {exc}")


def known_formats() -> list[str]:
    return [CANONICAL]


def check_format(format: str) -> None:
    from sediment.errors import UsageError

    if format not in known_formats():
        raise UsageError(f"unknown trajectory format {format!r}; known: {', '.join(known_formats())}")


def records_for(format: str, paths: Sequence[Path], problems: list[str]) -> Iterator[Any]:
    """The records of ``paths`` in ``format``: canonical JSONL here, any other format through
    the importer plugins."""
    check_format(format)
    yield from read_canonical(paths, problems)
