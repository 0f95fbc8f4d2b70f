"""Consumer-profile exports in the core: registry rules, the evidence sidecar, compatibility.json,
directory discipline, the train/eval prompt guard, and the checks around every adapted row."""

from __future__ import annotations

import json
import math
import os
import stat
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from sediment.errors import OutputDirectoryError, PluginError, ProfileError, UnknownProfileError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export.pipeline import export_through_target
from sediment.file_modes import published_mode
from sediment.plugin import (
    AdaptedRow,
    Dependency,
    Population,
    PopulationInfo,
    ProfileInfo,
    ProjectedRow,
    RolloutEvidence,
    TargetInfo,
    canonical_digest,
    hookimpl,
)
from sediment.testing import outcome, plugin_registry, rollout, run_export

NEMO_SCHEMA = "https://sediment.so/schemas/training-rows/nemo-gym-rollout/v4.json"
SHA = "d" * 40


def make_profile(*, target: str = "nemo-gym", schema: str = NEMO_SCHEMA, reason: str | None = None,
                 body: Any = None, retires: Sequence[str] = (), prompt: Any = None,
                 objective: str = "rlvr", native_schema: str | None = None) -> types.ModuleType:
    module = types.ModuleType("test_profile")

    @hookimpl
    def describe_profile() -> ProfileInfo:
        return ProfileInfo(consumer="toy", version=1, target=target, population="rollouts", canonical_schema=schema,
                           validated_with=(Dependency("toy", "1.0"),), validation="toy.load", support="toy rows",
                           skip_reasons=("no_reward",), retires=tuple(retires), objective=objective,
                           native_schema=native_schema)

    @hookimpl
    def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, index: int) -> AdaptedRow | str:
        if reason is not None:
            return reason
        if "reward" not in row:
            return "no_reward"
        native = body if body is not None else {"text": evidence.rollout.session_id, "reward": row["reward"],
                                                "position": index}
        return AdaptedRow(body=dict(native), prompt=prompt if prompt is not None else evidence.rollout.session_id,
                          evidence={"segment": row["metadata"]["segment_index"]})

    module.describe_profile = describe_profile  # type: ignore[attr-defined]
    module.adapt_row = adapt_row  # type: ignore[attr-defined]
    return module


def verdicts(*sessions: str, result: str = "passed", split: str = "train") -> list[Any]:
    return [rollout(s, commits=[SHA], outcomes=[outcome(f"{s}-o", SHA, result, run_id=s)], split=split)
            for s in sessions]


def export(registry: Any, rollouts: list[Any], out: Path, **kwargs: Any) -> dict[str, Any]:
    return export_through_target(rollouts, None, out, target="nemo-gym", profile="toy-v1", registry=registry,
                                     verifier_commands=VerifierCommands.empty(), **{"split_enabled": False, **kwargs})


def test_rows_evidence_and_compatibility(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-v1", make_profile()))
    rollouts = [*verdicts("s1", "s2"), rollout("s3")]
    result = run_export(rollouts, tmp_path / "out", target="nemo-gym", profile="toy-v1", registry=registry)
    summary = result.summary
    assert list(summary) == ["profile", "target", "rollouts", "rows", "skipped", "canonical_rows",
                             "canonical_skipped", "diagnostics", "compatibility", "fragmented", "written", "manifests"]
    assert (summary["rows"], summary["skipped"], summary["canonical_rows"]) == (2, {"no_reward": 1}, 3)
    assert result.rows["data.jsonl"] == [{"text": "s1", "reward": 1.0, "position": 0},
                                         {"text": "s2", "reward": 1.0, "position": 1}]
    # each evidence line links its data line to the canonical row a target export writes
    canonical = run_export(rollouts, tmp_path / "canonical", target="nemo-gym").rows["rollouts.jsonl"]
    for data, evidence in zip(result.rows["data.jsonl"], result.rows["evidence.jsonl"], strict=True):
        source = next(r for r in canonical if r["metadata"]["instance_id"] == evidence["instance_id"])
        assert evidence["row_sha256"] == canonical_digest(data)
        assert evidence["source_row_sha256"] == canonical_digest(source)
        assert evidence["canonical_schema"] == NEMO_SCHEMA and evidence["profile"] == "toy-v1"
        assert evidence["prompt_sha256"] == canonical_digest({"prompt": data["text"]})
        assert evidence["evidence"] == {"segment": 0}
    compatibility_path = tmp_path / "out" / "compatibility.json"
    text = compatibility_path.read_text(encoding="ascii")
    document = json.loads(text)
    assert text == json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n"
    assert stat.S_IMODE(os.stat(compatibility_path).st_mode) == published_mode()  # 0666 less the umask
    assert document["profile"] == {
        "id": "toy-v1", "consumer": "toy", "objective": "rlvr", "version": 1, "target": "nemo-gym", "population": "rollouts",
        "canonical_schema": NEMO_SCHEMA, "validated_with": [["toy", "1.0"]], "validation": "toy.load",
        "support": "toy rows"}
    assert document["rows"] == 2 and document["skipped"] == {"no_reward": 1} and document["canonical_rows"] == 3
    assert document["training_execution"] == "not_run"
    assert document["diagnostics"]["reward_sources"] == {"resolved_ci_pass": 2}
    for name in ("data.jsonl", "evidence.jsonl"):
        data = (tmp_path / "out" / name).read_bytes()
        assert document["files"][name] == {"bytes": len(data), "rows": 2,
                                           "sha256": __import__("hashlib").sha256(data).hexdigest()}
    assert (tmp_path / "out" / ".sediment-rlvr-target").read_text() == "profile:toy-v1\n"


def test_an_empty_profile_export_writes_nothing(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-v1", make_profile()))
    summary = export(registry, [rollout("s1")], tmp_path / "out")
    assert summary["written"] == {} and summary["compatibility"] is None
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-rlvr-target"]


def test_profile_directories_are_claimed(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-v1", make_profile()))
    export(registry, verdicts("s1"), tmp_path / "out")
    with pytest.raises(OutputDirectoryError, match="already contains toy-v1 artifacts"):
        export(registry, verdicts("s1"), tmp_path / "out")
    with pytest.raises(OutputDirectoryError, match="already belongs to profile toy-v1; use a different directory"):
        export_through_target(verdicts("s1"), None, tmp_path / "out", target="nemo-gym", split_enabled=False,
                                  registry=registry, verifier_commands=VerifierCommands.empty())


def test_a_reason_outside_the_vocabulary_is_a_plugin_error(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-v1", make_profile(reason="made_up")))
    with pytest.raises(PluginError, match="'made_up' is not in the vocabulary of profile 'toy-v1'"):
        export(registry, verdicts("s1"), tmp_path / "out")


def test_unrepresentable_adapted_rows_are_declined_once(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-v1", make_profile(body={"x": math.inf})))
    summary = export(registry, verdicts("s1", "s2"), tmp_path / "out")
    assert summary["skipped"] == {"non_finite_number": 2} and summary["written"] == {}


def test_train_and_eval_sharing_an_exact_prompt_publish_nothing(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-v1", make_profile(prompt="same prompt")))
    rollouts = [*verdicts("s1", split="train"), *verdicts("s2", split="eval")]
    with pytest.raises(ProfileError, match="1 exact prompts in both train and eval"):
        export(registry, rollouts, tmp_path / "out", split_enabled=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-rlvr-target"]
    summary = export(registry, rollouts, tmp_path / "unsplit")  # one file: no split to leak across
    assert summary["rows"] == 2


def bad_target() -> types.ModuleType:
    module = types.ModuleType("bad_target")

    @hookimpl
    def describe_target() -> TargetInfo:
        return TargetInfo(populations={"rollouts": PopulationInfo(NEMO_SCHEMA)}, needs_mirrors=False)

    @hookimpl
    def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
        return None

    @hookimpl
    def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
        return [ProjectedRow("train", {"metadata": {"schema_id": NEMO_SCHEMA}})]

    for fn in (describe_target, eligible, project_row):
        setattr(module, fn.__name__, fn)
    return module


def test_a_canonical_row_violating_its_schema_stops_the_export(tmp_path: Path) -> None:
    registry = plugin_registry(("liar", bad_target()), ("toy-v1", make_profile(target="liar")))
    with pytest.raises(PluginError, match=f"target 'liar' emitted a rollouts row that violates {NEMO_SCHEMA}: "):
        export_through_target(verdicts("s1"), None, tmp_path / "out", target="liar", profile="toy-v1",
                                  split_enabled=False, registry=registry, verifier_commands=VerifierCommands.empty())


def test_registry_checks_what_a_profile_declares() -> None:
    with pytest.raises(PluginError, match="adapts nowhere rollouts, which no installed target writes"):
        plugin_registry(("toy-v1", make_profile(target="nowhere")))
    with pytest.raises(PluginError, match="reads https://example.com/x.json, but target nemo-gym writes"):
        plugin_registry(("toy-v1", make_profile(schema="https://example.com/x.json")))
    with pytest.raises(PluginError, match="retires 'verifiers-tasks-v1', which is already installed"):
        plugin_registry(("toy-v1", make_profile(retires=("verifiers-tasks-v1",))))
    with pytest.raises(PluginError, match="declares native schema https://example.com/n.json, but no plugin "
                                          "registers it"):
        plugin_registry(("toy-v1", make_profile(native_schema="https://example.com/n.json")))


def test_unknown_retired_and_mismatched_profile_names() -> None:
    registry = plugin_registry(("toy-v1", make_profile(retires=("toy-v0",))))
    with pytest.raises(UnknownProfileError, match="unsupported profile: toy-v9; installed profiles: .*toy-v1"):
        registry.profile("toy-v9")
    with pytest.raises(UnknownProfileError, match="profile toy-v0 is retired; use toy-v1"):
        registry.profile("toy-v0")
    with pytest.raises(UnknownProfileError, match="profile toy-v1 adapts rows of target nemo-gym, not sediment"):
        registry.profile("toy-v1", target="sediment")
    sft = plugin_registry(("toy-v1", make_profile(objective="sft")))
    with pytest.raises(UnknownProfileError, match="profile toy-v1 does not support objective rlvr; it adapts sft rows"):
        sft.profile("toy-v1", target="nemo-gym")


def test_a_profile_export_is_the_same_for_any_worker_count(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-v1", make_profile()))
    rollouts = verdicts(*(f"s{i}" for i in range(9)))
    export(registry, rollouts, tmp_path / "one")
    export(registry, rollouts, tmp_path / "three", workers=3)
    assert [p.read_bytes() for p in sorted((tmp_path / "one").glob("*.json*"))] == \
        [p.read_bytes() for p in sorted((tmp_path / "three").glob("*.json*"))]
