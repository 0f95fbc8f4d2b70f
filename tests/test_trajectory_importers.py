"""Every held-out public trajectory file imports, with its outcome, completeness and
verification strength pinned; records are exact, deterministic and hostile input is refused.

The files are the shared fixtures beside the repository
(``<repository root>/../shared/fixtures/trajectories``): without them these tests skip, saying
so, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from sediment.host.discovery import BUILTIN_IMPORTERS
from sediment.host.registry import load_registry
from sediment.importing.run import import_records, import_results
from sediment.ingest.redaction.credentials import marker
from sediment.testing import require_path
from sediment.trajectory import (
    Trajectory,
    from_json,
    outcome_category,
    to_json,
    verification_strength,
    views,
)
from sediment.trajectory.sources import ImportRefusal, parse_json, read_units

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "trajectories"


def fixtures() -> Path:
    return require_path(FIXTURES, "the shared trajectory fixtures")


def imported(fmt: str, *names: str) -> list[Trajectory]:
    base = fixtures()
    results = list(import_results(fmt, [base / n for n in names]))
    refusals = [str(r) for r in results if isinstance(r, ImportRefusal)]
    assert refusals == []
    return [r for r in results if isinstance(r, Trajectory)]


def summary(record: Trajectory) -> tuple[str, str, str, str]:
    return (record.task_key, outcome_category(record), record.completeness, verification_strength(record))


# (format, file, expected (task_key, outcome, completeness, verification strength) per record)
EXPECTED = {
    ("swe-agent-traj", "sweagent/pydicom__pydicom-1458.traj"): [
        ("swe:pydicom__pydicom-1458", "unknown", "complete", "unverified")],
    ("swe-agent-traj", "sweagent/swe-agent__test-repo-i1.traj"): [
        ("swe-agent:swe-agent__test-repo-i1", "unknown", "complete", "unverified")],
    ("swe-agent-traj", "sweagent/marshmallow-code__marshmallow-1867.function_calling_replace.traj"): [
        ("swe:marshmallow-code__marshmallow-1867", "unknown", "complete", "unverified")],
    ("swe-agent-traj", "sweagent/ctf_misc_networking_1.traj"): [
        ("swe-agent:ctf_misc_networking_1", "unknown", "complete", "unverified")],
    ("openhands", "openhands/multi_swe_bench_output.jsonl"): [
        ("swe:ponylang__ponyc-4595", "unknown", "complete", "unverified"),
        ("swe:ponylang__ponyc-4593", "unknown", "complete", "unverified"),
        ("swe:ponylang__ponyc-4588", "unknown", "truncated", "unverified")],
    ("openhands", "openhands/runtime_trajs_basic.json"): [
        ("openhands:runtime_trajs_basic", "unknown", "complete", "unverified")],
    ("openhands", "openhands/resolver_mock_output.jsonl"): [
        ("github-issue:neubig/pr-viewer#5", "success", "complete", "source_reported"),
        ("github-issue:neubig/pr-viewer#1", "success", "complete", "source_reported")],
    ("swe-gym-sampled", "swe-gym/openhands_sampled_trajectories.sample_raw.json"): [
        ("swe:python__mypy-15976", "success", "complete", "source_evaluator"),
        ("swe:Project-MONAI__MONAI-5686", "success", "complete", "source_evaluator"),
        ("swe:Project-MONAI__MONAI-6849", "success", "complete", "source_evaluator"),
        ("swe:getmoto__moto-6387", "success", "complete", "source_evaluator"),
        ("swe:Project-MONAI__MONAI-3715", "success", "incomplete", "source_evaluator")],
    ("nebius-swe-agent", "nebius/SWE-agent-trajectories.sample_raw.json"): [
        ("swe:tomerfiliba__plumbum-366", "success", "complete", "source_evaluator"),
        ("swe:tempoCollaboration__OQuPy-74", "success", "complete", "source_evaluator"),
        ("swe:marshmallow-code__apispec-811", "success", "complete", "source_evaluator"),
        ("swe:brightway-lca__brightway2-analyzer-19", "success", "complete", "source_evaluator"),
        ("swe:ReviewNB__treon-25", "success", "complete", "source_evaluator")],
}


def test_the_builtin_importers_are_discovered() -> None:
    registry = load_registry()
    assert set(BUILTIN_IMPORTERS) <= set(registry.importers)
    for name in BUILTIN_IMPORTERS:
        assert registry.importers[name].info.patterns


@pytest.mark.parametrize(("fmt", "name"), sorted(EXPECTED))
def test_every_fixture_imports_with_its_outcome_completeness_and_strength(fmt: str, name: str) -> None:
    records = imported(fmt, name)
    assert [summary(r) for r in records] == EXPECTED[fmt, name]
    units = list(read_units(fixtures() / name)) if not name.endswith("basic.json") else [None]
    assert len(units) == len(records)
    for record, unit in zip(records, units, strict=True):
        # byte fidelity: the raw record is the unit's exact bytes (a bare history: the whole file)
        data = unit.data if unit is not None else (fixtures() / name).read_bytes()
        assert record.raw_record.data() == data
        assert record.source.file_sha256 == __import__("hashlib").sha256((fixtures() / name).read_bytes()).hexdigest()
        text = to_json(record)
        assert from_json(text) == record and to_json(from_json(text)) == text
        assert all(not e.supervised or e.role == "assistant" for e in record.events)


def test_swe_agent_submitted_is_unknown_never_success() -> None:
    records = imported("swe-agent-traj", "sweagent")
    assert len(records) == 4
    for record in records:
        assert record.outcome.status == "submitted" and record.outcome.success is None


def test_swe_agent_demo_turns_are_unsupervised_and_text_actions_link_by_adjacency() -> None:
    (record,) = imported("swe-agent-traj", "sweagent/pydicom__pydicom-1458.traj")
    doc = parse_json((fixtures() / "sweagent/pydicom__pydicom-1458.traj").read_bytes())
    demos = [i for i, h in enumerate(doc["history"]) if h.get("is_demo")]
    assert demos and all(not record.events[i].supervised for i in demos)
    assistants = [e for e in record.events if e.role == "assistant"]
    assert all(e.supervised for e in assistants) and len(assistants) == 12
    for index, event in enumerate(record.events):
        if event.role == "tool":
            previous = record.events[index - 1]
            assert event.tool_result_of == previous.tool_calls[0].call_id
            assert event.source_metadata["role"] == "user"
            assert previous.tool_calls[0].arguments == doc["history"][index - 1]["action"]
    assert [t.name for t in record.transformations][:3] == ["text-action-calls", "link-adjacent", "join-predictions"]
    assert record.metadata["prediction"]["instance_id"] == "pydicom__pydicom-1458"
    assert [e.kind for e in record.verification.evidence] == ["submission"]


def test_function_calling_reused_call_ids_are_namespaced_and_the_original_kept() -> None:
    (record,) = imported("swe-agent-traj", "sweagent/marshmallow-code__marshmallow-1867.function_calling_replace.traj")
    calls = [c for e in record.events for c in e.tool_calls]
    originals = Counter(c.original_call_id for c in calls)
    assert max(originals.values()) > 1
    assert len({c.call_id for c in calls}) == len(calls)
    reused = next(o for o, n in originals.items() if n > 1)
    assert [c.call_id for c in calls if c.original_call_id == reused][:2] == [reused, f"{reused}#2"]
    by_id = {c.call_id: i for i, e in enumerate(record.events) for c in e.tool_calls}
    for index, event in enumerate(record.events):
        if event.role == "tool":
            assert event.tool_result_of is not None and by_id[event.tool_result_of] == index - 1
    assert "namespace-call-ids" in [t.name for t in record.transformations]


def test_swe_gym_resolved_is_success_with_the_harness_report() -> None:
    records = imported("swe-gym-sampled", "swe-gym")
    for record in records:
        assert record.verification.executable
        assert [e.kind for e in record.verification.evidence] == ["test_execution"]
        assert record.tools and record.provenance.attempt is not None
        assert record.task_id == record.task_key.removeprefix("swe:")
    first = records[0]
    assert (first.task_id, first.provenance.attempt) == ("python__mypy-15976", "0")
    assert b"\\r\\n" in first.raw_record.data()  # the escaped CRLF of the logs, kept byte for byte
    for record in records:
        for index, event in enumerate(record.events):
            if event.tool_result_of is not None:
                issued = [i for i, e in enumerate(record.events[:index]) for c in e.tool_calls
                          if c.call_id == event.tool_result_of]
                assert issued


def test_nebius_mask_becomes_supervised() -> None:
    records = imported("nebius-swe-agent", "nebius")
    rows = parse_json((fixtures() / "nebius/SWE-agent-trajectories.sample_raw.json").read_bytes())
    assert len(records) == len(rows) == 5
    for record, row in zip(records, rows, strict=True):
        assert [e.supervised for e in record.events] == [t["mask"] for t in row["trajectory"]]
        assert record.provenance.model == row["model_name"]


def test_openhands_links_observations_by_cause_and_keeps_recall_as_context() -> None:
    records = imported("openhands", "openhands/multi_swe_bench_output.jsonl")
    rows = [parse_json(u.data) for u in read_units(fixtures() / "openhands/multi_swe_bench_output.jsonl")]
    for record, row in zip(records, rows, strict=True):
        ids = {str(h.get("id")): i for i, h in enumerate(row["history"])}
        for event, item in zip(record.events, row["history"], strict=True):
            if item.get("action") == "system":
                assert event.role == "system" and not event.supervised
            if "recall" in (item.get("action"), item.get("observation")):
                assert event.role == "user" and not event.supervised
            if event.role == "tool" and item.get("cause") is not None and str(item["cause"]) in ids:
                cause = record.events[ids[str(item["cause"])]]
                if cause.tool_calls:
                    assert event.tool_result_of == cause.tool_calls[0].call_id
    truncated = records[2]
    assert any("maximum iteration" in m.reason for m in truncated.missing_fields)
    assert records[0].provenance.model == "openai/openrouter-llama-4-maverick"


def test_resolver_success_rests_on_an_llm_explanation_weaker_than_tests() -> None:
    from sediment.trajectory.record import VERIFICATION_STRENGTHS

    resolver = imported("openhands", "openhands/resolver_mock_output.jsonl")
    gym = imported("swe-gym-sampled", "swe-gym")
    for record in resolver:
        assert [e.kind for e in record.verification.evidence] == ["llm_judgement"]
        assert record.verification.evidence[0].summary
        assert not record.verification.executable
    assert (VERIFICATION_STRENGTHS.index(verification_strength(resolver[0]))
            > VERIFICATION_STRENGTHS.index(verification_strength(gym[0])))


def _canonical_set(records: list[Trajectory]) -> list[str]:
    return sorted(to_json(r) for r in records)


@pytest.mark.parametrize(("fmt", "folder"), [("swe-agent-traj", "sweagent"), ("swe-gym-sampled", "swe-gym"),
                                             ("nebius-swe-agent", "nebius"), ("openhands", "openhands")])
def test_import_is_byte_deterministic_under_repeat_and_shuffle(fmt: str, folder: str, tmp_path: Path) -> None:
    files = sorted((fixtures() / folder).iterdir())
    first = _canonical_set(list(import_records(fmt, files)))
    again = _canonical_set(list(import_records(fmt, files)))
    shuffled = files[:]
    random.Random(7).shuffle(shuffled)
    assert first == again == _canonical_set(list(import_records(fmt, shuffled)))


def test_hostile_rows_are_refused_in_one_line_and_the_good_ones_kept(tmp_path: Path) -> None:
    rows = parse_json((fixtures() / "nebius/SWE-agent-trajectories.sample_raw.json").read_bytes())
    good = json.dumps(rows[0])
    bad_mask = dict(rows[1], trajectory=[dict(rows[1]["trajectory"][0], mask=True), *rows[1]["trajectory"][1:]])
    lines = [good, "{not json", json.dumps(bad_mask), json.dumps({"instance_id": 5}), json.dumps(rows[2]),
             '{"a": 1, "a": 2}', "[]"]
    path = tmp_path / "rows.jsonl"
    path.write_bytes("\n".join(lines).encode() + b"\n\xff\xfe\n")
    results = list(import_results("nebius-swe-agent", [path]))
    records = [r for r in results if isinstance(r, Trajectory)]
    refusals = [str(r) for r in results if isinstance(r, ImportRefusal)]
    assert [r.task_key for r in records] == ["swe:tomerfiliba__plumbum-366", "swe:marshmallow-code__apispec-811"]
    assert refusals == [
        f"{path}:2: (record): not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        f"{path}:3: trajectory.0.mask: a system turn is masked for loss; only ai turns may be",
        f"{path}:4: instance_id: expected non-empty text",
        f"{path}:6: (record): not JSON: duplicate key 'a'",
        f"{path}:7: (record): expected an object, found list",
        f"{path}:8: (record): not UTF-8 (byte 0)",
    ]
    assert all("\n" not in r for r in refusals)


def test_a_truncated_array_keeps_the_elements_before_it(tmp_path: Path) -> None:
    source = (fixtures() / "swe-gym/openhands_sampled_trajectories.sample_raw.json").read_bytes()
    cut = source[: len(source) * 3 // 5]
    path = tmp_path / "cut.json"
    path.write_bytes(cut)
    results = list(import_results("swe-gym-sampled", [path]))
    assert [type(r).__name__ for r in results][-1] == "ImportRefusal"
    assert str(results[-1]).endswith("(file): the JSON array is not terminated")
    assert all(isinstance(r, Trajectory) for r in results[:-1]) and len(results) >= 2


def test_secrets_are_redacted_in_the_raw_record_and_recorded(tmp_path: Path) -> None:
    rows = parse_json((fixtures() / "nebius/SWE-agent-trajectories.sample_raw.json").read_bytes())
    token = "ghp_" + "a1B2c3D4e5" * 4
    row = dict(rows[0], exit_status="submitted", eval_logs=rows[0]["eval_logs"] + f" token {token}",
               config={"api_key": "sk-live-secret-value", "other_api_key": "********"})
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (record,) = import_records("nebius-swe-agent", [path])
    text = record.raw_record.content
    assert token not in text and "sk-live-secret-value" not in text and '"other_api_key": "********"' in text
    assert "[redacted sha256:" in text
    redaction = next(t for t in record.transformations if t.name == "redact-secrets")
    assert redaction.detail == {"field": "raw_record", "values": 2}
    assert record.raw_record.sha256 != __import__("hashlib").sha256(text.encode()).hexdigest()
    assert from_json(to_json(record)) == record


# A function-calling .traj written for these tests from SWE-agent's format: three steps in
# ``trajectory``, the last a ``submit``, with ``history`` stopping before that step (as SWE-agent
# writes some runs, e.g. its test data's 6e44b9__sweagenttestrepo-1c2844.traj).
HISTORY_SHORT = ROOT / "tests" / "fixtures" / "sweagent" / "acme__calc-7.history_short.traj"


def test_a_traj_step_missing_from_history_is_imported_as_the_final_decision() -> None:
    doc = parse_json(HISTORY_SHORT.read_bytes())
    assert len(doc["trajectory"]) == 3 and sum(h["role"] == "assistant" for h in doc["history"]) == 2
    (record,) = import_records("swe-agent-traj", [HISTORY_SHORT])
    assert record.completeness == "complete"
    decisions = [e for e in record.events if e.role == "assistant"]
    assert len(decisions) == 3 and all(e.supervised for e in decisions)
    final = decisions[-1]
    assert final.text == doc["trajectory"][2]["response"]
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("submit", "submit")]
    assert final.source_metadata == {"trajectory_step": 2}
    result = record.events[-1]
    assert result.role == "tool" and result.tool_result_of == final.tool_calls[0].call_id
    assert result.text == doc["info"]["submission"]
    step = next(t for t in record.transformations if t.name == "append-trajectory-steps")
    assert step.detail == {"steps": 1, "first": 2}
    # the final decision is a target of both SFT views
    canonical = json.loads(to_json(record))
    turns = list(views.assistant_turns(canonical))
    assert [t["target_event_id"] for t in turns] == [e.event_id for e in decisions]
    assert turns[-1]["target"]["tool_calls"][0]["name"] == "submit"
    assert views.full_trajectory(canonical)["target_event_ids"][-1] == final.event_id
    again = import_records("swe-agent-traj", [HISTORY_SHORT])
    assert [to_json(r) for r in again] == [to_json(record)]


def test_a_traj_whose_history_does_not_line_up_declares_the_lost_steps(tmp_path: Path) -> None:
    doc = parse_json(HISTORY_SHORT.read_bytes())
    doc["history"][4]["action"] = "edit 'x / 3' 'x * 0.5'"  # no longer the action of step 1
    path = tmp_path / "acme__calc-7.traj"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (record,) = import_records("swe-agent-traj", [path])
    assert record.completeness == "incomplete"
    assert sum(e.role == "assistant" for e in record.events) == 2
    (lost,) = [m for m in record.missing_fields if m.field == "events"]
    assert "trajectory records 3 steps and history 2 agent turns" in lost.reason
    assert all(t.name != "append-trajectory-steps" for t in record.transformations)


def test_every_credential_named_member_and_url_userinfo_is_redacted_in_the_raw_record(tmp_path: Path) -> None:
    """docs/trajectories.md promises ``*_token`` members are redacted: not only ``access_token``."""
    doc = parse_json(HISTORY_SHORT.read_bytes())
    secrets = {"refresh_token": "rt-value-1", "github_token": "gh-value-2", "id_token": "eyJ.id.3",
               "session_token": "st-value-4", "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG"}
    doc["replay_config"]["agent"]["model"].update(secrets)
    doc["trajectory"][0]["observation"] += "\norigin\thttps://bot:pl41n-pa55@git.example.com/acme/calc.git (fetch)"
    path = tmp_path / "acme__calc-7.traj"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    (record,) = import_records("swe-agent-traj", [path])
    text = record.raw_record.content
    assert not any(value in text for value in [*secrets.values(), "pl41n-pa55"])
    stored = json.loads(text)
    assert {k: stored["replay_config"]["agent"]["model"][k] for k in secrets} == {
        k: marker(v) for k, v in secrets.items()}
    assert f"https://bot:{marker('pl41n-pa55')}@git.example.com/acme/calc.git" in stored["trajectory"][0]["observation"]
    redaction = next(t for t in record.transformations if t.name == "redact-secrets")
    assert redaction.detail == {"field": "raw_record", "values": 6}
    # everything else is the source's bytes: undoing the markers gives the file back
    restored = text
    for value in [*secrets.values(), "pl41n-pa55"]:
        restored = restored.replace(marker(value), value)
    assert restored.encode() == path.read_bytes()
    assert record.raw_record.sha256 == __import__("hashlib").sha256(path.read_bytes()).hexdigest()
