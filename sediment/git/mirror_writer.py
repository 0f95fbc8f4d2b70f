"""Writing history into a bare mirror (:class:`MirrorWriter`): commits with explicit times and
the notes agents and git-ai leave, for demo data and tests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pygit2

from sediment.git.mirror import GIT_AI_NOTES_REF, NOTES_REF


class MirrorWriter:
    """Builds history in a bare mirror (demo data and tests): explicit times, one branch unless
    told otherwise."""

    def __init__(self, path: Path, *, branch: str = "main") -> None:
        self._repo = pygit2.init_repository(str(path), bare=True, initial_head=branch)
        self._ref = f"refs/heads/{branch}"

    def commit(self, files: dict[str, str | None], message: str, *, when: int,
               author: str = "Demo Developer", email: str = "dev@example.com",
               parents: Sequence[str] | None = None, branch: str | None = None) -> str:
        """Commit ``files`` (path → content, ``None`` deletes) on top of the branch; return the SHA.

        ``branch`` names another branch to commit on (created when absent); ``parents`` gives
        the commit's parents explicitly (``[]``: a new root), the branch then pointing at the
        new commit whatever it pointed at before (as a force push leaves it).
        """
        repo = self._repo
        ref = f"refs/heads/{branch}" if branch is not None else self._ref
        index = pygit2.Index()
        if parents is None:
            tip = repo.references.get(ref)
            parent_ids = [] if tip is None else [tip.peel(pygit2.Commit).id]
        else:
            parent_ids = [pygit2.Oid(hex=p) for p in parents]
        if parent_ids:
            index.read_tree(repo[parent_ids[0]].peel(pygit2.Commit).tree)
        for name, content in files.items():
            if content is None:
                index.remove(name)
            else:
                blob = repo.create_blob(content.encode("utf-8"))
                index.add(pygit2.IndexEntry(name, blob, pygit2.enums.FileMode.BLOB))
        tree = index.write_tree(repo)
        signature = pygit2.Signature(author, email, when, 0)
        oid = repo.create_commit(None, signature, signature, message, tree, parent_ids)
        repo.references.create(ref, oid, force=True)
        return str(oid)

    def add_git_ai_note(self, sha: str, text: str) -> None:
        """Write the ``refs/notes/ai`` note of a commit (as git-ai's hooks would)."""
        signature = pygit2.Signature("git-ai", "notes@example.com", 0, 0)
        self._repo.create_note(text, signature, signature, sha, GIT_AI_NOTES_REF, True)

    def add_note(self, sha: str, sessions: list[dict[str, str]]) -> None:
        """Write the ``refs/notes/sediment`` note of a commit (as an agent's hook would)."""
        signature = pygit2.Signature("Sediment Notes", "notes@example.com", 0, 0)
        self._repo.create_note(json.dumps({"v": 1, "sessions": sessions}), signature, signature, sha,
                               NOTES_REF, True)
