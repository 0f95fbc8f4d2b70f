"""Canonical record JSON: the lossless text form of Facts and derived artifacts.

Keys sorted at every level, compact separators, ASCII escapes (lone surrogates and NUL
survive as escapes), ``NaN`` / ``Infinity`` / ``-Infinity`` tokens allowed, datetimes as
UTC ISO-8601 with ``Z``. Used by the fact store and by bundles.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import BaseModel

from sediment.identifiers import render_datetime


def plain(value: Any, odd: list[bool] | None = None) -> Any:
    """A JSON-ready copy of ``value``: models as dicts in field order, datetimes as UTC text.

    Floats and strings are copied as they are (NaN and lone surrogates included), so the
    representation check sees exactly what would be emitted. ``odd``, when given, is appended
    to for what orjson would write otherwise than the canonical text (:func:`record_bytes`): a
    float it spells otherwise (``1e-05``, ``1e+16``, NaN, the infinities) and a value of a type
    this leaves as it is (a str or int subclass, an enum, anything unknown).
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value  # the common leaves first (exact types: a subclass takes the checks below)
    if kind is float:
        if odd is not None and orjson.dumps(value) != repr(value).encode("ascii"):
            odd.append(True)
        return value
    if kind is dict:
        return {key: plain(item, odd) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [plain(item, odd) for item in value]
    if isinstance(value, BaseModel):
        return {name: plain(getattr(value, name), odd) for name in type(value).model_fields}
    if isinstance(value, datetime):
        return render_datetime(value)
    if isinstance(value, Mapping):
        return {key: plain(item, odd) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, odd) for item in value]
    if odd is not None:
        odd.append(True)
    return value


#: The canonical encoders, without and with non-finite numbers (made once: ``json.dumps`` with
#: these settings would make one per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
_CANONICAL_NAN = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)


def canonical_json(value: Any, *, allow_nan: bool = False) -> str:
    """Sorted keys at every level, compact separators, ASCII escapes: the text digests and
    manifests are computed over. ``NaN`` / ``Infinity`` tokens only with ``allow_nan``."""
    return (_CANONICAL_NAN if allow_nan else _CANONICAL).encode(plain(value))


def sha256_hex(data: str | bytes) -> str:
    """The hex SHA-256 of ``data`` (text is hashed as UTF-8, lone surrogates kept)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def canonical_digest(value: Any, *, allow_nan: bool = False) -> str:
    """SHA-256 of :func:`canonical_json` — the one content digest of a value."""
    return sha256_hex(canonical_json(value, allow_nan=allow_nan))


def encode_record(value: Any) -> str:
    """The canonical record text of a model or plain value (non-finite numbers kept)."""
    return canonical_json(value, allow_nan=True)


def canonical_record_bytes(value: Any, *, inexact: bool = True) -> bytes:
    """:func:`encode_record`'s text, as ASCII bytes, of a value :func:`plain` gives back
    unchanged (dicts, lists, strings, numbers, booleans and None only), without copying it first.

    When the caller walked ``value`` and met only the exact JSON types and floats orjson spells
    as the canonical text does (``inexact`` False: :func:`record_bytes`' walk checks each float;
    the store's walk marks every float), orjson encodes it first, and its text is taken when
    every byte is ASCII below DEL: the two encoders then write the same text (sorted keys,
    compact separators, the same escapes). Anything else is written by the standard encoder: a
    float spelled otherwise (orjson writes NaN as null, ``1e-5`` for ``1e-05``), other characters
    (the canonical text escapes them), an integer beyond 64 bits, a lone surrogate, nesting
    deeper than orjson goes."""
    if not inexact:
        try:
            data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # orjson.JSONEncodeError included
            pass
        else:
            if data.isascii() and b"\x7f" not in data:
                return data
    return _CANONICAL_NAN.encode(value).encode("ascii")


def record_bytes(value: Any) -> bytes:
    """:func:`encode_record`'s text of any value (models and datetimes included), as ASCII bytes:
    made JSON-ready by :func:`plain`, which marks what orjson would write otherwise, then
    written by :func:`canonical_record_bytes`."""
    odd: list[bool] = []
    return canonical_record_bytes(plain(value, odd), inexact=bool(odd))


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def decode_record(text: str) -> Any:
    """Parse record text; duplicate keys and trailing data are errors.

    Canonical text (:func:`encode_record`'s, as the store and bundles hold it) is read by orjson
    when its value, written again by orjson with sorted keys, gives the very same text: that
    text then holds no duplicate key, no trailing data, no escape orjson would not write, no
    number it would spell otherwise (a float is then the double the standard parser gives, its
    shortest spelling being unique), so the value is the standard parser's. Any other text
    (non-ASCII characters, a non-finite number, a lone surrogate, an integer past 64 bits, an
    error) is parsed by the standard parser, as it always was."""
    if text.isascii():
        data = text.encode("ascii")
        try:  # orjson reads deeper nesting than it writes: a value it cannot write back is not taken
            if orjson.dumps(value := orjson.loads(data), option=orjson.OPT_SORT_KEYS) == data:
                return value
        except (orjson.JSONDecodeError, TypeError):
            pass
    return json.loads(text, object_pairs_hook=no_duplicate_keys)


def json_string_ascii(text: str) -> bytes:
    """``text`` as a JSON string literal with ASCII escapes, as the canonical encoder writes it
    (``canonical_json(text)``, as bytes). orjson writes the same literal for ASCII text without
    DEL (the one character it leaves raw and the canonical encoder escapes); any other text is
    written by the standard encoder."""
    if text.isascii() and "\x7f" not in text:
        return orjson.dumps(text)
    return _CANONICAL.encode(text).encode("ascii")


def sortable_time(value: datetime) -> str:
    """Fixed-width UTC text (four-digit year, microseconds always present), so text order is
    time order (``strftime("%Y")`` would not pad the years before 1000)."""
    moment = value.astimezone(UTC)
    return f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S.%fZ")
