"""Target nemo-gym: boundary rows, categorical reward, no mirror needed (contract §4.4)."""


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
    snapshot,
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


def test_nemo_gym_rewards(tmp_path: Path, history: dict[str, str]) -> None:
    rollouts = [
        rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"], "passed", run_id="1")]),
        rollout("s2", commits=[history["c1"]], outcomes=[outcome("o2", history["c1"], "failed", run_id="2")]),
        rollout("s3", commits=[history["c1"]], outcomes=[outcome("o3", history["c1"], "cancelled", run_id="3")]),
    ]
    export(rollouts, None, tmp_path / "out", "nemo-gym")
    rows = read_rows(tmp_path / "out" / "rollouts.jsonl")
    assert [r.get("reward") for r in rows] == [1.0, 0.0, None]
    assert "reward_source" not in rows[2]["metadata"] and "ci_resolution" not in rows[2]["metadata"]
    assert rows[2]["metadata"]["verifier_results"][0]["result"] == "cancelled"
    assert rows[0]["responses_create_params"]["input"] == rows[0]["response"]["turns"][0]["new_messages"]
    text = (tmp_path / "out" / "rollouts.jsonl").read_text()
    assert "resources_server" not in text and '"environment"' not in text
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-rlvr-target", "rollouts.jsonl"]


def test_nemo_gym_without_mirrors_equals_with(tmp_path: Path, mirror_root: MirrorRoot,
                                              history: dict[str, str]) -> None:
    rollouts = [rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])])]
    export(rollouts, None, tmp_path / "a", "nemo-gym")
    export(rollouts, mirror_root, tmp_path / "b", "nemo-gym")
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
