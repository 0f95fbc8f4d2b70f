"""RLVR export orchestration: one Rollout at a time, through the chosen target, into the writer.

``eligible → project_row → representation check → stage``, per Rollout and population; then
publish, then manifests. Rollouts are ordered by ``(org_id, session_id, input index)``, so
shuffled input gives identical bytes.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sediment.ci_resolution import DEFAULT_CI_POLICY, CIResolutionPolicy
from sediment.errors import ConfigurationError
from sediment.export.evidence import RolloutEvidence
from sediment.export.registry import Target, TargetRegistry, load_registry
from sediment.export.representation import representation_problem
from sediment.export.rows import Population
from sediment.export.verifier_commands import VerifierCommands
from sediment.export.writer import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_MAX_STAGE_BYTES,
    RowFiles,
    StagingStore,
    claim_directory,
    generation_lock,
)
from sediment.mirrors import MirrorRoot
from sediment.parallel import ordered_chunks
from sediment.rollout import Rollout

ProgressCallback = Callable[[int, int], None]


class OrderedRollouts(Protocol):
    """A lazily indexable Rollout sequence that knows its order keys without parsing rows."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Rollout: ...
    def order_keys(self) -> Sequence[tuple[str, str]]: ...


@dataclass
class _ChunkResult:
    """What one chunk of Rollouts produced (returned from a worker process)."""

    directory: Path
    tallies: dict[Population, Counter[str]]
    emitted: dict[Population, int]
    positions: int = 0
    counts: dict[Any, int] = field(default_factory=dict)
    bytes: int = 0
    stats: Any = None


@dataclass(frozen=True)
class Budgets:
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    max_stage_bytes: int = DEFAULT_MAX_STAGE_BYTES


RolloutSource = Sequence[Rollout] | OrderedRollouts


def _export_order(rollouts: RolloutSource) -> list[int]:
    order_keys = getattr(rollouts, "order_keys", None)
    if callable(order_keys):
        keys: Sequence[tuple[str, str]] = order_keys()
    else:
        keys = [(rollouts[i].org_id, rollouts[i].session_id) for i in range(len(rollouts))]
    return sorted(range(len(keys)), key=lambda i: (keys[i][0], keys[i][1], i))


def _ordered_counts(tally: Counter[str], vocabulary: tuple[str, ...]) -> dict[str, int]:
    return {reason: tally[reason] for reason in vocabulary if tally[reason]}


def _project(
    target: Target, population: Population, evidence: RolloutEvidence, tally: Counter[str],
    stage: RowFiles,
) -> int:
    evidence.ci_consulted = False
    reason = target.eligible(population, evidence)
    rows = [] if reason is not None else target.project_row(population, evidence)
    if evidence.ci_consulted:
        target.count(tally, population, evidence.ci.skipped.elements())
    if reason is not None:
        target.count(tally, population, [reason])
        return 0
    emitted = 0
    for row in rows:
        problem = representation_problem(row.body)
        if problem is not None:
            target.count(tally, population, [problem])
            continue
        stage.add(population, row.split, row.body)
        emitted += 1
    return emitted


def export_rlvr_from_rollouts(
    rollouts: RolloutSource,
    mirrors: MirrorRoot | None,
    out_dir: str | Path,
    *,
    target: str,
    split_enabled: bool,
    registry: TargetRegistry | None = None,
    verifier_commands: VerifierCommands | None = None,
    ci_policy: CIResolutionPolicy = DEFAULT_CI_POLICY,
    fragmented: Mapping[str, int] | None = None,
    progress: ProgressCallback | None = None,
    budgets: Budgets = Budgets(),
    workers: int = 1,
) -> dict[str, Any]:
    """Project ``rollouts`` through ``target`` into ``out_dir`` and return the export summary.

    :param rollouts: trusted canonical Rollouts; a lazily indexable sequence is read one at a time.
    :param mirrors: the mirror root, or ``None`` for targets that project without mirrors.
    :param split_enabled: write ``.train``/``.eval`` files instead of one file per population.
    :param verifier_commands: defaults to the file named by ``SEDIMENT_VERIFIER_COMMANDS_FILE``.
    :param fragmented: segmentation counts of the derivation, reported in the summary.
    :param progress: called with ``(done, total)`` after each Rollout (after each chunk with workers).
    :param workers: processes projecting contiguous chunks of the ordered Rollouts, merged in
        order while later chunks are projected; the files are byte-identical to a
        single-process export.
    """
    registry = registry or load_registry()
    chosen = registry.get(target)
    if mirrors is None and chosen.info.needs_mirrors:
        mirrorless = sorted(n for n, t in registry.targets.items() if not t.info.needs_mirrors)
        raise ConfigurationError(
            f"mirrors must be supplied for target={target!r}; only "
            f"{', '.join(repr(n) for n in mirrorless) or 'no target'} projects without a mirror"
        )
    if verifier_commands is None:
        verifier_commands = VerifierCommands.from_environment()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tallies: dict[Population, Counter[str]] = {p: Counter() for p in chosen.populations}
    emitted: dict[Population, int] = {p: 0 for p in chosen.populations}
    with generation_lock(out):
        claim_directory(out, chosen.name, registry.artifact_names())
        stage = StagingStore(
            out,
            split_enabled=split_enabled,
            max_record_bytes=budgets.max_record_bytes,
            max_stage_bytes=budgets.max_stage_bytes,
        )
        try:
            order = _export_order(rollouts)
            parallel = workers > 1 and len(order) > 1

            def project_chunk(chunk: range) -> _ChunkResult:
                files = stage.row_files(f"chunk-{chunk.start:09d}") if parallel else stage.prepared
                result = _ChunkResult(files.directory, {p: Counter() for p in chosen.populations},
                                      {p: 0 for p in chosen.populations}, positions=len(chunk))
                for position in chunk:
                    evidence = RolloutEvidence(rollouts[order[position]], mirrors=mirrors,
                                               verifier_commands=verifier_commands, ci_policy=ci_policy)
                    for population in chosen.populations:
                        result.emitted[population] += _project(chosen, population, evidence,
                                                               result.tallies[population], files)
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
            for result in ordered_chunks(project_chunk, len(order), workers,
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
                for population in chosen.populations:
                    tallies[population].update(result.tallies[population])
                    emitted[population] += result.emitted[population]
            published = stage.publish(chosen.populations)
        finally:
            stage.close()
        manifests = registry.write_manifests(chosen.name, out, published)
    return {
        "target": chosen.name,
        "rollouts": len(rollouts),
        "task_rows": emitted.get("tasks", 0),
        "task_skipped": _ordered_counts(tallies.get("tasks", Counter()), chosen.vocabularies.get("tasks", ())),
        "rollout_rows": emitted.get("rollouts", 0),
        "rollout_skipped": _ordered_counts(
            tallies.get("rollouts", Counter()), chosen.vocabularies.get("rollouts", ())
        ),
        "fragmented": dict(fragmented or {}),
        "written": published.written,
        "environment_manifest": str(manifests[0]) if manifests else None,
    }
