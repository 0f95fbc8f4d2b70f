"""Objectives are plugins: their declaration, the registry's rules for them, one-plugin
dispatch, the export context, the writer discipline every objective gets, and a core that
never names one."""

from __future__ import annotations

import math
import os
import random
import re
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sediment.errors import OutputDirectoryError, PluginError, UnknownObjectiveError, UnknownProfileError, UsageError
from sediment.export.pipeline import Evidence, export_objective
from sediment.file_modes import published_mode
from sediment.host.discovery import BUILTIN_OBJECTIVES, PluginOrigin, PluginSource
from sediment.host.registry import load_registry
from sediment.plugin import (
    Declined,
    ExportContext,
    ObjectiveInfo,
    PluginSettings,
    Population,
    PopulationInfo,
    ProjectedRow,
    Recipe,
    RolloutEvidence,
    TargetInfo,
    hookimpl,
)
from sediment.settings import SettingsSources
from sediment.testing import outcome, plugin_registry, rollout, run_objective, snapshot

ROOT = Path(__file__).parents[1]
CORE = ("conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
        "repository_identity_conflict", "repository_identity_unresolved", "repository_mirror_identity_unresolved",
        "repository_source_absent", "non_finite_number", "unrepresentable_unicode")
SCHEMA_ID = "https://example.com/schemas/note/v1.json"
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, "type": "object",
          "required": ["session_id", "recipe"]}


class NoteSettings(PluginSettings):
    prefix: str = ""


def make_objective(name: str = "notes", *, populations: Sequence[str] = ("notes",), own: Sequence[str] = ("silent",),
                   calls: list[str] | None = None, produce: Any = None, schemas: Sequence[dict[str, Any]] = (SCHEMA,),
                   **declared: Any) -> types.ModuleType:
    """An objective without targets: one ``notes`` row per Rollout with segments (the recipe
    and a settings prefix in it), ``silent`` for a Rollout without; ``produce`` replaces that."""
    module = types.ModuleType(f"objective_{name}")
    info = {"title": name.upper(), "unit": "Rollout", "units": "rollouts",
            "recipes": (Recipe("notes_all", 1, "every Rollout"), Recipe("notes_split", 2)),
            "populations": {p: PopulationInfo(SCHEMA_ID, tuple(own), label="note") for p in populations},
            "direct_needs_mirrors": False, **declared}

    @hookimpl
    def describe_objective() -> ObjectiveInfo:
        return ObjectiveInfo(**info)

    @hookimpl
    def register_schemas() -> Sequence[dict[str, Any]]:
        return list(schemas)

    @hookimpl
    def plugin_settings() -> type[PluginSettings]:
        return NoteSettings

    @hookimpl
    def project_evidence(context: ExportContext, settings: NoteSettings) -> Iterator[ProjectedRow | Declined]:
        if calls is not None:
            calls.append(name)
        if produce is not None:
            yield from produce(context)
            return
        for evidence in context.rollouts():
            r = evidence.rollout
            if not r.segments:
                yield Declined("silent")
                continue
            yield ProjectedRow(r.split, {"session_id": settings.prefix + r.session_id, "recipe": context.recipe.name,
                                         "version": context.recipe.version, "schema_id": SCHEMA_ID})

    for fn in (describe_objective, register_schemas, plugin_settings, project_evidence):
        setattr(module, fn.__name__, fn)
    return module


def registry_with(*plugins: tuple[str, object], builtins: bool = False) -> Any:
    return plugin_registry(*plugins, builtins=builtins)


def export(registry: Any, out: Path, rollouts: Sequence[Any], objective: str = "notes", **kwargs: Any) -> dict[str, Any]:
    split = kwargs.pop("split_enabled", False)
    return export_objective(Evidence(list(rollouts), split), out, objective=objective, registry=registry, **kwargs)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="ascii").splitlines()


# --- the declaration ----------------------------------------------------------------------


def test_discovery_finds_the_builtin_objectives() -> None:
    registry = load_registry()
    assert tuple(sorted(registry.objectives)) == BUILTIN_OBJECTIVES == ("diff-sft", "dpo", "recovery", "rlvr", "sft")
    rlvr = registry.objectives["rlvr"]
    assert rlvr.origin.distribution == "sediment"
    assert registry.default_objective is rlvr
    assert rlvr.targets == ("nemo-gym", "sediment", "swe-bench")
    assert {t.objective for t in registry.targets.values()} == {"rlvr"}
    assert {p.objective for p in registry.profiles.values()} == {"rlvr", "sft", "dpo"}
    # a profile of an objective without targets names the objective as what it adapts
    assert {(n, p.info.target) for n, p in registry.profiles.items() if p.objective != "rlvr"} == {
        ("hf-trl-sft-v3", "sft"), ("fireworks-sft-v2", "sft"), ("hf-trl-dpo-v4", "dpo"), ("fireworks-dpo-v3", "dpo")}


@pytest.mark.parametrize(("changes", "message"), [
    ({"recipes": ()}, "at least one Recipe"),
    ({"recipes": (Recipe("a", 1), Recipe("a", 2))}, "recipe names must be unique"),
    ({"populations": {}}, "either its own populations or the populations of its targets"),
    ({"target_populations": {"tasks": "task"}}, "either its own populations or the populations of its targets"),
    ({"populations": {"data": PopulationInfo(SCHEMA_ID)}}, r"populations \['data'\] are the file stems of profile"),
    ({"populations": {"Notes.v2": PopulationInfo(SCHEMA_ID)}}, "a population name must be a snake_case word"),
    ({"units": "Rollouts"}, "units must be a snake_case word"),
    ({"title": " "}, "declares its title and its unit of evidence"),
])
def test_malformed_declarations_are_refused(changes: dict[str, Any], message: str) -> None:
    declared: dict[str, Any] = {"title": "N", "unit": "Rollout", "units": "rollouts", "recipes": (Recipe("r", 1),),
                                "populations": {"notes": PopulationInfo(SCHEMA_ID)}}
    with pytest.raises(ValueError, match=message):
        ObjectiveInfo(**{**declared, **changes})


@pytest.mark.parametrize("bad", [Recipe, lambda n, v: Recipe(n, v)])
def test_recipes_are_words_with_positive_versions(bad: Any) -> None:
    with pytest.raises(ValueError, match="a recipe name must be a snake_case word"):
        bad("SFT Curated", 1)
    with pytest.raises(ValueError, match="version must be a positive integer"):
        bad("sft_curated", 0)
    with pytest.raises(ValueError, match="version must be a positive integer"):
        bad("sft_curated", True)


def test_the_registry_composes_the_core_reasons_in_front() -> None:
    registry = registry_with(("notes", make_objective(own=("silent", "muted"))))
    notes = registry.objectives["notes"]
    assert notes.vocabularies == {"notes": (*CORE, "silent", "muted")}
    assert notes.as_json()["populations"]["notes"]["skip_reasons"] == [*CORE, "silent", "muted"]
    with pytest.raises(PluginError, match=r"declares core skip reasons \['non_finite_number'\]"):
        registry_with(("bad", make_objective("bad", own=("non_finite_number",))))


# --- the registry's rules -----------------------------------------------------------------


def test_two_distributions_declaring_one_objective_name_both() -> None:
    sources = [PluginSource(make_objective(), PluginOrigin("notes", dist, "1.0", "m")) for dist in ("dist-a", "dist-b")]
    with pytest.raises(PluginError, match="'notes' is declared twice: by dist-a .* and by dist-b"):
        load_registry(sources)


def test_one_default_objective_and_one_owner_per_population() -> None:
    with pytest.raises(PluginError, match=r"objectives 'notes' \(inline \(test\)\) and 'rlvr' \(sediment\) both "
                                          "declare themselves the default objective"):
        registry_with(("notes", make_objective(default_objective=True)))
    with pytest.raises(PluginError, match=r"population notes \(notes.jsonl\) is declared by objective 'more' "
                                          r"\(inline \(test\)\) and by objective 'notes'"):
        registry_with(("notes", make_objective()), ("more", make_objective("more", schemas=())))
    with pytest.raises(PluginError, match=r"population tasks \(tasks.jsonl\) is declared by objective 'mine'.* and "
                                          "by objective 'rlvr'"):
        registry_with(("mine", make_objective("mine", populations=("tasks",))))


def test_the_kind_decides_which_work_hook_an_objective_implements() -> None:
    orphan = make_objective()
    del orphan.describe_objective
    with pytest.raises(PluginError, match=r"implements \['project_evidence'\] but not describe_objective"):
        registry_with(("notes", orphan))
    silent = make_objective()
    del silent.project_evidence
    with pytest.raises(PluginError, match="declares its own populations but does not implement project_evidence"):
        registry_with(("notes", silent))
    both = make_objective(populations=(), target_populations={"notes": "note"})
    with pytest.raises(PluginError, match="declares target populations, so its targets project; it must not"):
        registry_with(("notes", both))
    with pytest.raises(PluginError, match="declares schema https://example.com/schemas/note/v1.json for notes, but "
                                          "no plugin registers it"):
        registry_with(("notes", make_objective(schemas=())))


def make_target(objective: str | None, populations: Sequence[str] = ("rollouts",)) -> types.ModuleType:
    module = types.ModuleType("target_t")

    @hookimpl
    def describe_target() -> TargetInfo:
        return TargetInfo(populations={p: PopulationInfo(SCHEMA_ID) for p in populations}, needs_mirrors=False,
                          objective=objective)

    @hookimpl
    def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
        return None

    @hookimpl
    def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
        return [ProjectedRow(evidence.rollout.split, {"session_id": evidence.rollout.session_id, "recipe": "r",
                                                      "schema_id": SCHEMA_ID})]

    for fn in (describe_target, eligible, project_row):
        setattr(module, fn.__name__, fn)
    return module


def test_every_target_belongs_to_an_installed_objective_with_targets() -> None:
    schemas = ("schemas", make_objective("schemas", populations=("unused",)))  # registers the row schema
    assert registry_with(("t", make_target(None)), schemas).targets["t"].objective == "rlvr"  # contract v2
    assert registry_with(("t", make_target("rlvr")), schemas).targets["t"].objective == "rlvr"
    with pytest.raises(PluginError, match=r"target 't' \(inline \(test\)\) belongs to objective 'orpo', which is not "
                                          "installed; see `sediment objectives`"):
        registry_with(("t", make_target("orpo")), schemas)
    with pytest.raises(PluginError, match="belongs to objective 'schemas', which has no targets"):
        registry_with(("t", make_target("schemas")), schemas)
    with pytest.raises(PluginError, match=r"writes populations \['notes'\]; objective 'rlvr' targets write "
                                          r"\['tasks', 'rollouts'\]"):
        registry_with(("t", make_target(None, ("notes",))), schemas)


def test_a_v2_target_without_any_objective_installed_is_refused() -> None:
    with pytest.raises(PluginError, match="names no objective, and no installed objective is the default"):
        load_registry([PluginSource(make_target(None), PluginOrigin("t", "d", "1", "m"))])


# --- dispatch and the export context ------------------------------------------------------


def test_an_export_reaches_the_chosen_objective_only(tmp_path: Path) -> None:
    calls: list[str] = []
    registry = registry_with(("notes", make_objective(calls=calls)),
                             ("other", make_objective("other", populations=("other",), calls=calls, schemas=())))
    summary = export(registry, tmp_path / "out", [rollout("s1"), rollout("s2")])
    assert calls == ["notes"]
    assert list(summary) == ["objective", "rollouts", "note_rows", "note_skipped", "fragmented", "written", "manifests"]
    assert (summary["objective"], summary["rollouts"], summary["note_rows"]) == ("notes", 2, 2)
    with pytest.raises(UnknownObjectiveError, match="unsupported export objective: orpo; installed objectives: "
                                                    "diff-sft, dpo, notes, other, recovery, rlvr, sft"):
        export(registry, tmp_path / "o2", [], objective="orpo")


def test_the_test_kit_exports_an_objective_and_validates_its_rows(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    result = run_objective([rollout("s1"), rollout("s2", split="eval")], tmp_path / "out", objective="notes",
                           registry=registry, split_enabled=True, settings={"notes": {"prefix": "kit-"}})
    assert [r["session_id"] for r in result.rows["notes.train.jsonl"]] == ["kit-s1"]
    assert [r["session_id"] for r in result.rows["notes.eval.jsonl"]] == ["kit-s2"]
    strict = {**SCHEMA, "properties": {"recipe": {"const": "another"}}}
    with pytest.raises(AssertionError, match="notes.jsonl:1 violates its schema"):
        run_objective([rollout("s1")], tmp_path / "strict", objective="notes",
                      registry=registry_with(("notes", make_objective(schemas=(strict,)))))


def test_the_recipe_and_settings_reach_the_objective(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    sources = SettingsSources.load(environ={"SEDIMENT_NOTES_PREFIX": "env-"}, overrides=[])
    export(registry, tmp_path / "a", [rollout("s1")], settings=sources)
    export(registry, tmp_path / "b", [rollout("s1")], recipe="notes_split")
    assert lines(tmp_path / "a" / "notes.jsonl") == [
        '{"session_id": "env-s1", "recipe": "notes_all", "version": 1, '
        '"schema_id": "https://example.com/schemas/note/v1.json"}']
    assert '"recipe": "notes_split", "version": 2' in lines(tmp_path / "b" / "notes.jsonl")[0]
    with pytest.raises(UnknownObjectiveError, match="unsupported NOTES recipe: sft_curated; recipes: notes_all, "
                                                    "notes_split"):
        export(registry, tmp_path / "c", [], recipe="sft_curated")
    assert not (tmp_path / "c").exists()


def test_an_objective_without_targets_takes_no_target_and_only_its_own_profiles(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    with pytest.raises(UsageError, match="objective notes has no targets; it writes notes rows itself"):
        export(registry, tmp_path / "out", [], target="sediment")
    with pytest.raises(UnknownProfileError, match="unsupported profile: hf-trl-sft-v3; installed profiles: none"):
        export(registry, tmp_path / "out", [], profile="hf-trl-sft-v3")
    assert not (tmp_path / "out").exists()


def test_the_context_streams_rollouts_in_export_order_with_progress(tmp_path: Path) -> None:
    seen: list[str] = []
    progress: list[tuple[int, int]] = []

    def produce(context: ExportContext) -> Iterator[ProjectedRow]:
        assert context.rollout_count == 3 and context.read == 0
        for evidence in context.rollouts():
            seen.append(evidence.rollout.session_id)
            assert len(progress) == len(seen) - 1  # the one before is reported done when the next is asked for
            assert evidence.recipe == context.recipe
        return
        yield  # pragma: no cover

    registry = registry_with(("notes", make_objective(produce=produce)))
    summary = export(registry, tmp_path / "out", [rollout("s3"), rollout("s1"), rollout("s2")],
                     progress=lambda done, total: progress.append((done, total)))
    assert seen == ["s1", "s2", "s3"]
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert summary["rollouts"] == 3 and summary["written"] == {}


def test_declines_and_representation_are_counted_against_the_closed_vocabulary(tmp_path: Path) -> None:
    def produce(context: ExportContext) -> Iterator[ProjectedRow | Declined]:
        yield Declined("silent", 2)
        yield ProjectedRow("train", {"session_id": "s", "recipe": "r", "score": math.nan, "schema_id": SCHEMA_ID})
        yield ProjectedRow("train", {"session_id": "\ud800", "recipe": "r", "schema_id": SCHEMA_ID})
        yield ProjectedRow("train", {"session_id": "kept", "recipe": "r", "schema_id": SCHEMA_ID})

    registry = registry_with(("notes", make_objective(produce=produce)))
    summary = export(registry, tmp_path / "out", [])
    assert summary["note_skipped"] == {"non_finite_number": 1, "unrepresentable_unicode": 1, "silent": 2}
    assert summary["note_rows"] == 1 and len(lines(tmp_path / "out" / "notes.jsonl")) == 1


@pytest.mark.parametrize(("item", "message"), [
    (Declined("invented"), "'invented' is not in the notes vocabulary of objective 'notes'"),
    (ProjectedRow("train", {}, population="elsewhere"), "for population 'elsewhere', which it does not declare"),
    ({"session_id": "s"}, "must yield ProjectedRow or Declined values, got dict"),
    (ProjectedRow("both", {}), "without a train/eval split"),  # type: ignore[arg-type]
])
def test_a_contract_breach_is_a_plugin_error_and_publishes_nothing(tmp_path: Path, item: Any, message: str) -> None:
    def produce(context: ExportContext) -> Iterator[Any]:
        yield ProjectedRow("train", {"session_id": "first", "recipe": "r", "schema_id": SCHEMA_ID})
        yield item

    registry = registry_with(("notes", make_objective(produce=produce)))
    with pytest.raises(PluginError, match=message):
        export(registry, tmp_path / "out", [])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-notes-target"]


def test_several_populations_need_named_rows(tmp_path: Path) -> None:
    def produce(context: ExportContext) -> Iterator[ProjectedRow]:
        yield ProjectedRow("eval", {"session_id": "b", "recipe": "r", "schema_id": SCHEMA_ID}, population="beta")
        yield ProjectedRow("train", {"session_id": "a", "recipe": "r", "schema_id": SCHEMA_ID}, population="alpha")
        yield ProjectedRow("train", {"session_id": "?", "recipe": "r", "schema_id": SCHEMA_ID})

    registry = registry_with(("notes", make_objective(populations=("alpha", "beta"), produce=produce)))
    with pytest.raises(PluginError, match=r"yielded a row without a population; it declares \['alpha', 'beta'\]"):
        export(registry, tmp_path / "out", [], split_enabled=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-notes-target"]


# --- the writer discipline every objective gets -------------------------------------------


def split_population() -> list[Any]:
    return [rollout("s1"), rollout("s2", split="eval"), rollout("s3", segments=())]


def test_claim_staging_and_atomic_split_publication(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    out = tmp_path / "out"
    summary = export(registry, out, split_population(), split_enabled=True)
    assert summary["written"] == {str(out / "notes.train.jsonl"): 1, str(out / "notes.eval.jsonl"): 1}
    assert summary["note_skipped"] == {"silent": 1}
    assert sorted(p.name for p in out.iterdir()) == [".sediment-notes-target", "notes.eval.jsonl",
                                                     "notes.train.jsonl"]  # no stage, no lock left
    assert (out / ".sediment-notes-target").read_text() == "notes\n"
    assert oct((out / "notes.train.jsonl").stat().st_mode & 0o777) == oct(published_mode())  # 0666 less the umask


def test_a_second_generation_is_refused_so_no_partition_goes_stale(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    out = tmp_path / "out"
    export(registry, out, split_population(), split_enabled=True)
    before = snapshot(out)
    with pytest.raises(OutputDirectoryError, match=r"already contains notes artifacts \(notes.eval.jsonl, "
                                                   r"notes.train.jsonl\); use a new directory for each export"):
        export(registry, out, [rollout("s1")], split_enabled=True)  # its eval side would be empty
    assert snapshot(out) == before


def test_empty_partitions_create_nothing_and_an_empty_export_may_reuse_its_directory(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    out = tmp_path / "out"
    assert export(registry, out, [rollout("s3", segments=())], split_enabled=True)["written"] == {}
    assert sorted(p.name for p in out.iterdir()) == [".sediment-notes-target"]
    summary = export(registry, out, [rollout("s1")], split_enabled=True)
    assert summary["written"] == {str(out / "notes.train.jsonl"): 1}
    assert not (out / "notes.eval.jsonl").exists()


def test_a_failing_projection_publishes_nothing(tmp_path: Path) -> None:
    def produce(context: ExportContext) -> Iterator[ProjectedRow]:
        yield ProjectedRow("train", {"session_id": "first", "recipe": "r", "schema_id": SCHEMA_ID})
        raise RuntimeError("the objective broke halfway")

    registry = registry_with(("notes", make_objective(produce=produce)))
    with pytest.raises(RuntimeError, match="halfway"):
        export(registry, tmp_path / "out", [])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-notes-target"]


def test_a_projection_returning_nothing_is_a_plugin_error(tmp_path: Path) -> None:
    module = make_objective()

    @hookimpl
    def project_evidence(context: ExportContext) -> None:
        return None

    module.project_evidence = project_evidence  # type: ignore[attr-defined]
    with pytest.raises(PluginError, match="^objective 'notes' returned nothing from project_evidence$"):
        export(registry_with(("notes", module)), tmp_path / "out", [rollout("s1")])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-notes-target"]


def test_the_generation_lock(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    (tmp_path / "out" / ".sediment-notes-export.lock").mkdir(parents=True)
    with pytest.raises(OutputDirectoryError, match=r"NOTES export already in progress for output directory .*out "
                                                   r"\(if no export is running, a stopped one left "
                                                   r"\.sediment-notes-export\.lock; use a fresh directory\)"):
        export(registry, tmp_path / "out", [rollout("s1")])
    assert not (tmp_path / "out" / ".sediment-notes-target").exists()


def test_claims_of_other_objectives_refuse_the_directory(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()), builtins=True)
    out = tmp_path / "out"
    export_objective(Evidence([rollout("s1")], False), out, objective="rlvr", target="nemo-gym", registry=registry)
    with pytest.raises(OutputDirectoryError, match="already belongs to RLVR target nemo-gym; use a different "
                                                   "directory for notes"):
        export(registry, out, [rollout("s1")])
    assert not (out / ".sediment-notes-target").exists()
    mine = tmp_path / "mine"
    export(registry, mine, [rollout("s1")])
    with pytest.raises(OutputDirectoryError, match="already belongs to NOTES objective notes; use a different "
                                                   "directory for nemo-gym"):
        export_objective(Evidence([], False), mine, objective="rlvr", target="nemo-gym", registry=registry)
    uninstalled = tmp_path / "uninstalled"
    uninstalled.mkdir()
    (uninstalled / ".sediment-orpo-target").write_text("orpo\n")
    with pytest.raises(OutputDirectoryError, match=r"already belongs to an export of objective orpo \(orpo\), which is "
                                                   "not installed"):
        export(registry, uninstalled, [rollout("s1")])
    rlvr_rows = tmp_path / "rows"
    rlvr_rows.mkdir()
    (rlvr_rows / "rollouts.jsonl").write_text("{}\n")
    with pytest.raises(OutputDirectoryError, match=r"contains export artifacts without a target claim "
                                                   r"\(rollouts.jsonl\)"):
        export(registry, rlvr_rows, [rollout("s1")])


def test_two_objectives_racing_for_one_directory_never_both_claim_it(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports of two objectives hold different locks: the claimant that finds another objective's
    claim beside its own after linking withdraws it and refuses."""
    registry = registry_with(("notes", make_objective()))
    out = tmp_path / "out"
    out.mkdir()
    real_link = os.link

    def link_while_another_claims(source: Any, destination: Any) -> None:
        real_link(source, destination)
        (out / ".sediment-rlvr-target").write_text("sediment\n")  # the other export's claim lands now

    monkeypatch.setattr(os, "link", link_while_another_claims)
    with pytest.raises(OutputDirectoryError, match="already belongs to RLVR target sediment"):
        export(registry, out, [rollout("s1")])
    assert sorted(p.name for p in out.iterdir()) == [".sediment-rlvr-target"]


def test_shuffled_and_repeated_input_give_identical_bytes(tmp_path: Path) -> None:
    registry = registry_with(("notes", make_objective()))
    sha = "a" * 40
    population = [rollout(f"s{i}", split="eval" if i % 3 == 0 else "train", commits=[sha],
                          outcomes=[outcome(f"o{i}", sha)]) for i in range(12)]
    outputs = []
    for attempt in range(3):
        shuffled = list(population)
        random.Random(attempt).shuffle(shuffled)
        export(registry, tmp_path / f"out{attempt}", shuffled, split_enabled=True)
        outputs.append(snapshot(tmp_path / f"out{attempt}"))
    assert outputs[0] == outputs[1] == outputs[2]


# --- the core never names an objective ----------------------------------------------------


def test_the_core_never_names_an_objective() -> None:
    """Not in the pipeline, writer, registry, context nor the CLI: objectives are declared, not
    known. (``host/discovery.py`` pins the built-in names; the library keeps the seed's
    ``export_rlvr_from_*`` names as thin calls of ``export_through_target``, without branching on them.)"""
    names = re.compile("|".join(rf"['\"]{re.escape(name)}['\"]" for name in BUILTIN_OBJECTIVES))
    offenders = []
    for path in sorted(ROOT.glob("sediment/**/*.py")):
        relative = str(path.relative_to(ROOT))
        if relative == "sediment/host/discovery.py":
            continue
        text = path.read_text(encoding="utf-8")
        for match in names.finditer(text):
            offenders.append(f"{relative}:{text[: match.start()].count(chr(10)) + 1}: {match.group()}")
    assert offenders == [], offenders


def test_an_objective_reading_ci_counts_the_resolver_reasons_it_yields(tmp_path: Path) -> None:
    sha = "a" * 40
    ambiguous = rollout("s1", commits=[sha], outcomes=[
        outcome("o1", sha, "passed", run_id="1"),
        outcome("o2", sha, "failed", run_id="2", workflow_name="lint", workflow_id="78",
                workflow_path=".github/workflows/lint.yml")])

    def produce(context: ExportContext) -> Iterator[Declined]:
        for evidence in context.rollouts():
            for reason, count in evidence.ci.skipped.items():
                yield Declined(reason, count)

    registry = registry_with(("notes", make_objective(produce=produce)))
    summary = export(registry, tmp_path / "out", [ambiguous, rollout("s2")])
    assert summary["note_skipped"] == {"ambiguous_workflow_verdicts": 1}
    assert summary["written"] == {}
