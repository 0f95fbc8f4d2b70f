"""RLVR export edge cases (docs/exports.md), end to end through the real plugins and a
real git mirror; every emitted row is validated against the published schemas."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from sediment import export_rlvr_from_rollouts
from sediment.errors import ConfigurationError, OutputDirectoryError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.model.facts import ToolCallPart
from sediment.testing import (
    ORG,
    GitRepo,
    call,
    conversation,
    message,
    outcome,
    read_rows,
    rollout,
    snapshot,
)
from sediment.testing import (
    export_target as export,
)

# --- mirrors ------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["sediment", "swe-bench"])
def test_mirror_targets_refuse_no_mirrors(tmp_path: Path, target: str) -> None:
    with pytest.raises(ConfigurationError, match="only 'nemo-gym' projects without a mirror"):
        export([rollout("s1")], None, tmp_path / "out", target)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_missing_mirror_and_patch_reasons(tmp_path: Path, mirror_root: MirrorRoot, git_repo: GitRepo,
                                          commit_history: dict[str, str]) -> None:
    other_sha = "f" * 40
    rollouts = [
        rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"], repo="x/absent", run_id="1")],
                repo="x/absent"),
        rollout("s2", commits=[other_sha], outcomes=[outcome("o2", other_sha, run_id="2")]),
        rollout("s3", commits=[commit_history["root"]], outcomes=[outcome("o3", commit_history["root"], run_id="3")]),
        rollout("s4", commits=[commit_history["c2"], commit_history["c1"]], outcomes=[outcome("o4", commit_history["c1"], run_id="4")]),
    ]
    summary = export(rollouts, mirror_root, tmp_path / "out", "sediment")
    assert summary["task_skipped"] == {"mirror_absent": 1, "no_commit_in_verifier_repo": 1,
                                       "degenerate_commit_range": 1, "root_commit_no_base": 1}
    assert summary["task_rows"] == 0 and summary["rollout_rows"] == 4


def test_ambiguous_workflows_counted_in_every_target(tmp_path: Path, mirror_root: MirrorRoot,
                                                     commit_history: dict[str, str]) -> None:
    outcomes = [outcome("o1", commit_history["c1"], "passed", run_id="1", workflow_id="a", workflow_name="a",
                        workflow_path="a.yml"),
                outcome("o2", commit_history["c1"], "failed", run_id="2", workflow_id="b", workflow_name="b",
                        workflow_path="b.yml")]
    r = rollout("s1", commits=[commit_history["c1"]], outcomes=outcomes)
    s = export([r], mirror_root, tmp_path / "sed", "sediment")
    assert s["task_skipped"] == {"ambiguous_workflow_verdicts": 1, "missing_verifier_evidence": 1}
    assert s["rollout_skipped"] == {"ambiguous_workflow_verdicts": 1} and s["rollout_rows"] == 1
    s = export([r], mirror_root, tmp_path / "swe", "swe-bench")
    assert s["task_skipped"] == {"ambiguous_workflow_verdicts": 1, "missing_verifier_evidence": 1}
    s = export([r], None, tmp_path / "nemo", "nemo-gym")
    assert s["rollout_skipped"] == {"ambiguous_workflow_verdicts": 1}
    assert "reward" not in read_rows(tmp_path / "nemo" / "rollouts.jsonl")[0]


def test_observation_ids_only_for_the_verified_commit_and_session(
        tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str]) -> None:
    from sediment.model.facts import SessionCommitObservation
    from sediment.testing import T0

    def observation(oid: str, sha: str, session: str) -> SessionCommitObservation:
        return SessionCommitObservation(observation_id=oid, org_id=ORG, repo="owner/repo", commit_sha=sha,
                                        session_id=session, captured_at=T0)

    observations = (observation("obs-verified", commit_history["c1"], "s1"), observation("obs-base", commit_history["root"], "s1"),
                    observation("obs-other-session", commit_history["c1"], "s9"))
    r = rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])],
                session_commit_observations=observations)
    export([r], mirror_root, tmp_path / "out", "sediment")
    assert read_rows(tmp_path / "out" / "tasks.jsonl")[0]["session_commit_observation_ids"] == ["obs-verified"]
    assert read_rows(tmp_path / "out" / "rollouts.jsonl")[0]["session_commit_observation_ids"] == ["obs-verified"]
    export([r.model_copy(update={"terminal_outcomes": ()})], None, tmp_path / "nemo", "nemo-gym")
    assert read_rows(tmp_path / "nemo" / "rollouts.jsonl")[0]["metadata"]["session_commit_observation_ids"] == []


# --- representation -------------------------------------------------------------------


def test_non_finite_and_surrogates_decline_once_per_row(tmp_path: Path, mirror_root: MirrorRoot,
                                                        commit_history: dict[str, str]) -> None:
    nan = outcome("o1", commit_history["c1"], raw={"duration": float("nan")}, run_id="1")
    bad_key = outcome("o2", commit_history["c1"], raw={"\udc80key": 1}, run_id="2")
    rollouts = [rollout("s1", commits=[commit_history["c1"]], outcomes=[nan]),
                rollout("s2", commits=[commit_history["c1"]], outcomes=[bad_key])]
    for target, key in (("sediment", "task_skipped"), ("swe-bench", "task_skipped"), ("nemo-gym", "rollout_skipped")):
        summary = export(rollouts, mirror_root, tmp_path / target, target)
        assert summary[key] == {"non_finite_number": 1, "unrepresentable_unicode": 1}, target


def test_representation_checked_per_segment(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    calls = conversation("s1", turns=2)
    bad = message("assistant", ToolCallPart(id="t9", name="x", arguments={"v": float("inf")}))
    calls.append(call("s1", 5, [message("user", "new context")], [bad]))
    summaries = [export([rollout("s1", calls=calls)], mirror_root, tmp_path / f"o{i}", "nemo-gym") for i in range(2)]
    assert summaries[0]["rollout_skipped"] == {"non_finite_number": 1}
    assert summaries[0]["rollout_rows"] == 1
    assert snapshot(tmp_path / "o0") == snapshot(tmp_path / "o1")


def test_bad_turn_content_does_not_decline_task_rows(tmp_path: Path, mirror_root: MirrorRoot,
                                                     commit_history: dict[str, str]) -> None:
    calls = [call("s1", 0, [message("user", "go")], [message("assistant", ToolCallPart(
        id="t", name="x", arguments={"v": float("nan"), "s": "\ud800"}))])]
    r = rollout("s1", calls=calls, commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])])
    s = export([r], mirror_root, tmp_path / "out", "sediment")
    # the surrogate reaches the turn's completion text first, so it decides the reason
    assert s["task_rows"] == 1 and s["rollout_skipped"] == {"unrepresentable_unicode": 1}


# --- writer and determinism -------------------------------------------------------------


def test_split_routes_rows_to_their_side(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    export([rollout("s1", split="eval")], mirror_root, tmp_path / "a", "sediment", split=True)
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == [".sediment-rlvr-target", "rollouts.eval.jsonl"]
    export([rollout("s1", split="eval")], mirror_root, tmp_path / "b", "sediment", split=False)
    assert (tmp_path / "b" / "rollouts.jsonl").exists()


@pytest.mark.parametrize("target", ["sediment", "swe-bench", "nemo-gym"])
def test_repeated_and_shuffled_inputs_give_identical_bytes(
        tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str], target: str) -> None:
    rollouts = [
        rollout(f"s{i}", commits=[commit_history["c1"], commit_history["c2"]],
                outcomes=[outcome(f"o{i}a", commit_history["c2"], "failed", run_id=str(i), attempt=1),
                          outcome(f"o{i}b", commit_history["c2"], "passed", run_id=str(i), attempt=2)],
                split="eval" if i % 3 == 0 else "train")
        for i in range(8)
    ] + [rollout("s-none")]
    outputs = []
    for seed in range(4):
        shuffled = rollouts[:]
        random.Random(seed).shuffle(shuffled)
        out = tmp_path / f"out{seed}"
        export(shuffled, mirror_root, out, target, split=True)
        outputs.append(snapshot(out))
    assert all(o == outputs[0] for o in outputs)
    assert outputs[0]


def test_directory_claims(tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str]) -> None:
    r = rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])])
    out = tmp_path / "out"
    export([r], mirror_root, out, "sediment")
    before = snapshot(out)
    with pytest.raises(OutputDirectoryError, match="already belongs to RLVR target sediment"):
        export([r], None, out, "nemo-gym")
    with pytest.raises(OutputDirectoryError, match="already contains sediment artifacts"):
        export([r], mirror_root, out, "sediment")
    assert snapshot(out) == before


def test_empty_export_reuses_claimed_directory(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    out = tmp_path / "out"
    s = export([], mirror_root, out, "sediment")
    assert s["written"] == {} and s["manifests"] == {}
    assert (out / ".sediment-rlvr-target").read_text() == "sediment\n"
    s = export([rollout("s1")], mirror_root, out, "sediment")
    assert s["rollout_rows"] == 1


def test_stale_unclaimed_artifact_is_refused(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "tasks.jsonl").write_text("stale\n")
    with pytest.raises(OutputDirectoryError, match="artifacts without a target claim"):
        export([], mirror_root, out, "sediment")
    assert (out / "tasks.jsonl").read_text() == "stale\n"


def test_lock_held_refuses(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    out = tmp_path / "out"
    (out / ".sediment-rlvr-export.lock").mkdir(parents=True)
    with pytest.raises(OutputDirectoryError, match="export already in progress"):
        export([rollout("s1")], mirror_root, out, "sediment")


def test_failure_while_preparing_publishes_nothing(tmp_path: Path, mirror_root: MirrorRoot,
                                                   commit_history: dict[str, str]) -> None:
    from sediment.errors import CapacityError
    from sediment.export.pipeline import Budgets

    r = rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])])
    out = tmp_path / "out"
    with pytest.raises(CapacityError, match="exceeds"):
        export_rlvr_from_rollouts([r], mirror_root, out, target="sediment", split_enabled=False,
                                  verifier_commands=VerifierCommands.empty(),
                                  budgets=Budgets(max_stage_bytes=3000))
    assert sorted(p.name for p in out.iterdir()) == [".sediment-rlvr-target"]
    with pytest.raises(CapacityError, match="record exceeds byte budget"):
        export_rlvr_from_rollouts([r], mirror_root, tmp_path / "o2", target="sediment", split_enabled=False,
                                  verifier_commands=VerifierCommands.empty(),
                                  budgets=Budgets(max_record_bytes=100))
    assert sorted(p.name for p in (tmp_path / "o2").iterdir()) == [".sediment-rlvr-target"]


@pytest.mark.parametrize("target", ["sediment", "swe-bench", "nemo-gym"])
def test_workers_give_the_same_bytes(tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str],
                                     target: str) -> None:
    rollouts = [
        rollout(f"s{i:02d}", commits=[commit_history["c1"], commit_history["c2"]],
                outcomes=[outcome(f"o{i}", commit_history["c2"], "passed" if i % 3 else "failed", run_id=str(i))],
                split="eval" if i % 4 == 0 else "train")
        for i in range(13)
    ] + [rollout("s-none")]
    random.Random(1).shuffle(rollouts)
    summaries = []
    for workers in (1, 2, 3):
        out = tmp_path / f"w{workers}"
        summaries.append(export_rlvr_from_rollouts(rollouts, mirror_root, out, target=target, split_enabled=True,
                                                   verifier_commands=VerifierCommands.empty(), workers=workers))
    assert snapshot(tmp_path / "w1") == snapshot(tmp_path / "w2") == snapshot(tmp_path / "w3")
    assert [{k: v for k, v in s.items() if k not in ("written", "manifests")} for s in summaries] == \
        [{k: v for k, v in summaries[0].items() if k not in ("written", "manifests")}] * 3
    assert not [p for p in (tmp_path / "w2").iterdir() if p.name.startswith(".sediment-training-")]


@pytest.mark.parametrize("workers", [1, 2])
def test_published_files_were_fsynced(tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str],
                                      monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """Every published file was fsynced after its last byte was written, whatever the worker count."""
    synced: dict[int, int] = {}  # inode -> size when last fsynced
    real_fsync = os.fsync

    def recording_fsync(descriptor: int) -> None:
        real_fsync(descriptor)
        status = os.fstat(descriptor)
        synced[status.st_ino] = status.st_size

    monkeypatch.setattr(os, "fsync", recording_fsync)
    rollouts = [rollout(f"s{i:02d}", commits=[commit_history["c1"], commit_history["c2"]],
                        outcomes=[outcome(f"o{i}", commit_history["c2"], "passed", run_id=str(i))],
                        split="eval" if i % 4 == 0 else "train") for i in range(9)]
    summary = export_rlvr_from_rollouts(rollouts, mirror_root, tmp_path / "out", target="sediment",
                                        split_enabled=True, verifier_commands=VerifierCommands.empty(),
                                        workers=workers)
    assert len(summary["written"]) == 4
    for path in summary["written"]:
        status = os.stat(path)
        assert synced.get(status.st_ino) == status.st_size, path
