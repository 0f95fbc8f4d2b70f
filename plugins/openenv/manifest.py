"""``environment.yaml`` (contract §8): an experimental OpenEnv taskset manifest (RFC 006 shape).

Written only for target ``sediment`` and only when at least one task row was published.
Frameworks come only from operator settings; nothing is inferred from workflow YAML and
nothing is executed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sediment.export import hookimpl
from sediment.export.writer import PublishedExport, atomic_write_bytes

TARGET = "sediment"
FILE_NAME = "environment.yaml"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RuntimeSettings:
    """Operator-supplied framework settings (blank values count as unset)."""

    openenv_image: str | None = None
    openenv_package: str | None = None
    nemo_gym_resources_server: str | None = None
    nemo_gym_config: str | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> RuntimeSettings:
        env = os.environ if environ is None else environ

        def value(name: str) -> str | None:
            stripped = env.get(name, "").strip()
            return stripped or None

        return cls(
            openenv_image=value("SEDIMENT_OPENENV_IMAGE"),
            openenv_package=value("SEDIMENT_OPENENV_PACKAGE"),
            nemo_gym_resources_server=value("SEDIMENT_NEMO_GYM_RESOURCES_SERVER"),
            nemo_gym_config=value("SEDIMENT_NEMO_GYM_CONFIG"),
        )

    def frameworks(self) -> dict[str, Any]:
        frameworks: dict[str, Any] = {}
        if self.openenv_image:
            if self.openenv_package:
                logger.warning("openenv_runtime_ambiguous_config: image and package set; image wins")
            frameworks["openenv"] = {"image": self.openenv_image}
        elif self.openenv_package:
            frameworks["openenv"] = {"package": self.openenv_package}
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
def write_manifest(target: str, out_dir: Path, published: PublishedExport) -> Path | None:
    if target != TARGET or published.rows("tasks") == 0:
        return None
    sides = [side for side in published.files.get("tasks", {}) if side is not None]
    manifest = build_manifest(
        _read_rows(published.paths("tasks")),
        sides,
        RuntimeSettings.from_environment(),
        split_enabled=published.split_enabled,
    )
    path = out_dir / FILE_NAME
    atomic_write_bytes(path, render(manifest))
    return path
