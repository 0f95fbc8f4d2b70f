"""`sediment report dataset-diagnostics` (docs/reports.md): each section's numbers on
hand-built evidence, through the objectives' real ``diagnose_evidence`` hooks; determinism; the
command's errors; the demo store."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.evidence.context import Evidence
from sediment.host.diagnosis import DiagnosedRow, FloorCandidate, PromptBucket, Stratum
from sediment.host.registry import load_registry
from sediment.model.facts import DeveloperDecision, EditObservation
from sediment.model.rollout import FileAttribution, Rollout
from sediment.reports.dataset_diagnostics import (
    DatasetDiagnosis,
    dataset_diagnostics,
    evidence_dataset_diagnostics,
    jaccard,
    prompt_tokens,
)
from sediment.settings import SettingsSources
from sediment.testing import ORG, REPO, T0, call, message, rollout

SECTIONS = ["model_balance", "confidence_distributions", "cross_split_duplicates", "confidence_floor_exclusions",
            "dpo_bucket_sparsity", "dpo_near_duplicate_buckets", "abandonment", "fate"]


def sha(session: str) -> str:
    return f"{sum(ord(c) * 31 ** i for i, c in enumerate(session)) % 16**40:040x}"


def session(name: str, prompt: str, *, split: str, accept: bool | None, explicit: bool = True,
            similarity: float = 1.0, kept: str | None = None, model: str = "gpt-x") -> Rollout:
    """One Session whose one call answers ``prompt`` and touches ``a.py`` of one commit; ``accept``
    is its one decision (None: none); ``kept`` an edit observation of the decided edit (the text
    the file still holds at the Session's end)."""
    commit = sha(name)
    response = f"resp-{name}"
    calls = [call(name, 0, [message("user", prompt)], [message("assistant", f"answer {name}")], model=model,
                  model_call_id=response)]
    decisions = () if accept is None else (DeveloperDecision(
        decision_id=f"d-{name}", org_id=ORG, session_id=name, agent_harness="claude-code", file_path="a.py",
        accepted=accept, explicit=explicit, interaction_mode="agent", call_id=response, occurred_at=T0,
        captured_at=T0 + timedelta(days=1)),)
    observations = () if kept is None else (EditObservation(
        observation_id=f"eo-{name}", org_id=ORG, session_id=name, agent_harness="claude-code", file_path="a.py",
        call_id=response, applied_text="def fixed():\n    return 42\n", observed_file_text=kept,
        occurred_at=T0, captured_at=T0),)
    attributions = (FileAttribution(inference_call_id=f"{name}-c0", repo=REPO, commit_sha=commit, file_path="a.py",
                                    similarity_score=similarity),)
    return rollout(name, calls=calls, commits=[commit], session_decisions=decisions, edit_observations=observations,
                   file_attributions=attributions, split=split,
                   attribution_source="jaccard" if similarity < 1.0 else "git_notes")


FIX = "fix the bug"


def evidence_sessions() -> list[Rollout]:
    return [
        # bucket FIX: chosen a1 (train), a3 (train); rejected a2 (eval), a4 (train): 4 possible pairs, cap 3
        session("a1", FIX, split="train", accept=True, kept="def fixed():\n    return 42\n"),
        session("a2", FIX, split="eval", accept=False),
        session("a3", FIX, split="eval", accept=True),
        session("a4", FIX, split="train", accept=False),
        # a one-member bucket; its edit was deleted by the Session's end
        session("b1", "add a test", split="train", accept=True, kept=""),
        # a bucket one word away from FIX: its pair is a near-duplicate bucket of FIX's
        session("c1", "fix the bug please", split="train", accept=True),
        session("c2", "fix the bug please", split="train", accept=False),
        # an explicit accept bound by Jaccard similarity 0.5: Confidence 0.5, below SFT's floor
        session("d1", "rename things", split="train", accept=True, similarity=0.5),
        # no decision at all
        session("e1", "unrelated", split="train", accept=None),
    ]


def report(rollouts: list[Rollout], **kwargs: Any) -> dict[str, Any]:
    found = evidence_dataset_diagnostics(Evidence(rollouts, True), ORG, registry=load_registry(),
                                         sources=SettingsSources.empty(), **kwargs)
    return found.as_json()


@pytest.fixture(scope="module")
def diagnosed() -> dict[str, Any]:
    return report(evidence_sessions())


def test_sections_in_contract_order(diagnosed: dict[str, Any]) -> None:
    assert list(diagnosed) == SECTIONS


def test_model_balance_counts_rows_per_stratum_and_model_dpo_first(diagnosed: dict[str, Any]) -> None:
    assert [(r["dataset"], r["chosen_label_source"], r["eligibility_source"], r["model"], r["rows"])
            for r in diagnosed["model_balance"]] == [
        ("dpo", "explicit_accept", None, "gpt-x", 4),   # FIX: 3 of 4 pairs (cap), please-bucket: 1
        ("sft", None, "explicit_accept", "gpt-x", 4),   # a1, a3, b1, c1 (d1 is under the floor)
    ]
    assert list(diagnosed["model_balance"][0]) == ["dataset", "recipe_id", "recipe_version", "chosen_label_source",
                                                   "rejected_label_source", "eligibility_source", "model", "rows"]


def test_bucket_sparsity_histogram_singletons_and_cap(diagnosed: dict[str, Any]) -> None:
    (sparsity,) = diagnosed["dpo_bucket_sparsity"]
    # labelled members per bucket: FIX 4, "add a test" 1, "please" 2, "rename things" 1
    assert sparsity["bucket_size_histogram"] == {"1": 2, "2": 1, "3-5": 1, "6-10": 0, "10+": 0}
    assert (sparsity["total_buckets"], sparsity["total_candidates"]) == (4, 8)
    assert (sparsity["singleton_candidates"], sparsity["singleton_candidate_fraction"]) == (2, 0.25)
    assert sparsity["cap_hit_buckets"] == 1
    assert (sparsity["recipe_id"], sparsity["recipe_version"]) == ("dpo_human", 2)


def test_cross_split_duplicates_are_named_with_their_row_ids(diagnosed: dict[str, Any]) -> None:
    dpo, sft = diagnosed["cross_split_duplicates"]
    assert dpo["duplicate_prompt_count"] == 1
    (example,) = dpo["examples"]
    # a pair goes to eval when either member does: a1>a2, a3>a2 and a3>a4 are eval, a1>a4 train
    assert (example["train_row_ids"], example["eval_row_ids"]) == (["a1-c0>a4-c0"], ["a1-c0>a2-c0", "a3-c0>a2-c0"])
    assert (example["train_count"], example["eval_count"]) == (1, 2)
    assert json.loads(example["prompt"]) == [{"content": FIX, "role": "user"}]
    assert sft["duplicate_prompt_count"] == 1
    assert (sft["examples"][0]["train_row_ids"], sft["examples"][0]["eval_row_ids"]) == (["a1-c0"], ["a3-c0"])
    capped = report(evidence_sessions(), max_examples=0)["cross_split_duplicates"]
    assert [(s["duplicate_prompt_count"], s["examples"]) for s in capped] == [(1, []), (1, [])]


def test_near_duplicate_buckets_by_token_jaccard(diagnosed: dict[str, Any]) -> None:
    (near,) = diagnosed["dpo_near_duplicate_buckets"]
    # emitted pairs form two buckets of gpt-x; tokens {user, fix, the, bug} vs the same plus "please": 4/5
    assert (near["bucket_count"], near["comparable_pair_count"], near["near_miss_pair_count"]) == (2, 1, 1)
    (example,) = near["examples"]
    assert example["similarity"] == 0.8
    # buckets in prompt-text order: '[{"content": "fix the bug please"' sorts before '…bug"'
    assert (example["bucket_a_rows"], example["bucket_b_rows"]) == (1, 3)
    assert example["bucket_a_row_ids"] == ["c1-c0>c2-c0"]
    assert example["bucket_b_row_ids"] == ["a1-c0>a2-c0", "a1-c0>a4-c0", "a3-c0>a2-c0"]
    stricter = report(evidence_sessions(), near_duplicate_thresholds={"dpo": 0.81})["dpo_near_duplicate_buckets"][0]
    assert (stricter["near_miss_pair_count"], stricter["examples"], stricter["threshold"]) == (0, [], 0.81)
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert prompt_tokens([{"role": "user", "content": "Fix bug_2 in 3 files"}]) == \
        frozenset({"user", "fix", "bug_2", "in", "3", "files"})


def test_confidence_distributions_overall_then_per_model(diagnosed: dict[str, Any]) -> None:
    rows = diagnosed["confidence_distributions"]
    assert [(r["dataset"], r["metric"], r["model"]) for r in rows] == [
        ("dpo", "label_confidence", None), ("dpo", "label_confidence", "gpt-x"),
        ("dpo", "confidence_margin", None), ("dpo", "confidence_margin", "gpt-x"),
        ("sft", "label_confidence", None), ("sft", "label_confidence", "gpt-x")]
    # explicit accept 1.0 vs explicit reject 0.0: label confidence min(1, 1 - 0) = 1, margin 1
    assert rows[0]["stats"] == {"count": 4, "mean": 1.0, "median": 1.0, "min": 1.0, "max": 1.0, "stdev": 0.0}
    assert rows[4]["stats"]["count"] == 4


def test_floor_exclusions_count_what_only_the_floor_removed(diagnosed: dict[str, Any]) -> None:
    (floor,) = diagnosed["confidence_floor_exclusions"]
    assert floor == {"dataset": "sft", "recipe_id": "sft_curated", "recipe_version": 1,
                     "eligibility_source": "explicit_accept", "model": "gpt-x",
                     "otherwise_eligible_completions": 5, "excluded_by_floor": 1, "exclusion_rate": 0.2}


def test_fate_and_abandonment(diagnosed: dict[str, Any]) -> None:
    fate = diagnosed["fate"]
    assert fate["fates"] == {"deleted": 1, "partially_modified": 0, "unmodified": 1}
    assert fate["explicit_accept_fates"] == {"deleted": 1, "partially_modified": 0, "unmodified": 1}
    assert fate["skipped"] == {"scorer_error": 0, "invalid_score": 0}
    abandonment = diagnosed["abandonment"]
    assert abandonment["abandoned_sessions"] == 0
    # accepted but no git note bound the Session to its commit (hand-built Rollouts carry none)
    assert abandonment["derivation_skipped"] == {"no_accepted_decision": 4, "session_commit_unobserved": 5}


def test_the_recipe_changes_the_strata() -> None:
    outcome_report = report(evidence_sessions(), recipes={"dpo": "dpo_outcome", "sft": "sft_verified"})
    # no CI at all: dpo_outcome labels nothing, sft_verified finds no eligible completion
    assert outcome_report["model_balance"] == []
    assert outcome_report["dpo_bucket_sparsity"] == []


def test_repeated_and_shuffled_sessions_give_identical_json(diagnosed: dict[str, Any]) -> None:
    shuffled = evidence_sessions()
    random.Random(11).shuffle(shuffled)
    assert json.dumps(report(shuffled)) == json.dumps(diagnosed)
    assert json.dumps(report(evidence_sessions())) == json.dumps(diagnosed)


def test_aggregation_of_hand_made_records() -> None:
    pair = Stratum(chosen_label_source="x", rejected_label_source="y")
    records = [
        PromptBucket(ORG, "m", pair, chosen=1, rejected=0, max_pairs=3),
        PromptBucket(ORG, "m", pair, chosen=3, rejected=1, max_pairs=3),    # 3 pairs: at the cap, not over
        PromptBucket(ORG, "m", pair, chosen=6, rejected=5, max_pairs=3),    # 11 members: "10+"
        PromptBucket(ORG, "m", pair, chosen=5, rejected=5, max_pairs=3),    # 10 members: "6-10"
        DiagnosedRow("r1", ORG, "m", "train", [], pair, {"label_confidence": 0.2}),
        DiagnosedRow("r2", ORG, "m", "train", [], pair, {"label_confidence": 0.4}),
        DiagnosedRow("r3", ORG, "n", "eval", [], pair, {"label_confidence": 0.9}),
        FloorCandidate(ORG, "m", "c1", Stratum(eligibility_source="s"), 0.5, 0.6),
        FloorCandidate(ORG, "m", "c1", Stratum(eligibility_source="s"), 0.7, 0.6),  # same unit: its max counts
    ]
    found = dataset_diagnostics([DatasetDiagnosis("my-obj", "r", 1, records, bucketed=True)], []).as_json()
    assert list(found) == [*SECTIONS[:4], "my_obj_bucket_sparsity", "my_obj_near_duplicate_buckets", *SECTIONS[6:]]
    (sparsity,) = found["my_obj_bucket_sparsity"]
    assert sparsity["bucket_size_histogram"] == {"1": 1, "2": 0, "3-5": 1, "6-10": 1, "10+": 1}
    assert sparsity["cap_hit_buckets"] == 2
    overall = found["confidence_distributions"][0]["stats"]
    assert overall["median"] == 0.4 and overall["stdev"] == pytest.approx(0.3605551275463989)
    assert found["confidence_floor_exclusions"][0]["excluded_by_floor"] == 0
    with pytest.raises(ValueError, match="--max-examples must be >= 0"):
        dataset_diagnostics([], [], max_examples=-1)
    with pytest.raises(ValueError, match="--dpo-near-duplicate-threshold must be between 0.0 and 1.0"):
        dataset_diagnostics([DatasetDiagnosis("dpo", "r", 1, [], bucketed=True, near_duplicate_threshold=1.5)], [])
    with pytest.raises(ValueError, match="dataset 'obj' holds PromptBuckets but does not declare prompt buckets"):
        dataset_diagnostics([DatasetDiagnosis("obj", "r", 1, records)], [])
    assert list(dataset_diagnostics([], []).as_json()) == [*SECTIONS[:4], *SECTIONS[6:]]  # no bucketing objective


# --- the command --------------------------------------------------------------------------------


def sediment(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=300, check=False)


def test_bare_report_prints_usage_and_exits_2() -> None:
    result = sediment("report")
    assert result.returncode == 2
    assert "Usage: python -m sediment report" in result.stdout
    assert "dataset-diagnostics" in result.stdout and "merge-retention" in result.stdout


def test_an_unknown_report_is_one_line() -> None:
    result = sediment("report", "bogus")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: unknown report 'bogus' (choices: dataset-diagnostics, leakage, merge-retention)"


@pytest.mark.parametrize(("args", "message"), [
    (("--max-examples", "-1"), "error: --max-examples must be >= 0"),
    (("--dpo-near-duplicate-threshold", "1.01"), "error: --dpo-near-duplicate-threshold must be between 0.0 and 1.0"),
    (("--dpo-near-duplicate-threshold", "-0.1"), "error: --dpo-near-duplicate-threshold must be between 0.0 and 1.0"),
])
def test_bad_options_are_usage_errors(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = sediment("report", "dataset-diagnostics", *args, env={"SEDIMENT_HOME": str(tmp_path),
                                                                    "SEDIMENT_ORG_ID": ORG})
    assert result.returncode == 2
    assert result.stderr.strip() == message


def test_an_unknown_recipe_is_a_usage_error(tmp_path: Path) -> None:
    result = sediment("report", "dataset-diagnostics", "--dpo-recipe", "kto", env={"SEDIMENT_HOME": str(tmp_path)})
    assert result.returncode == 2
    assert "--dpo-recipe" in result.stderr


def test_a_missing_org_is_one_line(tmp_path: Path) -> None:
    result = sediment("report", "dataset-diagnostics", env={"SEDIMENT_HOME": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.strip() == "error: SEDIMENT_ORG_ID is not set; pass --org or export SEDIMENT_ORG_ID"


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sediment.demo import run_demo

    out = tmp_path_factory.mktemp("demo")
    run_demo(out)
    return out / "home"


def test_the_demo_store(demo_home: Path) -> None:
    env = {"SEDIMENT_HOME": str(demo_home), "SEDIMENT_ORG_ID": "demo"}
    result = sediment("report", "dataset-diagnostics", "--json", env=env)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert list(found) == SECTIONS
    balance = {(r["dataset"], r["eligibility_source"] or r["chosen_label_source"]): r["rows"]
               for r in found["model_balance"]}
    # the demo's DPO pair (sess-dpo-power over sess-dpo-power-loop) and its SFT samples
    assert balance[("dpo", "explicit_accept")] == 1
    assert sum(n for (dataset, _), n in balance.items() if dataset == "sft") >= 3
    assert found["dpo_bucket_sparsity"][0]["total_buckets"] >= 1
    assert sum(found["fate"]["fates"].values()) >= 1
    again = sediment("report", "dataset-diagnostics", "--json", env=env)
    assert again.stdout == result.stdout
    text = sediment("report", "dataset-diagnostics", env=env)
    assert text.returncode == 0
    for heading in ("org: demo", "class/model balance", "confidence distribution", "dpo prompt-bucket sparsity",
                    "cross-split prompt duplicates", "confidence-floor exclusions",
                    "dpo near-duplicate prompt buckets", "Fate diagnostic", "abandonment"):
        assert heading in text.stdout
    assert "█" in text.stdout


def test_text_mode_prints_input_literally_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from sediment.cli import console
    from sediment.cli.report import render_dataset_diagnostics

    evil = "[bold]m\x1b[31m\nx"
    stratum = Stratum(eligibility_source="explicit_accept")
    prompt = [{"role": "user", "content": "line one\nline two"}]
    records = [DiagnosedRow("r\x1bid", ORG, evil, "train", prompt, stratum, {"label_confidence": 0.7}),
               DiagnosedRow("r2", ORG, evil, "eval", prompt, stratum, {"label_confidence": 0.9})]
    found = dataset_diagnostics([DatasetDiagnosis("sft", "sft_curated", 1, records)], [], org_id=ORG)
    buffer = io.StringIO()
    monkeypatch.setattr(console, "out", Console(file=buffer, width=400, soft_wrap=True, markup=False,
                                                highlight=False, emoji=False))
    render_dataset_diagnostics(found)
    text = buffer.getvalue()
    assert "\x1b" not in text
    assert "[bold]m\\x1b[31m\\nx" in text        # the model, escaped, markup literal
    assert "r\\x1bid" in text                      # the cross-split row id, named
    assert "line one\\nline two" in text            # the prompt as JSON text, on one line


def _third_party(yielded: Any, *, prompt_buckets: bool = False) -> Any:
    """An objective outside Sediment taking part in the report: its own name, recipes and records."""
    import types

    from sediment.plugin import ExportContext, ObjectiveInfo, PopulationInfo, Recipe, hookimpl

    module = types.ModuleType("objective_notes")

    @hookimpl
    def describe_objective() -> ObjectiveInfo:
        return ObjectiveInfo(title="NOTES", unit="Rollout", units="rollouts",
                             recipes=(Recipe("notes_all", 3, "every Rollout"),),
                             populations={"notes": PopulationInfo("https://example.com/notes/v1.json", ())},
                             direct_needs_mirrors=False, prompt_buckets=prompt_buckets)

    @hookimpl
    def register_schemas() -> Any:
        return [{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/notes/v1.json"}]

    @hookimpl
    def project_evidence(context: ExportContext) -> Any:
        return iter(())

    @hookimpl
    def diagnose_evidence(context: ExportContext) -> Any:
        for evidence in context.rollouts():
            yield from yielded(evidence.rollout, context.recipe)

    for fn in (describe_objective, register_schemas, project_evidence, diagnose_evidence):
        setattr(module, fn.__name__, fn)
    return module


def test_a_third_party_objective_takes_part_without_the_core_knowing_it() -> None:
    from sediment.testing import plugin_registry

    def rows(r: Rollout, recipe: Any) -> Any:
        yield DiagnosedRow(f"note-{r.session_id}", r.org_id, "m", r.split, [], Stratum(eligibility_source="note"),
                           {"score": 0.5})

    registry = plugin_registry(("notes", _third_party(rows)))
    found = evidence_dataset_diagnostics(Evidence(evidence_sessions()[:2], True), ORG, registry=registry,
                                         sources=SettingsSources.empty()).as_json()
    notes = [r for r in found["model_balance"] if r["dataset"] == "notes"]
    assert notes == [{"dataset": "notes", "recipe_id": "notes_all", "recipe_version": 3, "chosen_label_source": None,
                      "rejected_label_source": None, "eligibility_source": "note", "model": "m", "rows": 2}]
    assert [r["dataset"] for r in found["model_balance"]] == ["dpo", "notes", "sft"]
    def strings(r: Rollout, recipe: Any) -> Any:
        yield "not a record"

    from sediment.errors import PluginError

    with pytest.raises(PluginError, match="objective 'notes' yielded str from diagnose_evidence"):
        evidence_dataset_diagnostics(Evidence(evidence_sessions()[:1], True), ORG,
                                     registry=plugin_registry(("notes", _third_party(strings))),
                                     sources=SettingsSources.empty())
    from sediment.plugin import hookimpl

    silent = _third_party(strings)

    @hookimpl
    def diagnose_evidence(context: Any) -> None:
        return None

    silent.diagnose_evidence = diagnose_evidence
    with pytest.raises(PluginError, match="^objective 'notes' returned nothing from diagnose_evidence$"):
        evidence_dataset_diagnostics(Evidence(evidence_sessions()[:1], True), ORG,
                                     registry=plugin_registry(("notes", silent)), sources=SettingsSources.empty())


def test_an_objective_declaring_prompt_buckets_gets_its_own_sections() -> None:
    """The bucket sections are named after the objective that declares them (not by the core);
    one that yields PromptBuckets without declaring them is refused in one line."""
    from sediment.errors import PluginError
    from sediment.testing import plugin_registry

    pair = Stratum(chosen_label_source="a", rejected_label_source="b")

    def buckets(r: Rollout, recipe: Any) -> Any:
        yield PromptBucket(r.org_id, "m", pair, chosen=1, rejected=1, max_pairs=3)

    registry = plugin_registry(("notes", _third_party(buckets, prompt_buckets=True)))
    found = evidence_dataset_diagnostics(Evidence(evidence_sessions()[:2], True), ORG, registry=registry,
                                         sources=SettingsSources.empty(),
                                         near_duplicate_thresholds={"notes": 0.5}).as_json()
    assert list(found) == [*SECTIONS[:6], "notes_bucket_sparsity", "notes_near_duplicate_buckets", *SECTIONS[6:]]
    assert [(r["recipe_id"], r["total_buckets"]) for r in found["notes_bucket_sparsity"]] == [("notes_all", 2)]
    assert [r["threshold"] for r in found["notes_near_duplicate_buckets"]] == [0.5]
    with pytest.raises(PluginError, match="^objective 'notes' yielded PromptBucket from diagnose_evidence but does "
                                          r"not declare prompt_buckets=True \(ObjectiveInfo\)$"):
        evidence_dataset_diagnostics(Evidence(evidence_sessions()[:1], True), ORG,
                                     registry=plugin_registry(("notes", _third_party(buckets))),
                                     sources=SettingsSources.empty())
