"""A command's start-up cost (issue 22): each ``sediment`` command is its own process, so what it
imports before it does anything is paid on every stage of a pipeline. These tests are not timed:
they run a command in a fresh interpreter and name the heavy modules it must NOT have loaded
(``sys.modules`` at exit), so a module-level import that drags one back in fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sediment.bundle.write import write_bundle
from sediment.testing import ORG, POLICY, outcome, rollout

#: Run ``sediment ARGS`` in this interpreter, then write which of the probed modules it loaded.
_PROBE = """
import json, runpy, sys
probed, report = json.loads(sys.argv[1]), sys.argv[2]
sys.argv = ["sediment", *sys.argv[3:]]
code = 0
try:
    runpy.run_module("sediment", run_name="__main__")
except SystemExit as exc:
    code = exc.code
with open(report, "w", encoding="utf-8") as out:
    json.dump({"exit": code, "loaded": sorted(m for m in probed if m in sys.modules)}, out)
"""

#: Loaded only by commands that read the fact store, open a mirror, write Parquet, run on Ray or
#: validate rows against a JSON Schema.
STORE = ["sqlalchemy", "sediment.store"]
GIT = ["pygit2", "sediment.git.mirror", "sediment.git.mirror_root"]
ENGINES = ["pyarrow", "ray"]
SCHEMAS = ["jsonschema", "referencing"]
#: What building the plugin registry costs: entry points, pluggy, pydantic models of the Facts.
PLUGINS = ["pluggy", "pydantic", "sediment.host.registry", "sediment.model.facts", "sediment.ingest.reading.files"]
#: Loaded by every command (the controls: the probe does see modules).
ALWAYS = ["typer", "sediment.cli"]


def loaded(tmp_path: Path, *args: str, probed: list[str]) -> tuple[object, list[str]]:
    report = tmp_path / "loaded.json"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG}
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(probed), str(report), *args],
                          capture_output=True, text=True, env=environ, timeout=120, check=False)
    assert report.exists(), done.stderr
    result = json.loads(report.read_text(encoding="utf-8"))
    return result["exit"], result["loaded"]


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_the_root_help_loads_no_store_git_schema_or_plugin_machinery(tmp_path: Path, args: list[str]) -> None:
    code, found = loaded(tmp_path, *args, probed=[*STORE, *GIT, *ENGINES, *SCHEMAS, *PLUGINS, *ALWAYS])
    assert code in (0, None)
    assert found == sorted(ALWAYS)


def test_the_root_help_reads_no_installed_metadata(tmp_path: Path) -> None:
    """``importlib.metadata`` (the version, entry points) is for ``--version`` and plugin commands."""
    code, found = loaded(tmp_path, "--help", probed=["importlib.metadata", *ALWAYS])
    assert code in (0, None)
    assert found == sorted(ALWAYS)
    assert loaded(tmp_path, "--version", probed=["importlib.metadata"]) == (0, ["importlib.metadata"])


@pytest.mark.parametrize("group", ["ingest", "trajectory", "mirror", "library", "schema", "derive"])
def test_a_group_help_loads_neither_the_store_nor_git(tmp_path: Path, group: str) -> None:
    code, found = loaded(tmp_path, group, "--help", probed=[*STORE, *GIT, *ENGINES, *SCHEMAS, *ALWAYS])
    assert code in (0, None)
    assert found == sorted(ALWAYS)


@pytest.mark.parametrize("args", [["export", "--help"], ["export", "rlvr", "--help"], ["objectives"]])
def test_listing_objectives_loads_the_registry_but_no_store_git_or_schemas(tmp_path: Path, args: list[str]) -> None:
    code, found = loaded(tmp_path, *args, probed=[*STORE, *GIT, *ENGINES, *SCHEMAS, "sediment.host.registry"])
    assert code in (0, None)
    assert found == ["sediment.host.registry"]  # the objectives are the installed plugins': it is built


def test_a_bundle_export_reads_no_store_and_opens_no_mirror(tmp_path: Path) -> None:
    sha = "a" * 40
    bundle = write_bundle([rollout("s1", commits=[sha], outcomes=[outcome("o1", sha)])], tmp_path / "bundle",
                          org_id=ORG, policy=POLICY, quarantine_revision=0)
    out = tmp_path / "out"
    code, found = loaded(tmp_path, "export", "rlvr", "--target", "nemo-gym", "--from", str(bundle),
                         "--out", str(out), probed=[*STORE, *GIT, *ENGINES, "sediment.export.pipeline"])
    assert code in (0, None)
    assert found == ["sediment.export.pipeline"]  # the export did run
    assert (out / "rollouts.train.jsonl").is_file()


def test_the_probe_sees_a_store_command_load_sqlalchemy(tmp_path: Path) -> None:
    """The control: a command that reads the fact store does load it, so the absences above mean something."""
    code, found = loaded(tmp_path, "facts", "--json", probed=[*STORE])
    assert found == sorted(STORE), code
