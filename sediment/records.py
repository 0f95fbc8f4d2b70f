"""Canonical record JSON: the lossless text form of Facts and derived artifacts.

Keys sorted at every level, compact separators, ASCII escapes (lone surrogates and NUL
survive as escapes), ``NaN`` / ``Infinity`` / ``-Infinity`` tokens allowed, datetimes as
UTC ISO-8601 with ``Z``. Used by the fact store and by bundles.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sediment.export.representation import plain


def encode_record(value: Any) -> str:
    """The canonical record text of a model or plain value."""
    return json.dumps(plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def decode_record(text: str) -> Any:
    """Parse record text; duplicate keys and trailing data are errors."""
    return json.loads(text, object_pairs_hook=_no_duplicate_keys)


def sortable_time(value: datetime) -> str:
    """Fixed-width UTC text (microseconds always present), so text order is time order."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
