"""Bare git mirrors: the only module that imports pygit2.

Layout (contract §9): a legacy repository lives at
``<root>/<percent-encode("<org_id>/<repo>")>``; an identified one at
``<root>/repositories-v1/<org>/<provider>/<host>/<repository_id>`` (each part
percent-encoded with no safe characters). A directory is a mirror only if it has ``HEAD``.
Exports never fetch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pygit2

from sediment.errors import ConfigurationError
from sediment.facts import RepositoryIdentity


class MirrorReadError(Exception):
    """A git read (ancestry, parent, diff) failed inside an existing mirror."""


def _encode(text: str) -> str:
    return quote(text, safe="")


@dataclass(frozen=True)
class MirrorRoot:
    """The root directory of every bare mirror."""

    path: Path

    def __post_init__(self) -> None:
        if not self.path.is_dir():
            raise ConfigurationError(f"mirror root does not exist or is not a directory: {self.path}")

    def mirror_path(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None) -> Path:
        """Where the mirror of ``repo`` (or of the identified repository) lives."""
        if identity is not None:
            parts = (org_id, identity.provider, identity.host, identity.repository_id)
            return self.path.joinpath("repositories-v1", *(_encode(p) for p in parts))
        return self.path / _encode(f"{org_id}/{repo}")

    def open(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None) -> Mirror | None:
        """The mirror, or ``None`` when it is absent (no directory or no ``HEAD``)."""
        path = self.mirror_path(org_id, repo, identity)
        if not (path / "HEAD").is_file():
            return None
        try:
            return Mirror(pygit2.Repository(str(path)))
        except pygit2.GitError:
            return None


class Mirror:
    """Read-only access to one bare mirror."""

    def __init__(self, repository: pygit2.Repository) -> None:
        self._repo = repository

    def has_commit(self, sha: str) -> bool:
        try:
            obj = self._repo.get(sha)
        except (ValueError, pygit2.GitError):
            return False
        return isinstance(obj, pygit2.Commit)

    def _commit(self, sha: str) -> pygit2.Commit:
        try:
            obj = self._repo.get(sha)
        except (ValueError, pygit2.GitError) as exc:
            raise MirrorReadError(f"cannot read commit {sha}: {exc}") from exc
        if not isinstance(obj, pygit2.Commit):
            raise MirrorReadError(f"{sha} is not a commit")
        return obj

    def is_ancestor_or_equal(self, ancestor: str, descendant: str) -> bool:
        a, d = self._commit(ancestor), self._commit(descendant)
        if a.id == d.id:
            return True
        try:
            return bool(self._repo.descendant_of(d.id, a.id))
        except pygit2.GitError as exc:
            raise MirrorReadError(f"ancestry of {ancestor}..{descendant}: {exc}") from exc

    def first_parent(self, sha: str) -> str | None:
        commit = self._commit(sha)
        try:
            parent_ids = commit.parent_ids
        except pygit2.GitError as exc:
            raise MirrorReadError(f"parents of {sha}: {exc}") from exc
        return str(parent_ids[0]) if parent_ids else None

    def committer_time(self, sha: str) -> int:
        """Committer time in seconds since the epoch, or 0 if unreadable."""
        try:
            return int(self._commit(sha).commit_time)
        except MirrorReadError:
            return 0

    def diff(self, base: str, head: str) -> str:
        """Unified diff ``base..head`` with rename detection (limit 1000) and ``a/``/``b/`` prefixes."""
        try:
            old, new = self._commit(base), self._commit(head)
            diff = old.tree.diff_to_tree(new.tree)
            diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES, rename_limit=1000)
            return str(diff.patch or "")
        except pygit2.GitError as exc:
            raise MirrorReadError(f"diff {base}..{head}: {exc}") from exc


class MirrorWriter:
    """Builds history in a bare mirror (demo data and tests): one branch, explicit times."""

    def __init__(self, path: Path, *, branch: str = "main") -> None:
        self._repo = pygit2.init_repository(str(path), bare=True, initial_head=branch)
        self._ref = f"refs/heads/{branch}"

    def commit(self, files: dict[str, str | None], message: str, *, when: int,
               author: str = "Demo Developer", email: str = "dev@example.com") -> str:
        """Commit ``files`` (path → content, ``None`` deletes) on top of the branch; return the SHA."""
        repo = self._repo
        parents: list[pygit2.Oid] = []
        index = pygit2.Index()
        if not repo.head_is_unborn:
            head = repo.head.peel(pygit2.Commit)
            parents = [head.id]
            index.read_tree(head.tree)
        for name, content in files.items():
            if content is None:
                index.remove(name)
            else:
                blob = repo.create_blob(content.encode("utf-8"))
                index.add(pygit2.IndexEntry(name, blob, pygit2.enums.FileMode.BLOB))
        tree = index.write_tree(repo)
        signature = pygit2.Signature(author, email, when, 0)
        oid = repo.create_commit(self._ref, signature, signature, message, tree, parents)
        return str(oid)
