"""``sediment explain`` on the demo's real rows: every row kind of every built-in objective and a
profile line walk back to the recorded outcomes, commits and Session; ``--verify`` agrees on an
untouched store and names a quarantine or a new CI attempt; ``--json`` is the same on repeat."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sediment.cli.explain import _source
from sediment.demo import ingest_inputs, run_demo, write_inputs
from sediment.host.registry import load_registry
from sediment.reports.explain import explain
from sediment.reports.exported_rows import locate, row_field
from sediment.settings import SettingsSources


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("explain") / "demo"
    run_demo(out)
    return out


def chain_of(demo: Path, spec: str, monkeypatch: pytest.MonkeyPatch, *, verify: bool = True,
             bundle: Path | None = None, export: Path | None = None,
             settings: SettingsSources | None = None) -> dict[str, Any]:
    monkeypatch.setenv("SEDIMENT_HOME", str(demo / "home"))
    monkeypatch.setenv("SEDIMENT_ORG_ID", "demo")
    monkeypatch.delenv("SEDIMENT_STORE_URL", raising=False)
    ref = locate(spec, export)
    return explain(ref, _source(ref, bundle, None, demo / "home" / "mirrors"), load_registry(), verify=verify,
                   settings=settings)


def sediment(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env.update(SEDIMENT_HOME=str(home), SEDIMENT_ORG_ID="demo")
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, check=False)


def test_rlvr_task_row_names_its_outcomes_commit_and_session(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = json.loads((demo / "exports/sediment/tasks.train.jsonl").read_text().splitlines()[0])
    chain = chain_of(demo, str(demo / "exports/sediment/tasks.train.jsonl:1"), monkeypatch)
    assert chain["row"]["identity"] == {"instance_id": row["instance_id"]}
    assert chain["session"]["session_id"] == "sess-div-fix"
    resolution = row["ci_resolution"]
    assert [r["commit_sha"] for r in chain["ci_resolutions"]] == [resolution["commit_sha"]]
    assert {o["outcome_id"] for o in chain["ci_outcomes"]} == set(resolution["source_outcome_ids"])
    assert all(o["recorded_in"] == "store" and o["quarantined"] is False for o in chain["ci_outcomes"])
    attempts = chain["ci_resolutions"][0]["workflows"][0]["attempts"]
    verdicts = [a["outcome_id"] for a in attempts if a["role"] == "verdict"]
    assert verdicts == [resolution["workflow_resolutions"][0]["verdict_outcome_id"]]
    assert {c["commit_sha"] for c in chain["attribution"]["commits"]} >= {resolution["commit_sha"]}
    assert [n["observation_id"] for n in chain["attribution"]["notes"]] == row["session_commit_observation_ids"]
    assert chain["verify"] == {"byte_identical": True, "rederived": True,
                               "rederived_sha256": chain["row"]["sha256"], "changes": []}


@pytest.mark.parametrize(("spec", "session"), [
    ("exports/sediment/rollouts.train.jsonl:1", "sess-compact"),
    ("exports/sediment/tasks.eval.jsonl:1", None),
    ("exports/nemo-gym/rollouts.train.jsonl:2", None),
    ("exports/swe-bench/tasks.train.jsonl:1", "sess-div-fix"),
    ("exports/swe-bench/tasks.eval.jsonl:1", None),
])
def test_every_rlvr_target_row_verifies(demo: Path, monkeypatch: pytest.MonkeyPatch, spec: str,
                                        session: str | None) -> None:
    chain = chain_of(demo, str(demo / spec), monkeypatch)
    assert chain["verify"]["byte_identical"], chain["verify"]
    assert chain["session"] is not None and chain["session"]["calls"]
    if session is not None:
        assert chain["session"]["session_id"] == session
    assert chain["ci_outcomes"], "an RLVR row names the outcomes behind its reward"


@pytest.mark.parametrize(("spec", "calls"), [
    ("exports/sft/sft.train.jsonl:1", "completion_id"),
    ("exports/diff-sft/diff_sft.train.jsonl:1", "completion_id"),
    ("exports/dpo/dpo.train.jsonl:1", "chosen_completion_id"),
    ("exports/recovery/recovery.train.jsonl:1", "failed_inference_call_ids"),
])
def test_objective_rows_name_their_facts_and_verify(demo: Path, monkeypatch: pytest.MonkeyPatch, spec: str,
                                                    calls: str) -> None:
    row = json.loads((demo / spec.split(":")[0]).read_text().splitlines()[0])
    chain = chain_of(demo, str(demo / spec), monkeypatch)
    assert chain["verify"]["byte_identical"], chain["verify"]
    named = row.get(calls) or row["metadata"][calls]
    named = [named] if isinstance(named, str) else named
    facts = {f["fact_id"]: f for f in chain["facts"] if f["table"] == "inference_calls"}
    assert set(named) <= set(facts)
    assert all(facts[i]["recorded"] and facts[i]["session_id"] for i in named)


def test_profile_line_leads_back_to_its_canonical_row(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evidence = json.loads((demo / "profiles/nemo-gym-rollouts-v2/evidence.train.jsonl").read_text().splitlines()[0])
    chain = chain_of(demo, str(demo / "profiles/nemo-gym-rollouts-v2/data.train.jsonl:1"), monkeypatch)
    assert chain["row"]["sha256"] == evidence["source_row_sha256"]
    assert chain["row"]["identity"]["instance_id"] == evidence["instance_id"]
    assert chain["session"]["session_id"] == "sess-div-fix"
    assert chain["verify"]["byte_identical"]


def test_instance_id_and_bundle_source(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chain = chain_of(demo, "demo-sess-div-fix-seg0", monkeypatch, export=demo / "exports/sediment",
                     bundle=demo / "bundle")
    assert chain["row"]["line"] == 3 and chain["policy"]["source"]["kind"] == "bundle"
    assert chain["policy"]["same_policy"] and chain["verify"]["byte_identical"]


def test_json_is_deterministic(demo: Path) -> None:
    spec = "exports/sediment/tasks.train.jsonl:1"
    first = sediment("explain", spec, "--json", "--verify", home=demo / "home", cwd=demo)
    second = sediment("explain", spec, "--json", "--verify", home=demo / "home", cwd=demo)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout and json.loads(first.stdout)["verify"]["byte_identical"]
    plain = sediment("explain", spec, home=demo / "home", cwd=demo)
    assert "verdict" in plain.stdout and "\x1b[" not in plain.stdout  # piped: plain text


def test_errors_are_one_line_with_exit_codes(demo: Path, tmp_path: Path) -> None:
    home = demo / "home"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / ".sediment-rlvr-target").write_text("sediment\n")
    (bad / "tasks.train.jsonl").write_text("not json\n")
    cases = [
        (("explain", "missing.jsonl:1"), 2, "row file not found"),
        (("explain", "exports/sft/sft.train.jsonl:9"), 2, "line out of range"),
        (("explain", f"{bad}/tasks.train.jsonl:1"), 1, "line is not JSON"),
        (("explain", "nope", "--export", "exports"), 2, "not found"),
        (("explain", "nope"), 2, "pass --export DIR"),
    ]
    for args, code, message in cases:
        result = sediment(*args, home=home, cwd=demo)
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_verify_names_a_quarantine_and_a_new_attempt(demo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "demo"
    shutil.copytree(demo, copy)
    home = copy / "home"
    spec = "exports/sediment/tasks.train.jsonl:1"
    row = json.loads((copy / spec.split(":")[0]).read_text().splitlines()[0])
    superseded = next(i for i in row["ci_resolution"]["source_outcome_ids"]
                      if i not in row["ci_resolution"]["verdict_outcome_ids"])
    done = sediment("quarantine", "ci_outcomes", superseded, "--reason", "audit", home=home, cwd=copy)
    assert done.returncode == 0, done.stderr
    after = sediment("explain", spec, "--verify", "--json", home=home, cwd=copy)
    assert after.returncode == 11, after.stderr
    changes = json.loads(after.stdout)["verify"]["changes"]
    assert any(superseded in c and "quarantined" in c for c in changes), changes
    assert any("quarantine revision 0 → 1" in c for c in changes), changes
    sediment("release", "ci_outcomes", superseded, "--reason", "audit", home=home, cwd=copy)
    # a third attempt of the same run arrives, failing: a new attempt the row did not see
    delivery = json.loads((copy / "inputs/webhooks/workflow_run-107-2.json").read_text())
    payload = delivery.get("payload", delivery)
    run = payload["workflow_run"]
    run.update(run_attempt=3, conclusion="failure", updated_at="2026-03-02T17:00:00Z")
    if "headers" in delivery:
        delivery["headers"] = {k: ("00000000-0000-4000-8000-000107000003" if "delivery" in k.lower() else v)
                               for k, v in delivery["headers"].items()}
    third = tmp_path / "workflow_run-107-3.json"
    third.write_text(json.dumps(delivery))
    ingested = sediment("ingest", "github", str(third), home=home, cwd=copy)
    assert ingested.returncode == 0, ingested.stderr
    again = sediment("explain", spec, "--verify", "--json", home=home, cwd=copy)
    assert again.returncode == 11, again.stderr
    changes = json.loads(again.stdout)["verify"]["changes"]
    assert any(c.startswith("new attempt:") and "run 107 attempt 3" in c for c in changes), changes


# --- the evidence behind an objective row's label -------------------------------------------

LADDER_ROWS = ["exports/sft/sft.train.jsonl:1", "exports/sft/sft.eval.jsonl:2", "exports/diff-sft/diff_sft.train.jsonl:1",
               "exports/diff-sft/diff_sft.eval.jsonl:2", "exports/dpo/dpo.train.jsonl:1"]


def row_at(demo: Path, spec: str) -> dict[str, Any]:
    path, line = spec.rsplit(":", 1)
    value: dict[str, Any] = json.loads((demo / path).read_text().splitlines()[int(line) - 1])
    return value


@pytest.mark.parametrize("spec", LADDER_ROWS)
def test_ladder_rows_replay_their_label_confidence_step_by_step(demo: Path, monkeypatch: pytest.MonkeyPatch,
                                                               spec: str) -> None:
    row = row_at(demo, spec)
    chain = chain_of(demo, str(demo / spec), monkeypatch)
    labelling = chain["labelling"]
    assert labelling["same_policy"] is True and labelling["agrees"] is True, labelling
    assert labelling["recorded"]["label_confidence"] == row_field(row, "label_confidence")
    for completion in labelling["completions"]:
        assert completion["attributions"], completion
        for attribution in completion["attributions"]:
            steps = attribution["confidence"]["steps"]
            assert [s["rung"] for s in steps] == ["decision", "ci", "reliability", "similarity", "final"]
            assert steps[-1]["value"] == attribution["confidence"]["goodness"]
            assert steps[1]["inputs"]["verdict"] == attribution["ci"]["verdict"]
    # the Session section: every Session the row's completions belong to, with its calls
    sessions = {s["session_id"]: s for s in chain["sessions"]}
    assert set(sessions) == {c["session_id"] for c in labelling["completions"]}
    for completion in labelling["completions"]:
        calls = {c["inference_call_id"]: c for c in sessions[completion["session_id"]]["calls"]}
        call = calls[completion["inference_call_id"]]
        assert call["model"] == row_field(row, "source_model") and call["observed_at"]
        assert call["decisions"] == [d["decision_id"] for d in completion["decisions"]]


def test_an_implicit_accept_shows_its_derived_edit_retention(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = "exports/sft/sft.eval.jsonl:2"
    chain = chain_of(demo, str(demo / spec), monkeypatch)
    (completion,) = chain["labelling"]["completions"]
    (decision,) = completion["decisions"]
    assert (decision["accepted"], decision["explicit"], decision["agent_harness"]) == (True, False, "pi")
    retention = decision["edit_retention"]
    figures = retention["figures"]
    assert retention["source"] == "derived" and retention["observation_id"].startswith("edit_")
    assert figures["rule"] == "containment" and figures["applied_4grams"] > 0
    assert retention["score"] == figures["containment"] == figures["kept_4grams"] / figures["applied_4grams"]
    (attribution,) = completion["attributions"]
    first = attribution["confidence"]["steps"][0]
    assert first["rule"] == "implicit_accept" and first["inputs"]["min_edit_retention"] == retention["score"]
    assert first["value"] == pytest.approx(0.6 * (0.9 + 0.2 * retention["score"]))
    assert chain["labelling"]["replayed"] == {"label_confidence": [row_at(demo, spec)["metadata"]["label_confidence"]]}


def test_a_pair_replays_through_pair_confidence(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = row_at(demo, "exports/dpo/dpo.train.jsonl:1")["metadata"]
    labelling = chain_of(demo, str(demo / "exports/dpo/dpo.train.jsonl:1"), monkeypatch)["labelling"]
    roles = {c["role"]: c for c in labelling["completions"]}
    assert set(roles) == {"chosen", "rejected"}
    assert roles["chosen"]["inference_call_id"] == row["chosen_completion_id"]
    rejected = roles["rejected"]["attributions"][0]["confidence"]
    assert rejected["steps"][0]["rule"] == "explicit_reject" and rejected["label"] == "rejected"
    assert rejected["label_confidence"] == 1.0 - rejected["goodness"]
    assert labelling["replayed"] == {"label_confidence": row["label_confidence"],
                                     "confidence_margin": row["confidence_margin"]}


def test_a_row_without_a_ladder_gets_decisions_and_sessions_but_no_confidence(demo: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    row = row_at(demo, "exports/recovery/recovery.train.jsonl:1")
    chain = chain_of(demo, str(demo / "exports/recovery/recovery.train.jsonl:1"), monkeypatch)
    labelling = chain["labelling"]
    assert labelling["agrees"] is None and labelling["replayed"] is None
    named = set(row["failed_inference_call_ids"]) | set(row["fixed_inference_call_ids"])
    assert {c["inference_call_id"] for c in labelling["completions"]} == named
    assert all(a["confidence"] is None for c in labelling["completions"] for a in c["attributions"])
    assert any(c["decisions"] for c in labelling["completions"])
    sessions = {e["session_id"] for e in row["failed_attribution_evidence"] + row["fixed_attribution_evidence"]}
    assert [s["session_id"] for s in chain["sessions"]] == sorted(sessions)


def test_another_ladder_policy_is_named_and_disagrees(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = str(demo / "exports/sft/sft.eval.jsonl:2")
    settings = SettingsSources(environ={"SEDIMENT_LABEL_CONFIDENCE_BASELINE_CONFIDENCE": "0.7"})
    chain = chain_of(demo, spec, monkeypatch, settings=settings)
    labelling = chain["labelling"]
    assert labelling["same_policy"] is False and labelling["agrees"] is False
    assert labelling["replayed"]["label_confidence"] == [pytest.approx(0.77)]
    assert not chain["verify"]["byte_identical"]
    assert any("label_confidence" in c for c in chain["verify"]["changes"]), chain["verify"]
    # under a ladder that puts it below the floor the row no longer derives, but its evidence is
    # there: the chain still walks to its Session (before, explain said the evidence was gone)
    lower = SettingsSources(environ={"SEDIMENT_LABEL_CONFIDENCE_BASELINE_CONFIDENCE": "0.5"})
    chain = chain_of(demo, spec, monkeypatch, settings=lower)
    assert [s["session_id"] for s in chain["sessions"]] == ["sess-fix"]
    assert chain["verify"]["rederived"] is False
    assert any("below_confidence_floor" in c for c in chain["verify"]["changes"]), chain["verify"]


def test_label_evidence_renders_on_the_terminal(demo: Path) -> None:
    result = sediment("explain", "exports/dpo/dpo.train.jsonl:1", home=demo / "home", cwd=demo)
    assert result.returncode == 0, result.stderr
    assert "decision: explicit_reject" in result.stdout and "label confidence (rejected): 1" in result.stdout
    assert "Session sess-dpo-power-loop" in result.stdout and "✓ replayed label_confidence=1.0" in result.stdout


def test_the_chain_is_the_same_whatever_the_order_facts_were_ingested(demo: Path, tmp_path: Path) -> None:
    """The demo's inputs ingested into a second store in another order (lines shuffled,
    deliveries and reports reversed, decision records shuffled): the same chains, on repeat."""
    shuffle = random.Random(23)
    inputs = write_inputs(tmp_path / "inputs")
    lines = inputs.calls.read_text().splitlines(keepends=True)
    shuffle.shuffle(lines)
    inputs.calls.write_text("".join(lines))
    log = json.loads(inputs.decisions.read_text())
    for resource in log["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            shuffle.shuffle(scope["logRecords"])
    inputs.decisions.write_text(json.dumps(log))
    shuffled = dataclasses.replace(inputs, webhooks=list(reversed(inputs.webhooks)), junit=list(reversed(inputs.junit)))
    ingest_inputs(shuffled, tmp_path / "home")
    for spec in ("exports/sediment/tasks.train.jsonl:1", "exports/sft/sft.eval.jsonl:2",
                 "exports/dpo/dpo.train.jsonl:1", "exports/recovery/recovery.train.jsonl:1"):
        first = sediment("explain", spec, "--json", "--verify", home=demo / "home", cwd=demo)
        second = sediment("explain", spec, "--json", "--verify", home=tmp_path / "home", cwd=demo)
        assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
        assert first.stdout == second.stdout, spec
    again = sediment("explain", spec, "--json", "--verify", home=tmp_path / "home", cwd=demo)
    assert again.stdout == second.stdout


def _first_lines(demo: Path) -> list[tuple[str, Path]]:
    """(profile, its first data file) for every profile the demo exported rows with."""
    found = []
    for directory in sorted((demo / "profiles").iterdir()):
        data = sorted(p for p in directory.rglob("data*.jsonl") if p.stat().st_size)
        if data:
            found.append((directory.name, data[0]))
    return found


def test_every_profile_line_of_the_demo_leads_back_to_its_canonical_row(demo: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every consumer profile the demo writes (issue 23's done-when): its first data line is
    explained through the evidence sidecar to the canonical row it was adapted from, which
    re-derives byte-identical."""
    profiles = _first_lines(demo)
    assert len(profiles) >= 8, [name for name, _ in profiles]
    settings = SettingsSources.load(config_file=demo / "inputs" / "settings.toml", environ={})
    for name, data in profiles:
        evidence_file = data.with_name(data.name.replace("data", "evidence", 1))
        evidence = json.loads(evidence_file.read_text(encoding="utf-8").splitlines()[0])
        chain = chain_of(demo, f"{data}:1", monkeypatch, settings=settings)
        assert chain["row"]["sha256"] == evidence["source_row_sha256"], name
        assert chain["verify"]["byte_identical"], (name, chain["verify"])


@pytest.mark.parametrize("spec", ["exports/sediment/tasks.train.jsonl:1", "exports/nemo-gym/rollouts.train.jsonl:1",
                                  "exports/sft/sft.train.jsonl:1", "exports/dpo/dpo.train.jsonl:1",
                                  "exports/diff-sft/diff_sft.train.jsonl:1", "exports/recovery/recovery.train.jsonl:1"])
def test_the_human_chain_prints_no_python_repr(demo: Path, spec: str) -> None:
    """Issue 25's README walk met ``suspected flake False``: a flag reads yes/no, a value in a
    ``key=value`` list is spelled as ``--json`` spells it (``true``, ``false``, ``-`` for none)."""
    result = sediment("explain", spec, "--verify", home=demo / "home", cwd=demo)
    assert result.returncode == 0, result.stderr
    assert re.findall(r"\b(?:True|False|None)\b", result.stdout) == []
    if "CI resolution" in result.stdout:
        assert re.search(r"suspected flake (?:yes|no)$", result.stdout, re.M), result.stdout
