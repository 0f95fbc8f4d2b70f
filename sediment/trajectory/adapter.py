"""``CanonicalDatasetAdapter``: the one contract through which consumers select, sample and
project a library (documented in ``docs/dataset_adapter.md``).

Selection and filtering read ``index.sqlite`` only; records are loaded from their shards just
for the rows that survive. Sampling is deterministic: the same library, arguments and seed
give the same samples, whatever order the records were imported in.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sediment.trajectory import views
from sediment.trajectory.library import Library, LibraryError

Selection = Literal["best", "successful", "all"]
Sampling = Literal["random", "task", "source-balanced"]
View = Literal["full", "turns"]
SELECTIONS: tuple[str, ...] = ("best", "successful", "all")
SAMPLINGS: tuple[str, ...] = ("random", "task", "source-balanced")
VIEWS: tuple[str, ...] = ("full", "turns")


@dataclass(frozen=True)
class Filters:
    """Conjunctive filters; ``None`` (or empty) means no filter on that field."""

    benchmark: Sequence[str] = ()  #: task_family
    source: Sequence[str] = ()  #: source_id
    source_version: Sequence[str] = ()  #: source revision
    model: Sequence[str] = ()
    scaffold: Sequence[str] = ()
    split: Sequence[str] = ()  #: derived task split (task_splits.jsonl.gz): train / eval
    quality_tier: Sequence[int] = ()
    max_rank: int | None = None  #: keep within_task_rank <= max_rank
    include_ineligible: bool = False  #: also rows that are not SFT-eligible


_COLUMNS = {"benchmark": "task_family", "source": "source_id", "source_version": "source_revision",
            "model": "model", "scaffold": "scaffold", "split": "split", "quality_tier": "quality_tier"}


class CanonicalDatasetAdapter:
    """Select ranked rows of a library, sample them, and project them into SFT views."""

    def __init__(self, library: Library | str | Path) -> None:
        self.library = library if isinstance(library, Library) else Library(library)
        self.library.manifest()

    def select(self, selection: str = "best", filters: Filters | None = None) -> list[dict[str, Any]]:
        """Rows of the joined ``library`` view (retained interactions), sorted by task, environment, rank.

        ``best``: the first-ranked attempt of every task and environment; ``successful``: every
        attempt whose outcome category is success; ``all``: every retained attempt."""
        if selection not in SELECTIONS:
            raise LibraryError(f"unknown selection {selection!r}; one of: {', '.join(SELECTIONS)}")
        filters = filters or Filters()
        where: list[str] = []
        parameters: list[Any] = []
        if selection == "best":
            where.append("within_task_rank = 1")
        elif selection == "successful":
            where.append("outcome_category = 'success'")
        if not filters.include_ineligible:
            where.append("sft_eligible = 1")
        for name, column in _COLUMNS.items():
            values = list(getattr(filters, name))
            if values:
                where.append(f"{column} IN ({', '.join('?' for _ in values)})")
                parameters.extend(values)
        if filters.max_rank is not None:
            where.append("within_task_rank <= ?")
            parameters.append(filters.max_rank)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return self.library.query(
            f"SELECT * FROM library{clause} ORDER BY task_key, environment_key, within_task_rank, trajectory_id",
            parameters)

    @staticmethod
    def sample(rows: Sequence[dict[str, Any]], count: int | None, strategy: str = "random", seed: int = 0
               ) -> list[dict[str, Any]]:
        """A deterministic sample of ``rows`` (``count`` ``None``: all of them, in order).

        ``random``: ``count`` rows uniformly; ``task``: every row of ``count`` tasks drawn
        uniformly; ``source-balanced``: round robin over sources (each shuffled), ``count`` rows."""
        if strategy not in SAMPLINGS:
            raise LibraryError(f"unknown sampling {strategy!r}; one of: {', '.join(SAMPLINGS)}")
        ordered = sorted(rows, key=lambda r: (r["task_key"], r["environment_key"], r["within_task_rank"],
                                              r["trajectory_id"]))
        if count is None:
            return ordered
        if count < 0:
            raise LibraryError(f"sample size must be at least 0, got {count}")
        rng = random.Random(f"{strategy}:{seed}")
        if strategy == "random":
            chosen = rng.sample(ordered, min(count, len(ordered)))
        elif strategy == "task":
            tasks = sorted({r["task_key"] for r in ordered})
            picked = set(rng.sample(tasks, min(count, len(tasks))))
            chosen = [r for r in ordered if r["task_key"] in picked]
        else:
            by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for row in ordered:
                by_source[row["source_id"] or ""].append(row)
            queues = []
            for name in sorted(by_source):
                queue = list(by_source[name])
                rng.shuffle(queue)
                queues.append(queue)
            chosen = []
            while len(chosen) < count and any(queues):
                for queue in queues:
                    if queue and len(chosen) < count:
                        chosen.append(queue.pop(0))
        return sorted(chosen, key=lambda r: (r["task_key"], r["environment_key"], r["within_task_rank"],
                                             r["trajectory_id"]))

    def project(self, rows: Sequence[dict[str, Any]], view: str = "full") -> Iterator[dict[str, Any]]:
        """The view samples of ``rows``, in row order; each sample's metadata names its ranking and split."""
        if view not in VIEWS:
            raise LibraryError(f"unknown view {view!r}; one of: {', '.join(VIEWS)}")
        for row in rows:
            record = self.library.record(row["trajectory_id"])
            extra = {"ranking": {"quality_tier": row["quality_tier"], "within_task_rank": row["within_task_rank"],
                                 "demonstration_provenance": row["demonstration_provenance"],
                                 "outcome_category": row["outcome_category"],
                                 "verification_strength": row["verification_strength"]},
                     "task_split": row["split"]}
            if view == "full":
                yield views.full_trajectory(record, extra)
            else:
                yield from views.assistant_turns(record, extra)

    # the consumer selections of the seed, on the adapter as well
    def alternatives(self, task_key: str) -> list[dict[str, Any]]:
        return self.library.alternatives(task_key)

    def best_verified(self, task_key: str) -> dict[str, Any] | None:
        return self.library.best_verified(task_key)

    def by_quality_tier(self, *tiers: int) -> list[dict[str, Any]]:
        return self.library.by_quality_tier(*tiers)
