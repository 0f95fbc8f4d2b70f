"""Objectives that derive their own units of evidence (Recovery's CI transitions): the
declaration, the registry's vocabularies for them, NotDerived counts in the summary, and what the
export context of a direct export offers them (CI outcomes, resolution, mirrors, the calls
attributed to commits)."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sediment.ci.resolution import CommitKey
from sediment.errors import ConfigurationError, PluginError
from sediment.evidence.attributed_calls import commit_attributions
from sediment.evidence.context import Evidence, store_evidence
from sediment.export.pipeline import export_objective
from sediment.git.mirror_root import MirrorRoot
from sediment.model.facts import SessionCommitObservation
from sediment.model.rollout import CommitRef
from sediment.plugin import (
    Declined,
    ExportContext,
    NotDerived,
    ObjectiveInfo,
    PopulationInfo,
    ProjectedRow,
    Recipe,
    hookimpl,
)
from sediment.store import FactStore
from sediment.testing import ORG, REPO, T0, GitRepo, conversation, outcome, plugin_registry, rollout

SCHEMA_ID = "https://example.com/schemas/transition/v1.json"
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, "type": "object"}
CI_REASONS = ("conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
              "repository_identity_conflict", "repository_identity_unresolved",
              "repository_mirror_identity_unresolved", "repository_source_absent")


def transitions_objective(produce: Any, **declared: Any) -> types.ModuleType:
    """An objective deriving ``transition`` units itself, with ``produce(context)`` as its projection."""
    module = types.ModuleType("objective_transitions")
    info = {"title": "Transitions", "unit": "CI transition", "units": "transitions", "recipes": (Recipe("all", 1),),
            "populations": {"moves": PopulationInfo(SCHEMA_ID, ("unexplained",), label="move")},
            "unit_skip_reasons": ("lonely", "flaky"), "supports_from": False, **declared}

    @hookimpl
    def describe_objective() -> ObjectiveInfo:
        return ObjectiveInfo(**info)

    @hookimpl
    def register_schemas() -> list[dict[str, Any]]:
        return [SCHEMA]

    @hookimpl
    def project_evidence(context: ExportContext) -> Iterator[Any]:
        yield from produce(context)

    for fn in (describe_objective, register_schemas, project_evidence):
        setattr(module, fn.__name__, fn)
    return module


def test_the_unit_vocabulary_starts_with_the_resolvers_reasons() -> None:
    registry = plugin_registry(("transitions", transitions_objective(lambda c: iter(()))), builtins=False)
    objective = registry.objectives["transitions"]
    assert objective.unit_vocabulary == (*CI_REASONS, "lonely", "flaky")
    # CI is resolved while deriving the units, so the populations start with representation
    assert objective.vocabularies == {"moves": ("non_finite_number", "unrepresentable_unicode", "unexplained")}
    assert objective.as_json()["unit_skip_reasons"] == [*CI_REASONS, "lonely", "flaky"]
    assert "unit_skip_reasons" not in registry.objectives["rlvr"].as_json()
    with pytest.raises(PluginError, match=r"units declares core skip reasons \['ambiguous_workflow_verdicts'\]"):
        plugin_registry(("bad", transitions_objective(lambda c: iter(()),
                                                      unit_skip_reasons=("ambiguous_workflow_verdicts",))),
                        builtins=False)


@pytest.mark.parametrize(("changes", "message"), [
    ({"unit_skip_reasons": ("Lonely",)}, "skip reasons must be unique snake_case words"),
    ({"unit_skip_reasons": ("a", "a")}, "skip reasons must be unique snake_case words"),
    ({"units": "move"}, "units 'move' is also a population's label"),
    ({"populations": {}, "target_populations": {"tasks": "task"}}, "only one without targets derives its own units"),
    ({"sessions_independent": True}, "sessions_independent is for an objective that projects Sessions"),
    ({"sessions_independent": True, "unit_skip_reasons": (), "populations": {},
      "target_populations": {"tasks": "task"}}, "sessions_independent is for an objective that projects Sessions"),
])
def test_malformed_unit_declarations_are_refused(changes: dict[str, Any], message: str) -> None:
    declared: dict[str, Any] = {"title": "T", "unit": "CI transition", "units": "transitions",
                                "recipes": (Recipe("all", 1),), "unit_skip_reasons": ("lonely",),
                                "populations": {"moves": PopulationInfo(SCHEMA_ID, label="move")}}
    with pytest.raises(ValueError, match=message):
        ObjectiveInfo(**{**declared, **changes})


def export(tmp_path: Path, produce: Any, name: str = "out") -> dict[str, Any]:
    registry = plugin_registry(("transitions", transitions_objective(produce)), builtins=False)
    return export_objective(Evidence([], False), tmp_path / name, objective="transitions", registry=registry)


def test_units_handed_out_are_counted_and_not_derived_ones_reported(tmp_path: Path) -> None:
    progress: list[tuple[int, int]] = []

    def produce(context: ExportContext) -> Iterator[Any]:
        yield NotDerived("flaky", 2)
        yield NotDerived("conflicting_run_identity")
        for unit in context.derived(["a", "b", "c"]):
            if unit == "b":
                yield Declined("unexplained")
                continue
            yield ProjectedRow("train", {"unit": unit, "schema_id": SCHEMA_ID})
        yield NotDerived("lonely")

    registry = plugin_registry(("transitions", transitions_objective(produce)), builtins=False)
    summary = export_objective(Evidence([], False), tmp_path / "out", objective="transitions", registry=registry,
                               progress=lambda done, total: progress.append((done, total)))
    assert list(summary)[:6] == ["objective", "transitions", "transitions_skipped", "move_rows", "move_skipped",
                                 "fragmented"]
    assert summary["transitions"] == 3 and summary["move_rows"] == 2
    # in vocabulary order, whatever the order they were yielded in
    assert summary["transitions_skipped"] == {"conflicting_run_identity": 1, "lonely": 1, "flaky": 2}
    assert summary["move_skipped"] == {"unexplained": 1}
    assert progress == [(1, 3), (2, 3), (3, 3)]


def test_a_reason_outside_the_unit_vocabulary_is_a_plugin_bug(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match="skip reason 'unexplained' is not in the transitions vocabulary of "
                                          "objective 'transitions'"):
        export(tmp_path, lambda c: iter([NotDerived("unexplained")]))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-transitions-target"]
    with pytest.raises(ValueError, match="a NotDerived count is a positive integer"):
        NotDerived("lonely", 0)


def test_not_derived_from_an_objective_that_does_not_derive_units_is_a_plugin_bug(tmp_path: Path) -> None:
    module = transitions_objective(lambda c: iter([NotDerived("lonely")]), unit_skip_reasons=())
    registry = plugin_registry(("transitions", module), builtins=False)
    with pytest.raises(PluginError, match="must yield ProjectedRow or Declined values, got NotDerived"):
        export_objective(Evidence([], False), tmp_path / "out", objective="transitions", registry=registry)


# --- the context of a direct export -------------------------------------------------------------


def test_a_bundles_evidence_has_no_fact_store(tmp_path: Path) -> None:
    context = ExportContext(Evidence([], True), recipe=Recipe("all", 1))
    for read in (context.ci_outcomes, lambda: context.quarantine_revision, lambda: context.derivation_policy_digest):
        with pytest.raises(ConfigurationError, match="CI outcomes are read from the fact store, which an export "
                                                     "from a bundle does not read"):
            read()
    assert context.mirror(CommitKey(ORG, REPO, "a" * 40)) is None  # no mirror root


def test_a_direct_export_offers_ci_outcomes_resolution_and_mirrors(tmp_path: Path, mirror_root: MirrorRoot,
                                                                   git_repo: GitRepo) -> None:
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    sha = git_repo.commit({"a.py": "a = 1\n"})
    store.append([outcome("o2", sha, "passed", run_id="2"), outcome("o1", sha, "failed", run_id="1"),
                  outcome("o3", sha, "passed", run_id="3")])
    store.quarantine(ORG, "ci_outcomes", "o3", "test")
    context = ExportContext(store_evidence(store, ORG, mirror_root), recipe=Recipe("all", 1))
    outcomes = context.ci_outcomes()
    assert [o.outcome_id for o in outcomes] == ["o1", "o2"]  # visible ones, by id
    assert context.quarantine_revision == 1
    resolved = context.resolve_ci(outcomes)
    assert resolved.skipped == {"ambiguous_workflow_verdicts": 1}
    assert resolved.resolutions[0].provenance.quarantine_revision == 1
    assert resolved.resolutions[0].provenance.policy_digest == context.ci_policy_digest
    mirror = context.mirror(CommitKey(ORG, REPO, sha))
    assert mirror is not None and mirror.has_commit(sha)
    assert context.mirror(CommitKey(ORG, "owner/absent", sha)) is None
    assert context.derivation_policy_digest == store_evidence(store, ORG, None).facts.policy.digest  # type: ignore[union-attr]


def test_commit_attributions_are_every_call_of_the_sessions_that_made_a_commit() -> None:
    a, b = "a" * 40, "b" * 40
    observed = SessionCommitObservation(observation_id="obs-1", org_id=ORG, repo=REPO, commit_sha=a, session_id="s1",
                                        captured_at=T0)
    elsewhere = SessionCommitObservation(observation_id="obs-2", org_id=ORG, repo=REPO, commit_sha=b, session_id="s1",
                                         captured_at=T0)
    rollouts = [
        rollout("s1", calls=conversation("s1", turns=2), commits=[a, b], session_commit_observations=(observed, elsewhere)),
        rollout("s2", calls=conversation("s2", turns=1), commits=[CommitRef(repo=REPO, commit_sha=a)],
                attribution_source="jaccard", split="eval"),
        rollout("s3", calls=conversation("s3", turns=1), commits=[b]),
    ]
    found = commit_attributions(rollouts, [CommitKey(ORG, REPO, a)])
    calls = found.calls(CommitKey(ORG, REPO, a))
    assert [(c.inference_call_id, c.session_id, c.attribution_source, c.session_commit_observation_ids)
            for c in calls] == [("s1-c0", "s1", "git_notes", ("obs-1",)), ("s1-c1", "s1", "git_notes", ("obs-1",)),
                                ("s2-c0", "s2", "jaccard", ())]
    assert found.calls(CommitKey(ORG, REPO, b)) == ()  # not asked for
    assert found.calls(CommitKey(ORG, "owner/other", a)) == ()  # another repository's commit
    assert found.call("s3-c0") is not None and found.call("s2-c0").split == "eval"  # type: ignore[union-attr]
    assert found.call("nope") is None
