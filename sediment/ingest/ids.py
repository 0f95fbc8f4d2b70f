"""Deterministic Fact ids derived from natural keys, so re-ingesting stores nothing new."""

from __future__ import annotations

from sediment.records import canonical_digest


def fact_id(prefix: str, *key: str | int | None) -> str:
    """``<prefix>_<32 hex>``: the canonical digest of the natural key (a JSON list of scalars)."""
    return f"{prefix}_{canonical_digest(list(key))[:32]}"
