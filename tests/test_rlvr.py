"""RLVR export edge cases (contract §4–§6, §13), end to end through the real plugins and a
real git mirror; every emitted row is validated against the published schemas."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sediment import export_rlvr_from_rollouts
from sediment.errors import ConfigurationError, OutputDirectoryError
from sediment.export.verifier_commands import VerifierCommands
from sediment.facts import ReasoningPart, ToolCallPart
from sediment.mirrors import MirrorRoot
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
def history(git_repo: GitRepo) -> dict[str, str]:
    """root → c1 (fix) → c2 (test) → c3 (unverified later change)."""
    root = git_repo.commit({"calc.py": "def add(a, b):\n    return a - b\n", "old.txt": "x\n" * 20})
    c1 = git_repo.commit({"calc.py": "def add(a, b):\n    return a + b\n"})
    c2 = git_repo.commit({"test_calc.py": "def test_add():\n    assert True\n",
                          "old.txt": None, "renamed.txt": "x\n" * 20})
    c3 = git_repo.commit({"later.py": "print('later')\n"})
    return {"root": root, "c1": c1, "c2": c2, "c3": c3}


def git_diff(path: Path, base: str, head: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(path), "diff", "-M", "--no-ext-diff", "--src-prefix=a/",
         "--dst-prefix=b/", base, head], check=True, capture_output=True, text=True,
    ).stdout


def changed_lines(patch: str) -> list[str]:
    keep = ("diff --git", "+", "-", "rename from", "rename to", "new file", "deleted file")
    return [line for line in patch.splitlines() if line.startswith(keep)]


# --- task rows ------------------------------------------------------------------------


def test_clean_pass_task_row(tmp_path: Path, mirror_root: MirrorRoot, git_repo: GitRepo,
                             history: dict[str, str]) -> None:
    r = rollout("s1", commits=[history["c1"], history["c2"]],
                outcomes=[outcome("o1", history["c2"], "passed", attempt=None)])
    summary = export([r], mirror_root, tmp_path / "out", "sediment")
    [task] = read_rows(tmp_path / "out" / "tasks.jsonl")
    assert list(task) == TASK_KEYS
    assert task["instance_id"] == f"{ORG}-s1-{history['c1'][:7]}"
    assert task["base_commit"] == history["root"]
    assert task["reward_source"] == "resolved_ci_pass"
    assert task["problem_statement"] == "fix the bug"
    assert changed_lines(task["reference_patch"]) == changed_lines(
        git_diff(git_repo.path, history["root"], history["c2"]))
    assert "rename from old.txt" in task["reference_patch"]
    assert task["verifier_results"] == [outcome("o1", history["c2"], "passed", attempt=None).model_dump(mode="json")]
    assert task["ci_resolution"]["reliability"] == 1.0 and task["ci_resolution"]["suspected_flake"] is False
    assert "verification" not in task
    assert task["provenance"]["policy_version"] == "4"
    assert set(task["provenance"]) == {"policy_version", "quarantine_revision", "policy_digest"}
    assert task["session_commit_observation_ids"] == []
    for forbidden in ("prompt", "gold_patch", "reward", "failure_bucket"):
        assert forbidden not in task
    assert "failure_bucket" not in task["verifier_results"][0]
    assert summary["task_rows"] == 1 and summary["rollout_rows"] == 1


def test_retry_resolves_to_flaky_pass_and_keeps_both_attempts(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    outcomes = [outcome("o-a", history["c1"], "failed", attempt=1),
                outcome("o-b", history["c1"], "passed", attempt=2)]
    rows = []
    for seed in range(3):
        shuffled = outcomes[:]
        random.Random(seed).shuffle(shuffled)
        out = tmp_path / f"out{seed}"
        export([rollout("s1", commits=[history["c1"]], outcomes=shuffled)], mirror_root, out, "sediment")
        rows.append((out / "tasks.jsonl").read_bytes())
        [task] = read_rows(out / "tasks.jsonl")
        assert task["ci_resolution"]["verdict"] == "passed"
        assert task["ci_resolution"]["reliability"] == 0.0
        assert task["ci_resolution"]["suspected_flake"] is True
        assert [v["outcome_id"] for v in task["verifier_results"]] == ["o-a", "o-b"]
    assert len(set(rows)) == 1


def test_later_cancelled_commit_does_not_hide_earlier_pass(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    r = rollout("s1", commits=[history["c1"], history["c2"]],
                outcomes=[outcome("o1", history["c1"], "passed", run_id="1"),
                          outcome("o2", history["c2"], "cancelled", run_id="2")])
    export([r], mirror_root, tmp_path / "out", "sediment")
    [task] = read_rows(tmp_path / "out" / "tasks.jsonl")
    assert task["ci_resolution"]["commit_sha"] == history["c1"]
    assert [v["outcome_id"] for v in task["verifier_results"]] == ["o1"]


def test_patch_stops_at_verified_commit(tmp_path: Path, mirror_root: MirrorRoot,
                                        history: dict[str, str]) -> None:
    r = rollout("s1", commits=[history["c1"], history["c2"], history["c3"]],
                outcomes=[outcome("o1", history["c2"], "passed")])
    export([r], mirror_root, tmp_path / "sed", "sediment")
    export([r], mirror_root, tmp_path / "swe", "swe-bench")
    [task] = read_rows(tmp_path / "sed" / "tasks.jsonl")
    [swe] = read_rows(tmp_path / "swe" / "tasks.jsonl")
    for patch in (task["reference_patch"], swe["patch"]):
        assert "test_calc.py" in patch and "calc.py" in patch
        assert "later.py" not in patch
    assert task["instance_id"].endswith(history["c1"][:7])


@pytest.mark.parametrize("result", ["error", "timed_out", "cancelled", "skipped", "neutral", "unknown"])
def test_non_verdict_gives_no_task_but_a_rollout_row(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str], result: str) -> None:
    r = rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"], result)])
    summary = export([r], mirror_root, tmp_path / "out", "sediment")
    assert summary["task_skipped"] == {"missing_verifier_evidence": 1}
    assert not (tmp_path / "out" / "tasks.jsonl").exists()
    [row] = read_rows(tmp_path / "out" / "rollouts.jsonl")
    assert row["ci_resolutions"][0]["verdict"] is None
    assert "reward_source" not in row and "ci_resolution" not in row
    assert row["verifier_results"][0]["result"] == result


def test_no_ci_and_no_commit(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    s = export([rollout("s1", commits=[history["c1"]])], mirror_root, tmp_path / "a", "sediment")
    assert s["task_skipped"] == {"missing_verifier_evidence": 1} and s["rollout_rows"] == 1
    assert read_rows(tmp_path / "a" / "rollouts.jsonl")[0]["verifier_results"] == []
    s = export([rollout("s2")], mirror_root, tmp_path / "b", "sediment")
    assert s["task_skipped"] == {"no_attributed_commit": 1} and s["rollout_rows"] == 1


def test_jaccard_attribution_is_carried(tmp_path: Path, mirror_root: MirrorRoot,
                                        history: dict[str, str]) -> None:
    r = rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])],
                attribution_source="jaccard")
    export([r], mirror_root, tmp_path / "out", "sediment")
    assert read_rows(tmp_path / "out" / "tasks.jsonl")[0]["attribution_source"] == "jaccard"


def test_verification_only_for_the_configured_repo(tmp_path: Path, mirror_root: MirrorRoot,
                                                   history: dict[str, str]) -> None:
    r = rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])])
    mine = VerifierCommands({"owner/repo": "pytest -q"})
    other = VerifierCommands({"other/repo": "make test"})
    for target, name in (("sediment", "tasks.jsonl"), ("swe-bench", "tasks.jsonl"), ("nemo-gym", "rollouts.jsonl")):
        export([r], mirror_root, tmp_path / target, target, commands=mine)
        row = read_rows(tmp_path / target / name)[0]
        holder = row if target == "sediment" else row["metadata"]
        assert holder["verification"] == {"verification_command": "pytest -q"}
        export([r], mirror_root, tmp_path / f"{target}-other", target, commands=other)
        row = read_rows(tmp_path / f"{target}-other" / name)[0]
        assert "verification" not in (row if target == "sediment" else row["metadata"])


def test_problem_statement_is_verbatim(tmp_path: Path, mirror_root: MirrorRoot,
                                       history: dict[str, str]) -> None:
    texts = ["[1, 2]", "[]", "true", "42", '{"trunc', "  leading spaces", '[{"type":"text","text":"x"}]', "nul\x00 \U0001f600"]
    rollouts = []
    for i, text in enumerate(texts):
        calls = [call(f"s{i}", 0, [message("system", "sys"), message("user", text, ToolCallPart(
            id="t", name="img", arguments={}), "tail")], [message("assistant", "ok")])]
        rollouts.append(rollout(f"s{i}", calls=calls, commits=[history["c1"]],
                                outcomes=[outcome(f"o{i}", history["c1"], run_id=str(i))]))
    system_only = [call("sz", 0, [message("system", "only system")], [message("assistant", "ok")])]
    rollouts.append(rollout("sz", calls=system_only, commits=[history["c1"]],
                            outcomes=[outcome("oz", history["c1"], run_id="z")]))
    export(rollouts, mirror_root, tmp_path / "out", "sediment")
    rows = {r["instance_id"].split("-")[1]: r for r in read_rows(tmp_path / "out" / "tasks.jsonl")}
    for i, text in enumerate(texts):
        assert rows[f"s{i}"]["problem_statement"] == f"{text}\n[non-text content omitted]\ntail"
    assert rows["sz"]["problem_statement"] == ""


# --- rollout rows ---------------------------------------------------------------------


def test_rollout_row_turns_and_decisions(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    from datetime import UTC, datetime

    from sediment.facts import DeveloperDecision

    calls = conversation("s1", turns=2)
    decision = DeveloperDecision(
        decision_id="d1", org_id=ORG, session_id="s1", agent_harness="claude-code", file_path="a.py",
        accepted=True, explicit=True, interaction_mode="agent", call_id="s1-t0",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC), captured_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    from sediment.rollout import segment_calls

    segments, _ = segment_calls(calls, {"s1-c0": (decision,)})
    r = rollout("s1", calls=calls).model_copy(update={"segments": segments})
    export([r], mirror_root, tmp_path / "out", "sediment")
    [row] = read_rows(tmp_path / "out" / "rollouts.jsonl")
    first, second = row["turns"]
    assert len(first["new_messages"]) == 1 and first["new_messages"][0]["role"] == "user"
    assert [m["role"] for m in second["new_messages"]] == ["assistant"]
    assert first["tool_calls"][0]["arguments"] == {"path": "a.py", "text": "step 0"}
    assert first["decisions"] == [{"accepted": True, "explicit": True, "agent_harness": "claude-code",
                                   "interaction_mode": "agent", "file_path": "a.py"}]
    assert first["completion"] == "a.py\nstep 0"
    for forbidden in ("terminal_outcomes", "reward_channels", "reward", "prompt"):
        assert forbidden not in row


def test_text_only_turn_has_empty_tool_calls(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    calls = [call("s1", 0, [message("user", "hi")], [message("assistant", ReasoningPart(content="hm"), "hello")])]
    export([rollout("s1", calls=calls)], mirror_root, tmp_path / "out", "nemo-gym")
    [row] = read_rows(tmp_path / "out" / "rollouts.jsonl")
    assert row["response"]["turns"][0]["tool_calls"] == []
    assert row["response"]["turns"][0]["completion"] == "hello"


def test_compaction_gives_two_segments(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    calls = conversation("s1", turns=3)
    calls[2] = calls[2].model_copy(update={"input_messages": (message("user", "summary"),)})
    export([rollout("s1", calls=calls)], mirror_root, tmp_path / "out", "sediment")
    rows = read_rows(tmp_path / "out" / "rollouts.jsonl")
    assert [r["segment_index"] for r in rows] == [0, 1]
    assert [len(r["turns"]) for r in rows] == [2, 1]
    assert [r["instance_id"] for r in rows] == [f"{ORG}-s1-seg0", f"{ORG}-s1-seg1"]


def test_rollout_resolution_is_last_commit(tmp_path: Path, mirror_root: MirrorRoot,
                                           history: dict[str, str]) -> None:
    outcomes = [outcome("o1", history["c1"], "passed", run_id="1"),
                outcome("o2", history["c2"], "failed", run_id="2", attempt=1),
                outcome("o3", history["c2"], "passed", run_id="2", attempt=2)]
    export([rollout("s1", commits=[history["c1"], history["c2"]], outcomes=outcomes)],
           mirror_root, tmp_path / "a", "sediment")
    [row] = read_rows(tmp_path / "a" / "rollouts.jsonl")
    assert row["ci_resolution"]["commit_sha"] == history["c2"] and row["ci_resolution"]["reliability"] == 0.0
    assert len(row["ci_resolutions"]) == 2
    export([rollout("s1", commits=[history["c2"], history["c1"]], outcomes=outcomes)],
           mirror_root, tmp_path / "b", "sediment")
    [row] = read_rows(tmp_path / "b" / "rollouts.jsonl")
    assert row["ci_resolution"]["commit_sha"] == history["c1"] and row["ci_resolution"]["reliability"] == 1.0


# --- swe-bench and nemo-gym ---------------------------------------------------------


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


@pytest.mark.parametrize("target", ["sediment", "swe-bench"])
def test_mirror_targets_refuse_no_mirrors(tmp_path: Path, target: str) -> None:
    with pytest.raises(ConfigurationError, match="only 'nemo-gym' projects without a mirror"):
        export([rollout("s1")], None, tmp_path / "out", target)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_missing_mirror_and_patch_reasons(tmp_path: Path, mirror_root: MirrorRoot, git_repo: GitRepo,
                                          history: dict[str, str]) -> None:
    other_sha = "f" * 40
    rollouts = [
        rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"], repo="x/absent", run_id="1")],
                repo="x/absent"),
        rollout("s2", commits=[other_sha], outcomes=[outcome("o2", other_sha, run_id="2")]),
        rollout("s3", commits=[history["root"]], outcomes=[outcome("o3", history["root"], run_id="3")]),
        rollout("s4", commits=[history["c2"], history["c1"]], outcomes=[outcome("o4", history["c1"], run_id="4")]),
    ]
    summary = export(rollouts, mirror_root, tmp_path / "out", "sediment")
    assert summary["task_skipped"] == {"mirror_absent": 1, "no_commit_in_verifier_repo": 1,
                                       "degenerate_commit_range": 1, "root_commit_no_base": 1}
    assert summary["task_rows"] == 0 and summary["rollout_rows"] == 4


def test_ambiguous_workflows_counted_in_every_target(tmp_path: Path, mirror_root: MirrorRoot,
                                                     history: dict[str, str]) -> None:
    outcomes = [outcome("o1", history["c1"], "passed", run_id="1", workflow_id="a", workflow_name="a",
                        workflow_path="a.yml"),
                outcome("o2", history["c1"], "failed", run_id="2", workflow_id="b", workflow_name="b",
                        workflow_path="b.yml")]
    r = rollout("s1", commits=[history["c1"]], outcomes=outcomes)
    s = export([r], mirror_root, tmp_path / "sed", "sediment")
    assert s["task_skipped"] == {"ambiguous_workflow_verdicts": 1, "missing_verifier_evidence": 1}
    assert s["rollout_skipped"] == {"ambiguous_workflow_verdicts": 1} and s["rollout_rows"] == 1
    s = export([r], mirror_root, tmp_path / "swe", "swe-bench")
    assert s["task_skipped"] == {"ambiguous_workflow_verdicts": 1, "missing_verifier_evidence": 1}
    s = export([r], None, tmp_path / "nemo", "nemo-gym")
    assert s["rollout_skipped"] == {"ambiguous_workflow_verdicts": 1}
    assert "reward" not in read_rows(tmp_path / "nemo" / "rollouts.jsonl")[0]


def test_observation_ids_only_for_the_verified_commit_and_session(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    from sediment.facts import SessionCommitObservation
    from sediment.testing import T0

    def observation(oid: str, sha: str, session: str) -> SessionCommitObservation:
        return SessionCommitObservation(observation_id=oid, org_id=ORG, repo="owner/repo", commit_sha=sha,
                                        session_id=session, captured_at=T0)

    observations = (observation("obs-verified", history["c1"], "s1"), observation("obs-base", history["root"], "s1"),
                    observation("obs-other-session", history["c1"], "s9"))
    r = rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])],
                session_commit_observations=observations)
    export([r], mirror_root, tmp_path / "out", "sediment")
    assert read_rows(tmp_path / "out" / "tasks.jsonl")[0]["session_commit_observation_ids"] == ["obs-verified"]
    assert read_rows(tmp_path / "out" / "rollouts.jsonl")[0]["session_commit_observation_ids"] == ["obs-verified"]
    export([r.model_copy(update={"terminal_outcomes": ()})], None, tmp_path / "nemo", "nemo-gym")
    assert read_rows(tmp_path / "nemo" / "rollouts.jsonl")[0]["metadata"]["session_commit_observation_ids"] == []


# --- representation -------------------------------------------------------------------


def test_non_finite_and_surrogates_decline_once_per_row(tmp_path: Path, mirror_root: MirrorRoot,
                                                        history: dict[str, str]) -> None:
    nan = outcome("o1", history["c1"], raw={"duration": float("nan")}, run_id="1")
    bad_key = outcome("o2", history["c1"], raw={"\udc80key": 1}, run_id="2")
    rollouts = [rollout("s1", commits=[history["c1"]], outcomes=[nan]),
                rollout("s2", commits=[history["c1"]], outcomes=[bad_key])]
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
                                                     history: dict[str, str]) -> None:
    calls = [call("s1", 0, [message("user", "go")], [message("assistant", ToolCallPart(
        id="t", name="x", arguments={"v": float("nan"), "s": "\ud800"}))])]
    r = rollout("s1", calls=calls, commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])])
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
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str], target: str) -> None:
    rollouts = [
        rollout(f"s{i}", commits=[history["c1"], history["c2"]],
                outcomes=[outcome(f"o{i}a", history["c2"], "failed", run_id=str(i), attempt=1),
                          outcome(f"o{i}b", history["c2"], "passed", run_id=str(i), attempt=2)],
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


def test_directory_claims(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    r = rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])])
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
                                                   history: dict[str, str]) -> None:
    from sediment.errors import CapacityError
    from sediment.export.pipeline import Budgets

    r = rollout("s1", commits=[history["c1"]], outcomes=[outcome("o1", history["c1"])])
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
def test_workers_give_the_same_bytes(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str],
                                     target: str) -> None:
    rollouts = [
        rollout(f"s{i:02d}", commits=[history["c1"], history["c2"]],
                outcomes=[outcome(f"o{i}", history["c2"], "passed" if i % 3 else "failed", run_id=str(i))],
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
def test_published_files_were_fsynced(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str],
                                      monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """Every published file was fsynced after its last byte was written, whatever the worker count."""
    synced: dict[int, int] = {}  # inode -> size when last fsynced
    real_fsync = os.fsync

    def recording_fsync(descriptor: int) -> None:
        real_fsync(descriptor)
        status = os.fstat(descriptor)
        synced[status.st_ino] = status.st_size

    monkeypatch.setattr(os, "fsync", recording_fsync)
    rollouts = [rollout(f"s{i:02d}", commits=[history["c1"], history["c2"]],
                        outcomes=[outcome(f"o{i}", history["c2"], "passed", run_id=str(i))],
                        split="eval" if i % 4 == 0 else "train") for i in range(9)]
    summary = export_rlvr_from_rollouts(rollouts, mirror_root, tmp_path / "out", target="sediment",
                                        split_enabled=True, verifier_commands=VerifierCommands.empty(),
                                        workers=workers)
    assert len(summary["written"]) == 4
    for path in summary["written"]:
        status = os.stat(path)
        assert synced.get(status.st_ino) == status.st_size, path
