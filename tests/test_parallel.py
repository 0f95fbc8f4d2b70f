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


@pytest.mark.parametrize("count, workers", [(24, 2), (100, 3), (3, 2), (2, 2), (1, 4), (17, 1)])
def test_last_round_is_where_the_last_chunk_of_each_worker_begins(count: int, workers: int) -> None:
    ranges = chunks(count, workers * 8)
    left = [chunk for chunk in ranges if chunk.start >= last_round(count, workers)]
    assert left == (ranges[-workers:] if len(ranges) > workers else ranges)  # one for each worker, or all
    assert last_round(24, 2) == 22  # 16 chunks: the last two are a file each


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
