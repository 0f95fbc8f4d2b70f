"""A real fact store, a real mirror root holding one bare mirror, and the recovery export over
them (the fixtures ``world`` on SQLite and ``any_world`` on each backend)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import (
    ORG,
    REPO,
    T0,
    FactModel,
    FactStore,
    GitRepo,
    MirrorRoot,
    RepositoryIdentity,
    conversation,
    export_objective,
    observe_notes,
    read_rows,
    store_evidence,
    unavailable,
)

IDENTITY = RepositoryIdentity(provider="github", host="github.com", repository_id="424242")


@dataclass
class Exported:
    summary: dict[str, Any]
    out: Path
    #: every published row, the train file's first
    rows: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(r["failed_commit_sha"], r["fixed_commit_sha"]) for r in self.rows]

    @property
    def skipped(self) -> dict[str, int]:
        return dict(self.summary["pairs_skipped"])


@dataclass
class World:
    """The evidence of one org: Facts in ``store``, history in ``git`` (the mirror of REPO)."""

    store: FactStore
    mirrors: MirrorRoot
    git: GitRepo
    tmp: Path
    exports: int = 0

    def facts(self, *facts: FactModel) -> None:
        self.store.append(facts)

    def session(self, session_id: str, *shas: str, turns: int = 2) -> list[str]:
        """A Session of ``turns`` calls whose git notes name ``shas`` (stored as observations by
        a mirror refresh, as in production); its call ids."""
        calls = conversation(session_id, turns=turns)
        self.store.append(calls)
        for sha in shas:
            self.git.note(sha, session_id)
            result = observe_notes(self.mirrors, self.store, ORG, REPO, T0 + timedelta(days=1), self.git.identity)
            assert not result.problems
        return [c.inference_call_id for c in calls]

    def export(self, out: Path | None = None, *, mirrors: bool = True) -> Exported:
        """``sediment export recovery`` from this store, as the CLI runs it; rows validated."""
        self.exports += 1
        out = out or self.tmp / f"out{self.exports}"
        evidence = store_evidence(self.store, ORG, self.mirrors if mirrors else None)
        summary = export_objective(evidence, out, objective="recovery")
        exported = Exported(summary, out)
        for path in sorted(summary["written"], key=lambda p: (".eval." in p, p)):
            rows = read_rows(Path(path))
            exported.files[Path(path).name] = rows
            exported.rows.extend(rows)
        return exported

    # --- git itself, an independent oracle (the upstream implementation shells out to it) ---

    def git_cli(self, *args: str) -> str:
        if shutil.which("git") is None:
            unavailable("git is not installed (the recovery tests compare with git's own diff)")
        done = subprocess.run(["git", "-C", str(self.git.path), *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def upstream_diff(self, old: str, new: str) -> str:
        """Upstream's diff command, run by git."""
        return self.git_cli("-c", "core.quotePath=false", "-c", "diff.noprefix=false", "-c", "diff.srcPrefix=a/",
                            "-c", "diff.dstPrefix=b/", "diff", "--no-ext-diff", "--no-color", "-M", "-l1000",
                            "--end-of-options", old, new, "--")

    def numstat(self, old: str, new: str) -> int:
        """Added plus deleted lines between two commits, as git counts them."""
        total = 0
        for line in self.git_cli("diff", "--numstat", "-M", "-l1000", old, new, "--").splitlines():
            added, deleted, _ = line.split("\t", 2)
            total += int(added) + int(deleted)
        return total


def make_world(tmp_path: Path, url: str, identity: RepositoryIdentity | None = None) -> World:
    root = tmp_path / "mirrors"
    root.mkdir()
    mirrors = MirrorRoot(root)
    return World(FactStore(url), mirrors, GitRepo(mirrors, identity=identity), tmp_path)


@pytest.fixture
def world(tmp_path: Path) -> World:
    """On SQLite."""
    return make_world(tmp_path, f"sqlite:///{tmp_path / 'facts.db'}")


@pytest.fixture
def identified_world(tmp_path: Path) -> World:
    """On SQLite, REPO an identified repository (GitHub id 424242) whose mirror is keyed by it."""
    return make_world(tmp_path, f"sqlite:///{tmp_path / 'facts.db'}", IDENTITY)


@pytest.fixture
def any_world(tmp_path: Path, store_url: str) -> World:
    """On each backend (SQLite and PostgreSQL)."""
    return make_world(tmp_path, store_url)
