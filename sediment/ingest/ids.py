"""Deterministic Fact ids derived from natural keys, so re-ingesting stores nothing new."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def fact_id(prefix: str, *key: Any) -> str:
    """``<prefix>_<32 hex>``: SHA-256 of the natural key as compact JSON (non-ASCII kept)."""
    text = json.dumps(list(key), separators=(",", ":"), ensure_ascii=True, default=str)
    return f"{prefix}_{hashlib.sha256(text.encode('ascii')).hexdigest()[:32]}"
