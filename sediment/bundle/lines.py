"""The bundle's line scanner, shared by our reader and the upstream one: strict JSON, one
``{"record_json": "<canonical record>"}`` line at a time, file digests, and lines read back by
byte offset, and the byte-range scanner that checks every line of a file in parallel."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from sediment.errors import BundleError
from sediment.parallel import ordered_chunks
from sediment.records import decode_record, no_duplicate_keys


def strict_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token} outside a record")


def strict_loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=_reject_constant)


def inner_record(line: bytes) -> Any:
    """The record of one strict ``{"record_json": "<string>"}`` line (ValueError otherwise)."""
    outer = strict_loads(line.decode("ascii"))
    if not isinstance(outer, dict) or set(outer) != {"record_json"} or not isinstance(outer["record_json"], str):
        raise ValueError('a line must be exactly {"record_json": "<string>"}')
    return decode_record(outer["record_json"])


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def fast_record_json(line: bytes) -> str | None:
    """The record text of an already validated line, read with orjson (``None`` when it cannot
    be: the standard parser then reads the line)."""
    try:
        text = orjson.loads(line)["record_json"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return text if isinstance(text, str) else None


def fast_record(line: bytes) -> Any:
    """orjson's reading of an already validated line; ``None`` for records it cannot read
    losslessly (non-finite tokens, lone surrogates), which take the standard parser."""
    text = fast_record_json(line)
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


T = TypeVar("T")


@dataclass
class Piece(Generic[T]):
    """What one worker found in its byte range of a bundle file: the lines that start there
    (their offsets and check results), and the first line that failed its check, if any."""

    offsets: list[int]
    results: list[T]
    failed: int | None = None  # index (into offsets) of the first failing line


def read_line_at(path: Path, offset: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.readline()


def scan_lines(path: Path, size: int, workers: int, check: Callable[[bytes, int], T], *,
               closing: Callable[[], object] | None = None) -> tuple[list[Piece[T]], str]:
    """Cut ``path`` (``size`` bytes) into byte ranges; for each, a worker indexes the lines that
    start in it and checks each with ``check(line, number within the range)`` until one raises
    :class:`BundleError` (in ``workers`` processes when more than one), while this process
    computes the sha256. ``closing`` runs after each range is checked (in the process that
    checked it). The pieces, in file order, and the file's sha256."""

    def job(span: range) -> Piece[T]:
        piece: Piece[T] = Piece([], [])
        try:
            with open(path, "rb", buffering=1 << 20) as lines:
                position = span.start
                if position > 0:  # the line holding the byte before the span belongs to the span before
                    lines.seek(position - 1)
                    position += len(lines.readline()) - 1
                while position < span.stop:
                    line = lines.readline()
                    if not line:
                        break
                    piece.offsets.append(position)
                    position += len(line)
                    if piece.failed is None:
                        try:
                            piece.results.append(check(line, len(piece.offsets)))
                        except BundleError:
                            piece.failed = len(piece.offsets) - 1  # keep indexing, to count every row
        finally:
            if closing is not None:
                closing()
        return piece

    digests: list[str] = []
    pieces = list(ordered_chunks(job, size, workers, per_worker=4,
                                 meanwhile=lambda: digests.append(file_sha256(path))))
    return pieces, digests[0]


def report_first_failure(path: Path, file: str, pieces: list[Piece[T]], check: Callable[[bytes, int], T], *,
                         closing: Callable[[], object] | None = None) -> None:
    """Check the first failing line of ``pieces`` again, here, so that its :class:`BundleError`
    names its line number in the whole file; nothing when every line passed."""
    before = 0
    for piece in pieces:
        if piece.failed is not None:
            number = before + piece.failed + 1
            try:
                check(read_line_at(path, piece.offsets[piece.failed]), number)
            finally:
                if closing is not None:
                    closing()
            raise BundleError(f"{file} line {number} could not be read consistently")
        before += len(piece.offsets)
