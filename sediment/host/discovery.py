"""Plugin discovery: one entry-point group (``sediment``), built-ins included.

Load order: every entry point of the group, sorted by name, each registered under its
entry-point name. Two distributions declaring the same name stop start-up with an error
naming both. ``SEDIMENT_LOAD_PLUGINS`` (comma-separated names) loads only the plugins it
names (an empty value loads none); ``SEDIMENT_BLOCK_PLUGINS`` blocks plugins by name. After
registration :meth:`pluggy.PluginManager.check_pending` fails loudly on hook implementations
that match no specification.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pluggy

from sediment.errors import PluginError
from sediment.host import hookspecs

ENTRY_POINT_GROUP = "sediment"
BLOCK_ENV_VAR = "SEDIMENT_BLOCK_PLUGINS"
LOAD_ENV_VAR = "SEDIMENT_LOAD_PLUGINS"

#: The export objectives shipped with Sediment (``sediment export NAME``).
BUILTIN_OBJECTIVES: tuple[str, ...] = ("diff-sft", "dpo", "recovery", "rlvr", "sft")
#: The targets shipped with Sediment; a test pins discovery to exactly these plus third parties.
BUILTIN_TARGETS: tuple[str, ...] = ("sediment", "swe-bench", "nemo-gym")
#: The consumer profiles shipped with Sediment.
BUILTIN_PROFILES: tuple[str, ...] = (
    "fireworks-dpo-v3", "fireworks-sft-v2", "harbor-tasks-v1", "hf-chat-messages-v1", "hf-chat-prompts-v1",
    "hf-trl-dpo-v4", "hf-trl-sft-v3", "nemo-gym-rollouts-v2", "nemo-gym-swebench-tasks-v1", "swe-bench-tasks-v2",
    "verifiers-tasks-v1",
)
#: The manifest plugins shipped with Sediment (the HF profiles write their dataset cards).
BUILTIN_MANIFEST_PLUGINS: tuple[str, ...] = ("hf-chat-messages-v1", "hf-chat-prompts-v1", "hf-trl-dpo-v4",
                                             "hf-trl-sft-v3", "openenv")
#: The trajectory importers shipped with Sediment (one per source format).
BUILTIN_IMPORTERS: tuple[str, ...] = ("atif-v1", "nebius-swe-agent", "openhands", "sediment-rollouts", "swe-agent-traj",
                                      "swe-gym-sampled")
#: Every plugin shipped with Sediment (what the test kit loads by default).
BUILTIN_PLUGINS: tuple[str, ...] = tuple(sorted({*BUILTIN_OBJECTIVES, *BUILTIN_TARGETS, *BUILTIN_PROFILES,
                                                  *BUILTIN_MANIFEST_PLUGINS, *BUILTIN_IMPORTERS}))


@dataclass(frozen=True)
class PluginOrigin:
    """Where a plugin came from: its distribution, version and entry point."""

    name: str
    distribution: str
    version: str
    value: str


@dataclass(frozen=True)
class PluginSource:
    """A plugin object to register, and its origin."""

    plugin: object
    origin: PluginOrigin


def new_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager with the export hookspecs and nothing registered."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


class HookCall:
    """One plugin's implementation of one hook, called like pluggy's subset hook caller.

    It pickles as the plugin and the hook's name (a Ray task's copy of a target or profile
    registers that plugin alone in a new plugin manager of its own, once per process), so the
    plugin must be importable where the copy is used."""

    def __init__(self, plugin: object, hook: str, caller: Any) -> None:
        self.plugin = plugin
        self.hook = hook
        self._caller = caller

    def __call__(self, **kwargs: Any) -> Any:
        return self._caller(**kwargs)

    def __reduce__(self) -> tuple[Any, tuple[object, str]]:
        return (_hook_call, (self.plugin, self.hook))


_ALONE: dict[int, tuple[object, pluggy.PluginManager]] = {}


def _hook_call(plugin: object, hook: str) -> HookCall:
    """A :class:`HookCall` rebuilt from its plugin, in a plugin manager holding that plugin alone."""
    kept = _ALONE.get(id(plugin))
    if kept is None or kept[0] is not plugin:
        pm = new_plugin_manager()
        pm.register(plugin)
        kept = _ALONE[id(plugin)] = (plugin, pm)
    return HookCall(plugin, hook, getattr(kept[1].hook, hook))


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def discover_entry_points(
    blocked: Iterable[str] | None = None,
    only: Iterable[str] | None = None,
) -> list[PluginSource]:
    """Load the plugins of the entry-point group; duplicate names are an error.

    :param blocked: names not to load (default: ``SEDIMENT_BLOCK_PLUGINS``).
    :param only: load only these names (default: ``SEDIMENT_LOAD_PLUGINS`` when it is set).
    """
    if blocked is None:
        blocked = _names(os.environ.get(BLOCK_ENV_VAR, ""))
    if only is None and LOAD_ENV_VAR in os.environ:
        only = _names(os.environ[LOAD_ENV_VAR])
    blocked_names = set(blocked)
    allowed = None if only is None else set(only)
    seen: dict[str, PluginOrigin] = {}
    sources: list[PluginSource] = []
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = ep.dist
        origin = PluginOrigin(
            name=ep.name,
            distribution=dist.metadata["Name"] if dist is not None else "unknown",
            version=dist.version if dist is not None else "unknown",
            value=ep.value,
        )
        if ep.name in seen:
            if seen[ep.name] == origin:
                continue  # the same distribution seen twice on sys.path
            first = seen[ep.name]
            raise PluginError(
                f"plugin name {ep.name!r} is declared twice: by {first.distribution} {first.version} "
                f"({first.value}) and by {origin.distribution} {origin.version} ({origin.value})"
            )
        seen[ep.name] = origin
        if ep.name in blocked_names or (allowed is not None and ep.name not in allowed):
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # a broken third-party plugin: name it, keep the cause
            raise PluginError(
                f"cannot load plugin {ep.name!r} from {origin.distribution} ({origin.value}): {exc}"
            ) from exc
        sources.append(PluginSource(plugin, origin))
    return sources


def build_plugin_manager(sources: Iterable[PluginSource]) -> tuple[pluggy.PluginManager, Mapping[str, PluginOrigin]]:
    """Register ``sources`` under their names and verify every hook implementation."""
    pm = new_plugin_manager()
    origins: dict[str, PluginOrigin] = {}
    for source in sources:
        name = source.origin.name
        if name in origins:
            first = origins[name]
            raise PluginError(
                f"plugin name {name!r} is declared twice: by {first.distribution} ({first.value}) "
                f"and by {source.origin.distribution} ({source.origin.value})"
            )
        try:
            pm.register(source.plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            raise PluginError(f"plugin {name!r} from {source.origin.distribution}: {exc}") from exc
        origins[name] = source.origin
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin implements an unknown hook: {exc}") from exc
    return pm, origins
