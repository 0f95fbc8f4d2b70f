"""The diff-sft objective on hand-built Rollouts and real pygit2 mirrors: rows, gates in order
with one count per declined group, parser counts once per commit, the recipes, the ladder's
knobs, schema validation, determinism (repeat and shuffle) and fail-closed cases."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pygit2
import pytest
from sediment_diff_sft import SKIP_REASONS

from sediment.plugin import CallCapture, Mirror, Rollout, ToolCallPart, ToolDefinition
from sediment.testing import (
    ORG,
    REPO,
    T0,
    ConfigurationError,
    DeveloperDecision,
    Evidence,
    FileAttribution,
    GitRepo,
    MirrorRoot,
    SettingsSources,
    VerifierCommands,
    call,
    export_objective,
    load_registry,
    message,
    outcome,
    rollout,
    run_objective,
    snapshot,
)


def decision(decision_id: str, call_id: str, *, accepted: bool = True, explicit: bool = True,
             session: str = "s1", retention: float | None = None) -> DeveloperDecision:
    return DeveloperDecision(decision_id=decision_id, org_id=ORG, session_id=session, agent_harness="claude-code",
                             file_path="calc.py", accepted=accepted, explicit=explicit, interaction_mode="agent",
                             call_id=call_id, edit_retention_score=retention, occurred_at=T0,
                             captured_at=T0 + timedelta(days=1))


def calls(session: str, count: int = 2, model: str | None = "gpt-x", capture: CallCapture | None = None,
          tools: tuple[ToolDefinition, ...] | None = None) -> list[Any]:
    history = [message("user", "fix the bug")]
    found = []
    for index in range(count):
        output = message("assistant", ToolCallPart(id=f"{session}-t{index}", name="edit",
                                                   arguments={"path": "calc.py", "text": f"step {index}"}))
        found.append(call(session, index, history, [output], model=model, model_call_id=f"resp-{session}-{index}",
                          capture=capture, tools=tools))
        history = [*history, output, message("user", f"next {index}")]
    return found


def session(session_id: str, sha: str, paths: list[tuple[int, str]], *, split: str = "train",
            decisions: tuple[DeveloperDecision, ...] = (), outcomes: tuple[Any, ...] = (),
            model: str | None = "gpt-x", repo: str = REPO, capture: CallCapture | None = None,
            tools: tuple[ToolDefinition, ...] | None = None) -> Rollout:
    attributions = tuple(FileAttribution(inference_call_id=f"{session_id}-c{i}", repo=repo, commit_sha=sha,
                                         file_path=p, similarity_score=0.9) for i, p in paths)
    return rollout(session_id, calls=calls(session_id, model=model, capture=capture, tools=tools), commits=[sha],
                   split=split,
                   repo=repo,
                   file_attributions=attributions, session_decisions=decisions, terminal_outcomes=outcomes)


@pytest.fixture
def history(git_repo: GitRepo) -> dict[str, str]:
    root = git_repo.commit({"calc.py": "def add(a, b):\n    return a - b\n", "util.py": "X = 1\n"})
    two = git_repo.commit({"calc.py": "def add(a, b):\n    return a + b\n", "util.py": "X = 2\n"})
    return {"root": root, "two": two}


def export(rollouts: list[Rollout], tmp_path: Path, mirrors: MirrorRoot | None, name: str = "out",
           **kwargs: Any) -> Any:
    return run_objective(rollouts, tmp_path / name, objective="diff-sft", mirrors=mirrors, **kwargs)


def test_a_row_per_call_and_commit_with_the_exact_patch_of_its_files(tmp_path: Path, mirror_root: MirrorRoot,
                                                                     git_repo: GitRepo,
                                                                     history: dict[str, str]) -> None:
    sha = history["two"]
    r = session("s1", sha, [(1, "util.py"), (1, "calc.py")],
                decisions=(decision("d1", "resp-s1-1"),), outcomes=(outcome("o1", sha),))
    result = export([r], tmp_path, mirror_root)
    (row,) = result.rows["diff_sft.jsonl"]
    patch = Mirror(pygit2.Repository(str(git_repo.path))).commit_patch(sha)
    assert row["completion"] == [{"role": "assistant", "content": patch}]
    assert "util.py" in patch and "calc.py" in patch
    assert row["prompt"][0] == {"role": "user", "content": "fix the bug"}
    assert row["tools"] == []  # the call declared none
    meta = row["metadata"]
    assert list(meta) == ["org_id", "session_id", "repo", "commit_sha", "source_model", "completion_id",
                          "recipe_id", "recipe_version", "eligibility_source", "label_confidence",
                          "ci_reliability", "provenance", "split", "source_ids", "repository_identity",
                          "attribution_sources", "schema_id", "schema_version"]
    assert meta["source_ids"] == {"inference_call_id": "s1-c1", "decision_ids": ["d1"], "ci_outcome_ids": ["o1"],
                                  "session_commit_observation_ids": []}
    assert (meta["eligibility_source"], meta["label_confidence"], meta["ci_reliability"]) == (
        "explicit_accept", 1.0, 1.0)
    assert list(meta["provenance"]) == ["policy_version", "quarantine_revision", "policy_digest",
                                        "label_confidence_policy_version", "label_confidence_policy_digest",
                                        "trainer_messages_version"]
    assert meta["provenance"]["policy_version"] == "5"
    assert (meta["repo"], meta["commit_sha"], meta["attribution_sources"]) == (REPO, sha, ["git_notes"])
    assert meta["schema_id"].endswith("/training-rows/diff-sft-sample/v4.json") and meta["schema_version"] == 4
    assert skips(result) == {}


#: Tools a call's request declared (a description and strict, no parameters, a provider's
#: built-in tool), and what the row's ``tools`` hold of them: request order, chat-template shape.
TOOLS = (
    ToolDefinition(name="edit", description="Edit a file.", strict=True,
                   parameters={"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                               "required": ["path"]}),
    ToolDefinition(name="run_tests", parameters=None),
    ToolDefinition(type="web_search_preview", name="web_search_preview"),
)
ROW_TOOLS = [
    {"type": "function", "function": {"name": "edit", "description": "Edit a file.",
                                      "parameters": TOOLS[0].parameters, "strict": True}},
    {"type": "function", "function": {"name": "run_tests", "parameters": None}},
    {"type": "web_search_preview", "name": "web_search_preview"},
]


def test_a_row_keeps_the_tools_its_call_declared_exactly_and_in_request_order(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    """Regression (issue 25): ``tools`` was always ``[]``. Now it holds what the row's call's
    request declared; a call that declared none keeps ``[]``. Rows validate against
    ``diff-sft-sample`` v4."""
    sha = history["two"]
    tooled = session("s1", sha, [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1"),), tools=TOOLS)
    bare = session("s2", sha, [(1, "calc.py")], decisions=(decision("d2", "resp-s2-1", session="s2"),))
    rows = export([tooled, bare], tmp_path, mirror_root).rows["diff_sft.jsonl"]
    tools = {row["metadata"]["completion_id"]: row["tools"] for row in rows}
    assert tools == {"s1-c1": ROW_TOOLS, "s2-c1": []}
    assert all(load_registry().schemas.errors(row) == [] for row in rows)


def test_declared_tools_json_cannot_hold_decline_the_row_by_the_representation_check(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    """A NaN in a declared tool's schema: the row is counted ``non_finite_number``, never written
    and never a traceback; the other Session's row is kept."""
    sha = history["two"]
    nan = (ToolDefinition(name="f", parameters={"type": "number", "default": float("nan")}),)
    result = export([session("s1", sha, [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1"),), tools=nan),
                     session("s2", sha, [(1, "calc.py")], decisions=(decision("d2", "resp-s2-1", session="s2"),))],
                    tmp_path, mirror_root)
    assert [row["metadata"]["completion_id"] for row in result.rows["diff_sft.jsonl"]] == ["s2-c1"]
    assert skips(result) == {"non_finite_number": 1}


CAPTURE = CallCapture(source="transcript:claude-code@2.0.14",
                      lacks=("exact_request", "system_prompt", "sampling_parameters", "token_ids"),
                      parent_session_id="parent-1")


def test_a_transcript_captured_call_carries_its_capture_and_a_gateway_call_none(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str]) -> None:
    sha = history["two"]
    captured = session("s1", sha, [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1"),), capture=CAPTURE)
    wire = session("s2", sha, [(1, "calc.py")], decisions=(decision("d2", "resp-s2-1", session="s2"),))
    rows = export([captured, wire], tmp_path, mirror_root).rows["diff_sft.jsonl"]  # each row validated
    by_call = {row["metadata"]["completion_id"]: row["metadata"] for row in rows}
    assert set(by_call) == {"s1-c1", "s2-c1"}
    assert list(by_call["s1-c1"])[-3:] == ["schema_id", "schema_version", "capture"]
    assert by_call["s1-c1"]["capture"] == {
        "source": "transcript:claude-code@2.0.14",
        "lacks": ["exact_request", "system_prompt", "sampling_parameters", "token_ids"],
        "parent_session_id": "parent-1"}
    assert "capture" not in by_call["s2-c1"]
    assert {k: v for k, v in by_call["s1-c1"].items() if k not in ("capture", "org_id", "session_id", "completion_id",
                                                                  "source_ids")} \
        == {k: v for k, v in by_call["s2-c1"].items() if k not in ("org_id", "session_id", "completion_id",
                                                                  "source_ids")}


def test_only_the_groups_files_are_in_the_completion(tmp_path: Path, mirror_root: MirrorRoot,
                                                     history: dict[str, str]) -> None:
    sha = history["two"]
    r = session("s1", sha, [(0, "calc.py"), (1, "util.py")],
                decisions=(decision("d0", "resp-s1-0"), decision("d1", "resp-s1-1")))
    rows = export([r], tmp_path, mirror_root).rows["diff_sft.jsonl"]
    assert [row["metadata"]["completion_id"] for row in rows] == ["s1-c0", "s1-c1"]
    assert "calc.py" in rows[0]["completion"][0]["content"] and "util.py" not in rows[0]["completion"][0]["content"]
    assert "util.py" in rows[1]["completion"][0]["content"] and "calc.py" not in rows[1]["completion"][0]["content"]


def skips(result: Any) -> dict[str, int]:
    found = [v for k, v in result.summary.items() if k.endswith("skipped") and isinstance(v, dict)]
    merged: dict[str, int] = {}
    for counts in found:
        merged.update(counts)
    return merged


def test_a_declined_group_counts_once_whatever_its_member_count(tmp_path: Path, mirror_root: MirrorRoot,
                                                                history: dict[str, str]) -> None:
    sha = history["two"]
    reject = session("s1", sha, [(1, "calc.py"), (1, "util.py")],
                     decisions=(decision("d1", "resp-s1-1", accepted=False),))
    result = export([reject], tmp_path, mirror_root)
    assert result.rows == {}
    assert skips(result) == {"explicit_reject": 1}


@pytest.mark.parametrize(("case", "reason"), [
    ("no_decision", "no_eligibility_source"),
    ("ci_failed", "resolved_ci_failure"),
    ("model_absent", "model_absent"),
    ("no_mirror", "mirror_absent"),
    ("unknown_commit", "commit_diff_unavailable"),
    ("unchanged_file", "file_diff_unavailable"),
])
def test_each_gate_declines_with_its_reason(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str],
                                            case: str, reason: str) -> None:
    sha = history["two"]
    accept = (decision("d1", "resp-s1-1"),)
    rollouts = {
        "no_decision": session("s1", sha, [(1, "calc.py")]),
        "ci_failed": session("s1", sha, [(1, "calc.py")], decisions=accept,
                             outcomes=(outcome("o1", sha, "failed"),)),
        "model_absent": session("s1", sha, [(1, "calc.py")], decisions=accept, model=None),
        "no_mirror": session("s1", sha, [(1, "calc.py")], decisions=accept, repo="owner/other"),
        "unknown_commit": session("s1", "f" * 40, [(1, "calc.py")], decisions=accept),
        "unchanged_file": session("s1", sha, [(1, "calc.py"), (1, "absent.py")], decisions=accept),
    }
    result = export([rollouts[case]], tmp_path, mirror_root)
    assert result.rows == {}
    assert skips(result) == {reason: 1}


def test_curated_retention_and_verified_ci_pass(tmp_path: Path, mirror_root: MirrorRoot,
                                               history: dict[str, str]) -> None:
    sha = history["two"]
    retained = session("s1", sha, [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1", explicit=False,
                                                                        retention=0.8),))
    (row,) = export([retained], tmp_path, mirror_root).rows["diff_sft.jsonl"]
    assert row["metadata"]["eligibility_source"] == "edit_retention"
    assert row["metadata"]["label_confidence"] == pytest.approx(0.636)  # docs/confidence.md
    passed = session("s2", sha, [(0, "calc.py")], outcomes=(outcome("o1", sha),))
    verified = export([passed], tmp_path, mirror_root, name="verified", recipe="sft_verified")
    (row,) = verified.rows["diff_sft.jsonl"]
    assert (row["metadata"]["recipe_id"], row["metadata"]["eligibility_source"]) == ("sft_verified",
                                                                                     "resolved_ci_pass")
    assert export([passed], tmp_path, mirror_root, name="curated").rows == {}


def test_the_floor_and_the_ladder_knobs_come_from_settings(tmp_path: Path, mirror_root: MirrorRoot,
                                                          history: dict[str, str]) -> None:
    sha = history["two"]
    r = session("s1", sha, [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1"),))
    floor = export([r], tmp_path, mirror_root, name="floor", settings={"diff-sft": {"min_confidence": 1.0}})
    assert floor.rows != {}  # 1.0 is not below the floor 1.0
    retained = session("s2", sha, [(1, "calc.py")], decisions=(decision("d2", "resp-s2-1", explicit=False,
                                                                        retention=0.9, session="s2"),))
    low = export([retained], tmp_path, mirror_root, name="low", settings={"diff-sft": {"min_confidence": 0.7}})
    assert (low.rows, skips(low)) == ({}, {"below_confidence_floor": 1})
    out = tmp_path / "knobs"
    summary = export_objective(
        Evidence([r], False, mirror_root), out, objective="diff-sft", registry=load_registry(),
        settings=SettingsSources(environ={"SEDIMENT_LABEL_CONFIDENCE_EXPLICIT_ACCEPT_CONFIDENCE": "0.5"}),
        verifier_commands=VerifierCommands.empty())
    assert summary["written"] == {}
    default = json.loads((tmp_path / "floor" / "diff_sft.jsonl").read_text())["metadata"]["provenance"]
    half = export_objective(
        Evidence([r], False, mirror_root), tmp_path / "half", objective="diff-sft", registry=load_registry(),
        settings=SettingsSources(environ={"SEDIMENT_LABEL_CONFIDENCE_EXPLICIT_ACCEPT_CONFIDENCE": "0.7"}),
        verifier_commands=VerifierCommands.empty())
    row = json.loads(next(iter(Path(p) for p in half["written"])).read_text())
    assert row["metadata"]["label_confidence"] == 0.7
    assert row["metadata"]["provenance"]["label_confidence_policy_digest"] != default["label_confidence_policy_digest"]


def test_parser_counts_are_added_once_per_commit(tmp_path: Path, mirror_root: MirrorRoot,
                                                 git_repo: GitRepo) -> None:
    repo = pygit2.Repository(str(git_repo.path))
    base = git_repo.commit({"calc.py": "a = 1\n"})
    index = pygit2.Index()
    index.read_tree(repo.get(base).tree)  # type: ignore[union-attr]
    index.add(pygit2.IndexEntry("calc.py", repo.create_blob(b"a = 2\n"), pygit2.enums.FileMode.BLOB))
    index.add(pygit2.IndexEntry("logo.png", repo.create_blob(b"\x89PNG\x00\x00"), pygit2.enums.FileMode.BLOB))
    signature = pygit2.Signature("Dev", "dev@example.com", 1_767_100_000, 0)
    sha = str(repo.create_commit("refs/heads/main", signature, signature, "bin", index.write_tree(repo),
                                 [pygit2.Oid(hex=base)]))
    accept = (decision("d0", "resp-s1-0"), decision("d1", "resp-s1-1"))
    r = session("s1", sha, [(0, "calc.py"), (1, "logo.png")], decisions=accept)
    result = export([r], tmp_path, mirror_root)
    assert [row["metadata"]["completion_id"] for row in result.rows["diff_sft.jsonl"]] == ["s1-c0"]
    assert skips(result) == {"unsupported_diff_section": 1, "file_diff_unavailable": 1}
    other = session("s2", sha, [(0, "calc.py")], decisions=(decision("d2", "resp-s2-0", session="s2"),))
    both = export([r, other], tmp_path, mirror_root, name="both")
    assert len(both.rows["diff_sft.jsonl"]) == 2
    assert skips(both) == {"unsupported_diff_section": 1, "file_diff_unavailable": 1}  # once per commit
    shuffled = session("s1", sha, [(1, "logo.png"), (0, "calc.py")], decisions=tuple(reversed(accept)))
    again = export([other, shuffled], tmp_path, mirror_root, name="again")
    assert snapshot(again.out_dir) == snapshot(both.out_dir)


def test_identical_bytes_when_repeated_and_shuffled(tmp_path: Path, mirror_root: MirrorRoot,
                                                    history: dict[str, str]) -> None:
    sha = history["two"]
    rollouts = [session(f"s{i}", sha, [(0, "calc.py"), (1, "util.py")],
                        decisions=(decision(f"d{i}", f"resp-s{i}-0", session=f"s{i}"),
                                   decision(f"e{i}", f"resp-s{i}-1", session=f"s{i}")),
                        split="eval" if i % 2 else "train", tools=TOOLS[i % 3:]) for i in range(5)]
    first = export(rollouts, tmp_path, mirror_root, name="a", split_enabled=True)
    again = export(rollouts, tmp_path, mirror_root, name="b", split_enabled=True)
    shuffled = list(rollouts)
    random.Random(7).shuffle(shuffled)
    third = export(shuffled, tmp_path, mirror_root, name="c", split_enabled=True)
    assert set(first.rows) == {"diff_sft.train.jsonl", "diff_sft.eval.jsonl"}
    assert sorted({len(row["tools"]) for rows in first.rows.values() for row in rows}) == [1, 2, 3]
    assert snapshot(first.out_dir) == snapshot(again.out_dir) == snapshot(third.out_dir)


def test_mirrors_are_required_and_the_vocabulary_is_the_contracts(tmp_path: Path,
                                                                  history: dict[str, str]) -> None:
    r = session("s1", history["two"], [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1"),))
    with pytest.raises(ConfigurationError, match="mirrors must be supplied"):
        export([r], tmp_path, None)
    vocabulary = load_registry().objective("diff-sft").vocabularies["diff_sft"]
    assert vocabulary[-9:] == ("unsupported_diff_section", "malformed_diff_section", "repo_mismatch",
                               "split_mismatch", "eligibility_source_mismatch", "mirror_absent",
                               "commit_diff_unavailable", "empty_patch", "file_diff_unavailable")
    assert vocabulary[:7] == ("conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
                              "repository_identity_conflict", "repository_identity_unresolved",
                              "repository_mirror_identity_unresolved", "repository_source_absent")
    assert vocabulary[7:] == ("non_finite_number", "unrepresentable_unicode", *SKIP_REASONS)


def test_cli_from_a_bundle_needs_mirrors_and_matches_the_direct_projection(tmp_path: Path, mirror_root: MirrorRoot,
                                                                           history: dict[str, str]) -> None:
    import os
    import subprocess
    import sys

    from sediment.testing import POLICY, write_bundle

    sha = history["two"]
    rollouts = [session("s1", sha, [(1, "calc.py"), (1, "util.py")], decisions=(decision("d1", "resp-s1-1"),)),
                session("s2", sha, [(0, "calc.py")],
                        decisions=(decision("d2", "resp-s2-0", accepted=False, session="s2"),))]
    bundle = write_bundle(rollouts, tmp_path / "bundle", org_id=ORG, policy=POLICY, quarantine_revision=0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env["SEDIMENT_HOME"] = str(tmp_path / "home")

    def cli(*args: str, mirrors: bool = True) -> subprocess.CompletedProcess[str]:
        run_env = {**env, "SEDIMENT_MIRROR_PATH": str(mirror_root.path)} if mirrors else env
        return subprocess.run([sys.executable, "-m", "sediment", "export", "diff-sft", *args], capture_output=True,
                              text=True, env=run_env, timeout=120)

    done = cli("--from", str(bundle), "--out", str(tmp_path / "cli"))
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout + done.stderr
    direct = export(rollouts, tmp_path, mirror_root, name="direct", split_enabled=True)
    cli_rows = [json.loads(line) for line in (tmp_path / "cli" / "diff_sft.train.jsonl").read_text().splitlines()]
    assert cli_rows == direct.rows["diff_sft.train.jsonl"]
    assert [r["metadata"]["completion_id"] for r in cli_rows] == ["s1-c1"]
    assert cli("--recipe", "nope", "--from", str(bundle), "--out", str(tmp_path / "bad")).returncode == 2
    unmirrored = cli("--from", str(bundle), "--out", str(tmp_path / "none"), mirrors=False)
    assert unmirrored.returncode != 0 and len(unmirrored.stderr.strip().splitlines()) == 1


def test_a_directory_holds_one_generation_and_foreign_claims_are_refused(tmp_path: Path, mirror_root: MirrorRoot,
                                                                         history: dict[str, str]) -> None:
    from sediment.testing import SedimentError, run_export

    sha = history["two"]
    r = session("s1", sha, [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1"),))
    first = export([r], tmp_path, mirror_root, name="out")
    before = snapshot(first.out_dir)
    with pytest.raises(SedimentError, match=r"already contains diff-sft artifacts \(diff_sft.jsonl\)"):
        export([r], tmp_path, mirror_root, name="out")
    with pytest.raises(SedimentError, match="already belongs to diff-SFT objective diff-sft"):
        run_export([rollout("s9")], first.out_dir, target="nemo-gym")
    assert snapshot(first.out_dir) == before
    rlvr = tmp_path / "rlvr"
    run_export([rollout("s9")], rlvr, target="nemo-gym")
    with pytest.raises(SedimentError, match="already belongs to RLVR target nemo-gym"):
        export([r], tmp_path, mirror_root, name="rlvr")
    unclaimed = tmp_path / "unclaimed"
    unclaimed.mkdir()
    (unclaimed / "diff_sft.jsonl").write_text("stale\n")
    with pytest.raises(SedimentError, match=r"without a target claim \(diff_sft.jsonl\)"):
        export([r], tmp_path, mirror_root, name="unclaimed")
    assert (unclaimed / "diff_sft.jsonl").read_text() == "stale\n"
    empty = tmp_path / "empty"
    assert export([session("s1", sha, [(1, "calc.py")])], tmp_path, mirror_root, name="empty").rows == {}
    assert sorted(p.name for p in empty.iterdir()) == [".sediment-diff-sft-target"]
    assert export([r], tmp_path, mirror_root, name="empty").rows["diff_sft.jsonl"]


def test_rows_validate_and_the_schema_refuses_what_the_contract_forbids(tmp_path: Path, mirror_root: MirrorRoot,
                                                                        history: dict[str, str]) -> None:
    import copy

    schemas = load_registry().schemas
    r = session("s1", history["two"], [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1"),))
    (row,) = export([r], tmp_path, mirror_root).rows["diff_sft.jsonl"]
    assert schemas.errors(row) == []
    mutations = {
        "extra metadata key": lambda b: b["metadata"].update(extra=1),
        "a tool": lambda b: b["tools"].append({}),
        "missing ci_reliability": lambda b: b["metadata"].pop("ci_reliability"),
        "two completion messages": lambda b: b["completion"].append(b["completion"][0]),
        "repeated decision id": lambda b: b["metadata"]["source_ids"].update(decision_ids=["d", "d"]),
        "another recipe": lambda b: b["metadata"].update(recipe_id="dpo_human"),
        "extra row key": lambda b: b.update(label=True),
        "a bad message": lambda b: b["prompt"].append({"role": "user"}),
        "bare provenance": lambda b: b["metadata"]["provenance"].pop("trainer_messages_version"),
    }
    for name, mutate in mutations.items():
        broken = copy.deepcopy(row)
        mutate(broken)
        assert schemas.errors(broken), name


def test_identified_repositories_resolve_through_the_context(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    from sediment.testing import CommitRef, MirrorWriter, RepositoryContext, RepositoryIdentity

    identity = RepositoryIdentity(provider="github", host="github.com", repository_id="424242")
    writer = MirrorWriter(mirror_root.mirror_path(ORG, REPO, identity))
    writer.commit({"calc.py": "a = 1\n"}, "root", when=1_767_000_000)
    sha = writer.commit({"calc.py": "a = 2\n"}, "fix", when=1_767_000_060)
    identified = outcome("o1", sha, repository_provider="github", repository_host="github.com",
                         repository_id="424242")
    context = RepositoryContext.build(ORG, [identified])

    def identified_session(session_id: str, repo: str) -> Rollout:
        attribution = FileAttribution(inference_call_id=f"{session_id}-c1", repo=repo, commit_sha=sha,
                                      repository_identity=identity, file_path="calc.py", similarity_score=0.9)
        return rollout(session_id, calls=calls(session_id), commits=[CommitRef(repo=repo, commit_sha=sha,
                                                                               repository_identity=identity)],
                       file_attributions=(attribution,), terminal_outcomes=(identified,),
                       session_decisions=(decision(f"d-{session_id}", f"resp-{session_id}-1", session=session_id),))

    summary = export_objective(
        Evidence([identified_session("s1", REPO), identified_session("s2", "owner/unknown-name")], False, mirror_root),
        tmp_path / "out", objective="diff-sft", registry=load_registry(), repositories=context,
        verifier_commands=VerifierCommands.empty())
    (path,) = summary["written"]
    (row,) = [json.loads(line) for line in Path(path).read_text().splitlines()]
    meta = row["metadata"]
    assert (meta["session_id"], meta["repo"], meta["source_ids"]["ci_outcome_ids"], meta["ci_reliability"]) == (
        "s1", REPO, ["o1"], 1.0)
    assert meta["repository_identity"] == {"provider": "github", "host": "github.com", "repository_id": "424242"}
    assert "calc.py" in row["completion"][0]["content"]
    assert {k: v for k, v in summary.items() if k.endswith("skipped")} == {
        "sample_skipped": {"repository_identity_unresolved": 1}}


def test_gates_run_in_order_and_the_first_failure_names_the_group(tmp_path: Path, mirror_root: MirrorRoot,
                                                                  history: dict[str, str]) -> None:
    sha = history["two"]
    # an explicit reject (gate 5) wins over no eligibility, a missing model and a missing mirror
    rejected = session("s1", sha, [(1, "calc.py")], decisions=(decision("d1", "resp-s1-1", accepted=False),),
                       model=None, repo="owner/other")
    # no eligibility (gate 7) wins over a missing model (gate 9) and a missing mirror (gate 10)
    ineligible = session("s2", sha, [(1, "calc.py")], model=None, repo="owner/other")
    # a missing model (gate 9) wins over a missing mirror (gate 10)
    modelless = session("s3", sha, [(1, "calc.py")], decisions=(decision("d3", "resp-s3-1", session="s3"),),
                        model=None, repo="owner/other")
    result = export([rejected, ineligible, modelless], tmp_path, mirror_root)
    assert skips(result) == {"explicit_reject": 1, "no_eligibility_source": 1, "model_absent": 1}


def test_an_unmappable_prompt_and_an_empty_patch_decline(tmp_path: Path, mirror_root: MirrorRoot,
                                                         git_repo: GitRepo) -> None:
    base = git_repo.commit({"calc.py": "a = 1\n"})
    same = git_repo.commit({"calc.py": "a = 1\n"}, "no change")
    assert base != same
    accept = (decision("d1", "resp-s1-1"),)
    empty = session("s1", same, [(1, "calc.py")], decisions=accept)
    result = export([empty], tmp_path, mirror_root, name="empty")
    assert skips(result) == {"empty_patch": 1}
    odd = [call("s2", 0, [message("narrator", "hello")], [message("assistant", "ok")], model="gpt-x",
                model_call_id="resp-s2-0")]
    unmappable = rollout("s2", calls=odd, commits=[base], file_attributions=(
        FileAttribution(inference_call_id="s2-c0", repo=REPO, commit_sha=base, file_path="calc.py",
                        similarity_score=0.9),), session_decisions=(decision("d2", "resp-s2-0", session="s2"),))
    result = export([unmappable], tmp_path, mirror_root, name="prompt")
    assert skips(result) == {"unsupported_message_role": 1}


def test_a_direct_export_reads_the_fact_store_and_needs_mirrors(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    facts = tmp_path / "facts.jsonl"
    facts.write_text(json.dumps({
        "fact_type": "inference_call", "session_id": "sess-1", "model": "m",
        "input_messages": [{"role": "user", "parts": [{"type": "text", "content": "Fix it."}]}],
        "output_messages": [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}],
        "observed_at": "2024-05-01T12:00:00Z",
    }) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env.update({"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG})

    def sediment(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                              timeout=120)

    assert sediment("ingest", "facts", str(facts)).returncode == 0
    missing = sediment("export", "diff-sft", "--out", str(tmp_path / "o1"))
    assert missing.returncode == 1 and "the export needs mirrors" in missing.stderr
    (tmp_path / "mirrors").mkdir()
    done = sediment("export", "diff-sft", "--out", str(tmp_path / "out"), "--mirrors", str(tmp_path / "mirrors"),
                    "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    # the Session's Rollout has no attributed file, so no attributed completion and no row
    assert (summary["objective"], summary["attributed_completions"], summary["sample_rows"], summary["written"]) == (
        "diff-sft", 0, 0, {})


def test_ci_of_the_union_is_resolved_once_and_its_counts_added(tmp_path: Path, mirror_root: MirrorRoot,
                                                               history: dict[str, str]) -> None:
    sha = history["two"]
    disagreeing = (outcome("o1", sha, "passed", run_id="1"),
                   outcome("o2", sha, "failed", run_id="2", workflow_id="88", workflow_name="lint",
                           workflow_path=".github/workflows/lint.yml"))
    r = session("s1", sha, [(1, "calc.py"), (1, "util.py")], decisions=(decision("d1", "resp-s1-1"),),
                outcomes=disagreeing)
    result = export([r], tmp_path, mirror_root)
    # one resolution for the two-file group: the resolver's count once, then the group's decline
    assert (result.rows, skips(result)) == ({}, {"ambiguous_workflow_verdicts": 1, "resolved_ci_failure": 1})
