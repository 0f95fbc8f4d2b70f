"""Sharded work over forked worker processes, merged back in order.

Work is split into contiguous chunks (by position), each chunk runs in its own process,
and results come back in chunk order, so a merge that concatenates them reproduces the
bytes of a single-process run exactly.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_JOB: Callable[[range], Any] | None = None


def chunks(count: int, parts: int) -> list[range]:
    """``count`` positions cut into at most ``parts`` contiguous, near-equal ranges."""
    parts = max(1, min(parts, count))
    size, extra = divmod(count, parts)
    ranges, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        ranges.append(range(start, end))
        start = end
    return ranges


def _run(chunk: range) -> Any:
    assert _JOB is not None
    return _JOB(chunk)


def map_chunks(job: Callable[[range], T], count: int, workers: int,
               meanwhile: Callable[[], object] | None = None) -> Sequence[T]:
    """Run ``job`` over the chunks of ``range(count)``; in-process when ``workers`` is 1.

    Workers are forked, so ``job`` and everything it closes over are inherited, not pickled;
    only each chunk's result travels back. ``meanwhile`` runs in this process while the
    workers work (after they were forked, so no thread is ever forked).
    """
    if workers <= 1 or count < 2:
        results = [job(range(count))]
        if meanwhile is not None:
            meanwhile()
        return results
    global _JOB
    _JOB = job
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(_run, chunk) for chunk in chunks(count, workers)]
            if meanwhile is not None:
                meanwhile()
            return [future.result() for future in futures]
    finally:
        _JOB = None
