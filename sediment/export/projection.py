"""How an export turns one Rollout into staged rows: the :class:`Projection` protocol, the
per-population projection every export shares, and :class:`TargetProjection`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from sediment.export.evidence import RolloutEvidence
from sediment.export.registry import Target
from sediment.export.representation import representation_problem
from sediment.export.rows import ProjectedRow, PublishedExport
from sediment.export.settings import PluginSettings
from sediment.export.writer import RowFiles


@dataclass
class Tally:
    """What projecting some Rollouts produced: rows per stem, skip counts per vocabulary, and
    (for profiles) the prompt digests per split side and the canonical reward sources."""

    emitted: Counter[str] = field(default_factory=Counter)
    skipped: dict[str, Counter[str]] = field(default_factory=dict)
    prompts: dict[str, set[str]] = field(default_factory=dict)
    reward_sources: Counter[str] = field(default_factory=Counter)

    def skips(self, key: str) -> Counter[str]:
        return self.skipped.setdefault(key, Counter())

    def update(self, other: Tally) -> None:
        self.emitted.update(other.emitted)
        for key, counts in other.skipped.items():
            self.skips(key).update(counts)
        for side, digests in other.prompts.items():
            self.prompts.setdefault(side, set()).update(digests)
        self.reward_sources.update(other.reward_sources)


class Projection(Protocol):
    """How one export turns a Rollout into staged rows (a target's, or a profile's)."""

    target: Target
    #: the claim written to the output directory
    claim: str
    #: the file stems published, in publication order
    stems: tuple[str, ...]
    #: whether chunks may be projected in parallel worker processes
    parallel_safe: bool

    def project(self, evidence: RolloutEvidence, files: RowFiles, tally: Tally) -> None: ...

    def before_publish(self, tally: Tally) -> None: ...

    def summary(self, rollouts: int, tally: Tally, published: PublishedExport) -> dict[str, Any]: ...


def ordered_counts(tally: Counter[str], vocabulary: tuple[str, ...]) -> dict[str, int]:
    return {reason: tally[reason] for reason in vocabulary if tally[reason]}


def project_population(target: Target, population: str, evidence: RolloutEvidence, settings: PluginSettings,
                       tally: Counter[str]) -> list[ProjectedRow]:
    """The representable rows of one population for one Rollout; every decline counted once."""
    evidence.ci_consulted = False
    pop: Any = population
    reason = target.eligible(pop, evidence, settings)
    rows = [] if reason is not None else target.project_row(pop, evidence, settings)
    if evidence.ci_consulted:
        target.count(tally, pop, evidence.ci.skipped.elements())
    if reason is not None:
        target.count(tally, pop, [reason])
        return []
    kept = []
    for row in rows:
        problem = representation_problem(row.body)
        if problem is not None:
            target.count(tally, pop, [problem])
            continue
        kept.append(row)
    return kept


class TargetProjection:
    """A target export: every population of the target, into ``<population>.jsonl`` files."""

    parallel_safe = True

    def __init__(self, target: Target, settings: PluginSettings) -> None:
        self.target = target
        self.settings = settings
        self.claim = target.name
        self.stems: tuple[str, ...] = target.populations

    def project(self, evidence: RolloutEvidence, files: RowFiles, tally: Tally) -> None:
        for population in self.target.populations:
            for row in project_population(self.target, population, evidence, self.settings, tally.skips(population)):
                files.add(population, row.split, row.body)
                tally.emitted[population] += 1

    def before_publish(self, tally: Tally) -> None:
        return None

    def summary(self, rollouts: int, tally: Tally, published: PublishedExport) -> dict[str, Any]:
        vocabularies = self.target.vocabularies
        return {
            "target": self.target.name,
            "rollouts": rollouts,
            "task_rows": tally.emitted["tasks"],
            "task_skipped": ordered_counts(tally.skips("tasks"), vocabularies.get("tasks", ())),
            "rollout_rows": tally.emitted["rollouts"],
            "rollout_skipped": ordered_counts(tally.skips("rollouts"), vocabularies.get("rollouts", ())),
        }
