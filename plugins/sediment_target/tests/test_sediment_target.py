"""Target sediment: task and rollout rows (docs/exports.md, Targets) through real exports on a
real git mirror; every row is validated against the schemas the plugin ships."""


from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from sediment.plugin import ReasoningPart, ToolCallPart
from sediment.testing import (
    ORG,
    GitRepo,
    MirrorRoot,
    VerifierCommands,
    call,
    conversation,
    message,
    outcome,
    read_rows,
    rollout,
)
from sediment.testing import (
    export_target as export,
)

TASK_KEYS = [
    "instance_id", "recipe_id", "recipe_version", "reward_source", "repo", "base_commit",
    "problem_statement", "reference_patch", "verifier_results", "ci_resolution",
    "attribution_source", "split", "provenance", "session_commit_observation_ids",
    "repository_identity", "schema_id", "schema_version",
]


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
                             commit_history: dict[str, str]) -> None:
    r = rollout("s1", commits=[commit_history["c1"], commit_history["c2"]],
                outcomes=[outcome("o1", commit_history["c2"], "passed", attempt=None)])
    summary = export([r], mirror_root, tmp_path / "out", "sediment")
    [task] = read_rows(tmp_path / "out" / "tasks.jsonl")
    assert list(task) == TASK_KEYS
    assert task["instance_id"] == f"{ORG}-s1-{commit_history['c1'][:7]}"
    assert task["base_commit"] == commit_history["root"]
    assert task["reward_source"] == "resolved_ci_pass"
    assert task["problem_statement"] == "fix the bug"
    assert changed_lines(task["reference_patch"]) == changed_lines(
        git_diff(git_repo.path, commit_history["root"], commit_history["c2"]))
    assert "rename from old.txt" in task["reference_patch"]
    assert task["verifier_results"] == [outcome("o1", commit_history["c2"], "passed", attempt=None).model_dump(mode="json")]
    assert task["ci_resolution"]["reliability"] == 1.0 and task["ci_resolution"]["suspected_flake"] is False
    assert "verification" not in task
    assert task["provenance"]["policy_version"] == "4"
    assert set(task["provenance"]) == {"policy_version", "quarantine_revision", "policy_digest"}
    assert task["session_commit_observation_ids"] == []
    assert "failure_bucket" not in task["verifier_results"][0]  # the exact task keys are asserted above
    assert summary["task_rows"] == 1 and summary["rollout_rows"] == 1


def test_retry_resolves_to_flaky_pass_and_keeps_both_attempts(
        tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str]) -> None:
    outcomes = [outcome("o-a", commit_history["c1"], "failed", attempt=1),
                outcome("o-b", commit_history["c1"], "passed", attempt=2)]
    rows = []
    for seed in range(3):
        shuffled = outcomes[:]
        random.Random(seed).shuffle(shuffled)
        out = tmp_path / f"out{seed}"
        export([rollout("s1", commits=[commit_history["c1"]], outcomes=shuffled)], mirror_root, out, "sediment")
        rows.append((out / "tasks.jsonl").read_bytes())
        [task] = read_rows(out / "tasks.jsonl")
        assert task["ci_resolution"]["verdict"] == "passed"
        assert task["ci_resolution"]["reliability"] == 0.0
        assert task["ci_resolution"]["suspected_flake"] is True
        assert [v["outcome_id"] for v in task["verifier_results"]] == ["o-a", "o-b"]
    assert len(set(rows)) == 1


def test_later_cancelled_commit_does_not_hide_earlier_pass(
        tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str]) -> None:
    r = rollout("s1", commits=[commit_history["c1"], commit_history["c2"]],
                outcomes=[outcome("o1", commit_history["c1"], "passed", run_id="1"),
                          outcome("o2", commit_history["c2"], "cancelled", run_id="2")])
    export([r], mirror_root, tmp_path / "out", "sediment")
    [task] = read_rows(tmp_path / "out" / "tasks.jsonl")
    assert task["ci_resolution"]["commit_sha"] == commit_history["c1"]
    assert [v["outcome_id"] for v in task["verifier_results"]] == ["o1"]


def test_patch_stops_at_verified_commit(tmp_path: Path, mirror_root: MirrorRoot,
                                        commit_history: dict[str, str]) -> None:
    r = rollout("s1", commits=[commit_history["c1"], commit_history["c2"], commit_history["c3"]],
                outcomes=[outcome("o1", commit_history["c2"], "passed")])
    export([r], mirror_root, tmp_path / "sed", "sediment")
    export([r], mirror_root, tmp_path / "swe", "swe-bench")
    [task] = read_rows(tmp_path / "sed" / "tasks.jsonl")
    [swe] = read_rows(tmp_path / "swe" / "tasks.jsonl")
    for patch in (task["reference_patch"], swe["patch"]):
        assert "test_calc.py" in patch and "calc.py" in patch
        assert "later.py" not in patch
    assert task["instance_id"].endswith(commit_history["c1"][:7])


@pytest.mark.parametrize("result", ["error", "timed_out", "cancelled", "skipped", "neutral", "unknown"])
def test_non_verdict_gives_no_task_but_a_rollout_row(
        tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str], result: str) -> None:
    r = rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"], result)])
    summary = export([r], mirror_root, tmp_path / "out", "sediment")
    assert summary["task_skipped"] == {"missing_verifier_evidence": 1}
    assert not (tmp_path / "out" / "tasks.jsonl").exists()
    [row] = read_rows(tmp_path / "out" / "rollouts.jsonl")
    assert row["ci_resolutions"][0]["verdict"] is None
    assert "reward_source" not in row and "ci_resolution" not in row
    assert row["verifier_results"][0]["result"] == result


def test_no_ci_and_no_commit(tmp_path: Path, mirror_root: MirrorRoot, commit_history: dict[str, str]) -> None:
    s = export([rollout("s1", commits=[commit_history["c1"]])], mirror_root, tmp_path / "a", "sediment")
    assert s["task_skipped"] == {"missing_verifier_evidence": 1} and s["rollout_rows"] == 1
    assert read_rows(tmp_path / "a" / "rollouts.jsonl")[0]["verifier_results"] == []
    s = export([rollout("s2")], mirror_root, tmp_path / "b", "sediment")
    assert s["task_skipped"] == {"no_attributed_commit": 1} and s["rollout_rows"] == 1


def test_jaccard_attribution_is_carried(tmp_path: Path, mirror_root: MirrorRoot,
                                        commit_history: dict[str, str]) -> None:
    r = rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])],
                attribution_source="jaccard")
    export([r], mirror_root, tmp_path / "out", "sediment")
    assert read_rows(tmp_path / "out" / "tasks.jsonl")[0]["attribution_source"] == "jaccard"


def test_verification_only_for_the_configured_repo(tmp_path: Path, mirror_root: MirrorRoot,
                                                   commit_history: dict[str, str]) -> None:
    r = rollout("s1", commits=[commit_history["c1"]], outcomes=[outcome("o1", commit_history["c1"])])
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
                                       commit_history: dict[str, str]) -> None:
    texts = ["[1, 2]", "[]", "true", "42", '{"trunc', "  leading spaces", '[{"type":"text","text":"x"}]', "nul\x00 \U0001f600"]
    rollouts = []
    for i, text in enumerate(texts):
        calls = [call(f"s{i}", 0, [message("system", "sys"), message("user", text, ToolCallPart(
            id="t", name="img", arguments={}), "tail")], [message("assistant", "ok")])]
        rollouts.append(rollout(f"s{i}", calls=calls, commits=[commit_history["c1"]],
                                outcomes=[outcome(f"o{i}", commit_history["c1"], run_id=str(i))]))
    system_only = [call("sz", 0, [message("system", "only system")], [message("assistant", "ok")])]
    rollouts.append(rollout("sz", calls=system_only, commits=[commit_history["c1"]],
                            outcomes=[outcome("oz", commit_history["c1"], run_id="z")]))
    export(rollouts, mirror_root, tmp_path / "out", "sediment")
    rows = {r["instance_id"].split("-")[1]: r for r in read_rows(tmp_path / "out" / "tasks.jsonl")}
    for i, text in enumerate(texts):
        assert rows[f"s{i}"]["problem_statement"] == f"{text}\n[non-text content omitted]\ntail"
    assert rows["sz"]["problem_statement"] == ""


# --- rollout rows ---------------------------------------------------------------------


def test_rollout_row_turns_and_decisions(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    from datetime import UTC, datetime

    from sediment.testing import DeveloperDecision

    calls = conversation("s1", turns=2)
    decision = DeveloperDecision(
        decision_id="d1", org_id=ORG, session_id="s1", agent_harness="claude-code", file_path="a.py",
        accepted=True, explicit=True, interaction_mode="agent", call_id="s1-t0",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC), captured_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    from sediment.testing import segment_calls

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
    # exactly the contract's keys (no CI: reward_source and ci_resolution omitted; never terminal_outcomes,
    # reward_channels, reward or prompt)
    assert list(row) == ["instance_id", "recipe_id", "recipe_version", "org_id", "session_id", "segment_index",
                         "turns", "verifier_results", "ci_resolutions", "attribution_source", "split", "provenance",
                         "session_commit_observation_ids", "repository_identity", "schema_id", "schema_version"]


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
                                           commit_history: dict[str, str]) -> None:
    outcomes = [outcome("o1", commit_history["c1"], "passed", run_id="1"),
                outcome("o2", commit_history["c2"], "failed", run_id="2", attempt=1),
                outcome("o3", commit_history["c2"], "passed", run_id="2", attempt=2)]
    export([rollout("s1", commits=[commit_history["c1"], commit_history["c2"]], outcomes=outcomes)],
           mirror_root, tmp_path / "a", "sediment")
    [row] = read_rows(tmp_path / "a" / "rollouts.jsonl")
    assert row["ci_resolution"]["commit_sha"] == commit_history["c2"] and row["ci_resolution"]["reliability"] == 0.0
    assert len(row["ci_resolutions"]) == 2
    export([rollout("s1", commits=[commit_history["c2"], commit_history["c1"]], outcomes=outcomes)],
           mirror_root, tmp_path / "b", "sediment")
    [row] = read_rows(tmp_path / "b" / "rollouts.jsonl")
    assert row["ci_resolution"]["commit_sha"] == commit_history["c1"] and row["ci_resolution"]["reliability"] == 1.0
