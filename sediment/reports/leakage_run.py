"""One leakage report from export directories: :func:`run_leakage` (docs/leakage.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sediment.reports.leakage import LeakageReport, Settings, leakage_report
from sediment.reports.leakage_benchmark import benchmark_findings, load_benchmark
from sediment.reports.leakage_near import near_duplicate_findings
from sediment.reports.leakage_rows import DEFAULT_TASK_ID_FIELDS, read_export_dirs


def run_leakage(dirs: Sequence[Path], *, settings: Settings | None = None, mirrors: Path | None = None,
                org_id: str | None = None, task_id_fields: Sequence[str] = DEFAULT_TASK_ID_FIELDS,
                benchmark: Path | None = None, benchmark_name: str | None = None) -> LeakageReport:
    """Every kind over the rows of ``dirs``: exact, near-duplicate, repository and commit, task id;
    with ``benchmark``, every benchmark kind against its instances (named ``benchmark_name``,
    default the file's stem). A benchmark that cannot be read is refused before anything else."""
    settings = settings or Settings()
    instances = None if benchmark is None else load_benchmark(benchmark)
    read = read_export_dirs(dirs, task_id_fields=task_id_fields)
    walker = None
    if mirrors is not None:
        from sediment.reports.leakage_git import MirrorRanges

        walker = MirrorRanges(mirrors, org_id)
    more = near_duplicate_findings(read.rows, settings)
    name = benchmark_name or (benchmark.name.split(".")[0] if benchmark is not None else "")
    if instances is not None:
        more += benchmark_findings(read.rows, instances, name=name, settings=settings,
                                   reaches=None if walker is None else walker.reaches)
    report = leakage_report(read.rows, inputs=read.files, problems=read.problems, settings=settings,
                            walk=None if walker is None else walker.walk, more=more)
    if instances is not None and benchmark is not None:
        report.benchmark = {"file": str(benchmark), "name": name, "instances": len(instances),
                            "ancestry": "mirrors" if walker is not None else "named commits only"}
    if walker is not None and walker.unchecked:
        report.notes.append("commit ranges not walked: " + ", ".join(
            f"{reason} ({n})" for reason, n in sorted(walker.unchecked.items())))
    return report
