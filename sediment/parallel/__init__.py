"""Sharded work over forked worker processes, merged back in order; the engine choice.

Work is split into contiguous chunks (by position), the chunks are run by a pool of worker
processes, and results come back in chunk order as soon as each one is ready, so a merge
that concatenates them reproduces the bytes of a single-process run exactly while the
parent merges early chunks during the work on later ones.

The ``ray`` engine (:mod:`sediment.parallel.cluster`, the ``sediment[ray]`` extra) runs the same
work on a Ray cluster instead, partitioned by Session hash and merged back in position order;
nothing here imports Ray.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from sediment.errors import ConfigurationError, SedimentError

T = TypeVar("T")

#: Chunks per worker by default: small enough that a worker slowed down by its neighbour takes
#: fewer of them, and that the parent can merge early chunks while later ones are worked on.
CHUNKS_PER_WORKER = 8

#: The engines work runs on: forked processes on this machine (the default), or a Ray cluster.
ENGINES = ("local", "ray")
#: The environment variable that chooses the engine when ``--engine`` is not given.
ENGINE_ENV = "SEDIMENT_ENGINE"

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


def last_round(count: int, workers: int, per_worker: int = CHUNKS_PER_WORKER) -> int:
    """The position where :func:`ordered_chunks`' last ``workers`` chunks of ``range(count)`` begin:
    once the results up to it are in, every chunk left is being worked on, and nothing more
    will be started (0 when there are no more chunks than workers)."""
    ranges = chunks(count, workers * max(1, per_worker))
    return ranges[-workers].start if len(ranges) > workers else 0


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
        cut = chunks(count, workers * max(1, per_worker))
        futures = [pool.submit(_run, chunk) for chunk in cut]
        if meanwhile is not None:
            meanwhile()
        futures.reverse()
        while futures:  # a result handed out is not held here any more
            try:
                result = futures.pop().result()
            except BrokenProcessPool:
                raise WorkerLost(f"a worker process ended abruptly (killed, perhaps for lack of memory) with "
                                 f"{len(futures) + 1} of {len(cut)} chunks of the "
                                 "work not yet merged: the step stopped, and what it had not committed or published "
                                 "is dropped; run it again, with fewer --workers if memory ran out") from None
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _JOB, _ON_FORK = None, None


class WorkerLost(SedimentError):
    """A local worker process ended without giving its result (killed by a signal, or by the
    kernel for lack of memory): the step stops, and what the unfinished chunks held is not
    stored or published."""


class EngineError(SedimentError):
    """The Ray engine could not run the work (no cluster, a task failed, a worker was lost);
    nothing was published or stored by the step that failed."""


def engine_name(engine: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``engine``, else ``SEDIMENT_ENGINE``, else ``local``; an unknown name is refused in one line."""
    env = os.environ if environ is None else environ
    name = (engine or env.get(ENGINE_ENV, "").strip() or "local").lower()
    if name not in ENGINES:
        source = "--engine" if engine else ENGINE_ENV
        raise ConfigurationError(f"unknown engine {name!r} ({source}); choose one of: {', '.join(ENGINES)}")
    return name


def require_shared_store(url: str) -> None:
    """Refuse a fact store the Ray engine's workers cannot share (anything but PostgreSQL)."""
    if not url.startswith(("postgresql:", "postgres:", "postgresql+psycopg:")):
        raise ConfigurationError("--engine ray needs PostgreSQL as the shared fact store (SEDIMENT_DATABASE_URL="
                                 "postgresql://…): Ray workers on other machines cannot open this store's SQLite file")


def partition_of(key: str, parts: int) -> int:
    """The partition of a unit of work by the hash of its key (a Session's ``org_id/session_id``,
    a file's name): stable across processes, machines and Python versions."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % max(1, parts)
