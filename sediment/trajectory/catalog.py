"""The library's catalog: every record with its ranking, filtered (``library list``), and a
record named by an unambiguous prefix of its id (``library inspect``, ``library list``).

Reads ``index.sqlite`` only: no shard is opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sediment.errors import UsageError
from sediment.trajectory.library import Library, LibraryError

#: The columns of a catalog row, in order.
COLUMNS: tuple[str, ...] = (
    "trajectory_id", "source_id", "task_key", "task_family", "outcome_category", "quality_tier",
    "within_task_rank", "sft_eligible", "split", "event_count", "retained_trajectory_id")

#: How many candidates an ambiguous prefix names in its one line.
SHOWN_CANDIDATES = 10


class AmbiguousIdError(UsageError):
    """A trajectory id prefix that names more than one record (a usage error)."""


@dataclass(frozen=True)
class CatalogFilters:
    """Conjunctive filters; empty (or ``None``) means no filter on that field."""

    source: Sequence[str] = ()  #: source_id (the importer's source, e.g. ``sediment``)
    task: Sequence[str] = ()  #: task_key
    benchmark: Sequence[str] = ()  #: task_family
    quality_tier: Sequence[int] = ()
    sft_eligible: bool | None = None  #: True: only SFT-eligible attempts; False: only the others
    split: Sequence[str] = ()  #: the task's derived split (train / eval)
    retained_only: bool = False  #: only retained attempts (not the duplicates collapsed into them)


_SELECT = """
    SELECT r.trajectory_id, r.source_id, r.task_key, r.task_family, r.outcome_category, k.quality_tier,
           k.within_task_rank, k.sft_eligible, s.split, r.event_count, t.retained_trajectory_id
    FROM records r
    LEFT JOIN retained t ON t.trajectory_id = r.trajectory_id
    LEFT JOIN rankings k ON k.trajectory_id = t.retained_trajectory_id
    LEFT JOIN task_splits s ON s.task_key = r.task_key
"""

_FILTERED = {"source": "r.source_id", "task": "r.task_key", "benchmark": "r.task_family",
             "quality_tier": "k.quality_tier", "split": "s.split"}


def catalog(library: Library, filters: CatalogFilters | None = None) -> list[dict[str, Any]]:
    """Every record matching ``filters``, in ``trajectory_id`` order: its source, task, outcome and
    the ranking of the attempt it is retained as (a duplicate shares its retained attempt's tier,
    rank and eligibility)."""
    library.manifest()
    filters = filters or CatalogFilters()
    where: list[str] = []
    parameters: list[Any] = []
    for name, column in _FILTERED.items():
        values = list(getattr(filters, name))
        if values:
            where.append(f"{column} IN ({', '.join('?' for _ in values)})")
            parameters.extend(values)
    if filters.sft_eligible is not None:
        where.append("k.sft_eligible = ?")
        parameters.append(int(filters.sft_eligible))
    if filters.retained_only:
        where.append("t.retained_trajectory_id = r.trajectory_id")
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = library.query(f"{_SELECT}{clause} ORDER BY r.trajectory_id", parameters)
    for row in rows:
        if row["sft_eligible"] is not None:
            row["sft_eligible"] = bool(row["sft_eligible"])
    return rows


def resolve(library: Library, prefix: str) -> str:
    """The one ``trajectory_id`` that is ``prefix`` or starts with it.

    :raises LibraryError: no record (exit 1, as for an unknown id).
    :raises AmbiguousIdError: several records (exit 2): one line naming the candidates.
    """
    library.manifest()
    exact = library.query("SELECT trajectory_id FROM records WHERE trajectory_id = ?", [prefix])
    if exact:
        return str(exact[0]["trajectory_id"])
    found = [str(row["trajectory_id"]) for row in library.query(
        "SELECT trajectory_id FROM records WHERE substr(trajectory_id, 1, ?) = ? ORDER BY trajectory_id LIMIT ?",
        [len(prefix), prefix, SHOWN_CANDIDATES + 1])]
    if not found or not prefix:
        raise LibraryError(f"no trajectory {prefix!r} in {library.root}")
    if len(found) == 1:
        return found[0]
    count = library.query("SELECT COUNT(*) AS n FROM records WHERE substr(trajectory_id, 1, ?) = ?",
                          [len(prefix), prefix])[0]["n"]
    shown = ", ".join(found[:SHOWN_CANDIDATES])
    more = f" and {count - SHOWN_CANDIDATES} more" if count > SHOWN_CANDIDATES else ""
    raise AmbiguousIdError(f"trajectory id prefix {prefix!r} names {count} records: {shown}{more}; give more of the id")
