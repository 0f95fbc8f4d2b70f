"""Sediment's own Rollouts import from a bundle (the demo's): one record per segment, the
outcome and verification from the resolved CI evidence with its reliability and outcome ids."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sediment.bundle.read import open_bundle
from sediment.demo import run_demo
from sediment.evidence.recipe import Recipe
from sediment.evidence.rollout import RolloutEvidence
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.importing.run import import_records, import_results
from sediment.trajectory import Trajectory, from_json, outcome_category, to_json, verification_strength
from sediment.trajectory.sources import ImportRefusal


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    run_demo(out / "demo")
    return out / "demo" / "bundle"


def test_every_segment_is_one_record_with_its_ci_outcome(bundle_dir: Path) -> None:
    records = list(import_records("sediment-rollouts", [bundle_dir]))
    bundle = open_bundle(bundle_dir)
    rollouts = list(bundle)
    assert len(records) == sum(len(r.segments) for r in rollouts)
    by_session: dict[str, list[Trajectory]] = {}
    for record in records:
        by_session.setdefault(record.provenance.source_metadata["session_id"], []).append(record)
    categories = set()
    for rollout in rollouts:
        evidence = RolloutEvidence(rollout, mirrors=None, verifier_commands=VerifierCommands.empty(),
                                   recipe=Recipe("unread", 1), repositories=bundle.repositories)
        resolution = evidence.reward_resolution
        mine = by_session[rollout.session_id]
        assert len(mine) == len(rollout.segments)
        for record in mine:
            assert record.task_key == f"sediment:{rollout.org_id}-{rollout.session_id}"
            assert record.split == rollout.split
            if resolution is None:
                assert outcome_category(record) == "unknown" and record.verification.evidence == []
                continue
            assert record.outcome.success is (resolution.verdict == "passed")
            (ci,) = record.verification.evidence
            assert ci.kind == "ci" and ci.reliability == resolution.reliability
            assert ci.detail["verdict_outcome_ids"] == list(resolution.verdict_outcome_ids)
            assert ci.evidence_id == f"ci:{resolution.org_id}/{resolution.repo}@{resolution.commit_sha}"
            assert verification_strength(record) in ("source_evaluator", "independently_reproduced")
            categories.add(outcome_category(record))
    assert categories == {"success", "failure"}


def test_each_call_is_one_supervised_decision_and_results_link_to_it(bundle_dir: Path) -> None:
    records = list(import_records("sediment-rollouts", [bundle_dir]))
    rollouts = {r.session_id: r for r in open_bundle(bundle_dir)}
    assert len(records) == sum(len(r.segments) for r in rollouts.values()) > 0  # one record a segment
    for record in records:
        rollout = rollouts[record.provenance.source_metadata["session_id"]]
        segment = rollout.segments[record.provenance.source_metadata["segment"]]
        decisions = [e for e in record.events if e.supervised]
        assert [e.source_metadata["inference_call_id"] for e in decisions] == [t.inference_call_id for t in segment]
        assert all(e.role == "assistant" for e in decisions)
        for index, event in enumerate(record.events):
            if event.role == "tool":
                assert event.tool_result_of in {c.call_id for e in record.events[:index] for c in e.tool_calls}
        assert record.raw_record.data().startswith(b'{"record_json":')
        assert from_json(to_json(record)) == record


def test_rollout_import_is_byte_deterministic(bundle_dir: Path) -> None:
    first = [to_json(r) for r in import_records("sediment-rollouts", [bundle_dir])]
    assert first == [to_json(r) for r in import_records("sediment-rollouts", [bundle_dir / "manifest.json"])]


def test_a_damaged_bundle_is_one_refusal(bundle_dir: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "bundle"
    shutil.copytree(bundle_dir, damaged)
    with (damaged / "rollouts.jsonl").open("ab") as handle:
        handle.write(b'{"record_json": "{}"}\n')
    results = list(import_results("sediment-rollouts", [damaged]))
    assert len(results) == 1 and isinstance(results[0], ImportRefusal)
    assert str(results[0]).startswith(f"{damaged / 'manifest.json'}:0: (bundle): ")
    assert "\n" not in str(results[0])
