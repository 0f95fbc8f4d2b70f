"""The plugin kinds the registry holds: objectives, targets, profiles, manifest writers and
importers, each a validated plugin dispatched through its own hook caller, with the skip-reason
vocabularies it counts in (the core's reasons first, in the documented order). Built by
:class:`sediment.host.registry.PluginRegistry`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sediment.ci.resolution import RESOLVER_SKIP_REASONS
from sediment.errors import (
    PluginError,
    ProfileError,
    UnknownObjectiveError,
)
from sediment.evidence.recipe import Recipe
from sediment.evidence.representation import REPRESENTATION_REASONS
from sediment.evidence.rollout import RolloutEvidence
from sediment.host.declarations import (
    AdaptedRow,
    ImporterInfo,
    IncompatibleRow,
    ManifestInfo,
    ObjectiveInfo,
    Population,
    ProfileInfo,
    ProjectedRow,
    PublishedExport,
    TargetInfo,
    claim_file_name,
    jsonl_names,
)
from sediment.host.discovery import PluginOrigin
from sediment.settings import PluginSettings, env_names

if TYPE_CHECKING:
    from sediment.evidence.context import ExportContext

#: The core's reasons at the head of every population vocabulary (a target's or an
#: objective's own), in this order.
TARGET_CORE_REASONS: tuple[str, ...] = (*RESOLVER_SKIP_REASONS, *REPRESENTATION_REASONS)
#: The core's reasons at the head of the unit vocabulary of an objective that derives its own
#: units (it resolves CI while deriving them), in this order.
UNIT_CORE_REASONS: tuple[str, ...] = RESOLVER_SKIP_REASONS
#: The core's reasons at the head of the population vocabularies of such an objective.
DERIVED_UNIT_POPULATION_CORE_REASONS: tuple[str, ...] = REPRESENTATION_REASONS
#: The core's reasons at the head of every profile vocabulary.
PROFILE_CORE_REASONS: tuple[str, ...] = REPRESENTATION_REASONS
#: The files every profile export writes beside its rows.
COMPATIBILITY_FILE = "compatibility.json"


@dataclass(frozen=True, kw_only=True)
class RegisteredPlugin:
    name: str
    origin: PluginOrigin
    settings_model: type[PluginSettings]
    _callers: Mapping[str, Any] = field(repr=False)

    def origin_json(self) -> dict[str, str]:
        return {"distribution": self.origin.distribution, "version": self.origin.version,
                "entry_point": self.origin.value}

    def settings_json(self) -> dict[str, Any]:
        env = env_names(self.name, self.settings_model)
        return {name: {"required": info.is_required(), "env": env[name],
                       "default": None if info.is_required() else info.get_default(call_default_factory=True)}
                for name, info in self.settings_model.model_fields.items()}


@dataclass(frozen=True, kw_only=True)
class Objective(RegisteredPlugin):
    """A registered export objective: its declaration, the composed vocabularies of its own
    populations, and where it came from. ``targets`` names its targets (none for an objective
    with a single canonical row contract)."""

    info: ObjectiveInfo
    vocabularies: Mapping[Population, tuple[str, ...]] = field(default_factory=dict)
    targets: tuple[str, ...] = ()
    #: the composed vocabulary of evidence that did not become a unit (empty unless the
    #: objective derives its own units)
    unit_vocabulary: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        return self.info.title

    @property
    def has_targets(self) -> bool:
        return self.info.has_targets

    @property
    def populations(self) -> tuple[Population, ...]:
        """Its own populations, in publication order (none for an objective with targets)."""
        return tuple(self.info.populations)

    def file_names(self, population: Population) -> tuple[str, ...]:
        return jsonl_names(population)

    def schema_id(self, population: Population) -> str:
        return self.info.populations[population].schema_id

    @property
    def claim_file(self) -> str:
        return claim_file_name(self.name)

    def recipe(self, name: str | None) -> Recipe:
        """The recipe called ``name`` (the default for ``None``); another name is a usage error."""
        try:
            return self.info.recipe(name)
        except KeyError:
            choices = ", ".join(r.name for r in self.info.recipes)
            raise UnknownObjectiveError(f"unsupported {self.title} recipe: {name}; recipes: {choices}") from None

    def project(self, context: ExportContext, settings: PluginSettings) -> Iterable[Any]:
        """What ``project_evidence`` yields for this export (rows and declines, checked by the caller)."""
        return self._yielded("project_evidence", context, settings)

    @property
    def diagnoses(self) -> bool:
        """Whether it takes part in ``sediment report dataset-diagnostics`` (``diagnose_evidence``)."""
        return "diagnose_evidence" in self._callers

    def diagnose(self, context: ExportContext, settings: PluginSettings) -> Iterable[Any]:
        """What ``diagnose_evidence`` yields for this report (records checked by the caller)."""
        return self._yielded("diagnose_evidence", context, settings)

    def _yielded(self, hook: str, context: ExportContext, settings: PluginSettings) -> Iterable[Any]:
        """What one of its evidence hooks returns (an iterable; nothing at all is a plugin bug)."""
        result = self._callers[hook](context=context, settings=settings)
        if result is None:
            raise PluginError(f"objective {self.name!r} returned nothing from {hook}")
        return result  # type: ignore[no-any-return]

    def count(self, tally: Counter[str], population: Population, reasons: Iterable[str]) -> None:
        """Add ``reasons`` to ``tally``; a reason outside the vocabulary is a plugin bug."""
        _count(tally, self.vocabularies[population], reasons, f"the {population} vocabulary of objective "
               f"{self.name!r} (plugin from {self.origin.distribution})")

    def count_units(self, tally: Counter[str], reasons: Iterable[str]) -> None:
        """Add ``reasons`` (evidence that did not become a unit) to ``tally``; a reason outside
        the unit vocabulary is a plugin bug."""
        _count(tally, self.unit_vocabulary, reasons, f"the {self.info.units} vocabulary of objective "
               f"{self.name!r} (plugin from {self.origin.distribution})")

    def as_json(self) -> dict[str, Any]:
        info = self.info
        populations = self.populations or info.population_names
        described: dict[str, Any] = {
            "name": self.name,
            "title": info.title,
            "description": info.description,
            "unit": info.unit,
            "units": info.units,
            "recipes": [{"name": r.name, "version": r.version, "description": r.description} for r in info.recipes],
            "default_recipe": info.default_recipe.name,
            "populations": {p: {"label": info.label(p), "files": list(jsonl_names(p))} for p in populations},
            "has_targets": self.has_targets,
            "targets": list(self.targets),
        }
        if self.unit_vocabulary:
            described["unit_skip_reasons"] = list(self.unit_vocabulary)
        if not self.has_targets:
            for p in populations:
                described["populations"][p] |= {"schema_id": self.schema_id(p),
                                                "skip_reasons": list(self.vocabularies[p])}
        described |= {
            "direct_needs_mirrors": info.direct_needs_mirrors,
            "from_needs_mirrors": info.from_needs_mirrors,
            "supports_from": info.supports_from,
            "default_objective": info.default_objective,
            "settings": self.settings_json(),
            "origin": self.origin_json(),
        }
        return described


@dataclass(frozen=True, kw_only=True)
class Target(RegisteredPlugin):
    """A registered target: its declaration, its objective, composed vocabularies and where it
    came from."""

    info: TargetInfo
    vocabularies: Mapping[Population, tuple[str, ...]] = field(default_factory=dict)
    objective: str = ""
    order: tuple[Population, ...] = ()

    @property
    def populations(self) -> tuple[Population, ...]:
        """Its populations, in its objective's publication order."""
        return tuple(p for p in self.order if p in self.info.populations)

    def file_names(self, population: Population) -> tuple[str, ...]:
        return jsonl_names(population)

    def schema_id(self, population: Population) -> str:
        return self.info.populations[population].schema_id

    def eligible(self, population: Population, evidence: RolloutEvidence, settings: PluginSettings) -> str | None:
        reason: str | None = self._callers["eligible"](population=population, evidence=evidence, settings=settings)
        return reason

    def project_row(self, population: Population, evidence: RolloutEvidence,
                    settings: PluginSettings) -> Sequence[ProjectedRow]:
        rows = self._callers["project_row"](population=population, evidence=evidence, settings=settings)
        if rows is None:
            raise PluginError(f"target {self.name!r} returned no rows from project_row for {population}")
        return list(rows)

    def count(self, tally: Counter[str], population: Population, reasons: Iterable[str]) -> None:
        """Add ``reasons`` to ``tally``; a reason outside the vocabulary is a plugin bug."""
        _count(tally, self.vocabularies[population], reasons, f"the {population} vocabulary of target "
               f"{self.name!r} (plugin from {self.origin.distribution})")

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "objective": self.objective,
            "description": self.info.description,
            "files": {p: list(self.file_names(p)) for p in self.populations},
            "skip_reasons": {p: list(self.vocabularies[p]) for p in self.populations},
            "schema_ids": {p: self.schema_id(p) for p in self.populations},
            "needs_mirrors": self.info.needs_mirrors,
            "settings": self.settings_json(),
            "origin": self.origin_json(),
        }


@dataclass(frozen=True, kw_only=True)
class Profile(RegisteredPlugin):
    """A registered consumer profile."""

    info: ProfileInfo
    vocabulary: tuple[str, ...] = ()
    #: the objective whose rows it adapts: the one it names, else its target's
    objective: str = ""

    def record(self) -> dict[str, Any]:
        """The profile record published in ``compatibility.json``."""
        return self.info.record(self.name, self.objective)

    @property
    def file_names(self) -> tuple[str, ...]:
        return (*jsonl_names("data"), *jsonl_names("evidence"), COMPATIBILITY_FILE)

    def adapt(self, row: Mapping[str, Any], evidence: RolloutEvidence | None, settings: PluginSettings,
              index: int) -> AdaptedRow | str:
        try:
            result = self._callers["adapt_row"](row=row, evidence=evidence, settings=settings, index=index)
        except IncompatibleRow as refused:
            raise ProfileError(f"profile {self.name}: {refused}; nothing was published") from None
        if not isinstance(result, AdaptedRow | str):
            raise PluginError(f"profile {self.name!r} adapt_row must return an AdaptedRow or a skip reason, "
                              f"got {type(result).__name__}")
        return result

    def count(self, tally: Counter[str], reasons: Iterable[str]) -> None:
        _count(tally, self.vocabulary, reasons,
               f"the vocabulary of profile {self.name!r} (plugin from {self.origin.distribution})")

    def as_json(self) -> dict[str, Any]:
        return {
            **self.record(),
            "description": self.info.description,
            "files": list(self.file_names),
            "skip_reasons": list(self.vocabulary),
            "retires": list(self.info.retires),
            "settings": self.settings_json(),
            "origin": self.origin_json(),
        }


@dataclass(frozen=True, kw_only=True)
class Manifest(RegisteredPlugin):
    """A registered manifest writer."""

    info: ManifestInfo

    def write(self, published: PublishedExport, settings: PluginSettings) -> Path | None:
        result = self._callers["write_manifest"](published=published, settings=settings)
        if result is None:
            return None
        path = Path(result)
        if path.parent != published.out_dir or path.name not in self.info.files:
            raise PluginError(f"manifest plugin {self.name!r} wrote {path}, which is not one of its declared "
                              f"files {list(self.info.files)} in {published.out_dir}")
        return path

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.info.description, "files": list(self.info.files),
                "settings": self.settings_json(), "origin": self.origin_json()}


@dataclass(frozen=True, kw_only=True)
class Importer(RegisteredPlugin):
    """A registered trajectory importer (one source format)."""

    info: ImporterInfo

    def read(self, path: Path) -> Iterable[object]:
        """The importer's records and refusals for one file."""
        return self._callers["import_source"](path=path) or ()

    @property
    def reads_store(self) -> bool:
        """Whether it reads Sediment's Rollouts straight from the fact store (``import_store``)."""
        return "import_store" in self._callers

    def read_store(self, source: Any) -> Iterable[object]:
        """The importer's records and refusals for the fact store's Rollouts."""
        return self._callers["import_store"](source=source) or ()

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.info.description, "patterns": list(self.info.patterns),
                "source_id": self.info.source_id, "origin": self.origin_json()}


def _count(tally: Counter[str], vocabulary: tuple[str, ...], reasons: Iterable[str], where: str) -> None:
    for reason in reasons:
        if reason not in vocabulary:
            raise PluginError(f"skip reason {reason!r} is not in {where}")
        tally[reason] += 1
