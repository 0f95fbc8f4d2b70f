"""One leakage report from export directories: :func:`run_leakage` (docs/leakage.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sediment.reports.leakage import LeakageReport, Settings, leakage_report
from sediment.reports.leakage_near import near_duplicate_findings
from sediment.reports.leakage_rows import DEFAULT_TASK_ID_FIELDS, read_export_dirs


def run_leakage(dirs: Sequence[Path], *, settings: Settings | None = None, mirrors: Path | None = None,
                org_id: str | None = None, task_id_fields: Sequence[str] = DEFAULT_TASK_ID_FIELDS) -> LeakageReport:
    """Every kind over the rows of ``dirs``: exact, near-duplicate, repository and commit, task id."""
    settings = settings or Settings()
    read = read_export_dirs(dirs, task_id_fields=task_id_fields)
    walker = None
    if mirrors is not None:
        from sediment.reports.leakage_git import MirrorRanges

        walker = MirrorRanges(mirrors, org_id)
    report = leakage_report(read.rows, inputs=read.files, problems=read.problems, settings=settings,
                            walk=None if walker is None else walker.walk,
                            more=near_duplicate_findings(read.rows, settings))
    if walker is not None and walker.unchecked:
        report.notes.append("commit ranges not walked: " + ", ".join(
            f"{reason} ({n})" for reason, n in sorted(walker.unchecked.items())))
    return report
