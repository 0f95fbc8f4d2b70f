"""Re-deriving one exported row from its evidence (a bundle, or the fact store and mirrors),
as ``sediment export`` would, for ``sediment explain``: the row, the Rollout it came from and
the reasons its unit declined, if it did.

Rows of a target are re-projected one Rollout at a time, in export order, through the same
:func:`~sediment.export.projection.project_population` an export runs; only the Sessions the
row's identity can name are projected (an ``instance_id`` starts with ``<org>-<session>``). Rows of
an objective without targets are re-projected through
:class:`~sediment.export.projection.ObjectiveProjection` over the whole evidence (the objective
pairs or groups units itself).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sediment.ci.resolution import DEFAULT_CI_POLICY
from sediment.evidence.context import Evidence, ExportContext, export_order
from sediment.evidence.rollout import RolloutEvidence
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export.projection import ObjectiveProjection, Tally, project_population
from sediment.export.writer import encode_row
from sediment.host.kinds import Objective, Target
from sediment.host.registry import PluginRegistry
from sediment.model.rollout import Rollout
from sediment.records import canonical_digest
from sediment.reports.exported_rows import RowRef, identity, row_field
from sediment.settings import SettingsSources


@dataclass(frozen=True)
class Owner:
    """Who wrote a row: the objective, the target (``None`` for an objective without targets),
    the population, and the profile that adapted it (if any)."""

    objective: Objective
    target: Target | None
    population: str
    profile: str | None = None

    @property
    def label(self) -> str:
        owner = f"target {self.target.name}" if self.target is not None else f"objective {self.objective.name}"
        kind = f"{self.objective.title} {self.population} row ({owner})"
        return kind if self.profile is None else f"profile {self.profile} line of a {kind}"


def owner_of(ref: RowRef, registry: PluginRegistry) -> Owner:
    """The objective, target and population behind ``ref``."""
    population = ref.population
    name = ref.owner
    if ref.profile is not None:
        profile = registry.profiles[ref.profile]
        name, population = profile.info.target, profile.info.population
    if name in registry.targets:
        target = registry.targets[name]
        return Owner(registry.objective(target.objective), target, population, ref.profile)
    return Owner(registry.objective(name), None, population, ref.profile)


@dataclass
class Derivation:
    """What re-deriving a row found: the row (``None`` when its unit no longer yields it), its
    encoded line, the Rollout it came from (target rows), and the decline reasons of the units
    that could have yielded it."""

    body: dict[str, Any] | None = None
    rollout: Rollout | None = None
    unit: RolloutEvidence | None = None
    declined: Counter[str] = field(default_factory=Counter)
    sessions: list[str] = field(default_factory=list)

    @property
    def line(self) -> str | None:
        return None if self.body is None else encode_row(self.body).decode("ascii").rstrip("\n")


def matcher(ref: RowRef) -> Callable[[dict[str, Any]], bool]:
    """Whether a re-derived row is ``ref``'s: the canonical row a profile line's sidecar names
    (by digest, else by the instance id it records), or the row with ``ref``'s identity."""
    if ref.profile_evidence is not None:
        digest = ref.profile_evidence["source_row_sha256"]
        fallback = ref.profile_evidence.get("instance_id")
        return lambda body: canonical_digest(body) == digest or (
            isinstance(fallback, str) and row_field(body, "instance_id") == fallback)
    wanted = identity(ref.row)
    if not wanted:
        return lambda body: canonical_digest(body) == canonical_digest(ref.row)
    return lambda body: identity(body) == wanted


def _sessions(ref: RowRef) -> Callable[[str, str], bool]:
    """Which ``(org, session)`` units may yield ``ref``'s row (all, when its identity does not say)."""
    session = row_field(ref.row, "session_id")
    instance = row_field(ref.profile_evidence or ref.row, "instance_id")
    if isinstance(session, str) and ref.profile_evidence is None:
        return lambda org, candidate: candidate == session
    if isinstance(instance, str):
        return lambda org, candidate: instance.startswith(f"{org}-{candidate}-")
    return lambda org, candidate: True


def rederive(ref: RowRef, owner: Owner, evidence: Evidence, registry: PluginRegistry, *,
             settings: SettingsSources | None = None, verifier_commands: VerifierCommands | None = None) -> Derivation:
    """Re-derive ``ref``'s canonical row from ``evidence`` as its export would."""
    sources = settings or SettingsSources.empty()
    recipe_name = row_field(ref.row, "recipe_id")
    names = {r.name for r in owner.objective.info.recipes}
    recipe = owner.objective.recipe(recipe_name if recipe_name in names else None)
    commands = verifier_commands if verifier_commands is not None else VerifierCommands.from_environment()
    repositories = evidence.repositories or getattr(evidence.rollouts, "repositories", None)
    match = matcher(ref)
    found = Derivation()
    if owner.target is None:
        projection = ObjectiveProjection(owner.objective, registry.settings(owner.objective.name, sources))
        context = ExportContext(evidence, recipe=recipe, verifier_commands=commands, ci_policy=DEFAULT_CI_POLICY,
                                repositories=repositories, settings=sources)
        tally = Tally()
        for population, row in projection.representable_rows(context, tally, tally.skips):
            if population == owner.population and match(row.body):
                found.body = row.body
                break
        found.declined = Counter(tally.skips(owner.population))
        return found
    target = owner.target
    target_settings = registry.settings(target.name, sources)
    rollouts = evidence.rollouts
    keys_of = getattr(rollouts, "order_keys", None)
    keys = keys_of() if callable(keys_of) else [(rollouts[i].org_id, rollouts[i].session_id)
                                                 for i in range(len(rollouts))]
    may_yield = _sessions(ref)
    for index in export_order(rollouts):
        org, session = keys[index]
        if not may_yield(org, session):
            continue
        rollout = rollouts[index]
        found.sessions.append(session)
        unit = RolloutEvidence(rollout, mirrors=evidence.mirrors, verifier_commands=commands,
                               ci_policy=DEFAULT_CI_POLICY, recipe=recipe, repositories=repositories)
        declined: Counter[str] = Counter()
        for row in project_population(target, owner.population, unit, target_settings, declined):
            if match(row.body):
                found.body, found.rollout, found.unit = row.body, rollout, unit
                return found
        found.declined.update(declined)
        if found.rollout is None:  # the unit that should have yielded it: kept for the chain
            found.rollout, found.unit = rollout, unit
    return found
