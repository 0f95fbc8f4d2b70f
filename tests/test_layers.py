"""The package layers of ``sediment/``: imports point down the stages, and no module imports
itself back through others.

Every import counts: module-level, function-local and ``TYPE_CHECKING`` ones alike (a lazy import
hides a dependency; it does not remove it). The order, lowest first, is README "Layout"'s.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

SEDIMENT = Path(__file__).resolve().parents[1] / "sediment"

#: The small shared modules at the root: any package may import them; they import only each other.
ROOT_SHARED = ("errors", "identifiers", "records", "split", "validation", "parallel", "home", "output_paths", "file_modes",
               "settings")
#: The packages and the public faces, lowest first: each imports only the root's shared modules
#: and what stands before it. ``__init__`` is the library API (it calls the export pipeline);
#: ``plugin`` and ``testing`` are the faces plugin authors import; ``__main__`` runs the CLI.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("model",), ("store",), ("git",), ("ci",), ("ingest",), ("bundle",), ("derive",), ("evidence",),
    ("trajectory",), ("host",), ("export",), ("__init__",), ("importing",), ("reports",), ("receiver",),
    ("demo",), ("plugin", "testing"), ("cli",), ("__main__",),
)
MAX_ROOT_MODULES = 12
MAX_MODULE_LINES = 600
#: Modules still over the limit, each to be split (issue 21); the list may only shrink.
STILL_TOO_LONG: set[str] = set()


def modules(package: Path = SEDIMENT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules of ``known`` that the module ``name`` imports, wherever the import stands."""
    known = set(known)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(package: Path = SEDIMENT) -> dict[str, set[str]]:
    found = modules(package)
    return {name: imports_of(name, path, found) for name, path in found.items()}


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def room(module: str) -> str:
    """``sediment.ci.jobs`` -> ``ci``; a root module -> its own name."""
    return module.split(".")[1] if module.count(".") else "__init__"


def rank(module: str) -> int:
    """A module's layer: the root's shared modules 0, then 1.. in :data:`LAYERS` order."""
    name = room(module)
    if name in ROOT_SHARED:
        return 0
    for index, peers in enumerate(LAYERS, start=1):
        if name in peers:
            return index
    raise AssertionError(f"{module}: not in a layer; add its package to LAYERS (tests/test_layers.py)")


def violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Every import that points up the layers, or sideways between two rooms of one layer (the
    root's shared modules excepted)."""
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if room(target) == room(module):
                continue
            mine, theirs = rank(module), rank(target)
            if theirs > mine or (theirs == mine != 0):
                found.append(f"{module} -> {target}")
    return found


# --- the rules -------------------------------------------------------------------------------


def test_every_module_is_in_a_layer() -> None:
    for module in modules():
        rank(module)


def test_imports_point_down_the_layers() -> None:
    assert violations(import_graph()) == []


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph()) == []


def test_the_root_holds_a_dozen_modules_at_most() -> None:
    root = sorted(p.stem for p in SEDIMENT.glob("*.py") if p.stem not in ("plugin", "testing"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_no_module_is_over_600_lines() -> None:
    long = {str(p.relative_to(SEDIMENT.parent)): n for p in SEDIMENT.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert set(long) == STILL_TOO_LONG, long  # a module split below the limit leaves the list


# --- the checker checks itself ---------------------------------------------------------------


def test_cycles_finds_a_loop_and_only_the_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_violations_name_an_upward_import() -> None:
    graph = {"sediment.store.engine": {"sediment.ingest.reading.files", "sediment.model.facts", "sediment.errors"},
             "sediment.errors": {"sediment.records"},
             "sediment.records": {"sediment.model.facts"},
             "sediment.plugin": {"sediment.cli.main", "sediment.export.pipeline"}}
    assert violations(graph) == ["sediment.plugin -> sediment.cli.main",
                                 "sediment.records -> sediment.model.facts",
                                 "sediment.store.engine -> sediment.ingest.reading.files"]


def test_imports_of_counts_function_local_and_type_checking_imports(tmp_path: Path) -> None:
    package = tmp_path / "sediment"
    (package / "store").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    (package / "store" / "__init__.py").write_text("")
    (package / "store" / "keys.py").write_text("")
    (package / "store" / "engine.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from sediment.errors import X\n"
        "def f():\n    from . import keys\n")
    assert import_graph(package)["sediment.store.engine"] == {"sediment.errors", "sediment.store.keys"}
