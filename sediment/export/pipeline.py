"""Export orchestration, for every objective: one claimed output directory, a generation lock,
private staging, atomic per-file publication, then manifests and the summary.

An objective with targets exports through the chosen target: ``eligible → project_row →
representation check → stage``, per Rollout and population
(:class:`~sediment.export.projection.TargetProjection`, in parallel chunks with workers); with a
profile, each canonical row is then validated against its schema and adapted
(:class:`~sediment.export.adaptation.ProfileProjection`). An objective without targets
projects its own populations from the :class:`~sediment.evidence.context.ExportContext`
(:class:`~sediment.export.projection.ObjectiveProjection`). Rollouts are ordered by
``(org_id, session_id, input index)``, so shuffled input gives identical bytes.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sediment.ci.resolution import DEFAULT_CI_POLICY, CIResolutionPolicy
from sediment.errors import ConfigurationError, UsageError
from sediment.evidence.context import (
    Evidence,
    ExportContext,
    OrderedRollouts,
    ProgressCallback,
    RolloutSource,
    export_order,
)
from sediment.evidence.recipe import Recipe
from sediment.evidence.remedies import nothing_written
from sediment.evidence.rollout import RolloutEvidence
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export.adaptation import ProfileProjection
from sediment.export.objective_adaptation import ObjectiveProfileProjection
from sediment.export.projection import ObjectiveProjection, Projection, Tally, TargetProjection
from sediment.export.writer import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_MAX_STAGE_BYTES,
    Ownership,
    StagingStore,
    claim_directory,
    generation_lock,
)
from sediment.git.repositories import RepositoryContext
from sediment.host.kinds import Objective
from sediment.host.registry import PluginRegistry, load_registry
from sediment.output_paths import writing
from sediment.parallel import engine_name, ordered_chunks, require_shared_store
from sediment.settings import PluginSettings, SettingsSources

if TYPE_CHECKING:  # the git layer (pygit2) loads when a mirror is opened, not for a bundle-only export
    from sediment.git.mirror_root import MirrorRoot

#: The file formats a profile export can write its data files in (`--format`).
DATA_FORMATS: tuple[str, ...] = ("jsonl", "parquet")

__all__ = ["Budgets", "Evidence", "OrderedRollouts", "ProgressCallback", "RolloutSource", "export_objective",
           "export_through_target"]


@dataclass(frozen=True)
class Budgets:
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    max_stage_bytes: int = DEFAULT_MAX_STAGE_BYTES


@dataclass
class _ChunkResult:
    """What one chunk of Rollouts produced (returned from a worker process)."""

    directory: Path
    tally: Tally
    positions: int = 0
    counts: dict[Any, int] = field(default_factory=dict)
    bytes: int = 0
    stats: Any = None
    read: int = 0  # the units an objective's context read


def export_objective(
    evidence: Evidence,
    out_dir: str | Path,
    *,
    objective: str,
    target: str | None = None,
    profile: str | None = None,
    recipe: str | None = None,
    registry: PluginRegistry | None = None,
    settings: SettingsSources | None = None,
    verifier_commands: VerifierCommands | None = None,
    ci_policy: CIResolutionPolicy = DEFAULT_CI_POLICY,
    progress: ProgressCallback | None = None,
    budgets: Budgets = Budgets(),
    workers: int = 1,
    repositories: RepositoryContext | None = None,
    data_format: str = "jsonl",
    engine: str = "local",
) -> dict[str, Any]:
    """Export ``evidence`` as ``objective`` (through ``target`` and ``profile`` when it has
    targets) into ``out_dir``; the summary.

    :param evidence: the Rollouts (a lazily indexable sequence is read one at a time), the split,
        the mirror root (``None`` for exports that read no mirror) and the derivation's counts.
    :param target: the target to project for (required for an objective with targets, refused
        for one without).
    :param profile: a consumer profile adapting the target's rows (for an objective without
        targets, the objective's own rows of the profile's population); the output directory then
        holds ``data``/``evidence`` files and ``compatibility.json`` instead of canonical rows.
    :param recipe: one of the objective's recipes (default: its first).
    :param settings: where plugin settings come from (default: their defaults only).
    :param verifier_commands: defaults to the file named by ``SEDIMENT_VERIFIER_COMMANDS_FILE``.
    :param progress: called with ``(done, total)`` after each unit of evidence (after each chunk
        with workers).
    :param workers: processes projecting contiguous chunks of the ordered Rollouts through a
        target, merged in order while later chunks are projected; the files are byte-identical
        to a single-process export. A profile export, and an objective without targets, project
        in one process.
    :param repositories: the repository context CI resolves with; by default the evidence's own
        (``evidence.repositories``, else ``evidence.rollouts.repositories``: a bundle's population,
        the store's for a direct export). Without one only legacy (identity-less) CI outcomes resolve.
    :param data_format: ``jsonl`` (the default) or ``parquet``: a profile export's data files as
        Parquet (:mod:`sediment.export.parquet`; needs the ``parquet`` extra). The evidence
        sidecars stay JSONL; canonical exports are always JSONL.
    :param engine: ``"ray"`` projects the Rollouts by tasks on a Ray cluster instead of forked
        processes, partitioned by Session hash and merged in export order
        (:mod:`sediment.parallel.cluster`): the same bytes. A direct export needs a PostgreSQL store,
        an export from a bundle the bundle at the same path on every node. What projects in one
        process (a profile, an objective without targets) does so whatever the engine.
    """
    if data_format not in DATA_FORMATS:
        raise UsageError(f"unknown data format {data_format!r} (choices: {', '.join(DATA_FORMATS)})")
    if data_format == "parquet":
        if profile is None:
            raise UsageError("--format parquet applies to profile data files: add --profile")
        from sediment.export.parquet import require_parquet

        require_parquet()
    engine = engine_name(engine)
    if engine == "ray":
        store = getattr(evidence.rollouts, "store", None)
        if store is not None:
            require_shared_store(store.url)
    if repositories is None:
        repositories = evidence.repositories or getattr(evidence.rollouts, "repositories", None)
    registry = registry or load_registry()
    sources = settings or SettingsSources.empty()
    registry.check_settings_sources(sources)
    chosen_objective = registry.objective(objective)
    chosen_recipe = chosen_objective.recipe(recipe)
    mirrors = evidence.mirrors
    projection: Projection | ObjectiveProjection
    owner_name = chosen_objective.name
    if chosen_objective.has_targets:
        chosen = registry.get(target, objective=chosen_objective.name)
        owner_name = chosen.name
        if mirrors is None and chosen.info.needs_mirrors:
            mirrorless = sorted(n for n in chosen_objective.targets if not registry.targets[n].info.needs_mirrors)
            raise ConfigurationError(
                f"mirrors must be supplied for target={chosen.name!r}; only "
                f"{', '.join(repr(n) for n in mirrorless) or 'no target'} projects without a mirror"
            )
        if profile is None:
            projection = TargetProjection(chosen, registry.settings(chosen.name, sources), chosen_objective)
        else:
            adapter = registry.profile(profile, target=chosen.name)
            projection = ProfileProjection(chosen, registry.settings(chosen.name, sources), adapter,
                                           registry.settings(adapter.name, sources), registry.schemas,
                                           split_enabled=evidence.split_enabled, objective=chosen_objective)
            workers = 1
    else:
        if target is not None:
            raise UsageError(f"objective {chosen_objective.name} has no targets; it writes "
                             f"{', '.join(chosen_objective.populations)} rows itself")
        if mirrors is None and chosen_objective.info.from_needs_mirrors:
            raise ConfigurationError(f"mirrors must be supplied for objective {chosen_objective.name!r}")
        objective_settings = registry.settings(chosen_objective.name, sources)
        if profile is None:
            projection = ObjectiveProjection(chosen_objective, objective_settings)
        else:
            adapter = registry.profile(profile, objective=chosen_objective.name)
            projection = ObjectiveProfileProjection(chosen_objective, objective_settings, adapter,
                                                    registry.settings(adapter.name, sources), registry.schemas,
                                                    split_enabled=evidence.split_enabled)
    if verifier_commands is None:
        verifier_commands = VerifierCommands.from_environment()
    manifest_settings = registry.manifest_settings(sources)  # every setting is checked before the claim
    remedies = registry.remedies(chosen_objective, registry.targets.get(owner_name) if chosen_objective.has_targets
                                 else None, registry.profiles[profile] if profile is not None else None)
    owner = ownership(registry, chosen_objective)
    out = Path(out_dir)
    with writing("output directory", out):
        out.mkdir(parents=True, exist_ok=True)
        return _export_into(out, owner, projection, evidence, registry, manifest_settings, ExportRun(
            objective=chosen_objective, owner_name=owner_name, profile=profile, recipe=chosen_recipe,
            verifier_commands=verifier_commands, ci_policy=ci_policy, progress=progress, budgets=budgets,
            workers=workers, repositories=repositories, settings=sources, remedies=remedies,
            data_format=data_format, engine=engine))


@dataclass(frozen=True)
class ExportRun:
    """What one export was asked for, beside its projection and evidence."""

    objective: Objective
    owner_name: str
    profile: str | None
    recipe: Recipe
    verifier_commands: VerifierCommands
    ci_policy: CIResolutionPolicy
    progress: ProgressCallback | None
    budgets: Budgets
    workers: int
    repositories: RepositoryContext | None
    settings: SettingsSources
    remedies: Mapping[str, str]
    data_format: str = "jsonl"
    engine: str = "local"


def _export_into(out: Path, owner: Ownership, projection: Projection | ObjectiveProjection, evidence: Evidence,
                 registry: PluginRegistry, manifest_settings: Mapping[str, PluginSettings],
                 run: ExportRun) -> dict[str, Any]:
    """Claim ``out``, project into a private stage, publish, then write manifests; the summary."""
    tally = Tally()
    budgets = run.budgets
    with generation_lock(out, owner):
        claim_directory(out, projection.claim, owner)
        stage = StagingStore(out, split_enabled=evidence.split_enabled, max_record_bytes=budgets.max_record_bytes,
                             max_stage_bytes=budgets.max_stage_bytes)
        try:
            if isinstance(projection, ObjectiveProjection):
                units = 0
                for result in _project_chunks(evidence, projection, stage, run):
                    tally.update(result.tally)
                    units += result.read
            else:
                if run.engine == "ray" and projection.parallel_safe and len(evidence.rollouts):
                    from sediment.export.on_ray import project_on_ray

                    tally.update(project_on_ray(evidence, projection, stage.prepared, run.verifier_commands,
                                                run.ci_policy, run.recipe, run.progress, run.workers,
                                                run.repositories))
                else:
                    for result in _project_chunks(evidence, projection, stage, run):
                        tally.update(result.tally)
                units = len(evidence.rollouts)
            projection.before_publish(tally)
            published = stage.publish(projection.stems, target=run.owner_name, profile=run.profile,
                                      objective=run.objective.name,
                                      parquet=("data",) if run.data_format == "parquet" else ())
        finally:
            stage.close()
        summary = projection.summary(units, tally, published)
        summary["fragmented"] = dict(evidence.fragmented or {})
        summary["written"] = published.written
        summary["manifests"] = registry.write_manifests(published, manifest_settings)
    if not published.written:  # every unit skipped: say why, and what would change it
        hint = nothing_written(run.objective.info.units, units, tally.skipped.values(), run.remedies)
        if hint is not None:
            summary["nothing_written"] = hint
    return summary


def export_through_target(
    rollouts: RolloutSource,
    mirrors: MirrorRoot | None,
    out_dir: str | Path,
    *,
    target: str,
    split_enabled: bool,
    profile: str | None = None,
    registry: PluginRegistry | None = None,
    settings: SettingsSources | None = None,
    verifier_commands: VerifierCommands | None = None,
    ci_policy: CIResolutionPolicy = DEFAULT_CI_POLICY,
    fragmented: Mapping[str, int] | None = None,
    progress: ProgressCallback | None = None,
    budgets: Budgets = Budgets(),
    workers: int = 1,
    repositories: RepositoryContext | None = None,
    engine: str = "local",
) -> dict[str, Any]:
    """Project ``rollouts`` through ``target`` (and ``profile``) into ``out_dir``; the summary.

    :func:`export_objective` for ``target``'s objective: the one it names, else the installed
    default objective (a contract v2 target names none; an unknown target is refused as a
    target of the default objective).

    :param rollouts: trusted canonical Rollouts; a lazily indexable sequence is read one at a time.
    :param mirrors: the mirror root, or ``None`` for targets that project without mirrors.
    :param split_enabled: write ``.train``/``.eval`` files instead of one file per stem.
    :param fragmented: segmentation counts of the derivation, reported in the summary.
    :param repositories: the repository context CI resolves with (see :func:`export_objective`).
    """
    registry = registry or load_registry()
    default = registry.default_objective
    objective = registry.objective_of(target) or (default.name if default is not None else "")
    if not objective:
        registry.get(target)  # no objective owns it: the one-line unknown-target error
    return export_objective(
        Evidence(rollouts, split_enabled, mirrors, fragmented or {}), out_dir, objective=objective, target=target,
        profile=profile, registry=registry, settings=settings, verifier_commands=verifier_commands,
        ci_policy=ci_policy, progress=progress, budgets=budgets, workers=workers, repositories=repositories,
        engine=engine,
    )


def _project_chunks(evidence: Evidence, projection: Projection | ObjectiveProjection, stage: StagingStore,
                    run: ExportRun) -> Any:
    """Project every Rollout in export order, in chunks; yield each chunk's result in order
    after merging its files into the stage.

    A target's projection takes the Rollouts one by one; an objective's reads an
    :class:`ExportContext` over the chunk's Rollouts (with several workers only when it declares
    its Sessions independent: ``ObjectiveInfo.sessions_independent``; otherwise its context may
    spread a per-Session part over them: ``ExportContext.session_runs``). Either way the chunks
    are contiguous runs of the export order, so concatenating them gives one process's bytes."""
    rollouts, mirrors = evidence.rollouts, evidence.mirrors
    order = export_order(rollouts)
    parallel = run.workers > 1 and len(order) > 1 and projection.parallel_safe

    def project_chunk(chunk: range) -> _ChunkResult:
        files = stage.row_files(f"chunk-{chunk.start:09d}") if parallel else stage.prepared
        result = _ChunkResult(files.directory, Tally(), positions=len(chunk))
        progress = None if parallel else run.progress
        if isinstance(projection, ObjectiveProjection):
            context = ExportContext(evidence, recipe=run.recipe, verifier_commands=run.verifier_commands,
                                    ci_policy=run.ci_policy, progress=progress, repositories=run.repositories,
                                    settings=run.settings, order=order[chunk.start:chunk.stop],
                                    workers=1 if parallel else run.workers)
            projection.run(context, files, result.tally)
            result.read = context.read
        else:
            for position in chunk:
                unit = RolloutEvidence(rollouts[order[position]], mirrors=mirrors,
                                       verifier_commands=run.verifier_commands, ci_policy=run.ci_policy,
                                       recipe=run.recipe, repositories=run.repositories)
                projection.project(unit, files, result.tally)
                if progress is not None:
                    progress(position + 1, len(order))
        if parallel:  # the parent appends these files to its own, then fsyncs those
            files.close()
            take_stats = getattr(rollouts, "take_stats", None)
            result.stats = take_stats() if callable(take_stats) else None
        result.counts, result.bytes = dict(files.counts), files.bytes
        return result

    done = 0
    after_fork = getattr(rollouts, "after_fork", None)
    for result in ordered_chunks(project_chunk, len(order), run.workers if parallel else 1,
                                 on_fork=after_fork if callable(after_fork) else None):
        done += result.positions
        if parallel:  # merged as soon as it and every chunk before it are done
            stage.prepared.absorb(result.directory, result.counts, result.bytes, sync=True)
            shutil.rmtree(result.directory)
            merge = getattr(rollouts, "merge_stats", None)
            if result.stats is not None and callable(merge):
                merge(result.stats)
            if run.progress is not None:
                run.progress(done, len(order))
        yield result


def ownership(registry: PluginRegistry, objective: Objective) -> Ownership:
    """How ``objective``'s exports own an output directory (claim, lock, the names that make a
    directory an export's, and how other owners read in messages)."""
    labels: dict[str, str] = {}
    for target in registry.targets.values():
        labels[target.name] = f"{registry.objectives[target.objective].title} target {target.name}"
    for other in registry.objectives.values():
        if not other.has_targets:
            labels[other.name] = f"{other.title} objective {other.name}"
    foreign = set().union(*(registry.objective_files(o) for o in registry.objectives.values() if o is not objective))
    return Ownership(objective=objective.name, title=objective.title, artifact_names=registry.artifact_names,
                     foreign_artifacts=frozenset(foreign - registry.objective_files(objective)),
                     labels=labels, titles={o.name: o.title for o in registry.objectives.values()})

