"""Session-grained eval split (docs/exports.md, Output directory): a pure function of the session id."""

from __future__ import annotations

import hashlib
from typing import Literal

Split = Literal["train", "eval"]

DEFAULT_EVAL_FRACTION = 0.1
MAX_EVAL_FRACTION = 0.5


def validate_eval_fraction(value: float) -> float:
    """Return ``value`` if it is a real number in [0.0, 0.5], else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"eval_fraction must be a number, got {value!r}")
    if not 0.0 <= float(value) <= MAX_EVAL_FRACTION:
        raise ValueError(f"eval_fraction must be within [0.0, {MAX_EVAL_FRACTION}], got {value!r}")
    return float(value)


def split_score(session_id: str) -> float:
    """First 8 bytes of sha256(session_id) as a big-endian integer, divided by 2**64."""
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_split(session_id: str, eval_fraction: float) -> Split:
    """``eval`` iff the session's score is below ``eval_fraction`` (nested as it grows)."""
    return "eval" if split_score(session_id) < validate_eval_fraction(eval_fraction) else "train"
