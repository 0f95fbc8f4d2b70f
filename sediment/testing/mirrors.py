"""Real git mirrors for tests: :class:`GitRepo` (a bare mirror in a mirror root, commits made one
by one, git notes written as an agent's hook would) and the fixtures ``mirror_root``,
``git_repo`` and ``commit_history``. :class:`MirrorRoot`, :class:`Mirror` (the reader),
:class:`MirrorWriter` and :class:`RepositoryContext` are re-exported for tests that build their
own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from sediment.git.mirror import Mirror
from sediment.git.mirror_root import MirrorRoot
from sediment.git.mirror_writer import MirrorWriter
from sediment.git.repositories import RepositoryContext
from sediment.model.facts import RepositoryIdentity
from sediment.testing.builders import ORG, REPO

__all__ = ["GitRepo", "Mirror", "MirrorRoot", "MirrorWriter", "RepositoryContext", "commit_history", "git_repo",
           "mirror_root"]


class GitRepo:
    """A real bare mirror in a mirror root, with commits made one by one."""

    def __init__(self, root: MirrorRoot, repo: str = REPO, org_id: str = ORG,
                 identity: RepositoryIdentity | None = None) -> None:
        """``identity``: the mirror of an identified repository (keyed by its identity)."""
        self.root = root
        self.repo = repo
        self.identity = identity
        self.path = root.mirror_path(org_id, repo, identity)
        self._writer = MirrorWriter(self.path)
        self._clock = 1_767_000_000

    def commit(self, files: dict[str, str | None], message: str = "change", *,
               parents: Sequence[str] | None = None, branch: str | None = None) -> str:
        """A commit one minute after the last; ``branch`` / ``parents`` as for
        :meth:`sediment.git.mirror_writer.MirrorWriter.commit` (another branch, explicit parents)."""
        self._clock += 60
        return self._writer.commit(files, message, when=self._clock, parents=parents, branch=branch)

    def note(self, sha: str, *sessions: str) -> None:
        """Write the ``refs/notes/sediment`` note of ``sha`` naming ``sessions`` (as an agent's hook
        would); :func:`sediment.ingest.git_notes.observe_notes` then stores the edges."""
        self._writer.add_note(sha, [{"tool": "codex", "session_id": s, "stamped_at": "2026-01-05T12:00:00Z"}
                                    for s in sessions])



@pytest.fixture
def mirror_root(tmp_path: Path) -> MirrorRoot:
    path = tmp_path / "mirrors"
    path.mkdir()
    return MirrorRoot(path)


@pytest.fixture
def git_repo(mirror_root: MirrorRoot) -> GitRepo:
    return GitRepo(mirror_root)


@pytest.fixture
def commit_history(git_repo: GitRepo) -> dict[str, str]:
    """A real history in ``git_repo``: root → c1 (fixes add) → c2 (adds a test, renames a file)
    → c3 (an unverified later change). Names → SHAs."""
    root = git_repo.commit({"calc.py": "def add(a, b):\n    return a - b\n", "old.txt": "x\n" * 20})
    c1 = git_repo.commit({"calc.py": "def add(a, b):\n    return a + b\n"})
    c2 = git_repo.commit({"test_calc.py": "def test_add():\n    assert True\n",
                          "old.txt": None, "renamed.txt": "x\n" * 20})
    c3 = git_repo.commit({"later.py": "print('later')\n"})
    return {"root": root, "c1": c1, "c2": c2, "c3": c3}
