"""Target swe-bench: six top-level keys, passes only (contract §4.3)."""


from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from sediment import export_rlvr_from_rollouts
from sediment.export.verifier_commands import VerifierCommands
from sediment.mirrors import MirrorRoot
from sediment.testing import (
    outcome,
    read_rows,
    rollout,
)

TASK_KEYS = [
    "instance_id", "recipe_id", "recipe_version", "reward_source", "repo", "base_commit",
    "problem_statement", "reference_patch", "verifier_results", "ci_resolution",
    "attribution_source", "split", "provenance", "session_commit_observation_ids",
    "repository_identity", "schema_id", "schema_version",
]


def export(rollouts: Any, mirrors: MirrorRoot | None, out: Path, target: str, *,
           split: bool = False, commands: VerifierCommands | None = None) -> dict[str, Any]:
    return export_rlvr_from_rollouts(
        rollouts, mirrors, out, target=target, split_enabled=split,
        verifier_commands=commands or VerifierCommands.empty(),
    )


@pytest.fixture
def history(commit_history: dict[str, str]) -> dict[str, str]:
    return commit_history


def git_diff(path: Path, base: str, head: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(path), "diff", "-M", "--no-ext-diff", "--src-prefix=a/",
         "--dst-prefix=b/", base, head], check=True, capture_output=True, text=True,
    ).stdout


def changed_lines(patch: str) -> list[str]:
    keep = ("diff --git", "+", "-", "rename from", "rename to", "new file", "deleted file")
    return [line for line in patch.splitlines() if line.startswith(keep)]


def test_swe_bench_rows(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    passed = rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])])
    failed = rollout("s2", commits=[history["c1"]], outcomes=[outcome("o2", history["c1"], "failed", run_id="2")])
    missing = rollout("s3", commits=[history["c1"]])
    summary = export([passed, failed, missing], mirror_root, tmp_path / "out", "swe-bench")
    assert summary["task_skipped"] == {"missing_verifier_evidence": 1, "failed_reference_patch": 1}
    [row] = read_rows(tmp_path / "out" / "tasks.jsonl")
    assert list(row) == ["instance_id", "repo", "base_commit", "problem_statement", "patch", "metadata"]
    assert row["metadata"]["reward_source"] == "resolved_ci_pass"
    assert not (tmp_path / "out" / "rollouts.jsonl").exists()
