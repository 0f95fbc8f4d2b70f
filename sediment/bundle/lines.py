"""The bundle's line scanner, shared by our reader and the upstream one: strict JSON, one
``{"record_json": "<canonical record>"}`` line at a time, file digests, and lines read back by
byte offset."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

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


def fast_record(line: bytes) -> Any:
    """orjson's reading of an already validated line; ``None`` for records it cannot read
    losslessly (non-finite tokens, lone surrogates), which take the standard parser."""
    try:
        return orjson.loads(orjson.loads(line)["record_json"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


@dataclass
class Piece:
    """What one worker found in its byte range of ``rollouts.jsonl``: the lines that start
    there (their offsets and keys), and the first line that failed its check, if any."""

    offsets: list[int]
    keys: list[tuple[str, str]]
    failed: int | None = None  # index (into offsets) of the first failing line


def read_line_at(path: Path, offset: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.readline()
