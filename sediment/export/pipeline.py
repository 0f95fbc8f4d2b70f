"""RLVR export orchestration: one Rollout at a time, through the chosen target (and, for a
consumer profile, through that profile), into the writer.

``eligible → project_row → representation check → stage``, per Rollout and population
(:class:`~sediment.export.projection.TargetProjection`); with a profile, each canonical row is
then validated against its schema and adapted
(:class:`~sediment.export.adaptation.ProfileProjection`). Then publish,
then manifests. Rollouts are ordered by ``(org_id, session_id, input index)``, so shuffled
input gives identical bytes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sediment.ci_resolution import DEFAULT_CI_POLICY, CIResolutionPolicy
from sediment.errors import ConfigurationError
from sediment.export.adaptation import ProfileProjection
from sediment.export.evidence import RolloutEvidence
from sediment.export.projection import Projection, Tally, TargetProjection
from sediment.export.registry import PluginRegistry, load_registry
from sediment.export.settings import SettingsSources
from sediment.export.verifier_commands import VerifierCommands
from sediment.export.writer import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_MAX_STAGE_BYTES,
    StagingStore,
    claim_directory,
    generation_lock,
)
from sediment.mirrors import MirrorRoot
from sediment.parallel import ordered_chunks
from sediment.repositories import RepositoryContext
from sediment.rollout import Rollout

ProgressCallback = Callable[[int, int], None]


class OrderedRollouts(Protocol):
    """A lazily indexable Rollout sequence that knows its order keys without parsing rows."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Rollout: ...
    def order_keys(self) -> Sequence[tuple[str, str]]: ...


RolloutSource = Sequence[Rollout] | OrderedRollouts


@dataclass(frozen=True)
class Budgets:
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    max_stage_bytes: int = DEFAULT_MAX_STAGE_BYTES


def _export_order(rollouts: RolloutSource) -> list[int]:
    order_keys = getattr(rollouts, "order_keys", None)
    if callable(order_keys):
        keys: Sequence[tuple[str, str]] = order_keys()
    else:
        keys = [(rollouts[i].org_id, rollouts[i].session_id) for i in range(len(rollouts))]
    return sorted(range(len(keys)), key=lambda i: (keys[i][0], keys[i][1], i))


@dataclass
class _ChunkResult:
    """What one chunk of Rollouts produced (returned from a worker process)."""

    directory: Path
    tally: Tally
    positions: int = 0
    counts: dict[Any, int] = field(default_factory=dict)
    bytes: int = 0
    stats: Any = None


def export_rlvr_from_rollouts(
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
) -> dict[str, Any]:
    """Project ``rollouts`` through ``target`` (and ``profile``) into ``out_dir``; the summary.

    :param rollouts: trusted canonical Rollouts; a lazily indexable sequence is read one at a time.
    :param mirrors: the mirror root, or ``None`` for targets that project without mirrors.
    :param split_enabled: write ``.train``/``.eval`` files instead of one file per stem.
    :param profile: a consumer profile adapting the target's rows; the output directory then
        holds ``data``/``evidence`` files and ``compatibility.json`` instead of canonical rows.
    :param settings: where plugin settings come from (default: their defaults only).
    :param verifier_commands: defaults to the file named by ``SEDIMENT_VERIFIER_COMMANDS_FILE``.
    :param fragmented: segmentation counts of the derivation, reported in the summary.
    :param progress: called with ``(done, total)`` after each Rollout (after each chunk with workers).
    :param workers: processes projecting contiguous chunks of the ordered Rollouts, merged in
        order while later chunks are projected; the files are byte-identical to a
        single-process export. A profile export adapts in one process (its rows carry their
        position in their file).
    :param repositories: the repository context CI resolves with; by default the source's own
        (``rollouts.repositories``: a bundle's population, the store's for a direct export).
        Without one only legacy (identity-less) CI outcomes resolve.
    """
    if repositories is None:
        repositories = getattr(rollouts, "repositories", None)
    registry = registry or load_registry()
    sources = settings or SettingsSources.empty()
    registry.check_settings_sources(sources)
    chosen = registry.get(target)
    if mirrors is None and chosen.info.needs_mirrors:
        mirrorless = sorted(n for n, t in registry.targets.items() if not t.info.needs_mirrors)
        raise ConfigurationError(
            f"mirrors must be supplied for target={target!r}; only "
            f"{', '.join(repr(n) for n in mirrorless) or 'no target'} projects without a mirror"
        )
    projection: Projection
    if profile is None:
        projection = TargetProjection(chosen, registry.settings(chosen.name, sources))
    else:
        adapter = registry.profile(profile, target=chosen.name)
        projection = ProfileProjection(chosen, registry.settings(chosen.name, sources), adapter,
                                       registry.settings(adapter.name, sources), registry.schemas,
                                       split_enabled=split_enabled)
        workers = 1
    if verifier_commands is None:
        verifier_commands = VerifierCommands.from_environment()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tally = Tally()
    with generation_lock(out):
        claim_directory(out, projection.claim, registry.artifact_names)
        stage = StagingStore(out, split_enabled=split_enabled, max_record_bytes=budgets.max_record_bytes,
                             max_stage_bytes=budgets.max_stage_bytes)
        try:
            for result in _project_chunks(rollouts, projection, stage, mirrors, verifier_commands, ci_policy,
                                          progress, workers, repositories):
                tally.update(result.tally)
            projection.before_publish(tally)
            published = stage.publish(projection.stems, target=chosen.name, profile=profile)
        finally:
            stage.close()
        summary = projection.summary(len(rollouts), tally, published)
        summary["fragmented"] = dict(fragmented or {})
        summary["written"] = published.written
        summary["manifests"] = registry.write_manifests(published, sources)
    return summary


def _project_chunks(rollouts: RolloutSource, projection: Projection, stage: StagingStore,
                    mirrors: MirrorRoot | None, verifier_commands: VerifierCommands,
                    ci_policy: CIResolutionPolicy, progress: ProgressCallback | None, workers: int,
                    repositories: RepositoryContext | None) -> Any:
    """Project every Rollout in export order, in chunks; yield each chunk's result in order
    after merging its files into the stage."""
    order = _export_order(rollouts)
    parallel = workers > 1 and len(order) > 1 and projection.parallel_safe

    def project_chunk(chunk: range) -> _ChunkResult:
        files = stage.row_files(f"chunk-{chunk.start:09d}") if parallel else stage.prepared
        result = _ChunkResult(files.directory, Tally(), positions=len(chunk))
        for position in chunk:
            evidence = RolloutEvidence(rollouts[order[position]], mirrors=mirrors,
                                       verifier_commands=verifier_commands, ci_policy=ci_policy,
                                       repositories=repositories)
            projection.project(evidence, files, result.tally)
            if progress is not None and not parallel:
                progress(position + 1, len(order))
        if parallel:  # the parent appends these files to its own, then fsyncs those
            files.close()
            take_stats = getattr(rollouts, "take_stats", None)
            result.stats = take_stats() if callable(take_stats) else None
        result.counts, result.bytes = dict(files.counts), files.bytes
        return result

    done = 0
    after_fork = getattr(rollouts, "after_fork", None)
    for result in ordered_chunks(project_chunk, len(order), workers if parallel else 1,
                                 on_fork=after_fork if callable(after_fork) else None):
        done += result.positions
        if parallel:  # merged as soon as it and every chunk before it are done
            stage.prepared.absorb(result.directory, result.counts, result.bytes, sync=True)
            shutil.rmtree(result.directory)
            merge = getattr(rollouts, "merge_stats", None)
            if result.stats is not None and callable(merge):
                merge(result.stats)
            if progress is not None:
                progress(done, len(order))
        yield result
