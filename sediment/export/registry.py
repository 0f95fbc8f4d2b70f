"""The plugin registry: targets, profiles and manifest writers, validated once at start-up.

Every plugin is dispatched one at a time through a subset hook caller. The registry owns
the core's vocabularies: a target's population vocabulary is the CI resolver's reasons, then
the representation reasons, then the target's own (in that documented order); a profile's is
the representation reasons, then its own. It owns the row schemas too: the core's component
schemas plus every plugin's ``register_schemas``, one ``$id`` each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pluggy

from sediment.ci_resolution import RESOLVER_SKIP_REASONS
from sediment.errors import PluginError, UnknownProfileError, UnknownTargetError
from sediment.export.evidence import RolloutEvidence
from sediment.export.plugins import PluginOrigin, PluginSource, build_plugin_manager, discover_entry_points
from sediment.export.representation import REPRESENTATION_REASONS
from sediment.export.rows import (
    POPULATIONS,
    AdaptedRow,
    ManifestInfo,
    Population,
    ProfileInfo,
    ProjectedRow,
    PublishedExport,
    TargetInfo,
    jsonl_names,
)
from sediment.export.settings import NoSettings, PluginSettings, SettingsSources, env_names
from sediment.validation import SchemaSet, core_schemas

#: The core's reasons at the head of every target vocabulary, in this order.
TARGET_CORE_REASONS: tuple[str, ...] = (*RESOLVER_SKIP_REASONS, *REPRESENTATION_REASONS)
#: The core's reasons at the head of every profile vocabulary.
PROFILE_CORE_REASONS: tuple[str, ...] = REPRESENTATION_REASONS
#: The files every profile export writes beside its rows.
COMPATIBILITY_FILE = "compatibility.json"

_TARGET_HOOKS = ("eligible", "project_row")
_KIND_HOOKS = {"describe_target": _TARGET_HOOKS, "describe_profile": ("adapt_row",),
               "describe_manifest": ("write_manifest",)}


def _composed(core: tuple[str, ...], own: tuple[str, ...], where: str) -> tuple[str, ...]:
    clash = [r for r in own if r in core]
    if clash:
        raise PluginError(f"{where} declares core skip reasons {clash}; the registry adds those itself")
    return (*core, *own)


@dataclass(frozen=True, kw_only=True)
class _Plugin:
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
class Target(_Plugin):
    """A registered target: its declaration, composed vocabularies and where it came from."""

    info: TargetInfo
    vocabularies: Mapping[Population, tuple[str, ...]] = field(default_factory=dict)

    @property
    def populations(self) -> tuple[Population, ...]:
        return tuple(p for p in POPULATIONS if p in self.info.populations)

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
            "description": self.info.description,
            "files": {p: list(self.file_names(p)) for p in self.populations},
            "skip_reasons": {p: list(self.vocabularies[p]) for p in self.populations},
            "schema_ids": {p: self.schema_id(p) for p in self.populations},
            "needs_mirrors": self.info.needs_mirrors,
            "settings": self.settings_json(),
            "origin": self.origin_json(),
        }


@dataclass(frozen=True, kw_only=True)
class Profile(_Plugin):
    """A registered consumer profile."""

    info: ProfileInfo
    vocabulary: tuple[str, ...] = ()

    @property
    def file_names(self) -> tuple[str, ...]:
        return (*jsonl_names("data"), *jsonl_names("evidence"), COMPATIBILITY_FILE)

    def adapt(self, row: Mapping[str, Any], evidence: RolloutEvidence, settings: PluginSettings,
              index: int) -> AdaptedRow | str:
        result = self._callers["adapt_row"](row=row, evidence=evidence, settings=settings, index=index)
        if not isinstance(result, AdaptedRow | str):
            raise PluginError(f"profile {self.name!r} adapt_row must return an AdaptedRow or a skip reason, "
                              f"got {type(result).__name__}")
        return result

    def count(self, tally: Counter[str], reasons: Iterable[str]) -> None:
        _count(tally, self.vocabulary, reasons,
               f"the vocabulary of profile {self.name!r} (plugin from {self.origin.distribution})")

    def as_json(self) -> dict[str, Any]:
        return {
            **self.info.record(self.name),
            "description": self.info.description,
            "files": list(self.file_names),
            "skip_reasons": list(self.vocabulary),
            "retires": list(self.info.retires),
            "settings": self.settings_json(),
            "origin": self.origin_json(),
        }


@dataclass(frozen=True, kw_only=True)
class Manifest(_Plugin):
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


def _count(tally: Counter[str], vocabulary: tuple[str, ...], reasons: Iterable[str], where: str) -> None:
    for reason in reasons:
        if reason not in vocabulary:
            raise PluginError(f"skip reason {reason!r} is not in {where}")
        tally[reason] += 1


class PluginRegistry:
    """Every installed plugin, by kind, with the row schemas they register."""

    def __init__(self, pm: pluggy.PluginManager, origins: Mapping[str, PluginOrigin]) -> None:
        self._pm = pm
        self.targets: dict[str, Target] = {}
        self.profiles: dict[str, Profile] = {}
        self.manifests: dict[str, Manifest] = {}
        self.retired: dict[str, str] = {}
        schemas = dict(core_schemas())
        schema_origin = dict.fromkeys(schemas, "the Sediment core")
        for name, plugin in sorted(pm.list_name_plugin()):
            origin = origins[name]
            implemented = {impl.name for impl in pm.get_hookcallers(plugin) or ()}
            others = [p for n, p in pm.list_name_plugin() if n != name]
            callers = {hook: pm.subset_hook_caller(hook, remove_plugins=others) for hook in implemented}
            self._check_kinds(name, origin, implemented)
            settings_model = self._settings_model(name, origin, callers)
            for schema in self._schemas(name, origin, callers):
                sid = schema["$id"]
                if sid in schemas:
                    raise PluginError(f"schema {sid} is registered twice: by {schema_origin[sid]} and by "
                                      f"plugin {name!r} ({origin.distribution})")
                schemas[sid], schema_origin[sid] = schema, f"plugin {name!r} ({origin.distribution})"
            base: dict[str, Any] = {"name": name, "origin": origin, "settings_model": settings_model,
                                    "_callers": callers}
            if "describe_target" in implemented:
                self.targets[name] = self._target(base, callers)
            if "describe_profile" in implemented:
                self.profiles[name] = self._profile(base, callers)
            if "describe_manifest" in implemented:
                info = callers["describe_manifest"]()
                if not isinstance(info, ManifestInfo):
                    raise PluginError(f"manifest plugin {name!r} ({origin.distribution}): describe_manifest "
                                      "must return ManifestInfo")
                self.manifests[name] = Manifest(**base, info=info)
        self.schemas = SchemaSet(schemas)
        self._check_references()

    # --- building -----------------------------------------------------------------------

    @staticmethod
    def _check_kinds(name: str, origin: PluginOrigin, implemented: set[str]) -> None:
        for describe, hooks in _KIND_HOOKS.items():
            has = [h for h in hooks if h in implemented]
            if describe in implemented and len(has) < len(hooks):
                raise PluginError(f"plugin {name!r} ({origin.distribution}) implements {describe} but not "
                                  f"{[h for h in hooks if h not in implemented]}")
            if has and describe not in implemented:
                raise PluginError(f"plugin {name!r} ({origin.distribution}) implements {has} but not {describe}")

    @staticmethod
    def _settings_model(name: str, origin: PluginOrigin, callers: Mapping[str, Any]) -> type[PluginSettings]:
        if "plugin_settings" not in callers:
            return NoSettings
        model = callers["plugin_settings"]()
        if not (isinstance(model, type) and issubclass(model, PluginSettings)):
            raise PluginError(f"plugin {name!r} ({origin.distribution}): plugin_settings must return a "
                              "PluginSettings subclass")
        return model

    @staticmethod
    def _schemas(name: str, origin: PluginOrigin, callers: Mapping[str, Any]) -> list[dict[str, Any]]:
        if "register_schemas" not in callers:
            return []
        schemas = list(callers["register_schemas"]() or ())
        for schema in schemas:
            if not isinstance(schema, Mapping) or not isinstance(schema.get("$id"), str):
                raise PluginError(f"plugin {name!r} ({origin.distribution}) registers a schema without an $id")
        return [dict(s) for s in schemas]

    @staticmethod
    def _target(base: dict[str, Any], callers: Mapping[str, Any]) -> Target:
        name, origin = base["name"], base["origin"]
        info = callers["describe_target"]()
        if not isinstance(info, TargetInfo):
            raise PluginError(f"target {name!r} ({origin.distribution}): describe_target must return TargetInfo")
        vocabularies = {
            population: _composed(TARGET_CORE_REASONS, declared.skip_reasons,
                                  f"target {name!r} ({origin.distribution}) population {population}")
            for population, declared in info.populations.items()
        }
        return Target(**base, info=info, vocabularies=vocabularies)

    @staticmethod
    def _profile(base: dict[str, Any], callers: Mapping[str, Any]) -> Profile:
        name, origin = base["name"], base["origin"]
        info = callers["describe_profile"]()
        if not isinstance(info, ProfileInfo):
            raise PluginError(f"profile {name!r} ({origin.distribution}): describe_profile must return ProfileInfo")
        vocabulary = _composed(PROFILE_CORE_REASONS, info.skip_reasons, f"profile {name!r} ({origin.distribution})")
        return Profile(**base, info=info, vocabulary=vocabulary)

    def _check_references(self) -> None:
        """Declared schemas exist, profiles name a real target population, retirements are unique."""
        for target in self.targets.values():
            for population in target.populations:
                if target.schema_id(population) not in self.schemas:
                    raise PluginError(f"target {target.name!r} ({target.origin.distribution}) declares schema "
                                      f"{target.schema_id(population)} for {population}, but no plugin registers it")
        for profile in self.profiles.values():
            info, where = profile.info, f"profile {profile.name!r} ({profile.origin.distribution})"
            adapted = self.targets.get(info.target)
            if adapted is None or info.population not in adapted.populations:
                raise PluginError(f"{where} adapts {info.target} {info.population}, which no installed target writes")
            if adapted.schema_id(info.population) != info.canonical_schema:
                raise PluginError(f"{where} reads {info.canonical_schema}, but target {info.target} writes "
                                  f"{adapted.schema_id(info.population)}")
            for old in info.retires:
                if old in self.profiles or old in self.retired:
                    first = self.retired.get(old, old)
                    raise PluginError(f"{where} retires {old!r}, which is already installed or retired by {first!r}")
                self.retired[old] = profile.name

    # --- lookup -------------------------------------------------------------------------

    def get(self, name: str | None) -> Target:
        """The target called ``name``; an unknown or missing name lists the installed ones."""
        if name is None or name not in self.targets:
            installed = ", ".join(sorted(self.targets)) or "none"
            said = "no --target given" if name is None else f"unsupported RLVR target: {name}"
            raise UnknownTargetError(f"{said}; installed targets: {installed}")
        return self.targets[name]

    def profile(self, name: str, *, target: str | None = None, objective: str = "rlvr") -> Profile:
        """The profile called ``name``, checked against ``objective`` and ``target``; retired and
        unknown names are one-line usage errors."""
        if name in self.retired:
            raise UnknownProfileError(f"profile {name} is retired; use {self.retired[name]}")
        if name not in self.profiles:
            installed = ", ".join(sorted(self.profiles)) or "none"
            raise UnknownProfileError(f"unsupported profile: {name}; installed profiles: {installed}")
        profile = self.profiles[name]
        if profile.info.objective != objective:
            raise UnknownProfileError(f"profile {name} does not support objective {objective}; "
                                      f"it adapts {profile.info.objective} rows")
        if target is not None and profile.info.target != target:
            raise UnknownProfileError(f"profile {name} adapts rows of target {profile.info.target}, not {target}; "
                                      f"use --target {profile.info.target}")
        return profile

    def settings(self, name: str, sources: SettingsSources) -> PluginSettings:
        """The validated settings of plugin ``name`` from ``sources``."""
        plugin: _Plugin | None = self.targets.get(name) or self.profiles.get(name) or self.manifests.get(name)
        if plugin is None:
            raise KeyError(name)
        return sources.build(name, plugin.settings_model)

    def check_settings_sources(self, sources: SettingsSources) -> None:
        """Every plugin a config table or a ``--set`` flag names is installed."""
        known = set(self.targets) | set(self.profiles) | set(self.manifests)
        unknown = sorted(sources.plugin_names() - known)
        if unknown:
            from sediment.errors import ConfigurationError

            raise ConfigurationError(f"settings name plugins that are not installed: {', '.join(unknown)}; "
                                     "see `sediment targets` and `sediment profiles`")

    @cached_property
    def artifact_names(self) -> frozenset[str]:
        """Every file name an export may publish: rows of every target and profile, and manifests."""
        names = {n for t in self.targets.values() for p in t.populations for n in t.file_names(p)}
        names |= {n for p in self.profiles.values() for n in p.file_names}
        names |= {n for m in self.manifests.values() for n in m.info.files}
        return frozenset(names)

    def write_manifests(self, published: PublishedExport, sources: SettingsSources) -> dict[str, list[str]]:
        """Call each manifest plugin, in name order, after publication; the paths each wrote."""
        written: dict[str, list[str]] = {}
        for name, manifest in sorted(self.manifests.items()):
            path = manifest.write(published, self.settings(name, sources))
            if path is not None:
                written[name] = [str(path)]
        return written


def load_registry(sources: Iterable[PluginSource] | None = None) -> PluginRegistry:
    """Build the registry from installed entry points (or from explicit ``sources``)."""
    pm, origins = build_plugin_manager(discover_entry_points() if sources is None else sources)
    return PluginRegistry(pm, origins)
