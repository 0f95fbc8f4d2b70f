"""The ``ray`` engine: work partitioned by Session hash over a Ray cluster, merged in order.

Every position of the work (a Session of a derivation, a Rollout of an export, a file of an
ingest) has a key; positions go to ``workers * per_worker`` partitions by the key's hash
(:func:`~sediment.parallel.partition_of`), one Ray task per partition, each task running
``job`` over its positions in position order and returning one result per position. The
results are yielded in position order as soon as every earlier position is done, so a merge
that concatenates them gives the bytes of a single process whatever the number of partitions,
tasks or nodes. ``job`` travels to the workers pickled (Ray's cloudpickle), once per worker
process and run: whatever it closes over must pickle, and re-open what it reads (the
PostgreSQL store by URL, mirrors and bundles by path) on the worker.

Ray is imported only when this engine runs (the ``sediment[ray]`` extra). The cluster is the
one ``RAY_ADDRESS`` names (``ray start --head`` prints it), else the one ``ray start`` left on
this machine, else a new local one. A task that raises a Sediment error re-raises it here (the
same one line as a single process); any other failure, a lost worker or node included, is one
:class:`~sediment.parallel.EngineError` line. Either way the caller publishes nothing.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from sediment.errors import ConfigurationError, SedimentError
from sediment.parallel import CHUNKS_PER_WORKER, EngineError, partition_of

T = TypeVar("T")

#: Seconds to wait for the cluster when connecting.
CONNECT_TIMEOUT = 60


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigurationError("--engine ray needs Ray, which is not installed: "
                                 "pip install 'sediment[ray]'") from None
    return ray


def connect() -> Any:
    """The ``ray`` module, connected to the cluster (once per process)."""
    ray = _ray()
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS", "").strip() or None
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, ignore_reinit_error=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise EngineError(f"cannot reach the Ray cluster {address or '(local)'}: {first}") from None
    return ray


def cluster_cpus() -> int:
    """The CPUs the connected cluster offers (at least 1)."""
    return max(1, int(connect().cluster_resources().get("CPU", 1)))


#: The job a Ray worker process last unpickled, by its run's token: the next partitions of the
#: same run on that process reuse it (its open store connections, its mirror index).
_LOADED: tuple[str, Any] | None = None


def _run_partition(token: str, shipped: list[Any], positions: list[int]) -> list[Any]:
    """One Ray task: the run's job (unpickled once per worker process) over one partition's
    positions, in position order."""
    global _LOADED
    if _LOADED is None or _LOADED[0] != token:
        _LOADED = None  # the previous run's job goes before the next one loads
        _LOADED = (token, _ray().get(shipped[0]))
    results = _LOADED[1](positions)
    if len(results) != len(positions):
        raise RuntimeError(f"a partition job returned {len(results)} results for {len(positions)} positions")
    return list(results)


def _failure(ray: Any, exc: BaseException) -> BaseException:
    """What a failed task raises here: its own Sediment error, else one EngineError line."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, SedimentError):
        return cause
    if isinstance(exc, ray.exceptions.RayTaskError):
        shown = cause if cause is not None else exc
        text = (str(shown).strip().splitlines() or [""])[-1]
        return EngineError(f"a Ray task failed ({type(shown).__name__}: {text}); nothing was published; run it again")
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return EngineError(f"a Ray worker was lost ({type(exc).__name__}: {first}); nothing was published; run it again")


def ordered_partitions(job: Callable[[Sequence[int]], list[T]], keys: Sequence[str], workers: int, *,
                       per_worker: int = CHUNKS_PER_WORKER) -> Iterator[T]:
    """``job``'s result for every position of ``keys``, in position order, computed on the cluster.

    ``workers`` sets the partitions (``workers * per_worker``); 1 takes the cluster's CPUs.
    Closing the iterator early cancels the tasks still running.
    """
    ray = connect()
    count = len(keys)
    if count == 0:
        return
    parts = max(1, min(count, (workers if workers > 1 else cluster_cpus()) * max(1, per_worker)))
    partitions: list[list[int]] = [[] for _ in range(parts)]
    for position, key in enumerate(keys):
        partitions[partition_of(key, parts)].append(position)
    task = ray.remote(num_cpus=1)(_run_partition)
    token = secrets.token_hex(8)
    shipped = [ray.put(job)]  # inside a list: the task fetches it only when its process has not yet
    pending = {task.remote(token, shipped, positions): positions for positions in partitions if positions}
    done: dict[int, T] = {}
    following = 0
    try:
        while following < count:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                positions = pending.pop(ref)
                try:
                    results = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    raise _failure(ray, exc) from None
                done.update(zip(positions, results, strict=True))
            while following in done:
                yield done.pop(following)
                following += 1
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
