"""The plugin framework: discovery, the registry's rules, one-target dispatch, hook docs."""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

from sediment.errors import PluginError, UnknownTargetError
from sediment.export import Population, ProjectedRow, TargetInfo, hookimpl, hookspecs
from sediment.export.evidence import RolloutEvidence
from sediment.export.pipeline import export_rlvr_from_rollouts
from sediment.export.plugins import (
    BUILTIN_MANIFEST_PLUGINS,
    BUILTIN_TARGETS,
    PluginOrigin,
    PluginSource,
    discover_entry_points,
    new_plugin_manager,
)
from sediment.export.registry import load_registry
from sediment.export.representation import REPRESENTATION_REASONS
from sediment.export.verifier_commands import VerifierCommands
from sediment.testing import rollout

CI = (
    "conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
    "repository_identity_conflict", "repository_identity_unresolved",
    "repository_mirror_identity_unresolved", "repository_source_absent",
)
REPR = ("non_finite_number", "unrepresentable_unicode")
SEDIMENT_TASKS = (*CI, *REPR, "no_attributed_commit", "missing_verifier_evidence", "mirror_absent",
                  "no_commit_in_verifier_repo", "degenerate_commit_range", "root_commit_no_base",
                  "reference_patch_unavailable")
SWE_TASKS = (*CI, *REPR, "no_attributed_commit", "missing_verifier_evidence", "failed_reference_patch",
             "mirror_absent", "no_commit_in_verifier_repo", "degenerate_commit_range", "root_commit_no_base",
             "reference_patch_unavailable")
ROLLOUTS = (*CI, *REPR, "no_segments")


def builtin_sources() -> list[PluginSource]:
    return [s for s in discover_entry_points(blocked=()) if s.origin.distribution == "sediment"]


def test_discovery_finds_exactly_the_builtins() -> None:
    registry = load_registry(builtin_sources())
    assert tuple(sorted(registry.targets)) == tuple(sorted(BUILTIN_TARGETS))
    assert tuple(registry.manifest_plugins) == BUILTIN_MANIFEST_PLUGINS


def test_vocabularies_are_the_contract_tuples() -> None:
    registry = load_registry(builtin_sources())
    assert registry.targets["sediment"].vocabularies == {"tasks": SEDIMENT_TASKS, "rollouts": ROLLOUTS}
    assert registry.targets["swe-bench"].vocabularies == {"tasks": SWE_TASKS}
    assert registry.targets["nemo-gym"].vocabularies == {"rollouts": ROLLOUTS}


def test_hookspecs_document_every_argument() -> None:
    pm = new_plugin_manager()
    names = [n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(f, "sediment_spec")]
    assert set(names) == {"describe_target", "skip_reasons", "eligible", "project_row", "write_manifest"}
    for name in names:
        spec = getattr(pm.hook, name).spec
        doc = inspect.getdoc(spec.function) or ""
        assert ":return:" in doc, name
        for arg in spec.argnames:
            assert f":param {arg}:" in doc, f"{name} does not document {arg}"


def _source(name: str, module: types.ModuleType, distribution: str = "third-party") -> PluginSource:
    return PluginSource(module, PluginOrigin(name, distribution, "1.0", f"{module.__name__}"))


def make_target(name: str, *, vocabulary: Sequence[str] = (*REPR, "nope"), reason: str | None = None,
                calls: list[str] | None = None) -> types.ModuleType:
    module = types.ModuleType(f"plugin_{name.replace('-', '_')}")

    @hookimpl
    def describe_target() -> TargetInfo:
        return TargetInfo(populations={"rollouts": "https://example.com/r.json"}, needs_mirrors=False)

    @hookimpl
    def skip_reasons(population: Population) -> Sequence[str]:
        return tuple(vocabulary)

    @hookimpl
    def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
        if calls is not None:
            calls.append(name)
        return reason

    @hookimpl
    def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
        return [ProjectedRow(evidence.rollout.split, {"session_id": evidence.rollout.session_id, "by": name})]

    for fn in (describe_target, skip_reasons, eligible, project_row):
        setattr(module, fn.__name__, fn)
    return module


def test_duplicate_target_names_name_both_plugins() -> None:
    with pytest.raises(PluginError, match="declared twice: by dist-a .* and by dist-b"):
        load_registry([_source("twin", make_target("twin"), "dist-a"), _source("twin", make_target("twin"), "dist-b")])


def test_duplicate_entry_point_across_distributions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "impostor-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: impostor\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[sediment]\nnemo-gym = json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="'nemo-gym' is declared twice: by .*impostor"):
        discover_entry_points(blocked=())


def test_unknown_skip_reason_is_a_plugin_error(tmp_path: Path) -> None:
    registry = load_registry([_source("liar", make_target("liar", reason="invented_reason"))])
    with pytest.raises(PluginError, match="'invented_reason' is not in the rollouts vocabulary of target 'liar'"):
        export_rlvr_from_rollouts([rollout("s1")], None, tmp_path / "out", target="liar", split_enabled=False,
                                  registry=registry, verifier_commands=VerifierCommands.empty())


def test_vocabulary_must_include_representation_reasons() -> None:
    with pytest.raises(PluginError, match="missing \\['non_finite_number', 'unrepresentable_unicode'\\]"):
        load_registry([_source("bare", make_target("bare", vocabulary=("nope",)))])


def test_vocabulary_must_not_repeat() -> None:
    with pytest.raises(PluginError, match="duplicated \\['nope'\\]"):
        load_registry([_source("dup", make_target("dup", vocabulary=(*REPR, "nope", "nope")))])


def test_misspelt_hook_fails_loudly() -> None:
    module = make_target("typo")

    @hookimpl
    def project_rows() -> None:  # not a hook
        return None

    module.project_rows = project_rows  # type: ignore[attr-defined]
    with pytest.raises(PluginError, match="project_rows"):
        load_registry([_source("typo", module)])


def test_target_hooks_without_describe_target_are_refused() -> None:
    module = make_target("half")
    del module.describe_target
    with pytest.raises(PluginError, match="not describe_target"):
        load_registry([_source("half", module)])


def test_calls_reach_the_chosen_target_only(tmp_path: Path) -> None:
    calls: list[str] = []
    registry = load_registry([_source("one", make_target("one", calls=calls)),
                              _source("two", make_target("two", calls=calls))])
    summary = export_rlvr_from_rollouts([rollout("s1"), rollout("s2")], None, tmp_path / "out", target="two",
                                        split_enabled=False, registry=registry,
                                        verifier_commands=VerifierCommands.empty())
    assert calls == ["two", "two"]
    rows = [json.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_text().splitlines()]
    assert [r["by"] for r in rows] == ["two", "two"] and summary["rollout_rows"] == 2


def test_unknown_target_lists_installed() -> None:
    registry = load_registry(builtin_sources())
    with pytest.raises(UnknownTargetError, match="unsupported RLVR target: trl; installed targets: nemo-gym, sediment, swe-bench"):
        registry.get("trl")


def test_blocked_plugins_are_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDIMENT_BLOCK_PLUGINS", "swe-bench, openenv")
    names = {s.origin.name for s in discover_entry_points()}
    assert "swe-bench" not in names and "openenv" not in names and "sediment" in names


def test_representation_reasons_are_in_every_vocabulary() -> None:
    assert REPRESENTATION_REASONS == REPR
    registry = load_registry(builtin_sources())
    for target in registry.targets.values():
        for vocabulary in target.vocabularies.values():
            assert set(REPR) <= set(vocabulary), target.name
