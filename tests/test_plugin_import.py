"""Importing ``sediment.plugin`` is light (issue 21): a plugin that only declares itself loads no
git library, no store, no SQL toolkit and no export pipeline; every exported name still resolves,
to the same object its defining module holds."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import sediment.plugin as public

PLUGIN = Path(__file__).resolve().parents[1] / "sediment" / "plugin.py"
HEAVY = ("pygit2", "sqlalchemy", "sediment.store", "sediment.git", "sediment.export")
DECLARATIONS = ("TargetInfo", "ProfileInfo", "ObjectiveInfo", "PluginSettings", "hookimpl", "PopulationInfo",
                "ProjectedRow", "ManifestInfo", "CONTRACT_VERSION")


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == h or m.startswith(f"{h}.") for h in HEAVY))


def test_importing_the_declarations_loads_nothing_heavy() -> None:
    loaded = _loaded_after(f"from sediment.plugin import {', '.join(DECLARATIONS)}")
    assert "sediment.plugin" in loaded
    assert _heavy(loaded) == []


def test_the_bare_import_loads_neither_pydantic_nor_jsonschema() -> None:
    loaded = _loaded_after("import sediment.plugin")
    assert {"pydantic", "jsonschema", "pygit2"} & loaded == set()


def test_a_lazy_name_loads_its_module_on_first_use() -> None:
    loaded = _loaded_after("from sediment.plugin import Mirror")
    assert "sediment.git.mirror" in loaded and "pygit2" in loaded


def test_every_exported_name_resolves_to_its_defining_object() -> None:
    assert len(public.__all__) == len(set(public.__all__))
    for name in public.__all__:
        value = getattr(public, name)
        if name in public._LAZY:
            home = importlib.import_module(public._LAZY[name])
            assert value is (home if name == "trajectory_kit" else getattr(home, name)), name
    assert public.trajectory_kit is importlib.import_module("sediment.importing.kit")
    assert set(public.__all__) <= set(dir(public))


def test_a_star_import_brings_every_exported_name() -> None:
    names: dict[str, object] = {}
    exec("from sediment.plugin import *", names)
    assert set(public.__all__) <= set(names)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        public.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:  # pragma: no cover
        raise AssertionError("an unknown name resolved")


def test_the_lazy_table_matches_the_type_checking_imports() -> None:
    """Type checkers and the layer test read the ``TYPE_CHECKING`` imports; the runtime reads
    ``_LAZY``: the two name the same modules for the same names."""
    tree = ast.parse(PLUGIN.read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    declared: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            declared[alias.asname or alias.name] = full if alias.asname else node.module
    assert declared == public._LAZY
    eager = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
             and (node.module or "").startswith("sediment.") for alias in node.names}
    assert eager & set(public._LAZY) == set()
    assert set(public.__all__) == eager | set(public._LAZY)
