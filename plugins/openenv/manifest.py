"""``environment.yaml`` (docs/exports.md, environment.yaml): an experimental OpenEnv taskset manifest (RFC 006 shape).

Written only for target ``sediment`` exports (not for profiles of it) and only when at
least one task row was published. Frameworks come only from operator settings (this
plugin's typed settings: ``--set openenv.image=…``, ``SEDIMENT_OPENENV_IMAGE``, …); nothing is
inferred from workflow YAML and nothing is executed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, field_validator

from sediment.plugin import ManifestInfo, PluginSettings, PublishedExport, atomic_write_bytes, hookimpl

TARGET = "sediment"
FILE_NAME = "environment.yaml"
logger = logging.getLogger(__name__)


class RuntimeSettings(PluginSettings):
    """Operator-supplied framework settings (blank values count as unset)."""

    image: str | None = Field(default=None, description="OpenEnv container image")
    package: str | None = Field(default=None, description="OpenEnv environment package (when no image)")
    nemo_gym_resources_server: str | None = Field(
        default=None, description="NeMo Gym resources server",
        json_schema_extra={"env": "SEDIMENT_NEMO_GYM_RESOURCES_SERVER"},
    )
    nemo_gym_config: str | None = Field(
        default=None, description="NeMo Gym config path", json_schema_extra={"env": "SEDIMENT_NEMO_GYM_CONFIG"},
    )

    @field_validator("*", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return (value.strip() or None) if isinstance(value, str) else value

    def frameworks(self) -> dict[str, Any]:
        frameworks: dict[str, Any] = {}
        if self.image:
            if self.package:
                logger.warning("openenv_runtime_ambiguous_config: image and package set; image wins")
            frameworks["openenv"] = {"image": self.image}
        elif self.package:
            frameworks["openenv"] = {"package": self.package}
        if self.nemo_gym_resources_server:
            nemo: dict[str, str] = {"resources_server": self.nemo_gym_resources_server}
            if self.nemo_gym_config:
                nemo["config"] = self.nemo_gym_config
            frameworks["nemo_gym"] = nemo
        elif self.nemo_gym_config:
            logger.warning("nemo_gym_config_without_resources_server: NeMo Gym left unconfigured")
        return frameworks


def runtime_reference(task_rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The one CI workflow every task row agrees on, or ``None``."""
    triples: set[tuple[str, str, str]] = set()
    for row in task_rows:
        results = row.get("verifier_results") or []
        if not results:
            return None
        for result in results:
            path = result.get("workflow_path")
            if not path:
                return None
            triples.add((row["repo"], result.get("workflow_name") or "", path))
    if len(triples) != 1:
        return None
    repo, name, path = next(iter(triples))
    return {"kind": "ci_workflow", "repo": repo, "workflow_name": name, "workflow_path": path}


def build_manifest(
    task_rows: Iterable[Mapping[str, Any]],
    sides: Iterable[str],
    settings: RuntimeSettings,
    *,
    split_enabled: bool,
) -> dict[str, Any]:
    """The manifest document, keys in their contract order."""
    environment: dict[str, Any] = {
        "id": "sediment-tasks",
        "reward": {"kind": "ci", "pass_value": 1.0, "fail_value": 0.0},
    }
    if split_enabled:
        present = set(sides)
        environment["splits"] = [s for s in ("train", "eval") if s in present]
    reference = runtime_reference(task_rows)
    if reference is not None:
        environment["runtime_reference"] = reference
    frameworks = settings.frameworks()
    if frameworks:
        environment["frameworks"] = frameworks
    return {"spec_version": "hf-rl-env-0.1", "experimental": True, "environments": [environment]}


def _read_rows(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        with path.open("r", encoding="ascii") as handle:
            for line in handle:
                yield json.loads(line)


def render(manifest: Mapping[str, Any]) -> bytes:
    text: str = yaml.safe_dump(dict(manifest), sort_keys=False, default_flow_style=False)
    return text.encode("utf-8")


@hookimpl
def describe_manifest() -> ManifestInfo:
    return ManifestInfo(files=(FILE_NAME,), description="experimental OpenEnv taskset manifest beside sediment tasks")


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return RuntimeSettings


@hookimpl
def write_manifest(published: PublishedExport, settings: RuntimeSettings) -> Path | None:
    if published.target != TARGET or published.profile is not None or published.rows("tasks") == 0:
        return None
    manifest = build_manifest(
        _read_rows(published.paths("tasks")),
        published.sides("tasks"),
        settings,
        split_enabled=published.split_enabled,
    )
    path = published.out_dir / FILE_NAME
    atomic_write_bytes(path, render(manifest))
    return path
