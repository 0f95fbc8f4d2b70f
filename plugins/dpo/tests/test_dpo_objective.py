"""The dpo objective on hand-built evidence: every rule of the pairing contract (labels of both
recipes, buckets, dedupe, cap, declines consuming slots, eval wins, skip vocabulary), the
ladder's knobs, schema validation of every row and byte determinism."""

from __future__ import annotations

import json
import math
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sediment_dpo import DPO_SKIP_REASONS, DPOPolicy

from sediment.plugin import CallCapture, Rollout, ToolCallPart, ToolDefinition
from sediment.testing import (
    ORG,
    REPO,
    T0,
    DeveloperDecision,
    Evidence,
    FileAttribution,
    SettingsSources,
    VerifierCommands,
    assign_split,
    call,
    export_objective,
    load_registry,
    message,
    outcome,
    rollout,
    run_objective,
    snapshot,
)

PAIR = "https://sediment.so/schemas/training-rows/dpo-pair/v5.json"
TRAIN = [s for s in (f"s{i}" for i in range(200)) if assign_split(s, 0.1) == "train"]
EVAL = [s for s in (f"s{i}" for i in range(200)) if assign_split(s, 0.1) == "eval"]


def sha(session: str, n: int = 0) -> str:
    return f"{abs(hash((session, n))) % 16**40:040x}"


def member(session: str, answer: Any = None, *, decisions: tuple[tuple[bool, bool], ...] = (),
           ci: str | None = None, model: str | None = "gpt-x", prompt: str = "fix the bug",
           files: tuple[str, ...] = ("a.py",), split: str | None = None, output: Any = None,
           capture: CallCapture | None = None, tools: tuple[ToolDefinition, ...] | None = None) -> Rollout:
    """One Session whose one call answers ``prompt`` (its request declaring ``tools``);
    ``decisions`` are ``(accepted, explicit)`` on it, ``ci`` the result of the one run on its
    commit, ``files`` the files attributed to it."""
    commit = sha(session)
    out = output if output is not None else message("assistant", answer if answer is not None else f"answer {session}")
    calls = [call(session, 0, [message("user", prompt)], [out], model=model, model_call_id=f"resp-{session}",
                  capture=capture, tools=tools)]
    made = tuple(DeveloperDecision(
        decision_id=f"d-{session}-{i}", org_id=ORG, session_id=session, agent_harness="claude-code",
        file_path="a.py", accepted=accepted, explicit=explicit, interaction_mode="agent", call_id=f"resp-{session}",
        occurred_at=T0 + timedelta(seconds=i), captured_at=T0 + timedelta(days=1))
        for i, (accepted, explicit) in enumerate(decisions))
    attributions = tuple(FileAttribution(inference_call_id=f"{session}-c0", repo=REPO, commit_sha=commit,
                                         file_path=path, similarity_score=0.8) for path in files)
    outcomes = [outcome(f"o-{session}", commit, ci, run_id=f"r-{session}")] if ci else []
    return rollout(session, calls=calls, commits=[commit], outcomes=outcomes, session_decisions=made,
                   file_attributions=attributions,
                   split=split or ("eval" if session in EVAL else "train"))


ACCEPT = ((True, True),)
REJECT = ((False, True),)
#: Tools a call's request declared (a description and strict, no parameters, a provider's
#: built-in tool), and what a pair's ``tools`` hold of them: request order, chat-template shape.
TOOLS = (
    ToolDefinition(name="write_file", description="Write a file.", strict=True,
                   parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolDefinition(name="run_tests", parameters=None),
    ToolDefinition(type="web_search_preview", name="web_search_preview"),
)
PAIR_TOOLS = [
    {"type": "function", "function": {"name": "write_file", "description": "Write a file.",
                                      "parameters": TOOLS[0].parameters, "strict": True}},
    {"type": "function", "function": {"name": "run_tests", "parameters": None}},
    {"type": "web_search_preview", "name": "web_search_preview"},
]


def export(tmp_path: Path, rollouts: list[Rollout], name: str = "out", **kwargs: Any) -> Any:
    return run_objective(rollouts, tmp_path / name, objective="dpo", **kwargs)


def only_rows(result: Any) -> list[dict[str, Any]]:
    return [row for rows in result.rows.values() for row in rows]


def test_the_skip_vocabulary_is_upstreams_in_order_then_the_counted_dedupe() -> None:
    upstream = (
        "conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
        "repository_identity_conflict", "repository_identity_unresolved", "repository_mirror_identity_unresolved",
        "repository_source_absent", "non_finite_number", "unrepresentable_unicode", "completionless",
        "duplicate_tool_call_id", "empty_message", "non_string_tool_result", "unrepresentable_part_order",
        "unresolved_tool_call", "unsupported_completion_role", "unsupported_message_role", "unsupported_role_part",
        "inference_call_not_found", "promptless", "model_absent", "no_label_source", "unreliable_ci_resolution",
        "bucket_capped", "identical_responses")
    assert (*upstream, "duplicate_completion", "tools_differ") == DPO_SKIP_REASONS
    assert tuple(load_registry().objective("dpo").vocabularies["dpo"]) == DPO_SKIP_REASONS


def test_policy_errors_are_upstreams() -> None:
    with pytest.raises(ValueError, match="^unsupported DPO recipe 'kto'$"):
        DPOPolicy(recipe_id="kto")
    with pytest.raises(ValueError, match=r"^DPOPolicy.max_pairs_per_bucket must be >= 1 \(got 0\)$"):
        DPOPolicy(max_pairs_per_bucket=0)


def test_dpo_human_pairs_an_explicit_accept_with_an_explicit_reject_of_the_same_prompt(tmp_path: Path) -> None:
    a, b = TRAIN[0], TRAIN[1]
    result = export(tmp_path, [member(b, decisions=REJECT, ci="passed"), member(a, decisions=ACCEPT, ci="failed"),
                               member(TRAIN[2], decisions=((True, False),))])
    assert result.summary["pair_rows"] == 1
    # an implicit accept labels nothing under dpo_human
    assert result.summary["pair_skipped"] == {"no_label_source": 1}
    [row] = result.rows["dpo.jsonl"]
    assert list(row) == ["prompt", "chosen", "rejected", "tools", "metadata"]
    assert row["prompt"] == [{"role": "user", "content": "fix the bug"}]
    assert row["chosen"] == [{"role": "assistant", "content": f"answer {a}"}]  # CI failed: still chosen
    assert row["rejected"] == [{"role": "assistant", "content": f"answer {b}"}]
    assert row["tools"] == []  # neither call declared tools
    meta = row["metadata"]
    assert list(meta) == [
        "org_id", "source_model", "chosen_completion_id", "rejected_completion_id", "recipe_id", "recipe_version",
        "chosen_label_source", "rejected_label_source", "label_confidence", "ci_reliability", "confidence_margin",
        "provenance", "split", "chosen_repository_identity", "rejected_repository_identity",
        "chosen_attribution_source", "rejected_attribution_source", "chosen_session_commit_observation_ids",
        "rejected_session_commit_observation_ids", "schema_id", "schema_version"]
    assert {k: meta[k] for k in ("org_id", "source_model", "chosen_completion_id", "rejected_completion_id",
                                 "recipe_id", "recipe_version", "chosen_label_source", "rejected_label_source",
                                 "split", "schema_id", "schema_version")} == {
        "org_id": ORG, "source_model": "gpt-x", "chosen_completion_id": f"{a}-c0",
        "rejected_completion_id": f"{b}-c0", "recipe_id": "dpo_human", "recipe_version": 2,
        "chosen_label_source": "explicit_accept", "rejected_label_source": "explicit_reject", "split": "train",
        "schema_id": PAIR, "schema_version": 5}
    # accept + fail CI: 1.0 × 0.7 = 0.7; reject + pass: 0.0 → label min(0.7, 1 − 0.0), margin 0.7
    assert (meta["label_confidence"], meta["confidence_margin"], meta["ci_reliability"]) == (0.7, 0.7, 1.0)
    assert meta["chosen_attribution_source"] == "git_notes" and meta["chosen_repository_identity"] is None
    provenance = meta["provenance"]
    assert list(provenance) == ["chosen", "rejected", "dpo_policy_version", "max_pairs_per_bucket",
                                "label_confidence_formula"]
    assert provenance["chosen"]["policy_version"] == "5"
    assert provenance["chosen"]["label_confidence_policy_version"] == "4"
    assert provenance["chosen"]["trainer_messages_version"] == "1"
    assert (provenance["dpo_policy_version"], provenance["max_pairs_per_bucket"],
            provenance["label_confidence_formula"]) == ("1", 3, "label")


def test_each_side_carries_its_calls_transcript_capture_only_when_it_has_one(tmp_path: Path) -> None:
    capture = CallCapture(source="transcript:claude-code@unknown", lacks=("exact_request", "token_ids"))
    rows = only_rows(export(tmp_path, [  # every row validated against its schema
        member(TRAIN[0], decisions=ACCEPT, capture=capture), member(TRAIN[1], decisions=REJECT),
        member(TRAIN[2], decisions=ACCEPT, prompt="other"), member(TRAIN[3], decisions=REJECT, prompt="other",
                                                                     capture=capture),
        member(TRAIN[4], decisions=ACCEPT, prompt="wire"), member(TRAIN[5], decisions=REJECT, prompt="wire")]))
    by_chosen = {row["metadata"]["chosen_completion_id"]: row["metadata"] for row in rows}
    marker = {"source": "transcript:claude-code@unknown", "lacks": ["exact_request", "token_ids"]}
    chosen_side, rejected_side, wire = (by_chosen[f"{TRAIN[i]}-c0"] for i in (0, 2, 4))
    assert list(chosen_side)[-3:] == ["schema_id", "schema_version", "chosen_capture"]
    assert chosen_side["chosen_capture"] == marker and "rejected_capture" not in chosen_side
    assert list(rejected_side)[-3:] == ["schema_id", "schema_version", "rejected_capture"]
    assert rejected_side["rejected_capture"] == marker and "chosen_capture" not in rejected_side
    assert list(wire)[-1] == "schema_version" and not {"chosen_capture", "rejected_capture"} & set(wire)


def test_a_pair_keeps_the_tools_both_calls_declared_exactly_and_in_request_order(tmp_path: Path) -> None:
    """Regression (issue 25): ``tools`` was always ``[]``. Now a pair holds what both calls'
    requests declared; a pair of calls that declared none keeps ``[]``. Every row is validated
    against ``dpo-pair`` v5 by the export."""
    rows = only_rows(export(tmp_path, [
        member(TRAIN[0], decisions=ACCEPT, tools=TOOLS), member(TRAIN[1], decisions=REJECT, tools=TOOLS),
        member(TRAIN[2], decisions=ACCEPT, prompt="bare"), member(TRAIN[3], decisions=REJECT, prompt="bare")]))
    tools = {row["metadata"]["chosen_completion_id"]: row["tools"] for row in rows}
    assert tools == {f"{TRAIN[0]}-c0": PAIR_TOOLS, f"{TRAIN[2]}-c0": []}
    assert load_registry().schemas.errors(rows[0], PAIR) == []


def test_a_pair_whose_calls_declared_different_tools_is_declined_as_tools_differ(tmp_path: Path) -> None:
    """Both members share the prompt messages, but the model saw the tools too: calls that
    declared other tools, the same tools in another order, or none recorded (a transcript)
    against declared ones are not one prompt. The declined pair keeps its slot (no backfill)."""
    transcript = CallCapture(source="transcript:claude-code@unknown", lacks=("exact_request", "tool_definitions"))
    a, b, c, d, e = TRAIN[:5]
    result = export(tmp_path, [
        member(a, decisions=ACCEPT, tools=TOOLS),
        member(b, decisions=REJECT, tools=TOOLS[:2]),  # fewer tools
        member(c, decisions=REJECT, tools=(TOOLS[1], TOOLS[0], TOOLS[2])),  # another order
        member(d, decisions=REJECT, capture=transcript),  # not recorded
        member(e, decisions=REJECT, tools=TOOLS)])
    assert result.summary["pair_skipped"] == {"tools_differ": 3, "bucket_capped": 1}
    assert result.summary["pair_rows"] == 0  # (a, e) is the fourth pair: beyond the cap of 3
    again = export(tmp_path, [member(a, decisions=ACCEPT, tools=TOOLS), member(e, decisions=REJECT, tools=TOOLS),
                              member(b, decisions=REJECT, tools=TOOLS[:2])], "again")
    [row] = only_rows(again)
    assert (row["metadata"]["rejected_completion_id"], row["tools"]) == (f"{e}-c0", PAIR_TOOLS)
    assert again.summary["pair_skipped"] == {"tools_differ": 1}


def test_declared_tools_json_cannot_hold_decline_the_pair_by_the_representation_check(tmp_path: Path) -> None:
    """Hostile tool schemas (a NaN default, a lone surrogate in a description) are compared as
    they are, then the pair's row fails the representation check: counted, never a traceback."""
    nan = (ToolDefinition(name="f", parameters={"type": "number", "default": float("nan")}),)
    surrogate = (ToolDefinition(name="g", description="bad \ud800", parameters=None),)
    result = export(tmp_path, [
        member(TRAIN[0], decisions=ACCEPT, tools=nan), member(TRAIN[1], decisions=REJECT, tools=nan),
        member(TRAIN[2], decisions=ACCEPT, prompt="other", tools=surrogate),
        member(TRAIN[3], decisions=REJECT, prompt="other", tools=surrogate)])
    assert result.summary["pair_rows"] == 0
    assert result.summary["pair_skipped"] == {"non_finite_number": 1, "unrepresentable_unicode": 1}


def test_a_reject_wins_and_without_ci_the_label_confidence_is_certain(tmp_path: Path) -> None:
    a, b = TRAIN[0], TRAIN[1]
    evidence = [member(a, decisions=ACCEPT), member(b, decisions=((True, True), (False, True)))]
    [row] = only_rows(export(tmp_path, evidence))
    meta = row["metadata"]
    assert (meta["chosen_completion_id"], meta["rejected_completion_id"]) == (f"{a}-c0", f"{b}-c0")
    assert (meta["label_confidence"], meta["confidence_margin"], meta["ci_reliability"]) == (1.0, 1.0, None)
    # the upstream formula, for byte parity: min(chosen, rejected) = 0.0
    [upstream] = only_rows(export(tmp_path, evidence, "up", settings={"dpo": {"label_confidence": "upstream"}}))
    assert upstream["metadata"]["label_confidence"] == 0.0
    assert upstream["metadata"]["provenance"]["label_confidence_formula"] == "upstream"


def test_dpo_outcome_labels_by_the_resolved_verdict_only(tmp_path: Path) -> None:
    a, b, c, d = TRAIN[:4]
    evidence = [member(a, ci="passed", decisions=REJECT), member(b, ci="failed", decisions=ACCEPT),
                member(c), member(d, ci="cancelled")]
    result = export(tmp_path, evidence, recipe="dpo_outcome")
    assert result.summary["pair_skipped"] == {"no_label_source": 2}  # no CI; a non-verdict
    [row] = result.rows["dpo.jsonl"]
    meta = row["metadata"]
    assert (meta["chosen_completion_id"], meta["chosen_label_source"], meta["rejected_label_source"]) == (
        f"{a}-c0", "resolved_ci_pass", "resolved_ci_fail")
    # reject + pass 0.0; accept + fail 0.7 → label min(0.0, 0.3), margin −0.7: the decisions disagree
    assert (meta["label_confidence"], meta["confidence_margin"]) == (0.0, -0.7)

    plain = only_rows(export(tmp_path, [member(a, ci="passed"), member(b, ci="failed")], "plain",
                             recipe="dpo_outcome"))
    # no decisions, clean CI: 0.66 vs 0.42 → min(0.66, 0.58), margin 0.24, reliability 1.0
    assert [(r["metadata"]["label_confidence"], r["metadata"]["confidence_margin"], r["metadata"]["ci_reliability"])
            for r in plain] == [(pytest.approx(0.58), pytest.approx(0.24), 1.0)]


def test_a_suspected_flake_is_unreliable(tmp_path: Path) -> None:
    a, b = TRAIN[:2]
    commit = sha(b)
    flaky = member(b)
    flaky = flaky.model_copy(update={"terminal_outcomes": (
        outcome("o-f1", commit, "failed", run_id="rf", attempt=1), outcome("o-f2", commit, "passed", run_id="rf",
                                                                          attempt=2, minutes=5))})
    result = export(tmp_path, [member(a, ci="failed"), flaky], recipe="dpo_outcome")
    assert result.summary["pair_rows"] == 0
    assert result.summary["pair_skipped"] == {"unreliable_ci_resolution": 1}


def test_buckets_are_org_model_and_the_exact_prompt(tmp_path: Path) -> None:
    a, b, c, d = TRAIN[:4]
    evidence = [member(a, decisions=ACCEPT), member(b, decisions=REJECT, model="gpt-y"),
                member(c, decisions=REJECT, prompt="fix the bug "), member(d, decisions=REJECT, model=None)]
    result = export(tmp_path, evidence)
    assert result.summary["pair_rows"] == 0
    assert result.summary["pair_skipped"] == {"model_absent": 1}


def test_the_cap_evaluates_three_pairs_chosen_major_and_counts_the_bucket(tmp_path: Path) -> None:
    c1, c2, r1, r2 = TRAIN[:4]
    evidence = [member(s, decisions=ACCEPT if s in (c1, c2) else REJECT) for s in (r2, c2, r1, c1)]
    result = export(tmp_path, evidence)
    ids = [(r["metadata"]["chosen_completion_id"], r["metadata"]["rejected_completion_id"])
           for r in result.rows["dpo.jsonl"]]
    chosen, rejected = sorted([f"{c1}-c0", f"{c2}-c0"]), sorted([f"{r1}-c0", f"{r2}-c0"])
    assert ids == [(chosen[0], rejected[0]), (chosen[0], rejected[1]), (chosen[1], rejected[0])]
    assert result.summary["pair_skipped"] == {"bucket_capped": 1}
    # exactly at the cap: not capped
    exact = export(tmp_path, evidence, "exact", settings={"dpo": {"max_pairs_per_bucket": 4}})
    assert (exact.summary["pair_rows"], exact.summary["pair_skipped"]) == (4, {})


def test_declines_consume_their_slot(tmp_path: Path) -> None:
    c1, c2, r1, r2 = sorted(TRAIN[:4])
    # c1 answers exactly as r1: the first pair is identical and keeps its slot
    evidence = [member(c1, "same", decisions=ACCEPT), member(c2, decisions=ACCEPT),
                member(r1, "same", decisions=REJECT), member(r2, decisions=REJECT)]
    result = export(tmp_path, evidence)
    ids = [(r["metadata"]["chosen_completion_id"], r["metadata"]["rejected_completion_id"])
           for r in result.rows["dpo.jsonl"]]
    assert ids == [(f"{c1}-c0", f"{r2}-c0"), (f"{c2}-c0", f"{r1}-c0")]  # (c2, r2) was never evaluated
    assert result.summary["pair_skipped"] == {"identical_responses": 1, "bucket_capped": 1}
    one = export(tmp_path, evidence, "one", settings={"dpo": {"max_pairs_per_bucket": 1}})
    assert (one.summary["pair_rows"], one.summary["pair_skipped"]) == (0, {"identical_responses": 1,
                                                                          "bucket_capped": 1})


def test_a_representation_problem_declines_each_pair_selecting_the_member_once(tmp_path: Path) -> None:
    c1, r1, r2 = sorted(TRAIN[:3])
    evidence = [member(c1, "bad \ud800", decisions=ACCEPT), member(r1, decisions=REJECT),
                member(r2, decisions=REJECT)]
    result = export(tmp_path, evidence)
    assert result.summary["pair_rows"] == 0
    # the member stays in its bucket: both pairs selecting it decline, once each (not per AC)
    assert result.summary["pair_skipped"] == {"unrepresentable_unicode": 2}


def test_a_structural_mapping_error_excludes_the_member_per_ac(tmp_path: Path) -> None:
    a, b = TRAIN[:2]
    user_reply = message("user", "I answer for the model")
    result = export(tmp_path, [member(a, decisions=ACCEPT), member(b, decisions=REJECT, output=user_reply,
                                                                   files=("a.py", "b.py"))])
    assert result.summary["pair_rows"] == 0
    assert result.summary["pair_skipped"] == {"unsupported_completion_role": 2}


def test_extra_completions_of_one_call_are_deduplicated_and_counted(tmp_path: Path) -> None:
    a, b = TRAIN[:2]
    result = export(tmp_path, [member(a, decisions=ACCEPT, files=("a.py", "b.py", "c.py")),
                               member(b, decisions=REJECT)])
    assert result.summary["pair_rows"] == 1  # one call is one member: no self-pairs, no repeated pairs
    assert result.summary["pair_skipped"] == {"duplicate_completion": 2}


def test_eval_wins_and_the_split_names_the_file(tmp_path: Path) -> None:
    a, b = TRAIN[0], EVAL[0]
    c, d = TRAIN[1], TRAIN[2]
    evidence = [member(a, decisions=ACCEPT), member(b, decisions=REJECT),
                member(c, decisions=ACCEPT, prompt="other"), member(d, decisions=REJECT, prompt="other")]
    result = export(tmp_path, evidence, split_enabled=True)
    assert sorted(result.rows) == ["dpo.eval.jsonl", "dpo.train.jsonl"]
    [mixed] = result.rows["dpo.eval.jsonl"]
    assert mixed["metadata"]["split"] == "eval" and mixed["metadata"]["chosen_completion_id"] == f"{a}-c0"
    [same] = result.rows["dpo.train.jsonl"]
    assert same["metadata"]["split"] == "train"
    unsplit = export(tmp_path, evidence, "unsplit")
    assert list(unsplit.rows) == ["dpo.jsonl"] and len(unsplit.rows["dpo.jsonl"]) == 2


def test_tool_calls_keep_their_arguments_and_order_in_the_bucket_key(tmp_path: Path) -> None:
    a, b = TRAIN[:2]
    edit = message("assistant", "editing", ToolCallPart(id=f"t-{a}", name="Edit", arguments={"z": 1, "a": [True]}))
    result = export(tmp_path, [member(a, decisions=ACCEPT, output=edit), member(b, decisions=REJECT)])
    [row] = result.rows["dpo.jsonl"]
    assert row["chosen"] == [{"role": "assistant", "content": "editing", "tool_calls": [
        {"id": f"t-{a}", "type": "function", "function": {"name": "Edit", "arguments": {"z": 1, "a": [True]}}}]}]


def test_ladder_knobs_come_from_the_settings(tmp_path: Path) -> None:
    a, b = TRAIN[:2]
    evidence = [member(a, ci="passed"), member(b, ci="failed")]

    def run(name: str, environ: dict[str, str]) -> dict[str, Any]:
        summary = export_objective(Evidence(evidence, False), tmp_path / name, objective="dpo", recipe="dpo_outcome",
                                   settings=SettingsSources(environ=environ), verifier_commands=VerifierCommands.empty())
        [path] = summary["written"]
        return json.loads(Path(path).read_text())

    default = run("default", {})
    tuned = run("tuned", {"SEDIMENT_LABEL_CONFIDENCE_BASELINE_CONFIDENCE": "0.5"})
    # 0.5 × 1.1 = 0.55 vs 0.5 × 0.7 = 0.35
    assert tuned["metadata"]["confidence_margin"] == pytest.approx(0.2)
    assert default["metadata"]["confidence_margin"] == pytest.approx(0.24)
    assert (tuned["metadata"]["provenance"]["chosen"]["label_confidence_policy_digest"]
            != default["metadata"]["provenance"]["chosen"]["label_confidence_policy_digest"])
    from sediment.testing import ConfigurationError
    with pytest.raises(ConfigurationError, match="SEDIMENT_LABEL_CONFIDENCE_BASELINE_CONFIDENCE"):
        run("bad", {"SEDIMENT_LABEL_CONFIDENCE_BASELINE_CONFIDENCE": "2"})


def population() -> list[Rollout]:
    """Pairs across buckets; the calls of one prompt declare the same tools (two, or none),
    except one call that declares fewer (its pair declines as ``tools_differ``)."""
    sessions = TRAIN[:6] + EVAL[:2]
    made = []
    for index, session in enumerate(sessions):
        prompt = index % 2 + index % 3
        tools = TOOLS[:1] if index == 7 else TOOLS[1:] if prompt == 2 else None
        made.append(member(session, decisions=ACCEPT if index % 2 else REJECT, ci="passed" if index % 3 else "failed",
                           prompt=f"prompt {prompt}", files=("a.py",) if index % 4 else ("a.py", "b.py"),
                           tools=tools))
    return made


@pytest.mark.parametrize("recipe", ["dpo_human", "dpo_outcome"])
def test_repeated_and_shuffled_evidence_give_identical_bytes(tmp_path: Path, recipe: str) -> None:
    """Repeated, shuffled, and admitted by several workers (runs of Sessions apart, their
    members joined): the same bytes and counts."""
    evidence = population()
    first = export(tmp_path, evidence, "first", recipe=recipe, split_enabled=True)
    assert first.summary["pair_rows"] > 0
    again = export(tmp_path, evidence, "again", recipe=recipe, split_enabled=True)
    shuffled = list(evidence)
    random.Random(7).shuffle(shuffled)
    mixed = export(tmp_path, shuffled, "mixed", recipe=recipe, split_enabled=True)
    spread = [export(tmp_path, shuffled, f"workers-{w}", recipe=recipe, split_enabled=True, workers=w) for w in (2, 3)]
    assert snapshot(first.out_dir) == snapshot(again.out_dir) == snapshot(mixed.out_dir)
    def counts(summary: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in summary.items() if key not in ("written", "manifests")}

    for result in spread:
        assert snapshot(result.out_dir) == snapshot(first.out_dir)
        assert counts(result.summary) == counts(first.summary)
    assert first.summary["pair_skipped"] == mixed.summary["pair_skipped"]
    # dpo_human's pairs exercise the tools: a row with them, one without, a pair declined for them
    if recipe == "dpo_human":
        assert sorted(len(row["tools"]) for row in only_rows(first)) == [0, 2]
        assert first.summary["pair_skipped"]["tools_differ"] == 1


def test_the_row_schema_refuses_what_the_contract_forbids(tmp_path: Path) -> None:
    from sediment.testing import load_registry

    [row] = only_rows(export(tmp_path, [member(TRAIN[0], decisions=ACCEPT), member(TRAIN[1], decisions=REJECT)]))
    schemas = load_registry().schemas
    assert schemas.errors(row, PAIR) == []

    def broken(change: Any) -> dict[str, Any]:
        copy = json.loads(json.dumps(row))
        change(copy)
        return copy

    for change in (
        lambda r: r["metadata"].update(extra=1),
        lambda r: r["metadata"].pop("ci_reliability"),
        lambda r: r["metadata"].update(label_confidence=1.5),
        lambda r: r["metadata"].update(chosen_label_source="explicit_reject"),
        lambda r: r["metadata"].update(split="test"),
        lambda r: r["metadata"]["provenance"]["chosen"].pop("label_confidence_policy_digest"),
        lambda r: r.update(tools=[{"type": "function"}]),
        lambda r: r.update(chosen=[]),
        lambda r: r.update(rejected=[{"role": "user", "content": "x"}]),
        lambda r: r["prompt"].append({"role": "user", "content": "x", "name": "extra"}),
        lambda r: r["metadata"].update(chosen_capture={"source": "gateway", "lacks": []}),
        lambda r: r["metadata"].update(rejected_capture={"source": "transcript:codex@1", "lacks": ["tokens"]}),
        lambda r: r["metadata"].update(capture={"source": "transcript:codex@1", "lacks": []}),
    ):
        assert schemas.errors(broken(change), PAIR), change
    assert schemas.errors(broken(lambda r: r["metadata"].update(
        chosen_capture={"source": "transcript:codex@1", "lacks": []},
        rejected_capture={"source": "transcript:claude-code@unknown", "lacks": ["exact_request"]})), PAIR) == []


HF_CHECK = Path(__file__).parents[3] / "tests" / "consumers" / "hf" / "check_dpo.py"


def test_pairs_load_in_datasets_and_trl(consumer_python: Any, tmp_path: Path) -> None:
    """The canonical rows are already TRL preference rows: conversational, loaded exactly, and
    rendered by maybe_apply_chat_template into prompt / chosen / rejected texts, the declared
    tools in the prompt."""
    from sediment.testing import run_consumer

    python = consumer_python("hf")  # skipped when .venv-consumers/hf is absent, failed under CI
    a, b, c = TRAIN[:3]
    edit = message("assistant", "editing", ToolCallPart(id=f"t-{a}", name="Edit", arguments={"path": "a.py"}))
    functions = TOOLS[:2]  # a chat template renders function tools
    result = export(tmp_path, [member(a, decisions=ACCEPT, output=edit, tools=functions),
                               member(b, "no 🎉", decisions=REJECT, tools=functions),
                               member(c, decisions=REJECT, tools=functions)])
    path = result.out_dir / "dpo.jsonl"
    (facts,) = run_consumer(python, HF_CHECK, path, home=tmp_path / "hf")
    assert facts["rows"] == 2
    assert facts["conversational"] is True
    assert facts["load_json"] == "equal"
    assert facts["json_features"] == "equal"
    assert facts["rendered_keys"] == ["chosen", "prompt", "rejected"]
    assert facts["generation_prompt"] is True
    assert facts["missing"] == []
    # given the row's tools, as DPOTrainer passes them, the template renders each declared tool's name,
    # description and parameters into the prompt (two tools, two pairs)
    assert (facts["tools_rendered"], facts["tools_missing"]) == (4, [])


def test_resolver_counts_are_added_once_per_kept_member(tmp_path: Path) -> None:
    a, b = TRAIN[:2]
    commit = sha(b)
    split_verdict = member(b, decisions=REJECT, files=("a.py", "b.py")).model_copy(update={"terminal_outcomes": (
        outcome("o-t", commit, "passed", run_id="r1"),
        outcome("o-l", commit, "failed", run_id="r2", workflow_name="lint", workflow_id="78",
                workflow_path=".github/workflows/lint.yml"))})
    human = export(tmp_path, [member(a, decisions=ACCEPT), split_verdict])
    # the two files' completions collapse to one member: its resolver count is added once
    assert human.summary["pair_rows"] == 1
    assert human.summary["pair_skipped"] == {"duplicate_completion": 1, "ambiguous_workflow_verdicts": 1}
    # an ambiguous commit has no verdict and no reliability; the chosen member has no CI
    assert human.rows["dpo.jsonl"][0]["metadata"]["ci_reliability"] is None
    outcome_recipe = export(tmp_path, [member(a, ci="passed"), split_verdict], "outcome", recipe="dpo_outcome")
    assert outcome_recipe.summary["pair_rows"] == 0
    assert outcome_recipe.summary["pair_skipped"] == {"duplicate_completion": 1, "ambiguous_workflow_verdicts": 1,
                                                      "no_label_source": 1}


def test_buckets_are_visited_in_prompt_order_when_prompts_share_a_long_prefix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Members wait on disk; only a prefix of each prompt orders the buckets in memory, and the
    whole prompts decide when prefixes tie: the order is still that of the full keys."""
    import sediment_dpo.pairing as pairing

    shared = "p" * 64
    suffixes = ["b", "a", "ab", "", "é", "c"]
    evidence = []
    for index, suffix in enumerate(suffixes):
        chosen, rejected = TRAIN[2 * index], TRAIN[2 * index + 1]
        evidence += [member(chosen, decisions=ACCEPT, prompt=shared + suffix),
                     member(rejected, decisions=REJECT, prompt=shared + suffix)]
    monkeypatch.setattr(pairing, "PROMPT_PREFIX", 8)  # every prefix ties: the full prompts decide
    short = export(tmp_path, evidence, "short")
    monkeypatch.setattr(pairing, "PROMPT_PREFIX", 4096)  # every prompt is its own prefix
    whole = export(tmp_path, evidence, "whole")
    prompts = [row["prompt"][0]["content"] for row in only_rows(short)]
    assert prompts == sorted(shared + s for s in suffixes)
    assert snapshot(short.out_dir) == snapshot(whole.out_dir)


def test_a_prompt_key_is_the_whole_prompts_json_whatever_the_messages_known() -> None:
    """Each message is encoded once per Session (``known``): the key is still the JSON array of
    the whole prompt, non-ASCII, NaN and shared message objects included, and a message another
    object left at a known id is encoded afresh."""
    from sediment_dpo import pairing

    first, second = message("user", "héllo 🎉"), message("assistant", "x", finish_reason="stop")
    odd = call("s1", 0, [message("user", "go")], [message("assistant", ToolCallPart(
        id="t", name="f", arguments={"n": math.nan, "z": 1, "a": [1.5, None]}))]).output_messages[0]
    prompts = [[], [first], [first, second], [first, second, odd, first], [second]]

    def whole(messages: list[Any]) -> str:  # the key as one json.dumps of the whole prompt
        return json.dumps([m.model_dump(mode="python", exclude_none=True) for m in messages], sort_keys=True,
                          ensure_ascii=False, allow_nan=True, default=repr)

    known: dict[int, tuple[Any, str]] = {}
    assert [pairing.prompt_key(p, known) for p in prompts] == [whole(p) for p in prompts]
    assert len(known) == 3
    stale = message("user", "another")
    known[id(stale)] = (first, "not this message's text")  # an id reused by another object
    assert pairing.prompt_key([stale], known) == whole([stale])


_KEY_TEXT = st.lists(st.characters(codec="utf-8") | st.sampled_from(
    ["\x00", "\x1b", "\x1f", "\x7f", "\x80", "é", "🎉", "\ud800", "\\", "\\u00e9", "\\u001b", '"', "\n"]),
    max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_KEY_TEXT, key=_KEY_TEXT, number=st.floats(allow_nan=True, allow_infinity=True))
def test_a_message_key_is_the_non_ascii_json_whichever_encoder_made_it(text: str, key: str, number: float) -> None:
    """The ASCII encoder's text is taken only when it is the non-ASCII one: control characters,
    DEL, non-ASCII, lone surrogates and literal backslash-u text included."""
    from sediment_dpo import pairing

    found = message("user", text) if text else message("user", "x")
    mixed = call("s1", 0, [found], [message("assistant", ToolCallPart(
        id="t", name=text or "f", arguments={key: [text, number]}))]).output_messages[0]
    for value in (found, mixed):
        assert pairing._message_key(value) == json.dumps(value.model_dump(mode="python", exclude_none=True),
                                                         sort_keys=True, ensure_ascii=False, allow_nan=True,
                                                         default=repr)
