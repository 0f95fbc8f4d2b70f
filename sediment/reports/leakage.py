"""``sediment report leakage``: what overlaps across the splits of exported rows, and with a
benchmark (docs/leakage.md). The report tags rows; it never changes an export.

A **finding** is one kind of overlap and the rows that share it, on at least two splits (or, for a
benchmark kind, the rows that meet one benchmark instance). Each row's ``eval_sets`` tag lists the
sets it overlaps: ``split:<name>`` for another split of the exports, ``benchmark:<name>`` for a
benchmark. Findings, rows and tags come out sorted, so the report is the same whatever the order of
the directories and rows it read.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sediment.reports.leakage_rows import ExportedRow, normal_text

#: Kinds across the splits of the exports, in report order.
SPLIT_KINDS = ("exact_prompt", "near_duplicate_prompt", "near_duplicate_patch", "same_repository",
               "same_base_commit", "overlapping_commits", "same_task_id")
#: Kinds against a benchmark (``--benchmark``).
BENCHMARK_KINDS = ("benchmark_task_id", "benchmark_repository", "benchmark_commit", "benchmark_patch_file",
                   "benchmark_patch_hunk", "benchmark_problem_statement")
KINDS = SPLIT_KINDS + BENCHMARK_KINDS

#: ``(base, head) -> commits in the range`` or None when the range cannot be walked.
RangeWalker = Callable[[ExportedRow], "frozenset[str] | None"]


@dataclass(frozen=True)
class Finding:
    kind: str
    key: str  #: what the rows share: a prompt digest, ``repo``, ``repo@sha``, an instance id
    rows: tuple[ExportedRow, ...]
    eval_set: str = ""  #: a benchmark kind: ``benchmark:<name>``; "" for a split kind
    similarity: float | None = None
    detail: str = ""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "key": self.key}
        if self.eval_set:
            out["eval_set"] = self.eval_set
        if self.similarity is not None:
            out["similarity"] = self.similarity
        if self.detail:
            out["detail"] = self.detail
        out["splits"] = sorted({r.split for r in self.rows})
        out["rows"] = [{"row_id": r.row_id, "split": r.split, "source": r.source} for r in self.rows]
        return out


@dataclass(frozen=True)
class Settings:
    """The report's documented settings (docs/leakage.md, Settings)."""

    threshold: float = 0.8
    num_perm: int = 128
    shingle: int = 3
    ngram: int = 8
    ngram_threshold: float = 0.5

    def as_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "num_perm": self.num_perm, "shingle": self.shingle,
                "ngram": self.ngram, "ngram_threshold": self.ngram_threshold}


@dataclass
class LeakageReport:
    inputs: dict[str, int]  #: directory -> files read
    rows: list[ExportedRow]
    problems: list[str]
    settings: Settings
    findings: list[Finding] = field(default_factory=list)
    benchmark: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def kinds_present(self) -> list[str]:
        return [k for k in KINDS if any(f.kind == k for f in self.findings)]

    def kind_summary(self) -> dict[str, dict[str, Any]]:
        """Per kind: findings and the distinct flagged rows per split (every kind, zeros kept)."""
        out: dict[str, dict[str, Any]] = {}
        for kind in KINDS if self.benchmark is not None else SPLIT_KINDS:
            found = [f for f in self.findings if f.kind == kind]
            per_split: dict[str, set[str]] = defaultdict(set)
            for finding in found:
                for row in finding.rows:
                    per_split[row.split].add(row.row_id)
            out[kind] = {"findings": len(found), "rows": {s: len(ids) for s, ids in sorted(per_split.items())}}
        return out

    def tags(self) -> list[dict[str, Any]]:
        """One tag line per row id: its splits, the eval sets and kinds it overlaps, its sources."""
        by_id: dict[str, dict[str, set[str]]] = {}
        for row in self.rows:
            entry = by_id.setdefault(row.row_id, {"splits": set(), "eval_sets": set(), "kinds": set(),
                                                  "sources": set()})
            entry["splits"].add(row.split)
            entry["sources"].add(row.source)
        for finding in self.findings:
            splits = {r.split for r in finding.rows}
            for row in finding.rows:
                entry = by_id[row.row_id]
                entry["kinds"].add(finding.kind)
                if finding.eval_set:
                    entry["eval_sets"].add(finding.eval_set)
                else:
                    entry["eval_sets"].update(f"split:{s}" for s in splits if s != row.split)
        return [{"row_id": row_id, "splits": sorted(e["splits"]), "eval_sets": sorted(e["eval_sets"]),
                 "kinds": [k for k in KINDS if k in e["kinds"]], "sources": sorted(e["sources"])}
                for row_id, e in sorted(by_id.items())]

    def as_json(self) -> dict[str, Any]:
        splits: dict[str, int] = defaultdict(int)
        for row in self.rows:
            splits[row.split] += 1
        return {
            "inputs": [{"dir": d, "files": n} for d, n in sorted(self.inputs.items())],
            "rows": len(self.rows),
            "splits": dict(sorted(splits.items())),
            "settings": self.settings.as_json(),
            "benchmark": self.benchmark,
            "kinds": self.kind_summary(),
            "findings": [f.as_json() for f in self.findings],
            "problems": sorted(self.problems),
            "notes": self.notes,
        }


def row_order(row: ExportedRow) -> tuple[str, str, str]:
    return (row.split, row.row_id, row.source)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _crosses(rows: Iterable[ExportedRow]) -> bool:
    return len({r.split for r in rows}) > 1


def group_findings(kind: str, groups: Mapping[str, Iterable[ExportedRow]], *,
                   detail: Callable[[str], str] | None = None) -> list[Finding]:
    """A finding for every group whose rows stand on two splits or more (rows of one id and split
    found in several files stay apart: each file is a source of its own)."""
    found = []
    for key, members in groups.items():
        rows = tuple(sorted(set(members), key=row_order))
        if _crosses(rows):
            found.append(Finding(kind, key, rows, detail=detail(key) if detail else ""))
    return found


def exact_prompts(rows: Sequence[ExportedRow]) -> list[Finding]:
    groups: dict[str, list[ExportedRow]] = defaultdict(list)
    for row in rows:
        if row.prompt:
            groups[digest(normal_text(row.prompt))].append(row)
    return group_findings("exact_prompt", groups)


def task_ids(rows: Sequence[ExportedRow]) -> list[Finding]:
    groups: dict[str, list[ExportedRow]] = defaultdict(list)
    for row in rows:
        for task_id in row.task_ids:
            groups[task_id].append(row)
    return group_findings("same_task_id", groups)


def repositories(rows: Sequence[ExportedRow], walk: RangeWalker | None = None) -> tuple[list[Finding], list[str]]:
    """``same_repository``, ``same_base_commit`` and ``overlapping_commits``. Without a walker a
    row's commits are the ones it names (base and heads); with one, every commit of its range
    (reachable from a head, not from the base) besides. Returns the findings and notes."""
    repos: dict[str, list[ExportedRow]] = defaultdict(list)
    bases: dict[str, list[ExportedRow]] = defaultdict(list)
    commits: dict[str, list[ExportedRow]] = defaultdict(list)
    unwalked = 0
    for row in rows:
        if not row.repo:
            continue
        repos[row.repo].append(row)
        if row.base_commit:
            bases[f"{row.repo}@{row.base_commit}"].append(row)
        named = set(row.head_commits)
        if walk is not None and row.base_commit and row.head_commits:
            walked = walk(row)
            if walked is None:
                unwalked += 1
            else:
                named |= walked
        for sha in named:
            commits[f"{row.repo}@{sha}"].append(row)
        if row.base_commit:
            commits[f"{row.repo}@{row.base_commit}"].append(row)
    found = group_findings("same_repository", repos)
    found += group_findings("same_base_commit", bases)
    # a shared base is its own kind: an overlap of commits counts only where some row has it in its range
    ranged = {key: members for key, members in commits.items()
              if any(key != f"{r.repo}@{r.base_commit}" for r in members)}
    found += group_findings("overlapping_commits", ranged)
    notes = [f"{unwalked} row(s) whose commit range the mirrors could not walk: only their named commits compared"] \
        if unwalked else []
    return found, notes


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(findings, key=lambda f: (order[f.kind], f.eval_set, f.key,
                                           [(r.split, r.row_id, r.source) for r in f.rows]))


def leakage_report(rows: Sequence[ExportedRow], *, inputs: Mapping[str, int], problems: Sequence[str] = (),
                   settings: Settings | None = None, walk: RangeWalker | None = None,
                   more: Sequence[Finding] = ()) -> LeakageReport:
    """The exact and repository kinds over ``rows``, with ``more`` findings made elsewhere (near
    duplicates, a benchmark: :func:`sediment.reports.leakage_run.run_leakage` makes them all)."""
    settings = settings or Settings()
    ordered = sorted(rows, key=row_order)
    found = exact_prompts(ordered) + task_ids(ordered) + list(more)
    repo_found, notes = repositories(ordered, walk)
    found += repo_found
    return LeakageReport(inputs=dict(inputs), rows=ordered, problems=list(problems), settings=settings,
                         findings=sort_findings(found), notes=notes)
