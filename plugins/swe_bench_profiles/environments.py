"""Per-repository evaluation environments: the operator's TOML file.

::

    [repos."acme/calc"]
    version = "0.1"                          # the instance's environment version (required)
    image = "ghcr.io/acme/calc-eval:0.1"     # the evaluation image, or:
    image_per_instance = true                # SWE-bench's per-instance image name
    test_command = "python -m pytest -rA"    # run by the eval script between the markers (required)
    log_parser = "parse_log_pytest"          # a SWE-bench 5.x parser name (required)
    install = ["pip install -e ."]           # steps before the tests (optional)
    test_files = ["tests/**", "**/test_*.py"]  # which paths of a patch are tests (optional)
    cpus = 2                                 # resource hints for Harbor tasks (optional,
    memory_mb = 4096                         # positive numbers: task.toml's [environment])
    storage_mb = 10240

Sediment never guesses an image, a command or a parser and never runs anything. A file that
cannot be read as a whole (missing, unreadable, not TOML, no ``[repos]`` table) is a
configuration error, found when the profile's settings are built (:func:`read_environments`),
before an export claims its directory. A bad entry is logged with a stable event name
(``swe_bench_environment_invalid``) and its repository is left out; a row of a repository
without a valid entry is declined (``environment_unconfigured``).
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .patches import DEFAULT_TEST_FILES

logger = logging.getLogger(__name__)

#: The log parser names swebench 5.0.2's PARSER_REGISTRY knows (its consumer test checks this list).
SWE_BENCH_LOG_PARSERS: frozenset[str] = frozenset({
    "parse_log_ant", "parse_log_astroid", "parse_log_astropy", "parse_log_bpmn_js", "parse_log_calypso",
    "parse_log_carbon", "parse_log_cargo", "parse_log_chart_js", "parse_log_cucumber", "parse_log_django",
    "parse_log_doctest", "parse_log_eslint", "parse_log_flask", "parse_log_googletest", "parse_log_gotest",
    "parse_log_gradle_custom", "parse_log_grommet", "parse_log_highlightjs", "parse_log_immutable_js",
    "parse_log_jekyll", "parse_log_jest", "parse_log_jest_json", "parse_log_jq", "parse_log_karma",
    "parse_log_lighthouse", "parse_log_marked", "parse_log_marshmallow", "parse_log_matplotlib",
    "parse_log_maven", "parse_log_micropython_test", "parse_log_minitest", "parse_log_next",
    "parse_log_openlayers", "parse_log_p5js", "parse_log_phpunit", "parse_log_prismjs", "parse_log_pvlib",
    "parse_log_pydicom", "parse_log_pylint", "parse_log_pytest", "parse_log_pytest_options",
    "parse_log_pytest_v2", "parse_log_pyvista", "parse_log_quarto_cli", "parse_log_react_pdf",
    "parse_log_redis", "parse_log_requests", "parse_log_rspec_transformed_json", "parse_log_ruby_unit",
    "parse_log_scikit", "parse_log_seaborn", "parse_log_sphinx", "parse_log_sqlfluff", "parse_log_sympy",
    "parse_log_tap", "parse_log_vitest", "parse_log_xarray",
})
_KEYS = {"version", "image", "image_per_instance", "test_command", "log_parser", "install", "test_files", "cpus",
         "memory_mb", "storage_mb"}
#: The optional resource hints (harbor's EnvironmentConfig fields of the same names).
RESOURCE_KEYS: tuple[str, ...] = ("cpus", "memory_mb", "storage_mb")


@dataclass(frozen=True)
class Environment:
    """How one repository's tasks are evaluated."""

    version: str
    test_command: str
    log_parser: str
    image: str | None = None
    image_per_instance: bool = False
    install: tuple[str, ...] = ()
    test_files: tuple[str, ...] = DEFAULT_TEST_FILES
    #: resource hints (``cpus``, ``memory_mb``, ``storage_mb``) that were configured
    resources: tuple[tuple[str, int | float], ...] = ()

    def image_for(self, instance_id: str) -> str:
        """The evaluation image of one instance (SWE-bench 5.x's naming when per instance)."""
        if self.image_per_instance:
            return f"swebench/sweb.eval.x86_64.{instance_id.lower().replace('__', '_1776_')}:latest"
        assert self.image is not None
        return self.image


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(value)
    return None


def _environment(repo: str, entry: Mapping[str, Any]) -> Environment | str:
    """The entry as an Environment, or the problem with it."""
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        return f"unknown keys {unknown}"
    for key in ("version", "test_command", "log_parser"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            return f"{key} must be a non-empty string"
    if entry["log_parser"] not in SWE_BENCH_LOG_PARSERS:
        return f"log_parser {entry['log_parser']!r} is not a SWE-bench 5.x parser"
    per_instance = entry.get("image_per_instance", False)
    if not isinstance(per_instance, bool):
        return "image_per_instance must be true or false"
    image = entry.get("image")
    if per_instance == (isinstance(image, str) and bool(image.strip())):
        return "give exactly one of image and image_per_instance = true"
    install = _strings(entry.get("install", []))
    test_files = _strings(entry.get("test_files", list(DEFAULT_TEST_FILES)))
    if install is None or test_files is None or not test_files:
        return "install and test_files must be lists of non-empty strings (test_files not empty)"
    resources = tuple((key, entry[key]) for key in RESOURCE_KEYS if key in entry)
    for key, value in resources:
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not (whole or (key == "cpus" and isinstance(value, float))) or not 0 < value < 1e9:
            return f"{key} must be a positive {'number' if key == 'cpus' else 'whole number'}"
    return Environment(version=entry["version"], test_command=entry["test_command"], log_parser=entry["log_parser"],
                       image=image if isinstance(image, str) else None, image_per_instance=per_instance,
                       install=install, test_files=test_files, resources=resources)


class EnvironmentsUnreadable(ValueError):
    """The environments file cannot be read as a whole (the message says why, in one line)."""


def read_environments(path: Path) -> dict[str, Any]:
    """The ``[repos]`` table of the file; :class:`EnvironmentsUnreadable` when there is none to read."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EnvironmentsUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise EnvironmentsUnreadable(f"{path} is not a TOML file: {exc}") from None
    repos = document.get("repos")
    if not isinstance(repos, dict):
        raise EnvironmentsUnreadable(f"{path} has no [repos] table")
    return repos


def load_environments(path: Path | None) -> dict[str, Environment]:
    """Repository slug (lower case) → its Environment; ``None`` gives none. A file that became
    unreadable after the settings were checked is logged (``swe_bench_environments_unreadable``)
    and gives none."""
    if path is None:
        return {}
    try:
        repos = read_environments(path)
    except EnvironmentsUnreadable as exc:
        logger.warning("swe_bench_environments_unreadable path=%s error=%s", path, exc)
        return {}
    environments: dict[str, Environment] = {}
    for repo, entry in repos.items():
        loaded = _environment(repo, entry) if isinstance(entry, dict) else "not a table"
        if isinstance(loaded, str):
            logger.warning("swe_bench_environment_invalid repo=%s problem=%s", repo, loaded)
            continue
        environments[repo.strip().lower()] = loaded
    return environments
