"""How an export turns its evidence into staged rows: the :class:`Projection` protocol, the
per-population projection every target export shares, :class:`TargetProjection`, and
:class:`ObjectiveProjection` for objectives that project their own populations."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from sediment.errors import PluginError
from sediment.evidence.context import ExportContext
from sediment.evidence.representation import representation_problem
from sediment.evidence.rollout import RolloutEvidence
from sediment.export.writer import RowFiles
from sediment.host.declarations import Declined, NotDerived, ProjectedRow, PublishedExport
from sediment.host.kinds import Objective, Target
from sediment.settings import PluginSettings

#: The tally key of evidence that did not become a unit (never a population name: not a word).
UNITS_TALLY = "<units>"


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

    #: the claim written to the output directory
    claim: str
    #: the file stems published, in publication order
    stems: tuple[str, ...]
    #: whether chunks may be projected in parallel worker processes
    parallel_safe: bool

    def project(self, evidence: RolloutEvidence, files: RowFiles, tally: Tally) -> None: ...

    def before_publish(self, tally: Tally) -> None: ...

    def summary(self, rollouts: int, tally: Tally, published: PublishedExport) -> dict[str, Any]: ...


def population_summary(objective: Objective, tally: Tally, vocabularies: dict[str, tuple[str, ...]] | Any
                       ) -> dict[str, Any]:
    """``<label>_rows`` and ``<label>_skipped`` for every population the objective (or its
    targets) may write, in its order: ``task_rows``, ``task_skipped``, ``rollout_rows``, …"""
    summary: dict[str, Any] = {}
    for population in objective.info.population_names:
        label = objective.info.label(population)
        summary[f"{label}_rows"] = tally.emitted[population]
        summary[f"{label}_skipped"] = ordered_counts(tally.skips(population), vocabularies.get(population, ()))
    return summary


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

    def __init__(self, target: Target, settings: PluginSettings, objective: Objective) -> None:
        self.target = target
        self.settings = settings
        self.objective = objective
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
        return {"target": self.target.name, self.objective.info.units: rollouts,
                **population_summary(self.objective, tally, self.target.vocabularies)}


class ObjectiveProjection:
    """An export of an objective without targets: the objective projects its own populations
    from the :class:`~sediment.evidence.context.ExportContext`, the core checks and stages what it
    yields."""

    def __init__(self, objective: Objective, settings: PluginSettings) -> None:
        self.objective = objective
        self.settings = settings
        #: whether runs of Sessions may be projected in parallel worker processes
        self.parallel_safe = objective.info.sessions_independent
        self.claim = objective.name
        self.stems: tuple[str, ...] = objective.populations

    def _population(self, named: str | None, what: str) -> str:
        declared = self.objective.populations
        if named is None:
            if len(declared) != 1:
                raise PluginError(f"objective {self.objective.name!r} yielded a {what} without a population; it "
                                  f"declares {list(declared)}")
            return declared[0]
        if named not in declared:
            raise PluginError(f"objective {self.objective.name!r} yielded a {what} for population {named!r}, which "
                              f"it does not declare ({list(declared)})")
        return named

    def row_population(self, row: ProjectedRow) -> str:
        """The population of a yielded row; a row without a train/eval split or a JSON object
        body, or of a population the objective does not declare, is a plugin bug."""
        population = self._population(row.population, "row")
        if row.split not in ("train", "eval") or not isinstance(row.body, dict):
            raise PluginError(f"objective {self.objective.name!r} yielded a {population} row without a "
                              "train/eval split or a JSON object body")
        return population

    def run(self, context: ExportContext, files: RowFiles, tally: Tally) -> None:
        """Stage every representable row the objective yields; count every decline."""
        for population, row in self.representable_rows(context, tally, tally.skips):
            files.add(population, row.split, row.body)
            tally.emitted[population] += 1

    def representable_rows(self, context: ExportContext, tally: Tally,
                           skips: Callable[[str], Counter[str] | None]) -> Iterator[tuple[str, ProjectedRow]]:
        """The representable rows the objective yields, each with its population, as it yields
        them. Declines and unrepresentable rows of a population are counted in ``skips(population)``;
        where that is ``None`` they are passed over, and so are the population's rows."""
        produced: Iterable[Any] = self.objective.project(context, self.settings)
        for item in produced:
            if isinstance(item, ProjectedRow):
                population = self.row_population(item)
                counts = skips(population)
                if counts is None:
                    continue
                problem = representation_problem(item.body)
                if problem is not None:
                    self.objective.count(counts, population, [problem])
                    continue
                yield population, item
            elif isinstance(item, Declined):
                population = self._population(item.population, "decline")
                counts = skips(population)
                if counts is not None:
                    self.objective.count(counts, population, [item.reason] * item.count)
            else:
                self.count_not_derived(item, tally)

    def count_not_derived(self, item: Any, tally: Tally) -> None:
        """Count a :class:`NotDerived` value; anything else the objective yields is a plugin bug."""
        if isinstance(item, NotDerived) and self.objective.unit_vocabulary:
            self.objective.count_units(tally.skips(UNITS_TALLY), [item.reason] * item.count)
        else:
            allowed = "ProjectedRow, Declined or NotDerived" if self.objective.unit_vocabulary else \
                "ProjectedRow or Declined"
            raise PluginError(f"objective {self.objective.name!r} project_evidence must yield {allowed} values, "
                              f"got {type(item).__name__}")

    def before_publish(self, tally: Tally) -> None:
        return None

    def summary(self, units: int, tally: Tally, published: PublishedExport) -> dict[str, Any]:
        name = self.objective.info.units
        summary: dict[str, Any] = {"objective": self.objective.name, name: units}
        if self.objective.unit_vocabulary:
            summary[f"{name}_skipped"] = ordered_counts(tally.skips(UNITS_TALLY), self.objective.unit_vocabulary)
        return summary | population_summary(self.objective, tally, self.objective.vocabularies)
