"""The plugin registry: objectives, targets, profiles and manifest writers, validated once at
start-up.

Every plugin is dispatched one at a time through a subset hook caller. Every target belongs to
one objective (the one it names, else the default objective), and every profile to its
target's. The registry owns the core's vocabularies: a population's vocabulary (a target's, or
an objective's own) is the CI resolver's reasons, then the representation reasons, then the
plugin's own (in that documented order); a profile's is the representation reasons, then its
own. An objective that derives its own units (``unit_skip_reasons``) resolves CI while deriving
them: its unit vocabulary is the resolver's reasons, then its own, and its populations'
vocabularies start with the representation reasons alone. It owns the row schemas too: the
core's component schemas plus every plugin's ``register_schemas``, one ``$id`` each.
The kinds themselves, and their vocabularies, are in :mod:`sediment.host.kinds`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import cached_property
from typing import Any

import pluggy

from sediment.errors import (
    PluginError,
    UnknownObjectiveError,
    UnknownProfileError,
    UnknownTargetError,
)
from sediment.evidence.remedies import CORE_REMEDIES
from sediment.host.declarations import (
    ImporterInfo,
    ManifestInfo,
    ObjectiveInfo,
    ProfileInfo,
    PublishedExport,
    TargetInfo,
    jsonl_names,
)
from sediment.host.discovery import (
    HookCall,
    PluginOrigin,
    PluginSource,
    build_plugin_manager,
    discover_entry_points,
)
from sediment.host.kinds import (
    DERIVED_UNIT_POPULATION_CORE_REASONS,
    PROFILE_CORE_REASONS,
    TARGET_CORE_REASONS,
    UNIT_CORE_REASONS,
    Importer,
    Manifest,
    Objective,
    Profile,
    RegisteredPlugin,
    Target,
)
from sediment.settings import NoSettings, PluginSettings, SettingsSources
from sediment.validation import SchemaSet, core_schemas

_TARGET_HOOKS = ("eligible", "project_row")
_KIND_HOOKS = {"describe_target": _TARGET_HOOKS, "describe_profile": ("adapt_row",),
               "describe_manifest": ("write_manifest",), "describe_objective": (),
               "describe_importer": ("import_source",)}


def _composed(core: tuple[str, ...], own: tuple[str, ...], where: str) -> tuple[str, ...]:
    clash = [r for r in own if r in core]
    if clash:
        raise PluginError(f"{where} declares core skip reasons {clash}; the registry adds those itself")
    return (*core, *own)


def _check_remedies(remedies: Mapping[str, str], vocabulary: set[str], where: str) -> None:
    """A remedy is declared for a reason of the plugin's own (composed) vocabulary only."""
    stray = sorted(set(remedies) - vocabulary)
    if stray:
        raise PluginError(f"{where} declares remedies for reasons outside its vocabulary: {stray}")




class PluginRegistry:
    """Every installed plugin, by kind, with the row schemas they register."""

    def __init__(self, pm: pluggy.PluginManager, origins: Mapping[str, PluginOrigin]) -> None:
        self._pm = pm
        self.objectives: dict[str, Objective] = {}
        self.targets: dict[str, Target] = {}
        self.profiles: dict[str, Profile] = {}
        self.manifests: dict[str, Manifest] = {}
        self.importers: dict[str, Importer] = {}
        self.retired: dict[str, str] = {}
        schemas = dict(core_schemas())
        schema_origin = dict.fromkeys(schemas, "the Sediment core")
        declared: list[tuple[dict[str, Any], set[str]]] = []
        for name, plugin in sorted(pm.list_name_plugin()):
            origin = origins[name]
            implemented = {impl.name for impl in pm.get_hookcallers(plugin) or ()}
            others = [p for n, p in pm.list_name_plugin() if n != name]
            callers = {hook: HookCall(plugin, hook, pm.subset_hook_caller(hook, remove_plugins=others))
                       for hook in implemented}
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
            declared.append((base, implemented))
            if "describe_objective" in implemented:
                self.objectives[name] = self._objective(base, callers)
            if "describe_manifest" in implemented:
                info = callers["describe_manifest"]()
                if not isinstance(info, ManifestInfo):
                    raise PluginError(f"manifest plugin {name!r} ({origin.distribution}): describe_manifest "
                                      "must return ManifestInfo")
                self.manifests[name] = Manifest(**base, info=info)
            if "describe_importer" in implemented:
                described = callers["describe_importer"]()
                if not isinstance(described, ImporterInfo):
                    raise PluginError(f"importer plugin {name!r} ({origin.distribution}): describe_importer "
                                      "must return ImporterInfo")
                self.importers[name] = Importer(**base, info=described)
        self._check_objectives()
        for base, implemented in declared:  # targets need their objective, profiles their target
            if "describe_target" in implemented:
                self.targets[base["name"]] = self._target(base, base["_callers"])
        for name, objective in self.objectives.items():
            self.objectives[name] = replace(objective, targets=tuple(
                sorted(n for n, t in self.targets.items() if t.objective == name)))
        for base, implemented in declared:
            if "describe_profile" in implemented:
                self.profiles[base["name"]] = self._profile(base, base["_callers"])
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
        if "import_store" in implemented and "describe_importer" not in implemented:
            raise PluginError(f"plugin {name!r} ({origin.distribution}) implements ['import_store'] but not "
                              "describe_importer")
        for hook in ("project_evidence", "diagnose_evidence"):
            if hook in implemented and "describe_objective" not in implemented:
                raise PluginError(f"plugin {name!r} ({origin.distribution}) implements ['{hook}'] but not "
                                  "describe_objective")

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
    def _objective(base: dict[str, Any], callers: Mapping[str, Any]) -> Objective:
        name, origin = base["name"], base["origin"]
        where = f"objective {name!r} ({origin.distribution})"
        info = callers["describe_objective"]()
        if not isinstance(info, ObjectiveInfo):
            raise PluginError(f"{where}: describe_objective must return ObjectiveInfo")
        projects = "project_evidence" in callers
        if info.has_targets and projects:
            raise PluginError(f"{where} declares target populations, so its targets project; it must not "
                              "implement project_evidence")
        if not info.has_targets and not projects:
            raise PluginError(f"{where} declares its own populations but does not implement project_evidence")
        derives_units = bool(info.unit_skip_reasons)
        core = DERIVED_UNIT_POPULATION_CORE_REASONS if derives_units else TARGET_CORE_REASONS
        vocabularies = {
            population: _composed(core, declared.skip_reasons, f"{where} population {population}")
            for population, declared in info.populations.items()
        }
        units = _composed(UNIT_CORE_REASONS, info.unit_skip_reasons, f"{where} units") if derives_units else ()
        _check_remedies(info.remedies, {r for v in vocabularies.values() for r in v} | set(units), where)
        return Objective(**base, info=info, vocabularies=vocabularies, unit_vocabulary=units)

    def _check_objectives(self) -> None:
        """One default objective at most; no population (file name) is written by two objectives."""
        defaults = [o for o in self.objectives.values() if o.info.default_objective]
        if len(defaults) > 1:
            first, second = defaults[0], defaults[1]
            raise PluginError(f"objectives {first.name!r} ({first.origin.distribution}) and {second.name!r} "
                              f"({second.origin.distribution}) both declare themselves the default objective")
        owner: dict[str, Objective] = {}
        for objective in self.objectives.values():
            for population in objective.info.population_names:
                if population in owner:
                    first = owner[population]
                    raise PluginError(f"population {population} ({population}.jsonl) is declared by objective "
                                      f"{first.name!r} ({first.origin.distribution}) and by objective "
                                      f"{objective.name!r} ({objective.origin.distribution})")
                owner[population] = objective

    @property
    def default_objective(self) -> Objective | None:
        """The objective of targets and profiles that name none (contract v2 plugins), if installed."""
        return next((o for o in self.objectives.values() if o.info.default_objective), None)

    def _target(self, base: dict[str, Any], callers: Mapping[str, Any]) -> Target:
        name, origin = base["name"], base["origin"]
        info = callers["describe_target"]()
        if not isinstance(info, TargetInfo):
            raise PluginError(f"target {name!r} ({origin.distribution}): describe_target must return TargetInfo")
        where = f"target {name!r} ({origin.distribution})"
        default = self.default_objective
        objective = self.objectives.get(info.objective) if info.objective is not None else default
        if objective is None:
            said = (f"belongs to objective {info.objective!r}, which is not installed" if info.objective is not None
                    else "names no objective, and no installed objective is the default")
            raise PluginError(f"{where} {said}; see `sediment objectives`")
        if not objective.has_targets:
            raise PluginError(f"{where} belongs to objective {objective.name!r}, which has no targets")
        unknown = [p for p in info.populations if p not in objective.info.target_populations]
        if unknown:
            raise PluginError(f"{where} writes populations {unknown}; objective {objective.name!r} targets write "
                              f"{list(objective.info.target_populations)}")
        vocabularies = {
            population: _composed(TARGET_CORE_REASONS, declared.skip_reasons, f"{where} population {population}")
            for population, declared in info.populations.items()
        }
        _check_remedies(info.remedies, {r for v in vocabularies.values() for r in v}, where)
        return Target(**base, info=info, vocabularies=vocabularies, objective=objective.name,
                      order=tuple(objective.info.target_populations))

    def _profile(self, base: dict[str, Any], callers: Mapping[str, Any]) -> Profile:
        name, origin = base["name"], base["origin"]
        info = callers["describe_profile"]()
        if not isinstance(info, ProfileInfo):
            raise PluginError(f"profile {name!r} ({origin.distribution}): describe_profile must return ProfileInfo")
        vocabulary = _composed(PROFILE_CORE_REASONS, info.skip_reasons, f"profile {name!r} ({origin.distribution})")
        _check_remedies(info.remedies, set(vocabulary), f"profile {name!r} ({origin.distribution})")
        adapted = self.targets.get(info.target)
        own = self.objectives.get(info.target)
        if adapted is None and own is not None and not own.has_targets:
            adapted_objective = own.name  # an objective without targets adapts its own rows
        else:
            adapted_objective = adapted.objective if adapted is not None else ""
        objective = info.objective or adapted_objective
        return Profile(**base, info=info, vocabulary=vocabulary, objective=objective)

    def _check_references(self) -> None:
        """Declared schemas exist, profiles name a real target population, retirements are unique."""
        for objective in self.objectives.values():
            for population in objective.populations:
                if objective.schema_id(population) not in self.schemas:
                    raise PluginError(f"objective {objective.name!r} ({objective.origin.distribution}) declares "
                                      f"schema {objective.schema_id(population)} for {population}, but no plugin "
                                      "registers it")
        for target in self.targets.values():
            for population in target.populations:
                if target.schema_id(population) not in self.schemas:
                    raise PluginError(f"target {target.name!r} ({target.origin.distribution}) declares schema "
                                      f"{target.schema_id(population)} for {population}, but no plugin registers it")
        for profile in self.profiles.values():
            info, where = profile.info, f"profile {profile.name!r} ({profile.origin.distribution})"
            adapted: Target | Objective | None = self.targets.get(info.target)
            own = self.objectives.get(info.target)
            if adapted is None and own is not None and not own.has_targets:
                adapted = own
            if adapted is None or info.population not in adapted.populations:
                raise PluginError(f"{where} adapts {info.target} {info.population}, which no installed target writes "
                                  "(nor an objective without targets)")
            kind = "target" if isinstance(adapted, Target) else "objective"
            if kind == "target" and info.row_order != "export":
                raise PluginError(f"{where} orders its rows by {info.row_order}, which only profiles of an objective "
                                  "without targets may do")
            if adapted.schema_id(info.population) != info.canonical_schema:
                raise PluginError(f"{where} reads {info.canonical_schema}, but {kind} {info.target} writes "
                                  f"{adapted.schema_id(info.population)}")
            if info.native_schema is not None and info.native_schema not in self.schemas:
                raise PluginError(f"{where} declares native schema {info.native_schema}, but no plugin registers it")
            for old in info.retires:
                if old in self.profiles or old in self.retired:
                    first = self.retired.get(old, old)
                    raise PluginError(f"{where} retires {old!r}, which is already installed or retired by {first!r}")
                self.retired[old] = profile.name

    # --- lookup -------------------------------------------------------------------------

    def objective(self, name: str) -> Objective:
        """The objective called ``name``; an unknown name lists the installed ones."""
        if name not in self.objectives:
            installed = ", ".join(sorted(self.objectives)) or "none"
            raise UnknownObjectiveError(f"unsupported export objective: {name}; installed objectives: {installed}")
        return self.objectives[name]

    def objective_of(self, target: str) -> str | None:
        """The objective target ``target`` belongs to (``None`` for an unknown target)."""
        found = self.targets.get(target)
        return None if found is None else found.objective

    def get(self, name: str | None, *, objective: str | None = None) -> Target:
        """The target called ``name`` of ``objective`` (default: the default objective); an
        unknown or missing name lists that objective's installed targets."""
        chosen = self.objective(objective) if objective is not None else self.default_objective
        mine = {n: t for n, t in self.targets.items() if chosen is None or t.objective == chosen.name}
        if name is None or name not in mine:
            installed = ", ".join(sorted(mine)) or "none"
            title = f"{chosen.title} " if chosen is not None else ""
            said = "no --target given" if name is None else f"unsupported {title}target: {name}"
            elsewhere = self.targets.get(name) if name is not None else None
            hint = "" if elsewhere is None else f" ({name} is a target of objective {elsewhere.objective})"
            raise UnknownTargetError(f"{said}; installed targets: {installed}{hint}")
        return mine[name]

    def profile(self, name: str, *, target: str | None = None, objective: str | None = None) -> Profile:
        """The profile called ``name``, checked against ``objective`` (default: ``target``'s, else
        the default objective) and ``target``; retired and unknown names are one-line usage errors."""
        if name in self.retired:
            successor = self.retired[name]
            note = self.profiles[successor].info.retirement_notes.get(name)
            raise UnknownProfileError(f"profile {name} is retired; use {successor}" + (f" {note}" if note else ""))
        if name not in self.profiles:
            installed = ", ".join(sorted(self.profiles)) or "none"
            raise UnknownProfileError(f"unsupported profile: {name}; installed profiles: {installed}")
        profile = self.profiles[name]
        if objective is None:
            default = self.default_objective
            objective = (self.objective_of(target) if target is not None else None) or (
                default.name if default is not None else profile.objective)
        if profile.objective != objective:
            raise UnknownProfileError(f"profile {name} does not support objective {objective}; "
                                      f"it adapts {profile.objective} rows")
        if target is not None and profile.info.target != target:
            raise UnknownProfileError(f"profile {name} adapts rows of target {profile.info.target}, not {target}; "
                                      f"use --target {profile.info.target}")
        return profile

    def remedies(self, objective: Objective, target: Target | None = None,
                 profile: Profile | None = None) -> dict[str, str]:
        """The remedy of every reason an export of ``objective`` (through ``target`` and
        ``profile``) may count: the core's, overridden by the objective's, the target's, then the
        profile's own (the plugin nearest the rows knows its reasons best)."""
        merged = dict(CORE_REMEDIES)
        for plugin in (objective, target, profile):
            if plugin is not None:
                merged.update(plugin.info.remedies)
        return merged

    def _plugin(self, name: str) -> RegisteredPlugin | None:
        return (self.objectives.get(name) or self.targets.get(name) or self.profiles.get(name)
                or self.manifests.get(name))

    def settings(self, name: str, sources: SettingsSources) -> PluginSettings:
        """The validated settings of plugin ``name`` from ``sources``."""
        plugin = self._plugin(name)
        if plugin is None:
            raise KeyError(name)
        return sources.build(name, plugin.settings_model)

    def check_settings_sources(self, sources: SettingsSources) -> None:
        """Every plugin a config table or a ``--set`` flag names is installed."""
        known = set(self.objectives) | set(self.targets) | set(self.profiles) | set(self.manifests)
        unknown = sorted(sources.plugin_names() - known)
        if unknown:
            from sediment.errors import ConfigurationError

            raise ConfigurationError(f"settings name plugins that are not installed: {', '.join(unknown)}; "
                                     "see `sediment targets` and `sediment profiles`")

    def objective_files(self, objective: Objective) -> set[str]:
        """The row files an export of ``objective`` (its own, or its targets') may publish."""
        return {n for p in objective.info.population_names for n in jsonl_names(p)}

    @cached_property
    def artifact_names(self) -> frozenset[str]:
        """Every file name an export may publish: rows of every objective, target and profile,
        and manifests."""
        names = {n for t in self.targets.values() for p in t.populations for n in t.file_names(p)}
        names |= {n for o in self.objectives.values() for n in self.objective_files(o)}
        names |= {n for p in self.profiles.values() for n in p.file_names}
        names |= {n for m in self.manifests.values() for n in m.info.files}
        return frozenset(names)

    def manifest_settings(self, sources: SettingsSources) -> dict[str, PluginSettings]:
        """Every manifest plugin's validated settings, by name (built before an export claims its
        directory, so that a missing or unreadable setting refuses the export up front)."""
        return {name: self.settings(name, sources) for name in sorted(self.manifests)}

    def write_manifests(self, published: PublishedExport,
                        sources: SettingsSources | Mapping[str, PluginSettings]) -> dict[str, list[str]]:
        """Call each manifest plugin, in name order, after publication; the paths each wrote.

        :param sources: where settings come from, or the settings :meth:`manifest_settings` built.
        """
        built = self.manifest_settings(sources) if isinstance(sources, SettingsSources) else sources
        written: dict[str, list[str]] = {}
        for name, manifest in sorted(self.manifests.items()):
            path = manifest.write(published, built[name])
            if path is not None:
                written[name] = [str(path)]
        return written


def load_registry(sources: Iterable[PluginSource] | None = None) -> PluginRegistry:
    """Build the registry from installed entry points (or from explicit ``sources``)."""
    pm, origins = build_plugin_manager(discover_entry_points() if sources is None else sources)
    return PluginRegistry(pm, origins)
