"""The adaptation step every profile export shares (``RowAdaptation``): the same canonical rows,
emitted once by a target (an RLVR ``rollouts`` population) and once by an objective without
targets (its ``answers`` population), adapt to the same bytes,
with the same declines, refusals and tally."""

from __future__ import annotations

import json
import math
import random
import types
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from sediment.errors import PluginError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export.pipeline import Evidence, export_objective, export_through_target
from sediment.model.rollout import Rollout
from sediment.plugin import (
    AdaptedRow,
    Declined,
    Dependency,
    ExportContext,
    ObjectiveInfo,
    Population,
    PopulationInfo,
    ProfileInfo,
    ProjectedRow,
    Recipe,
    RolloutEvidence,
    TargetInfo,
    canonical_digest,
    hookimpl,
)
from sediment.testing import plugin_registry, rollout

SCHEMA_ID = "https://example.com/schemas/answer/v1.json"
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, "type": "object",
          "required": ["session_id", "schema_id"]}
PATHS = ("target", "objective")


def canonical(evidence: RolloutEvidence) -> ProjectedRow | str:
    """The one canonical row of a Rollout (the same for the target and the objective), or a decline."""
    r = evidence.rollout
    if r.session_id.startswith("quiet"):
        return "quiet"
    body: dict[str, Any] = {"session_id": r.session_id, "schema_id": SCHEMA_ID}
    if r.session_id.startswith("paid"):
        body["reward_source"] = "resolved_ci_pass"
    return ProjectedRow(r.split, body)


def make_target() -> types.ModuleType:
    module = types.ModuleType("answer_target")

    @hookimpl
    def describe_target() -> TargetInfo:
        return TargetInfo(populations={"rollouts": PopulationInfo(SCHEMA_ID, ("quiet",))}, needs_mirrors=False)

    @hookimpl
    def register_schemas() -> Sequence[dict[str, Any]]:
        return [SCHEMA]

    @hookimpl
    def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
        row = canonical(evidence)
        return row if isinstance(row, str) else None

    @hookimpl
    def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
        row = canonical(evidence)
        assert not isinstance(row, str)
        return [row]

    for fn in (describe_target, register_schemas, eligible, project_row):
        setattr(module, fn.__name__, fn)
    return module


def make_objective() -> types.ModuleType:
    module = types.ModuleType("answer_objective")

    @hookimpl
    def describe_objective() -> ObjectiveInfo:
        return ObjectiveInfo(title="ANSWERS", unit="Rollout", units="rollouts", recipes=(Recipe("answers", 1),),
                             populations={"answers": PopulationInfo(SCHEMA_ID, ("quiet",), label="answer")},
                             direct_needs_mirrors=False)

    @hookimpl
    def register_schemas() -> Sequence[dict[str, Any]]:
        return [SCHEMA]

    @hookimpl
    def project_evidence(context: ExportContext) -> Iterator[ProjectedRow | Declined]:
        for evidence in context.rollouts():
            row = canonical(evidence)
            yield Declined(row) if isinstance(row, str) else row

    for fn in (describe_objective, register_schemas, project_evidence):
        setattr(module, fn.__name__, fn)
    return module


def make_profile(adapts: str, objective: str, population: str) -> types.ModuleType:
    """Adapts ``population`` rows: ``skip*`` sessions are declined, ``inf*`` ones adapt to an
    unrepresentable row, ``anon*`` ones name no instance id."""
    module = types.ModuleType("answer_profile")

    @hookimpl
    def describe_profile() -> ProfileInfo:
        return ProfileInfo(consumer="answer", version=1, target=adapts, population=population,
                           canonical_schema=SCHEMA_ID, validated_with=(Dependency("answer", "1.0"),),
                           validation="answer.load", support="answer rows", skip_reasons=("skipped_by_name",),
                           objective=objective)

    @hookimpl
    def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence | None) -> AdaptedRow | str:
        name = row["session_id"]
        if name.startswith("skip"):
            return "skipped_by_name"
        body = {"text": name, "score": math.inf if name.startswith("inf") else 1.0}
        return AdaptedRow(body=body, prompt=f"say {name}", evidence={"length": len(name)},
                          instance_id=None if name.startswith("anon") else f"answer-{name}")

    for fn in (describe_profile, adapt_row):
        setattr(module, fn.__name__, fn)
    return module


def export(path: str, rollouts: Sequence[Rollout], out: Path) -> dict[str, Any]:
    commands = VerifierCommands.empty()
    if path == "target":
        registry = plugin_registry(("answers", make_target()),
                                   ("answer-v1", make_profile("answers", "rlvr", "rollouts")), builtins=False)
        return export_through_target(list(rollouts), None, out, target="answers", profile="answer-v1",
                                         split_enabled=True, registry=registry, verifier_commands=commands)
    registry = plugin_registry(("answers", make_objective()),
                               ("answer-v1", make_profile("answers", "answers", "answers")), builtins=False)
    return export_objective(Evidence(list(rollouts), True), out, objective="answers", profile="answer-v1",
                            registry=registry, verifier_commands=commands)


def files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name.startswith(("data", "evidence"))}


def sessions() -> list[Rollout]:
    return [rollout("paid-1"), rollout("plain-2"), rollout("skip-3"), rollout("inf-4"), rollout("quiet-5"),
            rollout("paid-6", split="eval"), rollout("skip-7", split="eval"), rollout("plain-8", split="eval")]


def test_a_target_and_an_objective_emitting_the_same_rows_adapt_them_to_the_same_bytes(tmp_path: Path) -> None:
    summaries = {path: export(path, sessions(), tmp_path / path) for path in PATHS}
    written = {path: files(tmp_path / path) for path in PATHS}
    assert sorted(written["target"]) == ["data.eval.jsonl", "data.train.jsonl", "evidence.eval.jsonl",
                                         "evidence.train.jsonl"]
    assert written["target"] == written["objective"]
    tally = ("rows", "skipped", "canonical_rows", "canonical_skipped", "diagnostics")
    target, objective = ({key: summaries[path][key] for key in tally} for path in PATHS)
    assert target == objective == {
        "rows": 4, "skipped": {"non_finite_number": 1, "skipped_by_name": 2}, "canonical_rows": 7,
        "canonical_skipped": {"quiet": 1},
        "diagnostics": {"rows_by_split": {"train": 2, "eval": 2},
                        "reward_sources": {"absent": 2, "resolved_ci_pass": 2},
                        "exact_prompt_overlap": 0, "semantic_task_overlap": "not_assessed"}}
    assert (summaries["target"]["target"], summaries["objective"]["objective"]) == ("answers", "answers")
    evidence = [json.loads(line) for line in written["target"]["evidence.train.jsonl"].splitlines()]
    data = [json.loads(line) for line in written["target"]["data.train.jsonl"].splitlines()]
    assert [(e["instance_id"], e["split"], e["evidence"]) for e in evidence] == [
        ("answer-paid-1", "train", {"length": 6}), ("answer-plain-2", "train", {"length": 7})]
    for row, line in zip(data, evidence, strict=True):
        assert line["row_sha256"] == canonical_digest(row)
        assert line["source_row_sha256"] == canonical_digest(
            {"session_id": row["text"], "schema_id": SCHEMA_ID,
             **({"reward_source": "resolved_ci_pass"} if row["text"].startswith("paid") else {})})
        assert line["prompt_sha256"] == canonical_digest({"prompt": f"say {row['text']}"})
    compatibility = {path: json.loads((tmp_path / path / "compatibility.json").read_text()) for path in PATHS}
    for key in ("rows", "skipped", "canonical_rows", "canonical_skipped", "diagnostics", "files", "settings"):
        assert compatibility["target"][key] == compatibility["objective"][key], key


@pytest.mark.parametrize("path", PATHS)
def test_shuffled_input_gives_identical_bytes(tmp_path: Path, path: str) -> None:
    first = export(path, sessions(), tmp_path / "first")
    shuffled = sessions()
    random.Random(7).shuffle(shuffled)
    again = export(path, shuffled, tmp_path / "again")
    assert files(tmp_path / "first") == files(tmp_path / "again")
    assert (tmp_path / "first" / "compatibility.json").read_bytes() == (
        tmp_path / "again" / "compatibility.json").read_bytes()
    assert first["diagnostics"] == again["diagnostics"]


@pytest.mark.parametrize("path", PATHS)
def test_an_adapted_row_without_an_instance_id_stops_either_export(tmp_path: Path, path: str) -> None:
    with pytest.raises(PluginError, match=r"^profile 'answer-v1' adapted a row without an instance_id and named "
                                          r"none \(AdaptedRow.instance_id\)$"):
        export(path, [rollout("paid-1"), rollout("anon-2")], tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".sediment-rlvr-target" if path == "target" else ".sediment-answers-target"]


def test_an_objective_row_routed_against_its_split_field_stops_the_export(tmp_path: Path) -> None:
    module = make_objective()

    @hookimpl
    def project_evidence(context: ExportContext) -> Iterator[ProjectedRow]:
        yield ProjectedRow("train", {"session_id": "paid-1", "schema_id": SCHEMA_ID, "split": "eval"})

    module.project_evidence = project_evidence  # type: ignore[attr-defined]
    registry = plugin_registry(("answers", module), ("answer-v1", make_profile("answers", "answers", "answers")),
                               builtins=False)
    with pytest.raises(PluginError, match="^objective 'answers' routed a answers row to train whose split field "
                                          "says 'eval'$"):
        export_objective(Evidence([], True), tmp_path / "out", objective="answers", profile="answer-v1",
                         registry=registry, verifier_commands=VerifierCommands.empty())
