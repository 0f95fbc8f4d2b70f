"""The training-representation check of emitted rows.

Facts keep NaN, infinities and lone surrogates losslessly; an exported row must not carry
them. :func:`representation_problem` walks the emitted value (keys included) and names the
first problem, which declines the row with one count.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sediment.identifiers import has_unpaired_surrogate
from sediment.records import plain

__all__ = ["REPRESENTATION_REASONS", "plain", "representable_json_text", "representation_problem"]

REPRESENTATION_REASONS: tuple[str, ...] = ("non_finite_number", "unrepresentable_unicode")


def representation_problem(value: Any) -> str | None:
    """The first representation reason found in ``value``, or ``None`` when it is representable.

    The common case (nothing to find) is settled by the C JSON encoder; only a row that fails
    it is walked in Python to name its first offending value.
    """
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError):  # a non-finite number, a lone surrogate, or not plain JSON data
        return _first_problem(value)
    return None


def _first_problem(value: Any) -> str | None:
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if has_unpaired_surrogate(item):
                return "unrepresentable_unicode"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "non_finite_number"
        elif isinstance(item, Mapping):
            pending: list[Any] = []
            for key, child in item.items():
                pending.append(key)
                pending.append(child)
            stack.extend(reversed(pending))
        elif isinstance(item, Sequence) and not isinstance(item, bytes | bytearray):
            stack.extend(reversed(list(item)))
    return None


def representable_json_text(text: str) -> bool:
    """True when ``text``, JSON written with non-finite numbers allowed (``NaN``, ``Infinity``,
    ``-Infinity``) and non-ASCII kept, holds neither such a number nor a lone surrogate: then no
    value it encodes has a representation problem. A string holding ``NaN`` or ``Infinity``
    also answers False (the safe side: the caller checks the value itself)."""
    return "NaN" not in text and "Infinity" not in text and not has_unpaired_surrogate(text)
