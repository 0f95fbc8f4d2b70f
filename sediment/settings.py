"""Explicit plugin configuration: a typed settings object per plugin, from declared sources.

A plugin that takes settings declares a :class:`PluginSettings` subclass (hook
``plugin_settings``); it then receives an instance as the ``settings`` argument of its
hooks and never reads the environment itself. Values come from, highest first:

1. ``--set PLUGIN.FIELD=VALUE`` flags (``overrides``);
2. environment variables: ``SEDIMENT_<PLUGIN>_<FIELD>`` (upper case, ``-`` as ``_``), or the
   name a field declares with ``Field(json_schema_extra={"env": "NAME"})``; blank values
   count as unset;
3. the table ``[plugins.<PLUGIN>]`` of the TOML file named by ``--config`` or
   ``SEDIMENT_CONFIG_FILE``;
4. the field defaults.

Problems are one-line :class:`~sediment.errors.ConfigurationError` messages naming the
plugin, the field and the source. A plugin declares what its settings need with pydantic's
own means, and the core checks them when it builds the settings, which an export does for
every plugin it calls before it claims its output directory: a field without a default is
**required** (a plugin that cannot do anything without it says so), and a field typed
:data:`ReadableFile` must name a regular file this process can read (a plugin's own
``field_validator`` may check the file's content too, raising ``ValueError``).

The same file may also hold the core's own tables (:data:`CORE_SECTIONS`, e.g.
``[label-confidence]`` for the Confidence ladder, read by
:func:`sediment.derive.confidence.label_confidence_policy`); they are kept in
:attr:`SettingsSources.sections` and checked by their readers.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from sediment.errors import ConfigurationError, validation_message

CONFIG_ENV = "SEDIMENT_CONFIG_FILE"
#: Top-level tables of the config file that configure the core rather than a plugin.
CORE_SECTIONS: tuple[str, ...] = ("label-confidence",)


class PluginSettings(BaseModel):
    """Base of every plugin's settings: frozen, closed (unknown keys are errors)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class NoSettings(PluginSettings):
    """The settings of a plugin that declares none."""


def _readable_file(path: Path) -> Path:
    """``path`` if it names a regular file this process can open for reading."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file")
    return path


#: A setting naming a file the plugin reads: checked (a regular file that can be opened for
#: reading) when the settings are built, before an export claims its output directory.
ReadableFile = Annotated[Path, AfterValidator(_readable_file)]


def env_name(plugin: str, field_name: str, declared: Any = None) -> str:
    """The environment variable of one setting."""
    if isinstance(declared, dict) and isinstance(declared.get("env"), str):
        return str(declared["env"])
    return "SEDIMENT_" + re.sub(r"[^A-Za-z0-9]", "_", f"{plugin}_{field_name}").upper()


def env_names(plugin: str, model: type[PluginSettings]) -> dict[str, str]:
    """Field name → environment variable, for ``sediment plugins`` and the docs."""
    return {name: env_name(plugin, name, info.json_schema_extra) for name, info in model.model_fields.items()}


@dataclass(frozen=True)
class SettingsSources:
    """Where plugin settings come from (see the module docstring)."""

    config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=dict)
    overrides: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    config_path: str | None = None
    #: The config file's core tables (:data:`CORE_SECTIONS`) that it holds, by name.
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> SettingsSources:
        """Defaults only: nothing from the environment or a file."""
        return cls()

    @classmethod
    def load(cls, *, config_file: Path | None = None, environ: Mapping[str, str] | None = None,
             overrides: Iterable[str] = ()) -> SettingsSources:
        """Read the TOML file (``config_file``, else ``SEDIMENT_CONFIG_FILE``) and parse flags."""
        env = dict(os.environ if environ is None else environ)
        path = config_file
        if path is None and env.get(CONFIG_ENV, "").strip():
            path = Path(env[CONFIG_ENV].strip())
        config: dict[str, Mapping[str, Any]] = {}
        sections: dict[str, Mapping[str, Any]] = {}
        if path is not None:
            config, sections = _read_config(path)
        return cls(config=config, environ=env, overrides=_parse_overrides(overrides),
                   config_path=None if path is None else str(path), sections=sections)

    def plugin_names(self) -> set[str]:
        """Every plugin a file table or a flag names."""
        return set(self.config) | set(self.overrides)

    def build(self, plugin: str, model: type[PluginSettings]) -> PluginSettings:
        """The settings of ``plugin``, validated; errors name the field and its source."""
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for key, value in self.config.get(plugin, {}).items():
            values[key] = value
            sources[key] = f"[plugins.{plugin}] in {self.config_path}"
        for name, info in model.model_fields.items():
            variable = env_name(plugin, name, info.json_schema_extra)
            raw = self.environ.get(variable, "")
            if raw.strip():
                values[name] = raw.strip()
                sources[name] = f"${variable}"
        for key, value in self.overrides.get(plugin, {}).items():
            values[key] = value
            sources[key] = f"--set {plugin}.{key}"
        try:
            return model.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = ".".join(str(p) for p in error["loc"]) or "(settings)"
            first = str(error["loc"][0]) if error["loc"] else ""
            where = sources.get(first, "its defaults")
            declared = model.model_fields[first].json_schema_extra if first in model.model_fields else None
            message = validation_message(error)
            raise ConfigurationError(
                f"plugin {plugin} setting {key}: {message} (from {where}; "
                f"set it with --set {plugin}.{key}=VALUE or ${env_name(plugin, first or key, declared)})"
            ) from None


def _read_config(path: Path) -> tuple[dict[str, Mapping[str, Any]], dict[str, Mapping[str, Any]]]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"cannot read config file {path}: {exc}") from None
    unknown = sorted(set(document) - {"plugins", *CORE_SECTIONS})
    if unknown:
        raise ConfigurationError(f"{path}: unknown top-level table(s) {unknown}; plugin settings go in [plugins.NAME], "
                                 f"core settings in {', '.join(f'[{s}]' for s in CORE_SECTIONS)}")
    plugins = document.get("plugins", {})
    if not isinstance(plugins, dict) or any(not isinstance(v, dict) for v in plugins.values()):
        raise ConfigurationError(f"{path}: [plugins] must hold one table per plugin ([plugins.NAME])")
    sections = {name: document[name] for name in CORE_SECTIONS if name in document}
    for name, table in sections.items():
        if not isinstance(table, dict):
            raise ConfigurationError(f"{path}: {name} must be a table ([{name}])")
    return plugins, sections


def _parse_overrides(pairs: Iterable[str]) -> dict[str, dict[str, str]]:
    parsed: dict[str, dict[str, str]] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        plugin, dot, key = name.strip().rpartition(".")
        if not equals or not dot or not plugin or not key:
            raise ConfigurationError(f"--set expects PLUGIN.FIELD=VALUE, got {pair!r}")
        parsed.setdefault(plugin, {})[key] = value
    return parsed
