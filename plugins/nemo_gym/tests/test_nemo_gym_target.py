"""Target nemo-gym: boundary rows, categorical reward, no mirror needed (docs/exports.md, Targets)."""


from __future__ import annotations

from pathlib import Path

from sediment.testing import (
    MirrorRoot,
    outcome,
    read_rows,
    rollout,
    snapshot,
)
from sediment.testing import (
    export_target as export,
)


def test_nemo_gym_rewards(tmp_path: Path, commit_history: dict[str, str]) -> None:
    rollouts = [
        rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"], "passed", run_id="1")]),
        rollout("s2", commits=[commit_history["c1"]], outcomes=[outcome("o2", commit_history["c1"], "failed", run_id="2")]),
        rollout("s3", commits=[commit_history["c1"]], outcomes=[outcome("o3", commit_history["c1"], "cancelled", run_id="3")]),
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
                                              commit_history: dict[str, str]) -> None:
    rollouts = [rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])])]
    export(rollouts, None, tmp_path / "a", "nemo-gym")
    export(rollouts, mirror_root, tmp_path / "b", "nemo-gym")
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
