"""The target registry: named targets, their closed skip vocabularies, one-target dispatch."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from sediment.errors import PluginError, UnknownTargetError
from sediment.export.evidence import RolloutEvidence
from sediment.export.plugins import PluginOrigin, PluginSource, build_plugin_manager, discover_entry_points
from sediment.export.representation import REPRESENTATION_REASONS
from sediment.export.rows import POPULATIONS, Population, ProjectedRow, TargetInfo

_REASON = re.compile(r"^[a-z][a-z0-9_]*$")
_TARGET_HOOKS = ("describe_target", "skip_reasons", "eligible", "project_row")


@dataclass(frozen=True)
class Target:
    """A registered target: its declaration, vocabularies and where it came from."""

    name: str
    info: TargetInfo
    vocabularies: Mapping[Population, tuple[str, ...]]
    origin: PluginOrigin
    _callers: Mapping[str, Any] = field(repr=False)

    @property
    def populations(self) -> tuple[Population, ...]:
        return tuple(p for p in POPULATIONS if p in self.info.populations)

    def file_names(self, population: Population) -> tuple[str, ...]:
        return (f"{population}.jsonl", f"{population}.train.jsonl", f"{population}.eval.jsonl")

    def eligible(self, population: Population, evidence: RolloutEvidence) -> str | None:
        reason: str | None = self._callers["eligible"](population=population, evidence=evidence)
        return reason

    def project_row(self, population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
        rows = self._callers["project_row"](population=population, evidence=evidence)
        if rows is None:
            raise PluginError(f"target {self.name!r} returned no rows from project_row for {population}")
        return list(rows)

    def count(self, tally: Counter[str], population: Population, reasons: Iterable[str]) -> None:
        """Add ``reasons`` to ``tally``; a reason outside the vocabulary is a plugin bug."""
        vocabulary = self.vocabularies[population]
        for reason in reasons:
            if reason not in vocabulary:
                raise PluginError(
                    f"skip reason {reason!r} is not in the {population} vocabulary of target "
                    f"{self.name!r} (plugin from {self.origin.distribution})"
                )
            tally[reason] += 1

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.info.description,
            "files": {p: list(self.file_names(p)) for p in self.populations},
            "skip_reasons": {p: list(self.vocabularies[p]) for p in self.populations},
            "schema_ids": {p: self.info.populations[p] for p in self.populations},
            "needs_mirrors": self.info.needs_mirrors,
            "origin": {
                "distribution": self.origin.distribution,
                "version": self.origin.version,
                "entry_point": self.origin.value,
            },
        }


class TargetRegistry:
    """Every installed target and manifest plugin, validated once at start-up."""

    def __init__(self, pm: pluggy.PluginManager, origins: Mapping[str, PluginOrigin]) -> None:
        self._pm = pm
        self.targets: dict[str, Target] = {}
        self.manifest_plugins: list[str] = []
        for name, plugin in sorted(pm.list_name_plugin()):
            implemented = {impl.name for impl in pm.get_hookcallers(plugin) or ()}
            origin = origins[name]
            if "describe_target" in implemented:
                self.targets[name] = self._register_target(name, plugin, origin, implemented)
            elif implemented & set(_TARGET_HOOKS):
                raise PluginError(
                    f"plugin {name!r} ({origin.distribution}) implements target hooks "
                    f"{sorted(implemented & set(_TARGET_HOOKS))} but not describe_target"
                )
            if "write_manifest" in implemented:
                self.manifest_plugins.append(name)

    def _register_target(
        self, name: str, plugin: object, origin: PluginOrigin, implemented: set[str]
    ) -> Target:
        missing = [h for h in _TARGET_HOOKS if h not in implemented]
        if missing:
            raise PluginError(f"target {name!r} ({origin.distribution}) does not implement {missing}")
        others = [p for n, p in self._pm.list_name_plugin() if n != name]
        callers = {hook: self._pm.subset_hook_caller(hook, remove_plugins=others) for hook in _TARGET_HOOKS}
        info = callers["describe_target"]()
        if not isinstance(info, TargetInfo):
            raise PluginError(f"target {name!r} ({origin.distribution}): describe_target must return TargetInfo")
        vocabularies: dict[Population, tuple[str, ...]] = {}
        for population in info.populations:
            declared = callers["skip_reasons"](population=population)
            vocabulary = tuple(declared or ())
            bad = [r for r in vocabulary if not isinstance(r, str) or not _REASON.fullmatch(r)]
            duplicated = sorted({r for r in vocabulary if vocabulary.count(r) > 1})
            missing_repr = [r for r in REPRESENTATION_REASONS if r not in vocabulary]
            if bad or duplicated or missing_repr:
                raise PluginError(
                    f"target {name!r} ({origin.distribution}) declares a bad {population} vocabulary: "
                    f"malformed {bad}, duplicated {duplicated}, missing {missing_repr}"
                )
            vocabularies[population] = vocabulary
        return Target(name, info, vocabularies, origin, callers)

    def get(self, name: str | None) -> Target:
        """The target called ``name``; an unknown or missing name lists the installed ones."""
        if name is None or name not in self.targets:
            installed = ", ".join(sorted(self.targets)) or "none"
            said = "no --target given" if name is None else f"unsupported RLVR target: {name}"
            raise UnknownTargetError(f"{said}; installed targets: {installed}")
        return self.targets[name]

    def artifact_names(self) -> frozenset[str]:
        """Every file name an export may publish (row files of all targets, plus manifests)."""
        names = {n for t in self.targets.values() for p in t.populations for n in t.file_names(p)}
        return frozenset(names | MANIFEST_FILE_NAMES)

    def write_manifests(self, target: str, out_dir: Path, published: Any) -> list[Path]:
        """Call every manifest plugin after publication; collect the paths written."""
        results = self._pm.hook.write_manifest(target=target, out_dir=out_dir, published=published)
        return [Path(p) for p in results if p is not None]


#: Manifest file names an RLVR export may publish beside its rows.
MANIFEST_FILE_NAMES: frozenset[str] = frozenset({"environment.yaml"})


def load_registry(sources: Iterable[PluginSource] | None = None) -> TargetRegistry:
    """Build the registry from installed entry points (or from explicit ``sources``)."""
    pm, origins = build_plugin_manager(discover_entry_points() if sources is None else sources)
    return TargetRegistry(pm, origins)
