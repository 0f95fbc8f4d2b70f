"""Bundles carry each Session's decisions and edit observations (since version 3) and file
attributions (version 4): what SFT and DPO read from a bundle (docs/bundle.md, docs/attributed-completions.md),
from ``sediment ingest otlp`` to ``open_bundle``. Version 3 stays readable; other versions are
refused."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment import export_rlvr_from_bundle
from sediment.bundle.read import open_bundle
from sediment.bundle.write import write_bundle
from sediment.derive.edit_retention import fill_edit_retention, four_gram_containment
from sediment.derive.sessions import derive_bundle
from sediment.errors import BundleError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.ingest.otlp import translate_otlp
from sediment.ingest.reading.files import ingest_files
from sediment.model.facts import DeveloperDecision, EditObservation, InferenceCall, ToolCallPart
from sediment.model.policy import DerivationPolicy
from sediment.store import FactStore
from sediment.testing import ORG, POLICY, T0, call, message, rollout, snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"
CC_SESSION = "6f2c1e0a-4b7d-4c1e-9a55-0d3f7b2e8c11"


def claude_calls() -> list[InferenceCall]:
    """The Claude Code Session's model calls, as the gateway recorded them: each made the tool
    call its decision names (the OTLP fixture's tool_use_ids)."""
    calls = []
    history = [message("user", "add multiply and note it")]
    for index, (tool_id, name) in enumerate([("toolu_02EditCalc", "Edit"), ("toolu_03WriteNotes", "Write"),
                                             ("toolu_04WriteSecrets", "Write"), ("toolu_05Notebook", "NotebookEdit")]):
        output = message("assistant", ToolCallPart(id=tool_id, name=name, arguments={"file_path": f"f{index}"}))
        calls.append(call(CC_SESSION, index, history, [output]))
        history = [*history, output]
    return calls


def ingested(tmp_path: Path, name: str = "facts.db", seed: int | None = None) -> FactStore:
    store = FactStore(f"sqlite:///{tmp_path / name}")
    facts: list[Any] = claude_calls()
    if seed is not None:
        random.Random(seed).shuffle(facts)
    store.append(facts)
    paths = [str(FIXTURES / "claude_code.json"), str(FIXTURES / "sediment.json")]
    if seed is not None:
        random.Random(seed).shuffle(paths)
    report = ingest_files(paths, lambda batch: translate_otlp(batch, org_id=ORG, captured_at=T0), store,
                          keep_flaws=True)
    assert not report.problems
    return store


def test_a_bundle_carries_every_decision_and_edit_observation_of_its_sessions(tmp_path: Path) -> None:
    store = ingested(tmp_path)
    # a decision naming a call the gateway never saw, and a quarantined one
    unmatched = DeveloperDecision(decision_id="d-unmatched", org_id=ORG, session_id=CC_SESSION,
                                  agent_harness="claude-code", accepted=True, explicit=True, interaction_mode="agent",
                                  call_id="toolu_99Elsewhere", occurred_at=T0, captured_at=T0)
    store.append([unmatched])
    hidden = next(d for d in store.decisions_for_session(ORG, CC_SESSION) if d.call_id == "toolu_05Notebook")
    store.quarantine(ORG, "developer_decisions", hidden.decision_id, "a test of the population")
    bundle_path, rollouts = derive_bundle(store, ORG, tmp_path / "bundle", policy=DerivationPolicy(), mirrors=None)
    manifest = json.loads((bundle_path / "manifest.json").read_text())
    assert manifest["bundle_schema_version"] == 4
    bundle = open_bundle(bundle_path)
    [session] = list(bundle)
    population = session.session_decisions
    assert [d.call_id for d in population] == ["toolu_99Elsewhere", "toolu_02EditCalc", "toolu_03WriteNotes",
                                               "toolu_04WriteSecrets"]  # by occurred_at; the quarantined one left out
    assert population == tuple(sorted(store.decisions_for_session(ORG, CC_SESSION),
                                      key=lambda d: (d.occurred_at, d.decision_id)))
    turns = [turn for segment in session.segments for turn in segment]
    joined = [d for turn in turns for d in turn.decisions]
    assert {d.decision_id for d in joined} == {d.decision_id for d in population} - {"d-unmatched"}
    assert rollouts.skipped["decision.unmatched_decision_call_id"] == 1
    assert [(o.call_id, o.agent_harness) for o in session.edit_observations] == [
        ("toolu_02EditCalc", "claude-code"), ("toolu_03WriteNotes", "claude-code")]
    assert session.edit_observations == tuple(store.edit_observations_for_session(ORG, CC_SESSION))
    # what SFT reads from the bundle alone: the Edit's retention, filled from its observation
    fill = fill_edit_retention(population, session.edit_observations)
    scores = {d.call_id: d.edit_retention_score for d in fill.decisions}
    edit = session.edit_observations[0]
    assert scores["toolu_02EditCalc"] == four_gram_containment(edit.applied_text, edit.observed_file_text) == 1.0
    assert scores["toolu_03WriteNotes"] == 0.0  # the file was gone at Session end
    assert scores["toolu_04WriteSecrets"] is None and scores["toolu_99Elsewhere"] is None
    store.close()


def test_the_bundle_is_the_same_bytes_whatever_the_ingest_order(tmp_path: Path) -> None:
    bundles = []
    for seed in (None, 1, 2):
        store = ingested(tmp_path, f"f{seed}.db", seed)
        path, _ = derive_bundle(store, ORG, tmp_path / f"b{seed}", policy=DerivationPolicy(), mirrors=None)
        bundles.append(snapshot(path))
        store.close()
    assert bundles[0] == bundles[1] == bundles[2]


def test_rlvr_rows_do_not_change(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    """The populations are bundle evidence: a Rollout with them exports the rows it did without."""
    store = ingested(tmp_path)
    path, _ = derive_bundle(store, ORG, tmp_path / "bundle", policy=DerivationPolicy(), mirrors=None)
    [session] = list(open_bundle(path))
    bare = session.model_copy(update={"session_decisions": (), "edit_observations": ()})
    plain = write_bundle([bare], tmp_path / "bare", org_id=ORG, policy=DerivationPolicy(), quarantine_revision=0)
    for source, out in ((path, tmp_path / "a"), (plain, tmp_path / "b")):
        export_rlvr_from_bundle(source, mirror_root, out, target="nemo-gym", verifier_commands=VerifierCommands.empty())
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    store.close()


# --- other versions and damaged records ------------------------------------------------------------


def _rewrite(path: Path, lines: list[str], *, version: int | None = None) -> None:
    body = "".join(line + "\n" for line in lines)
    (path / "rollouts.jsonl").write_text(body)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"]["rollouts.jsonl"] |= {"bytes": len(body), "sha256": hashlib.sha256(body.encode()).hexdigest()}
    if version is not None:
        manifest["bundle_schema_version"] = version
    (path / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")


def decision(session: str, call_id: str = "t1") -> DeveloperDecision:
    return DeveloperDecision(decision_id=f"d-{session}-{call_id}", org_id=ORG, session_id=session,
                             agent_harness="codex", accepted=True, explicit=False, interaction_mode="agent",
                             call_id=call_id, file_path="a.py", occurred_at=T0, captured_at=T0 + timedelta(1))


def observation(session: str) -> EditObservation:
    return EditObservation(observation_id=f"e-{session}", org_id=ORG, session_id=session, agent_harness="codex",
                           file_path="a.py", call_id="t1", applied_text="x", observed_file_text="x", occurred_at=T0,
                           captured_at=T0)


@pytest.mark.parametrize(("update", "message"), [
    ({"session_decisions": (decision("s0"), decision("other"))},
     r"rollouts\.jsonl line 1: session_decisions\[1\] belongs to Session 'other' of org 'acme', not to the Rollout's"),
    ({"edit_observations": (observation("elsewhere"),)},
     r"rollouts\.jsonl line 1: edit_observations\[0\] belongs to Session 'elsewhere'"),
])
def test_a_population_fact_of_another_session_is_refused(tmp_path: Path, update: dict[str, Any], message: str) -> None:
    path = write_bundle([rollout("s0").model_copy(update=update)], tmp_path / "b", org_id=ORG, policy=POLICY,
                        quarantine_revision=0)
    with pytest.raises(BundleError, match=message):
        open_bundle(path)


@pytest.mark.parametrize("version", [1, 2, 5, "3", "4", True, None])
def test_other_versions_are_refused(tmp_path: Path, version: Any) -> None:
    path = write_bundle([rollout("s0")], tmp_path / "b", org_id=ORG, policy=POLICY, quarantine_revision=0)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["bundle_schema_version"] = version
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=f"unsupported bundle_schema_version {version!r} .*reads versions 3 and 4; derive the bundle again"):
        open_bundle(path)


def as_version_3(path: Path) -> None:
    """Rewrite our bundle as version 3 wrote it: no file attributions, no Turn response ids."""
    lines = []
    for line in (path / "rollouts.jsonl").read_text().splitlines():
        record = json.loads(json.loads(line)["record_json"])
        record.pop("file_attributions")
        for segment in record["segments"]:
            for turn in segment:
                turn.pop("model_call_id")
        inner = json.dumps(record, sort_keys=True, separators=(",", ":"))
        lines.append(json.dumps({"record_json": inner}, sort_keys=True, separators=(",", ":")))
    _rewrite(path, lines, version=3)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["implementation_versions"] = {"repository_identity": "1", "rollout": "4"}
    (path / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")


def test_a_version_3_bundle_stays_readable_without_file_attributions(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    store = ingested(tmp_path)
    current, _ = derive_bundle(store, ORG, tmp_path / "current", policy=DerivationPolicy(), mirrors=None)
    old, _ = derive_bundle(store, ORG, tmp_path / "old", policy=DerivationPolicy(), mirrors=None)
    as_version_3(old)
    opened = open_bundle(old)
    assert (opened.manifest.schema_version, opened.carries_file_attributions) == (3, False)
    assert open_bundle(current).carries_file_attributions
    [session] = list(opened)
    assert session.file_attributions == () and session.session_decisions
    for source, out in ((current, tmp_path / "a"), (old, tmp_path / "b")):  # RLVR rows are unchanged
        export_rlvr_from_bundle(source, mirror_root, out, target="nemo-gym", verifier_commands=VerifierCommands.empty())
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    store.close()


def test_a_version_3_record_holding_version_4_fields_is_refused(tmp_path: Path) -> None:
    path = write_bundle([rollout("s0")], tmp_path / "b", org_id=ORG, policy=POLICY, quarantine_revision=0)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["bundle_schema_version"] = 3
    manifest["implementation_versions"] = {"repository_identity": "1", "rollout": "4"}
    (path / "manifest.json").write_text(json.dumps(manifest))
    lines = []
    for line in (path / "rollouts.jsonl").read_text().splitlines():
        record = json.loads(json.loads(line)["record_json"])
        record["segments"][0][0]["model_call_id"] = "resp-1"
        lines.append(json.dumps({"record_json": json.dumps(record, sort_keys=True, separators=(",", ":"))}))
    _rewrite(path, lines)
    with pytest.raises(BundleError, match=r"rollouts\.jsonl line 1: a version 3 record holds file_attributions or "
                                          r"Turn model_call_id \(bundle version 4\)"):
        open_bundle(path)
