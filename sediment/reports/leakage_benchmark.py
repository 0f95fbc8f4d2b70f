"""Benchmark contamination for the leakage report (docs/leakage.md, Benchmarks).

A benchmark file is a SWE-bench-style instance file (JSONL, or Parquet with the ``parquet``
extra) whose instances carry ``instance_id``, ``repo``, ``base_commit``, ``patch`` and
``problem_statement``, or a plain list: one ``owner/repo [COMMIT...]`` a line (``#`` comments).
Every exported row that overlaps an instance is a finding of a benchmark kind, tagged
``benchmark:<name>``. Each check goes through an index of the benchmark (by id, repository, file,
n-gram), so the cost grows with the rows, not with rows times instances.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sediment.errors import ConfigurationError
from sediment.reports.leakage import Finding, Settings, row_order
from sediment.reports.leakage_rows import ExportedRow, normal_repo, normal_text

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
_TOKEN = re.compile(r"\w+")
#: ``(row, sha) -> whether sha lies in the row's range`` (None: cannot be told).
Reacher = Callable[[ExportedRow, str], "bool | None"]


@dataclass(frozen=True)
class Instance:
    instance_id: str
    repo: str
    base_commits: tuple[str, ...]
    patch: str
    problem_statement: str


def _instance(value: Any, where: str) -> Instance:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: not a JSON object")
    for name in ("instance_id", "repo"):
        if not isinstance(value.get(name), str) or not value[name]:
            raise ConfigurationError(f"{where}: field {name}: a non-empty string is required")
    fields = {}
    for name in ("base_commit", "patch", "problem_statement"):
        got = value.get(name)
        if got is not None and not isinstance(got, str):
            raise ConfigurationError(f"{where}: field {name}: a string is required")
        fields[name] = got or ""
    return Instance(value["instance_id"], normal_repo(value["repo"]),
                    (fields["base_commit"].lower(),) if fields["base_commit"] else (), fields["patch"],
                    fields["problem_statement"])


def load_benchmark(path: Path) -> list[Instance]:
    """The instances of ``path``; a bad line or field is refused in one line naming it."""
    try:
        if path.suffix == ".parquet":
            try:
                import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
            except ImportError:
                raise ConfigurationError(f"{path}: reading Parquet needs the parquet extra "
                                         "(pip install 'sediment[parquet]')") from None
            table = pq.read_table(path)
            return [_instance(r, f"{path}: row {i}") for i, r in enumerate(table.to_pylist(), start=1)]
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read benchmark: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{path}: benchmark is not UTF-8") from None
    instances = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("{"):
            try:
                value = json.loads(stripped)
            except ValueError:
                raise ConfigurationError(f"{path}:{number}: not JSON") from None
            instances.append(_instance(value, f"{path}:{number}"))
        else:
            repo, *commits = stripped.split()
            if "/" not in repo or any(not re.fullmatch(r"[0-9a-fA-F]{7,64}", c) for c in commits):
                raise ConfigurationError(f"{path}:{number}: expected 'owner/repo [COMMIT...]'")
            instances.append(Instance(f"{repo}@{','.join(commits)}" if commits else repo, normal_repo(repo),
                                      tuple(c.lower() for c in commits), "", ""))
    return instances


def hunks(patch: str) -> dict[str, list[tuple[int, int]]]:
    """Old-side line ranges of each file a unified diff changes (``a/`` paths; new files: the ``b/`` path)."""
    found: dict[str, list[tuple[int, int]]] = defaultdict(list)
    path = ""
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            parts = line.split(" b/", 1)
            path = parts[1] if len(parts) == 2 else ""
            found.setdefault(path, [])
        elif line.startswith("--- a/"):
            path = line[6:]
            found.setdefault(path, [])
        elif (match := _HUNK.match(line)) and path:
            start, length = int(match.group(1)), int(match.group(2) or 1)
            found[path].append((start, start + max(length, 1) - 1))
    return dict(found)


def ngrams(text: str, size: int) -> set[str]:
    words = _TOKEN.findall(normal_text(text))
    return {" ".join(words[i:i + size]) for i in range(len(words) - size + 1)}


def benchmark_findings(rows: Sequence[ExportedRow], instances: Sequence[Instance], *, name: str,
                       settings: Settings, reaches: Reacher | None = None) -> list[Finding]:
    """Every benchmark kind, each a finding per instance with the rows that meet it."""
    eval_set = f"benchmark:{name}"
    by_id = {i.instance_id: i for i in instances}
    by_repo: dict[str, list[Instance]] = defaultdict(list)
    by_file: dict[tuple[str, str], list[tuple[Instance, list[tuple[int, int]]]]] = defaultdict(list)
    by_gram: dict[str, set[str]] = defaultdict(set)
    gram_count: dict[str, int] = {}
    for instance in instances:
        by_repo[instance.repo].append(instance)
        for path, ranges in hunks(instance.patch).items():
            by_file[(instance.repo, path)].append((instance, ranges))
        grams = ngrams(instance.problem_statement, settings.ngram)
        gram_count[instance.instance_id] = len(grams)
        for gram in grams:
            by_gram[gram].add(instance.instance_id)
    hits: dict[tuple[str, str], set[ExportedRow]] = defaultdict(set)
    details: dict[tuple[str, str], str] = {}
    for row in sorted(rows, key=row_order):
        for task_id in {row.row_id, *row.task_ids}:
            if task_id in by_id:
                hits[("benchmark_task_id", task_id)].add(row)
        for instance in by_repo.get(row.repo, ()) if row.repo else ():
            hits[("benchmark_repository", instance.instance_id)].add(row)
            for sha in instance.base_commits:
                reached: bool | None = sha in row.commits
                if not reached and reaches is not None and row.base_commit and row.head_commits:
                    reached = reaches(row, sha)
                if reached:
                    hits[("benchmark_commit", instance.instance_id)].add(row)
                    details[("benchmark_commit", instance.instance_id)] = f"base {sha[:12]} in the rows' range"
        for path, ranges in hunks(row.patch).items() if row.patch and row.repo else ():
            for instance, theirs in by_file.get((row.repo, path), ()):
                overlap = any(a <= d and c <= b for a, b in ranges for c, d in theirs)
                kind = "benchmark_patch_hunk" if overlap else "benchmark_patch_file"
                hits[(kind, instance.instance_id)].add(row)
                details.setdefault((kind, instance.instance_id), path)
        if row.prompt and by_gram:
            counts: dict[str, int] = defaultdict(int)
            for gram in ngrams(row.prompt, settings.ngram):
                for instance_id in by_gram.get(gram, ()):
                    counts[instance_id] += 1
            for instance_id, n in counts.items():
                if n / gram_count[instance_id] >= settings.ngram_threshold:
                    hits[("benchmark_problem_statement", instance_id)].add(row)
    # a file overlapping in a hunk is not also reported as the same file
    for (kind, instance_id), members in list(hits.items()):
        if kind == "benchmark_patch_file":
            members -= hits.get(("benchmark_patch_hunk", instance_id), set())
            if not members:
                del hits[(kind, instance_id)]
    return [Finding(kind, instance_id, tuple(sorted(members, key=row_order)), eval_set=eval_set,
                    detail=details.get((kind, instance_id), ""))
            for (kind, instance_id), members in hits.items()]
