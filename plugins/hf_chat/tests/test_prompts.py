"""hf-chat-prompts-v1 through real exports of the sediment target and a real git mirror."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from sediment_hf_chat.prompts import FEATURES, SKIP_REASONS

from sediment import export_rlvr_from_rollouts
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.model.rollout import Rollout
from sediment.records import canonical_digest
from sediment.testing import GitRepo, call, conversation, message, outcome, read_rows, rollout, run_export, snapshot

PROFILE = "hf-chat-prompts-v1"


@pytest.fixture
def commits(git_repo: GitRepo) -> tuple[str, str]:
    base = git_repo.commit({"a.py": "x = 1\n"}, "base")
    return base, git_repo.commit({"a.py": "x = 2\n"}, "fix")


def task(session: str, sha: str, prompt: str = "fix the bug", result: str = "passed", **fields: Any) -> Rollout:
    return rollout(session, calls=conversation(session, prompt), commits=[sha],
                   outcomes=[outcome(f"o-{session}", sha, result, run_id=session)], **fields)


def export(rollouts: list[Rollout], out: Path, mirrors: MirrorRoot, *, split: bool = False,
           commands: dict[str, str] | None = None) -> dict[str, Any]:
    return export_rlvr_from_rollouts(rollouts, mirrors, out, target="sediment", profile=PROFILE, split_enabled=split,
                                     verifier_commands=VerifierCommands(commands or {}))


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


def data(out: Path) -> list[dict[str, Any]]:
    """The data rows, train file first (they carry no schema id; the sidecar does)."""
    return [row for name in ("data.jsonl", "data.train.jsonl", "data.eval.jsonl") if (out / name).exists()
            for row in jsonl(out / name)]


def test_a_task_becomes_a_prompt_only_row(tmp_path: Path, mirror_root: MirrorRoot, commits: tuple[str, str]) -> None:
    base, fix = commits
    rollouts = [task("s1", fix), task("s2", fix, "add a test", "failed")]
    summary = export(rollouts, tmp_path / "out", mirror_root, commands={"owner/repo": "pytest -q"})
    canonical = run_export(rollouts, tmp_path / "target", target="sediment", mirrors=mirror_root)
    [source, _] = canonical.rows["tasks.jsonl"]
    first, second = data(tmp_path / "out")
    assert first == {
        "prompt": [{"role": "user", "content": "fix the bug"}],
        "instance_id": source["instance_id"],
        "repo": "owner/repo",
        "base_commit": base,
        "reference_patch": source["reference_patch"],
        "reward_source": "resolved_ci_pass",
        "verification_command": "pytest -q",
        "split": "train",
    }
    assert "x = 2" in first["reference_patch"]
    assert (second["prompt"][0]["content"], second["reward_source"]) == ("add a test", "resolved_ci_fail")
    assert summary["rows"] == 2 and summary["skipped"] == {}
    [line, _] = read_rows(tmp_path / "out" / "evidence.jsonl")
    assert line["evidence"] == {"verified_commit": fix}
    assert line["prompt_sha256"] == canonical_digest({"prompt": first["prompt"]})


def test_columns_are_the_same_on_every_row(tmp_path: Path, mirror_root: MirrorRoot, commits: tuple[str, str]) -> None:
    _, fix = commits
    export([task("s1", fix), task("s2", fix, "other")], tmp_path / "out", mirror_root)
    rows = data(tmp_path / "out")
    assert [list(r) for r in rows] == [[f["name"] for f in FEATURES]] * 2
    assert [r["verification_command"] for r in rows] == [None, None]
    assert {tuple(m) for r in rows for m in r["prompt"]} == {("role", "content")}


@pytest.mark.parametrize(("prompt", "reason"), [
    ("", "empty_problem_statement"),
    (" \n\t", "empty_problem_statement"),
    ("2026-03-02", "timestamp_like_text"),
])
def test_declines(tmp_path: Path, mirror_root: MirrorRoot, commits: tuple[str, str], prompt: str, reason: str) -> None:
    _, fix = commits
    summary = export([task("s1", fix, prompt), task("s2", fix)], tmp_path / "out", mirror_root)
    assert summary["skipped"] == {reason: 1} and summary["canonical_rows"] == 2
    assert [r["instance_id"].split("-")[1] for r in data(tmp_path / "out")] == ["s2"]
    assert set(SKIP_REASONS) == {"empty_problem_statement", "timestamp_like_text"}


def test_a_session_without_a_user_message_has_an_empty_statement(tmp_path: Path, mirror_root: MirrorRoot,
                                                                 commits: tuple[str, str]) -> None:
    _, fix = commits
    calls = [call("s1", 0, [message("system", "rules")], [message("assistant", "ok")])]
    rollouts = [rollout("s1", calls=calls, commits=[fix], outcomes=[outcome("o1", fix)])]
    assert export(rollouts, tmp_path / "out", mirror_root)["skipped"] == {"empty_problem_statement": 1}


def test_split_exports_are_deterministic(tmp_path: Path, mirror_root: MirrorRoot, commits: tuple[str, str]) -> None:
    _, fix = commits
    rollouts = [task("s1", fix), task("s2", fix, "second", split="eval"), task("s3", fix, "third")]
    export(rollouts, tmp_path / "a", mirror_root, split=True)
    shuffled = list(rollouts)
    random.Random(3).shuffle(shuffled)
    export(shuffled, tmp_path / "b", mirror_root, split=True)
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert [len(jsonl(tmp_path / "a" / f"data.{s}.jsonl")) for s in ("train", "eval")] == [2, 1]
