"""Exports for tests, every published row read back and validated against its schema.

- :func:`plugin_registry` registers plugins inline for one test, beside the built-ins;
  :func:`load_registry` (re-exported) is the registry of the installed plugins.
- :func:`run_export` (a target or profile) and :func:`run_objective` (an objective without
  targets) export Rollouts; :func:`export_evidence` exports any :class:`Evidence` (a bundle's,
  :func:`sediment.testing.bundles.bundle_evidence`, or a store's,
  :func:`sediment.testing.stores.store_evidence`) as an objective, target or profile. Each
  returns an :class:`ExportResult`.
- :func:`settings_sources` is the plugin settings a ``--config`` file would give.
- :func:`read_rows` reads one JSONL file, validating every row; :func:`snapshot` reads a
  directory's bytes (for determinism tests).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sediment.git.mirror_root import MirrorRoot
from sediment.model.rollout import Rollout

if TYPE_CHECKING:
    from sediment.evidence.context import Evidence
    from sediment.git.repositories import RepositoryContext
    from sediment.host.registry import PluginRegistry
    from sediment.settings import SettingsSources
    from sediment.validation import SchemaSet


def plugin_registry(*plugins: tuple[str, object], builtins: bool = True) -> PluginRegistry:
    """A registry of Sediment's built-in plugins plus ``plugins``, each a ``(name, plugin)``
    pair: a module, class or object carrying ``@hookimpl`` functions. With ``builtins=False``
    only the built-in objectives (``rlvr``) stay: every target belongs to an objective.

    The registry is a fresh value: registering here changes nothing for other tests. Pass it
    to :func:`run_export` (or to the export functions' ``registry=``).
    """
    from sediment.host.discovery import (
        BUILTIN_OBJECTIVES,
        BUILTIN_PLUGINS,
        PluginOrigin,
        PluginSource,
        discover_entry_points,
    )
    from sediment.host.registry import load_registry

    sources = discover_entry_points(blocked=(), only=BUILTIN_PLUGINS if builtins else BUILTIN_OBJECTIVES)
    for name, plugin in plugins:
        sources.append(PluginSource(plugin, PluginOrigin(name, "inline (test)", "0", repr(plugin)[:60])))
    return load_registry(sources)


def _schemas(schemas: SchemaSet | PluginRegistry | None) -> SchemaSet:
    from sediment.host.registry import PluginRegistry, load_registry

    if schemas is None:
        return load_registry().schemas
    return schemas.schemas if isinstance(schemas, PluginRegistry) else schemas


def read_rows(path: Path, schemas: SchemaSet | PluginRegistry | None = None) -> list[dict[str, Any]]:
    """Parse a JSONL file and assert every row validates against the schema its ``schema_id``
    names, among ``schemas`` (a registry's, by default the installed plugins')."""
    checker = _schemas(schemas)
    rows = []
    with path.open("r", encoding="ascii") as handle:
        for number, line in enumerate(handle, start=1):
            row = json.loads(line)
            errors = checker.errors(row)
            assert not errors, f"{path.name}:{number} violates its schema: {errors}"
            rows.append(row)
    return rows


def settings_sources(settings: dict[str, dict[str, Any]] | None = None) -> SettingsSources:
    """Plugin settings ``{plugin name: {field: value}}``, as a ``--config`` file's
    ``[plugins.NAME]`` tables would give them (and no ``--set`` or environment value)."""
    from sediment.settings import SettingsSources

    return SettingsSources(config=settings or {}, config_path="test settings")


def export_target(rollouts: Sequence[Rollout], mirrors: MirrorRoot | None, out_dir: Path, target: str, *,
                  split: bool = False, commands: Any = None, repositories: RepositoryContext | None = None,
                  ) -> dict[str, Any]:
    """Export ``rollouts`` through ``target`` with the installed plugins and no operator
    configuration (``commands``: a ``VerifierCommands``); the summary. ``repositories`` is the
    repository context identified CI resolves with (without one, only legacy CI resolves)."""
    from sediment.evidence.verifier_commands import VerifierCommands
    from sediment.export.pipeline import export_through_target

    return export_through_target(rollouts, mirrors, out_dir, target=target, split_enabled=split,
                                     verifier_commands=commands or VerifierCommands.empty(),
                                     repositories=repositories)


@dataclass
class ExportResult:
    """What an export produced: the summary, the directory and every published file's rows
    (file name → rows; ``data`` files of a profile export are read without a schema)."""

    summary: dict[str, Any]
    out_dir: Path
    rows: dict[str, list[dict[str, Any]]]


def _result(summary: dict[str, Any], out_dir: Path, registry: PluginRegistry, profile: str | None) -> ExportResult:
    rows: dict[str, list[dict[str, Any]]] = {}
    for written in summary["written"]:
        path = Path(written)
        if profile is not None and path.name.startswith("data"):
            rows[path.name] = [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]
        else:
            rows[path.name] = read_rows(path, registry)
    return ExportResult(summary, Path(out_dir), rows)


def run_export(rollouts: Sequence[Rollout], out_dir: Path, *, target: str, profile: str | None = None,
               registry: PluginRegistry | None = None, mirrors: MirrorRoot | None = None,
               split_enabled: bool = False, settings: dict[str, dict[str, Any]] | None = None,
               repositories: RepositoryContext | None = None) -> ExportResult:
    """Export ``rollouts`` through ``target`` (and ``profile``) into ``out_dir`` and read back
    every published JSONL file, validating each row that names a schema.

    :param settings: plugin settings, ``{plugin name: {field: value}}`` (as a ``--config``
        file's ``[plugins.NAME]`` tables would give them).
    :param repositories: the repository context identified CI resolves with, e.g.
        ``RepositoryContext.build(ORG, outcomes)`` (without one, only legacy CI resolves).
    """
    from sediment.evidence.verifier_commands import VerifierCommands
    from sediment.export.pipeline import export_through_target
    from sediment.host.registry import load_registry

    registry = registry or load_registry()
    summary = export_through_target(
        rollouts, mirrors, out_dir, target=target, profile=profile, split_enabled=split_enabled,
        registry=registry, settings=settings_sources(settings),
        verifier_commands=VerifierCommands.empty(), repositories=repositories,
    )
    return _result(summary, out_dir, registry, profile)


def run_objective(rollouts: Sequence[Rollout], out_dir: Path, *, objective: str, recipe: str | None = None,
                  registry: PluginRegistry | None = None, mirrors: MirrorRoot | None = None,
                  split_enabled: bool = False, settings: dict[str, dict[str, Any]] | None = None,
                  workers: int = 1) -> ExportResult:
    """Export ``rollouts`` as ``objective`` (one without targets) into ``out_dir`` and read back
    every published JSONL file, validating each row against the schema it names.

    :param settings: plugin settings, ``{plugin name: {field: value}}``.
    :param workers: worker processes, as ``--workers`` (an objective's rows must not depend on it).
    """
    from sediment.evidence.context import Evidence

    return export_evidence(Evidence(list(rollouts), split_enabled, mirrors), out_dir, objective=objective,
                           recipe=recipe, registry=registry, settings=settings, workers=workers)


def export_evidence(evidence: Evidence, out_dir: Path, *, objective: str, target: str | None = None,
                    profile: str | None = None, recipe: str | None = None, registry: PluginRegistry | None = None,
                    settings: dict[str, dict[str, Any]] | None = None,
                    repositories: RepositoryContext | None = None, workers: int = 1) -> ExportResult:
    """Export ``evidence`` (Rollouts, a bundle's or a store's) as ``objective``, through
    ``target`` and ``profile`` when given, as ``sediment export`` runs it without operator
    configuration (no verifier commands); every published JSONL file read back, each row that
    names a schema validated.

    :param settings: plugin settings, ``{plugin name: {field: value}}``.
    :param workers: worker processes, as ``--workers``.
    """
    from sediment.evidence.verifier_commands import VerifierCommands
    from sediment.export.pipeline import export_objective
    from sediment.host.registry import load_registry

    registry = registry or load_registry()
    summary = export_objective(evidence, out_dir, objective=objective, target=target, profile=profile, recipe=recipe,
                               registry=registry, settings=settings_sources(settings),
                               verifier_commands=VerifierCommands.empty(), repositories=repositories,
                               workers=workers)
    return _result(summary, out_dir, registry, profile)


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every regular file under ``directory`` (relative name → bytes)."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}
