"""Target swe-bench: six top-level keys, passes only (docs/exports.md, Targets)."""


from __future__ import annotations

from pathlib import Path

from sediment.testing import (
    MirrorRoot,
    outcome,
    read_rows,
    rollout,
)
from sediment.testing import (
    export_target as export,
)


def test_swe_bench_rows(tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str]) -> None:
    passed = rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])])
    failed = rollout("s2", commits=[commit_history["c1"]], outcomes=[outcome("o2", commit_history["c1"], "failed", run_id="2")])
    missing = rollout("s3", commits=[commit_history["c1"]])
    summary = export([passed, failed, missing], mirror_root, tmp_path / "out", "swe-bench")
    assert summary["task_skipped"] == {"missing_verifier_evidence": 1, "failed_reference_patch": 1}
    [row] = read_rows(tmp_path / "out" / "tasks.jsonl")
    assert list(row) == ["instance_id", "repo", "base_commit", "problem_statement", "patch", "metadata"]
    assert row["metadata"]["reward_source"] == "resolved_ci_pass"
    assert not (tmp_path / "out" / "rollouts.jsonl").exists()
