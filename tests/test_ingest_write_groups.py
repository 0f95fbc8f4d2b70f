"""An ingest commits its batches a group at a time (sediment.ingest.reading.write_groups): how
the batches are grouped, and with how many workers, changes nothing that is stored; a group
that fails stores nothing of itself and keeps the groups before it; running the ingest again
stores the rest."""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest.calls import ReplayMemo, translate_call
from sediment.ingest.calls.spans import SpanReader
from sediment.ingest.reading import files as reading_files
from sediment.ingest.reading import write_groups
from sediment.ingest.reading.files import ingest_files
from sediment.parallel import chunks
from sediment.store import FactStore, StoreError
from sediment.store.write import FactWriter

ORG = "org-groups"
CAPTURED = datetime(2026, 7, 1, tzinfo=UTC)


def _lines(session: str, turns: int) -> list[str]:
    """One Session's calls, each replaying the whole history before it."""
    history: list[dict[str, Any]] = []
    lines = []
    for call in range(turns):
        history.append({"role": "user", "content": f"{session} turn {call} " + "x" * 200})
        output = {"role": "assistant", "content": f"{session} answer {call}"}
        response = {"id": f"resp-{session}-{call}", "model": "m",
                    "choices": [{"index": 0, "message": output, "finish_reason": "stop"}]}
        lines.append(json.dumps({"session_id": session, "request": {"model": "m", "messages": list(history)},
                                 "response": response}))
        history.append(output)
    return lines


def _files(folder: Path, shuffle: int | None = None) -> list[str]:
    """Three files of interleaved Sessions (in a shuffled order when ``shuffle`` seeds one)."""
    paths = []
    for index in range(3):
        lines = [line for turn in zip(*(_lines(f"s{index}-{n}", 5) for n in range(3)), strict=True) for line in turn]
        if shuffle is not None:
            random.Random(shuffle + index).shuffle(lines)
        path = folder / f"calls-{index}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    return paths


def _ingest(paths: list[str], store: FactStore, workers: int = 1) -> Any:
    memo = ReplayMemo()
    return ingest_files(paths, lambda record: translate_call(  # type: ignore[misc]
        record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo), store, workers=workers,
        reader=lambda: SpanReader(min_line=0))


def _content(path: Path) -> list[Any]:
    with sqlite3.connect(path) as db:
        calls = db.execute("SELECT fact_id, natural_key, session_id, record, input_hashes, output_hashes, raw_refs, "
                           "tools_hash FROM inference_calls ORDER BY fact_id").fetchall()
        blobs = db.execute("SELECT blob_hash, content FROM blobs ORDER BY blob_hash").fetchall()
    return [*calls, *blobs]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of batches of each transaction ``write_many`` runs, in order (this process's)."""
    groups: list[int] = []
    write_many = FactWriter.write_many

    def counted(self: FactWriter, batches: Any) -> Any:
        groups.append(len(batches))
        return write_many(self, batches)

    monkeypatch.setattr(FactWriter, "write_many", counted)
    return groups


@pytest.mark.parametrize("shuffle", [None, 7])
def test_grouping_and_workers_change_nothing_that_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             shuffle: int | None) -> None:
    paths = _files(tmp_path, shuffle)
    monkeypatch.setattr(reading_files, "BATCH", 4)  # 45 calls: 12 batches of at most 4
    groups = _counting(monkeypatch)
    contents, seen = [], []
    for name, rows, workers in (("one", 10**9, 1), ("each", 1, 1), ("threes", 10, 1), ("workers", 10, 2),
                                ("workers-each", 1, 3)):
        monkeypatch.setattr(write_groups, "GROUP_ROWS", rows)
        groups.clear()
        report = _ingest(paths, FactStore(f"sqlite:///{tmp_path / name}.db"), workers)
        assert report.stored["inference_calls"] == 45 and not report.problems
        contents.append(_content(tmp_path / f"{name}.db"))
        seen.append(list(groups))
    assert all(content == contents[0] for content in contents)
    assert seen[0] == [12]  # every batch in one transaction
    assert seen[1] == [1] * 12  # a group per batch
    assert sum(seen[2]) == 12 and all(count >= 3 for count in seen[2])  # a group ends at the batch taking it to 10
    assert sum(seen[3]) == 12 and len(seen[3]) < 12  # the workers' batches are grouped in the parent too
    assert seen[4] == [1] * 12


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_counts_every_file_done_only_once_its_last_group_is_stored(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch,
                                                                              workers: int) -> None:
    """The last file is reported done after the last group commits, not before it (a large last
    group would otherwise show a finished bar while it is still being written)."""
    paths = _files(tmp_path)
    monkeypatch.setattr(reading_files, "BATCH", 4)
    monkeypatch.setattr(write_groups, "GROUP_ROWS", 10**9)  # one group: committed when the ingest ends
    store = FactStore(f"sqlite:///{tmp_path / 'progress.db'}")
    seen: list[tuple[int, int, int, int]] = []

    def progress(done: int, total: int, records: int) -> None:
        with sqlite3.connect(tmp_path / "progress.db") as db:
            stored = db.execute("SELECT count(*) FROM inference_calls").fetchone()[0]
        seen.append((done, total, records, stored))

    memo = ReplayMemo()
    ingest_files(paths, lambda record: translate_call(  # type: ignore[misc]
        record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo), store, workers=workers,
        reader=lambda: SpanReader(min_line=0), progress=progress)
    finished = [entry for entry in seen if entry[0] == entry[1]]
    assert finished == [(3, 3, 45, 45)]  # reported once, with every call stored
    assert seen[-1] == (3, 3, 45, 45)
    if workers == 1:
        assert all(stored == 0 for done, _, _, stored in seen if done < 3)  # the one group waits for the end
    else:  # three chunks of a file, two workers: each file is committed as it comes once both are busy
        assert [(done, stored) for done, _, _, stored in seen] == [(1, 15), (2, 30), (3, 45)]


def test_workers_take_the_files_one_at_a_time(tmp_path: Path) -> None:
    """Each file is its own chunk: the parent stores each file's rows as soon as it and every file
    before it are ready (progress says so file by file), and the workers end within a file of each
    other, however many files there are (eight chunks a worker cut 20 files into 16)."""
    paths = []
    for index in range(20):
        path = tmp_path / f"calls-{index:02d}.jsonl"
        path.write_text("\n".join(_lines(f"s{index}", 2)) + "\n", encoding="utf-8")
        paths.append(str(path))
    seen: list[tuple[int, int]] = []
    memo = ReplayMemo()
    report = ingest_files(paths, lambda record: translate_call(  # type: ignore[misc]
        record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo),
        FactStore(f"sqlite:///{tmp_path / 'files.db'}"), workers=2, reader=lambda: SpanReader(min_line=0),
        progress=lambda done, total, records: seen.append((done, records)))
    assert report.stored["inference_calls"] == 40 and not report.problems
    assert seen == [(done, 2 * done) for done in range(1, 21)]


@pytest.mark.parametrize("workers", [1, 2])
def test_once_every_chunk_left_is_being_worked_on_each_result_is_committed_as_it_comes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """The end of a parallel ingest waits for the last chunk's rows alone, not for a whole group
    gathered while the workers finished (it was 28 MB of blobs, a third of a second, on the bench)."""
    paths = _files(tmp_path)
    monkeypatch.setattr(reading_files, "BATCH", 4)  # 15 calls a file: 4 batches each
    monkeypatch.setattr(write_groups, "GROUP_ROWS", 10**9)  # no group ends by its size
    groups = _counting(monkeypatch)
    report = _ingest(paths, FactStore(f"sqlite:///{tmp_path / 'ends.db'}"), workers)
    assert report.stored["inference_calls"] == 45 and not report.problems
    assert groups == ([12] if workers == 1 else [4, 4, 4])
    one = FactStore(f"sqlite:///{tmp_path / 'one.db'}")
    _ingest(paths, one, 1)
    assert _content(tmp_path / "ends.db") == _content(tmp_path / "one.db")


def test_the_last_round_begins_where_every_file_left_is_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    """Forty files on two workers: the files before the last two are one group, and only those two
    are committed each as it comes (eight chunks a worker, the default, would begin at file 36;
    committing every file would give forty groups)."""
    paths = []
    for index in range(40):
        path = tmp_path / f"calls-{index:02d}.jsonl"
        path.write_text(_lines(f"s{index}", 1)[0] + "\n", encoding="utf-8")
        paths.append(str(path))
    monkeypatch.setattr(write_groups, "GROUP_ROWS", 10**9)
    groups = _counting(monkeypatch)
    report = _ingest(paths, FactStore(f"sqlite:///{tmp_path / 'last.db'}"), 2)
    assert report.stored["inference_calls"] == 40 and not report.problems
    assert groups == [38, 1, 1]


def test_a_chunk_is_a_file_up_to_max_chunks() -> None:
    for files, workers in ((1, 2), (40, 2), (4096, 2), (4096, 3), (4097, 3), (10_000, 3), (10_000, 7), (9, 16)):
        per_worker = reading_files.chunks_per_worker(files, workers)
        made = len(chunks(files, workers * per_worker))  # as ordered_chunks cuts them
        if files <= reading_files.MAX_CHUNKS:
            assert made == files  # a file a chunk
        else:  # as many as the bound allows, shared out evenly
            assert reading_files.MAX_CHUNKS - workers < made <= reading_files.MAX_CHUNKS


@pytest.mark.parametrize("workers", [1, 2])
def test_a_group_is_committed_once_its_blobs_reach_the_byte_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  workers: int) -> None:
    """One process gathers GROUP_BYTES; a parallel ingest's parent, which holds nothing else, the
    larger PARALLEL_GROUP_BYTES."""
    paths = _files(tmp_path)
    monkeypatch.setattr(reading_files, "BATCH", 4)
    monkeypatch.setattr(write_groups, "GROUP_ROWS", 10**9)
    for bound, other in (("GROUP_BYTES", "PARALLEL_GROUP_BYTES"), ("PARALLEL_GROUP_BYTES", "GROUP_BYTES")):
        monkeypatch.setattr(write_groups, bound, 1)  # every batch has new blobs: each one its group
        monkeypatch.setattr(write_groups, other, 10**12)
        groups = _counting(monkeypatch)
        _ingest(paths, FactStore(f"sqlite:///{tmp_path / f'{bound}.db'}"), workers)
        applies = (bound == "GROUP_BYTES") == (workers == 1)
        assert groups == ([1] * 12 if applies else [12] if workers == 1 else [4, 4, 4])


def test_a_worker_killed_mid_ingest_keeps_whole_groups_and_a_rerun_stores_the_rest(tmp_path: Path) -> None:
    """The kernel kills a worker (for memory, say) while it reads the last file: the ingest stops
    with one line, what was committed stays whole, and running it again stores the rest."""
    import os
    import signal

    from sediment.parallel import WorkerLost

    paths = _files(tmp_path)
    clean = FactStore(f"sqlite:///{tmp_path / 'clean.db'}")
    _ingest(paths, clean)
    killed = tmp_path / "killed"
    parent = os.getpid()

    def translate(record: Any) -> Any:
        if os.getpid() != parent and record["session_id"].startswith("s2-") and not killed.exists():
            killed.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return translate_call(record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=ReplayMemo())

    store = FactStore(f"sqlite:///{tmp_path / 'killed.db'}")
    with pytest.raises(WorkerLost, match="worker process ended abruptly"):
        ingest_files(paths, translate, store, workers=2, reader=lambda: SpanReader(min_line=0))
    assert killed.exists()
    stored = sum(len(store.calls_for_session(ORG, session)) for session in store.session_ids(ORG))
    assert stored in (0, 15, 30)  # whole files (the first two, one group of them, or none): never a part
    again = _ingest(paths, FactStore(f"sqlite:///{tmp_path / 'killed.db'}"), 2)
    assert again.stored["inference_calls"] == 45 - stored and again.duplicates["inference_calls"] == stored
    assert _facts(FactStore(f"sqlite:///{tmp_path / 'killed.db'}")) == _facts(clean)


def test_a_failed_group_stores_nothing_of_itself_and_a_rerun_stores_the_rest(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _files(tmp_path)
    monkeypatch.setattr(reading_files, "BATCH", 4)
    monkeypatch.setattr(write_groups, "GROUP_ROWS", 8)  # groups of two batches
    clean = FactStore(f"sqlite:///{tmp_path / 'clean.db'}")
    _ingest(paths, clean)

    written = FactWriter._insert_rows
    calls = {"n": 0}

    def failing(self: FactWriter, conn: Any, prepared: Any, result: Any, inserts: Any, group: Any) -> None:
        calls["n"] += 1
        written(self, conn, prepared, result, inserts, group)  # the batch's rows are in the transaction ...
        if calls["n"] == 4:  # ... when the second group's second batch fails
            raise StoreError("store write failed: database or disk is full (test)")

    store = FactStore(f"sqlite:///{tmp_path / 'failed.db'}")
    with monkeypatch.context() as patch:
        patch.setattr(FactWriter, "_insert_rows", failing)
        with pytest.raises(StoreError, match="disk is full"):
            _ingest(paths, store)
    kept = store.session_ids(ORG)
    stored = sum(len(store.calls_for_session(ORG, session)) for session in kept)
    assert stored == 8  # the first group (two batches of four), nothing of the second
    again = _ingest(paths, FactStore(f"sqlite:///{tmp_path / 'failed.db'}"))
    assert again.stored["inference_calls"] == 45 - 8 and again.duplicates["inference_calls"] == 8
    # the same Facts (a new process encodes its first call of a Session whole, not as a delta)
    assert _facts(FactStore(f"sqlite:///{tmp_path / 'failed.db'}")) == _facts(clean)


def _facts(store: FactStore) -> list[Any]:
    return [call.model_dump() for session in store.session_ids(ORG) for call in store.calls_for_session(ORG, session)]


def _redelivered(folder: Path, name: str, files: list[list[int]]) -> tuple[list[str], list[str]]:
    """Files of the calls of two Sessions (0-3: r1's four, 4-6: r2's three) by index, redeliveries
    included, and the file of each call once, in order."""
    calls = [*_lines("r1", 4), *_lines("r2", 3)]
    paths = []
    for number, picks in enumerate(files):
        path = folder / f"{name}-{number}.jsonl"
        path.write_text("\n".join(calls[index] for index in picks) + "\n", encoding="utf-8")
        paths.append(str(path))
    clean = folder / f"{name}-clean.jsonl"
    clean.write_text("\n".join(calls) + "\n", encoding="utf-8")
    return paths, [str(clean)]


def _shuffled(seed: int) -> list[list[int]]:
    """Every call once, six more redelivered, mostly in order, cut into four files."""
    rng = random.Random(seed)
    picks = [*range(7), *(rng.randrange(7) for _ in range(6))]
    picks.sort(key=lambda index: index + rng.uniform(-1.5, 2.5))
    cuts = sorted(rng.sample(range(1, len(picks)), 3))
    return [picks[start:end] for start, end in zip([0, *cuts], [*cuts, len(picks)], strict=True)]


#: An earlier call redelivered after a later one, then both again in the next file (review: in one
#: process a group prepared ahead named a rebased body it never wrote, and needed a body an earlier
#: batch of it had dropped); and a worker's batch that meets a call again after the parent rebased
#: it (its body, as the worker encoded it, is then stored nowhere).
REVIEWED = [[[0, 1, 0, 2, 3, 4, 5, 6], [1, 2]], [[0, 1, 0, 2, 3, 4, 5, 6], [0, 2]],
            [[4, 5, 4, 6, 0, 1, 2, 3], [5, 6], [1, 0, 3]],
            # a worker's batch redelivers a call the parent rebased and whose body it then dropped
            [[0, 2, 3, 4, 5, 6], [0, 1, 0, 1]]]


@pytest.mark.parametrize(("files", "batch"), [*((files, 1000) for files in REVIEWED), *((files, 2) for files in REVIEWED),
                                              *((_shuffled(seed), batch) for seed in range(4) for batch in (1, 3, 1000))])
def test_redeliveries_across_batches_and_groups_store_every_call_readable(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        files: list[list[int]], batch: int) -> None:
    """A redelivered call collapses whatever batch, group or worker meets it, and every body a
    stored call names is stored: the same Facts as each call ingested once."""
    paths, clean = _redelivered(tmp_path, "calls", files)
    reference = FactStore(f"sqlite:///{tmp_path / 'reference.db'}")
    _ingest(clean, reference)
    expected = _facts(reference)
    assert len(expected) == 7
    monkeypatch.setattr(reading_files, "BATCH", batch)
    for name, rows, workers in (("one-group", 10**9, 1), ("group-per-batch", 1, 1), ("pairs", 4, 1),
                                ("workers", 1, 2), ("workers-grouped", 10**9, 2), ("three", 1, 3)):
        monkeypatch.setattr(write_groups, "GROUP_ROWS", rows)
        store = FactStore(f"sqlite:///{tmp_path / name}.db")
        report = _ingest(paths, store, workers)
        assert not report.problems, name
        assert report.stored["inference_calls"] == 7, name
        assert _facts(FactStore(f"sqlite:///{tmp_path / name}.db")) == expected, name


def test_batches_prepared_out_of_order_carry_every_blob_they_name(tmp_path: Path) -> None:
    """A Ray worker process may prepare a later partition before an earlier one (partitions go by
    hash) and the parent writes them in file order: each partition's batches must carry every
    blob they name (review: the earlier file's batch named blobs only the later one carried)."""
    from sediment.ingest.reading.files import _prepare_files

    lines = _lines("ray", 4)
    paths = []
    for name in ("first", "second"):  # the same calls twice: the second file only redelivers
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    memo = ReplayMemo()

    def translate(record: Any) -> Any:
        return translate_call(record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo)

    preparer = FactStore(f"sqlite:///{tmp_path / 'preparer.db'}")  # a worker's own writer: it never writes
    later = _prepare_files(paths, translate, preparer, False, None, [1])
    earlier = _prepare_files(paths, translate, preparer, False, None, [0])
    store = FactStore(f"sqlite:///{tmp_path / 'store.db'}")
    for _, batches in earlier:  # the parent writes the first file first, in a group of its own
        store.write_many(batches)
    assert len(_facts(store)) == 4  # every call readable: no blob left for the second file to bring
    for _, batches in later:
        result = store.write_many(batches)
        assert result.duplicates["inference_calls"] == 4
    reference = FactStore(f"sqlite:///{tmp_path / 'reference.db'}")
    _ingest(paths[:1], reference)
    assert _facts(store) == _facts(reference)


def test_an_error_before_the_group_is_written_stores_nothing_of_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug that escapes translation (not an input's fault: it propagates) ends the run, and the
    group being gathered is not written after it; the groups committed before it stay."""
    paths = _files(tmp_path)
    monkeypatch.setattr(reading_files, "BATCH", 4)
    monkeypatch.setattr(write_groups, "GROUP_ROWS", 8)
    memo = ReplayMemo()
    seen = {"n": 0}

    def translate(record: Any) -> Any:
        seen["n"] += 1
        if seen["n"] == 30:
            raise RuntimeError("a bug in a translator (test)")
        return translate_call(record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo)

    store = FactStore(f"sqlite:///{tmp_path / 'bug.db'}")
    with pytest.raises(RuntimeError, match="a bug in a translator"):
        ingest_files(paths, translate, store, reader=lambda: SpanReader(min_line=0))
    # a file ends its last batch (15 calls: 4, 4, 4, 3), so the groups of 8 or more are calls 1-8,
    # 9-19 and 20-27; calls 28 and 29 were gathering in the fourth when call 30 failed
    assert len(_facts(store)) == 27
