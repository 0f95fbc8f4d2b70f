"""Ordered chunked work over forked processes: every position once, results in chunk order."""

from __future__ import annotations

import os
import time

import pytest

from sediment.parallel import chunks, last_round, ordered_chunks


@pytest.mark.parametrize("count, parts", [(0, 3), (1, 4), (7, 3), (10, 10), (5, 16), (100, 16)])
def test_chunks_cover_every_position_once_in_order(count: int, parts: int) -> None:
    ranges = chunks(count, parts)
    assert [i for r in ranges for i in r] == list(range(count))
    assert len(ranges) == max(1, min(parts, count))
    assert max(map(len, ranges)) - min(map(len, ranges)) <= 1


@pytest.mark.parametrize("count, workers, per_worker", [(24, 2, 8), (100, 3, 8), (3, 2, 8), (2, 2, 8), (1, 4, 8),
                                                      (17, 1, 8), (40, 2, 20), (40, 2, 1), (6, 2, 3), (7, 3, 1)])
def test_last_round_is_where_the_last_chunk_of_each_worker_begins(count: int, workers: int, per_worker: int) -> None:
    ranges = chunks(count, workers * per_worker)
    left = [chunk for chunk in ranges if chunk.start >= last_round(count, workers, per_worker)]
    assert left == (ranges[-workers:] if len(ranges) > workers else ranges)  # one for each worker, or all
    assert last_round(24, 2) == 22  # 16 chunks: the last two are a file each
    assert last_round(40, 2) == 36 and last_round(40, 2, 20) == 38  # 16 chunks of 2 or 3 files; 40 of one
    assert last_round(40, 2, 1) == 0 and last_round(2, 2, 1) == 0  # a chunk for each worker: from the start


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_results_come_back_in_chunk_order(workers: int) -> None:
    parent = os.getpid()
    marks: list[int] = []

    def job(chunk: range) -> tuple[list[int], bool, bool]:
        if chunk.start == 0:
            time.sleep(0.2)  # the first chunk finishes last; it is still yielded first
        return list(chunk), os.getpid() != parent, bool(marks)

    results = list(ordered_chunks(job, 50, workers, per_worker=4, on_fork=lambda: marks.append(1)))
    assert [i for positions, _, _ in results for i in positions] == list(range(50))
    assert len(results) == (1 if workers == 1 else workers * 4)
    assert all(forked == (workers > 1) and marked == (workers > 1) for _, forked, marked in results)
    assert marks == []  # on_fork ran in the workers only


def test_meanwhile_runs_in_this_process_once() -> None:
    seen: list[int] = []
    results = list(ordered_chunks(lambda c: len(c), 9, 2, meanwhile=lambda: seen.append(os.getpid())))
    assert sum(results) == 9 and seen == [os.getpid()]


def test_a_failing_chunk_raises_in_the_caller() -> None:
    def job(chunk: range) -> int:
        if 5 in chunk:
            raise ValueError("chunk with 5 failed")
        return len(chunk)

    with pytest.raises(ValueError, match="chunk with 5 failed"):
        list(ordered_chunks(job, 12, 2))


def test_a_worker_killed_mid_work_stops_the_step_with_one_line() -> None:
    """A worker the kernel kills (for memory, say) gives no result: the step stops with one line
    saying so and what to do, not a traceback of the pool's."""
    import signal

    from sediment.parallel import WorkerLost

    def job(chunk: range) -> list[int]:
        if chunk.start == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return list(chunk)

    merged: list[int] = []
    with pytest.raises(WorkerLost) as caught:
        for result in ordered_chunks(job, 6, 2, per_worker=3):
            merged += result
    message = str(caught.value)
    assert "\n" not in message and "worker process ended abruptly" in message and "run it again" in message
    # what was merged is the chunks before the lost one, in order (those still running when it was
    # lost are lost with it), and nothing after it
    assert merged == list(range(len(merged))) and len(merged) <= 3
