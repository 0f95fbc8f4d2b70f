"""An ingest's prepared batches, committed to the store a group at a time.

A batch (:data:`~sediment.ingest.reading.files.BATCH` Facts at most) bounds what translation
holds in memory; a group bounds what waits for one transaction (it ends with the batch that
takes it past a bound, so it may pass it by that batch). Content blobs are keyed by
their hash, so every commit rewrites index pages all over the store (about one page per new
blob), and SQLite's checkpoints then wait for the disk to take them: on the bench's
``pilot-tenth``, 76 commits of about 2 MiB of blobs each took 5.2 s to insert the blobs alone,
19 commits 3.6 s. A group is committed once its new content reaches :data:`GROUP_BYTES` or its
rows :data:`GROUP_ROWS`, when its owner calls :meth:`WriteGroups.flush` (a parallel ingest does
after each file once every file left is being read), and at the end of the ingest; a run stopped
in between loses the group not yet committed, and running it again stores it (the Facts already
stored collapse as redeliveries).

The pages a commit rewrites grow with the store (a new blob lands on a random page of the hash
index), so the larger the store, the more a commit costs. A parallel ingest's parent (local
workers, several files), which holds nothing but the group, gathers :data:`PARALLEL_GROUP_BYTES`:
on the full ``pilot`` (192,960 calls, a 2.1 GB store) its commits took 34 s instead of 47 s, and
the ingest 102 s instead of 107 s. One process keeps :data:`GROUP_BYTES`, since it also holds its
readers' memories (a group takes about 1.6 times its bytes in memory: at 128 MiB its peak went
from 543 MB to 743 MB), and so does a Ray ingest's parent, which holds the partitions that come
back before their turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from sediment.store import AppendResult, FactStore, PreparedFacts

GROUP_BYTES: Final = 32 * 1024 * 1024
"""A group is committed once its batches' new content (blobs as stored, compressed, and the
record text of the Facts stored inline) reaches this size."""
GROUP_ROWS: Final = 20_000
"""… or once it holds this many Facts."""
PARALLEL_GROUP_BYTES: Final = 128 * 1024 * 1024
"""The byte bound of a group gathered by a parallel ingest's parent (see the module)."""


class WriteGroups:
    """Prepared batches, written in the order added, in transactions of a group each; used as a
    context manager. ``written`` is told what each group stored. The last group is written when
    the block ends without an error; after an error the group being gathered is not written
    (the error goes on: the run loses that group, as a crash would)."""

    def __init__(self, store: FactStore, written: Callable[[AppendResult], None], *, parallel: bool = False) -> None:
        self._store = store
        self._written = written
        self._group_bytes = PARALLEL_GROUP_BYTES if parallel else GROUP_BYTES
        self._group_rows = GROUP_ROWS
        self._pending: list[PreparedFacts] = []
        self._bytes = 0
        self._rows = 0

    def add(self, prepared: PreparedFacts) -> None:
        self._pending.append(prepared)
        self._bytes += sum(map(len, prepared.blobs.values()))
        self._bytes += sum(len(values["record"]) for _, values in prepared.rows)  # inline, or a body's hash
        self._rows += len(prepared.rows)
        if self._bytes >= self._group_bytes or self._rows >= self._group_rows:
            self._commit()

    def flush(self) -> None:
        """Commit the group gathered so far now, whatever its size (the next group starts empty)."""
        self._commit()

    def __enter__(self) -> WriteGroups:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self._commit()

    def _commit(self) -> None:
        """Write the batches added since the last group (nothing when there are none)."""
        if not self._pending:
            return
        pending, self._pending, self._bytes, self._rows = self._pending, [], 0, 0
        self._written(self._store.write_many(pending))
