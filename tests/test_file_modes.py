"""Published files get 0666 less the umask (sediment/file_modes.py): exports, profile exports
(rows, evidence sidecars, compatibility.json, dataset cards, claims), the trajectory library
(records, rankings, manifest) and its gallery pages. A bundle stays 0600, the documented
exception (docs/bundle.md). Before this, every one of them was 0600 whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sediment.demo import run_demo
from sediment.file_modes import current_umask, published_mode
from sediment.trajectory import synthetic
from sediment.trajectory.gallery import write_gallery
from sediment.trajectory.library import Library


@contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_published_files_honour_the_umask(tmp_path: Path, mask: int, expected: int) -> None:
    with umask(mask):
        assert current_umask() == mask and published_mode() == expected
        run_demo(tmp_path / "demo")
        library = Library(tmp_path / "library")
        library.import_records(synthetic.records(5, 6))
        write_gallery(library, tmp_path / "gallery")
    published = {**{f"exports/{k}": v for k, v in modes(tmp_path / "demo" / "exports").items()},
                 **{f"profiles/{k}": v for k, v in modes(tmp_path / "demo" / "profiles").items()},
                 **{f"library/{k}": v for k, v in modes(tmp_path / "library").items()},
                 **{f"gallery/{k}": v for k, v in modes(tmp_path / "gallery").items()}}
    names = set(published)
    # what the brief names: rows, evidence sidecars, compatibility records, cards, the manifest, pages
    assert {"exports/sft/sft.train.jsonl", "profiles/hf-trl-sft-v3/evidence.train.jsonl",
            "profiles/hf-trl-sft-v3/compatibility.json", "profiles/hf-trl-sft-v3/README.md",
            "gallery/index.html"} <= names
    assert any(n.startswith("library/") and n.endswith("manifest.json") for n in names)
    assert sum(n.startswith("gallery/") for n in names) > 1
    # a profile's executable task files (a Harbor task's scripts) get 0777 less the umask
    executable = {n for n in names if n.startswith("profiles/harbor-tasks-v1/") and n.endswith(".sh")}
    assert executable and all(published[n] == 0o777 & ~mask for n in executable)
    wrong = {name: oct(mode) for name, mode in published.items() if mode != expected and name not in executable}
    assert wrong == {}
    # the bundle keeps its documented 0600
    assert set(modes(tmp_path / "demo" / "bundle").values()) == {0o600}
