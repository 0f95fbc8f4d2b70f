"""Sharded work over forked worker processes, merged back in order.

Work is split into contiguous chunks (by position), the chunks are run by a pool of worker
processes, and results come back in chunk order as soon as each one is ready, so a merge
that concatenates them reproduces the bytes of a single-process run exactly while the
parent merges early chunks during the work on later ones.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: Chunks per worker by default: small enough that a worker slowed down by its neighbour takes
#: fewer of them, and that the parent can merge early chunks while later ones are worked on.
CHUNKS_PER_WORKER = 8

_JOB: Callable[[range], Any] | None = None
_ON_FORK: Callable[[], object] | None = None


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


def _start_worker() -> None:
    if _ON_FORK is not None:
        _ON_FORK()


def _run(chunk: range) -> Any:
    assert _JOB is not None
    return _JOB(chunk)


def ordered_chunks(
    job: Callable[[range], T],
    count: int,
    workers: int,
    *,
    per_worker: int = CHUNKS_PER_WORKER,
    on_fork: Callable[[], object] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> Iterator[T]:
    """Run ``job`` over contiguous chunks of ``range(count)``, yielding results in chunk order.

    With one worker (or fewer than two positions) ``job`` runs once, in this process, over the
    whole range. Otherwise ``workers`` processes are forked (so ``job`` and everything it closes
    over are inherited, not pickled; only each chunk's result travels back), ``on_fork`` runs
    once in each of them, and ``range(count)`` is cut into ``workers * per_worker`` chunks that
    the workers take in order. Each result is yielded as soon as it and every earlier one are
    ready. ``meanwhile`` runs in this process once the workers exist (so no thread is ever
    forked), before the first result is yielded. Closing the iterator early cancels the chunks
    not yet started.
    """
    if workers <= 1 or count < 2:
        result = job(range(count))
        if meanwhile is not None:
            meanwhile()
        yield result
        return
    global _JOB, _ON_FORK
    _JOB, _ON_FORK = job, on_fork
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_start_worker)
    try:
        futures = [pool.submit(_run, chunk) for chunk in chunks(count, workers * max(1, per_worker))]
        if meanwhile is not None:
            meanwhile()
        for future in futures:
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _JOB, _ON_FORK = None, None
