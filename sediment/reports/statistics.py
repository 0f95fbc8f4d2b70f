"""The small statistics the reports print: summaries, percentiles, thresholds, histograms.

Every function is a pure function of the values' multiset: the input order never changes a
result (values are sorted first, sums are exact with :func:`math.fsum`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: The retention thresholds the merge-retention report counts scores strictly below.
RETENTION_THRESHOLDS: tuple[float, ...] = (0.8, 0.9, 1.0)


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """Linear interpolation at position ``(n - 1) * fraction`` of the sorted ``ordered``."""
    if not ordered:
        raise ValueError("percentile of no values")
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    weight = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * weight


@dataclass(frozen=True)
class Summary:
    """``count``, ``mean``, ``median``, ``min``, ``max`` and the sample ``stdev`` (0.0 for one value)."""

    count: int
    mean: float
    median: float
    min: float
    max: float
    stdev: float


def summary(values: Iterable[float]) -> Summary:
    ordered = sorted(values)
    if not ordered:
        raise ValueError("summary of no values")
    n = len(ordered)
    mean = math.fsum(ordered) / n
    stdev = 0.0 if n == 1 else math.sqrt(math.fsum((v - mean) ** 2 for v in ordered) / (n - 1))
    return Summary(n, mean, percentile(ordered, 0.5), ordered[0], ordered[-1], stdev)


@dataclass(frozen=True)
class Distribution:
    """``count``, ``mean``, ``median``, ``p10``, ``p90`` (all but ``count`` null with no values)."""

    count: int
    mean: float | None
    median: float | None
    p10: float | None
    p90: float | None


def distribution(values: Iterable[float]) -> Distribution:
    ordered = sorted(values)
    if not ordered:
        return Distribution(0, None, None, None, None)
    return Distribution(len(ordered), math.fsum(ordered) / len(ordered), percentile(ordered, 0.5),
                        percentile(ordered, 0.1), percentile(ordered, 0.9))


@dataclass(frozen=True)
class Threshold:
    """How many of ``total`` scores are strictly ``below`` ``threshold``; ``rate`` null with none."""

    threshold: float
    below: int
    total: int
    rate: float | None


def thresholds(values: Sequence[float], cuts: Sequence[float] = RETENTION_THRESHOLDS) -> list[Threshold]:
    total = len(values)
    found = []
    for cut in cuts:
        below = sum(1 for v in values if v < cut)
        found.append(Threshold(cut, below, total, below / total if total else None))
    return found


#: The bucket-size bins of the DPO sparsity section, in order.
SIZE_BINS: tuple[str, ...] = ("1", "2", "3-5", "6-10", "10+")


def size_bin(size: int) -> str:
    """The bin of a bucket of ``size`` (at least 1) members."""
    if size < 1:
        raise ValueError("a bucket has at least one member")
    if size <= 2:
        return str(size)
    if size <= 5:
        return "3-5"
    if size <= 10:
        return "6-10"
    return "10+"
