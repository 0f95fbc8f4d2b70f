"""Reading one bare mirror (:class:`Mirror`): commits, ancestry, first-parent diffs, file
contents and the notes agents and git-ai leave on commits. Exports never fetch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pygit2

from sediment.git.read_error import MirrorReadError as MirrorReadError

NOTES_REF = "refs/notes/sediment"
GIT_AI_NOTES_REF = "refs/notes/ai"  #: git-ai's authorship notes (sediment.git.ai_notes)


@dataclass(frozen=True)
class NoteEdge:
    """A Session named in the git note of a commit."""

    commit_sha: str
    session_id: str
    tool: str | None
    stamped_at: str | None


@dataclass(frozen=True)
class CommitInfo:
    """A commit as attribution sees it: time and the text its first-parent diff adds, in all
    and per text file (``(path, added text)``, binary files left out)."""

    sha: str
    committer_time: int
    added_text: str
    added_by_file: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class FileChange:
    """One file's section of a commit's first-parent diff (renames detected): its old and new
    path (``None`` for an add or a delete), whether git saw it as binary, and the text of its
    added lines."""

    old_path: str | None
    new_path: str | None
    binary: bool
    added_text: str


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

    def nearest_ancestors(self, shas: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """For each of ``shas`` the mirror holds, the nearest of ``shas`` among its proper
        ancestors: those reached from it through history that passes no other of ``shas``
        (sorted). Ancestry among ``shas`` is the transitive closure of these edges; one walk of
        the history they reach. ``shas`` the mirror does not hold are left out; a history that
        cannot be walked raises :class:`MirrorReadError`."""
        wanted: dict[pygit2.Oid, str] = {}
        for sha in shas:
            if self.has_commit(sha):
                wanted[self._commit(sha).id] = sha
        found: dict[str, tuple[str, ...]] = {}
        if not wanted:
            return found
        below: dict[pygit2.Oid, frozenset[str]] = {}  # per commit walked: the nearest wanted at or below it
        try:
            walker = self._repo.walk(None, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
            for oid in sorted(wanted, key=str):
                walker.push(oid)
            for commit in walker:  # parents before children
                inherited = frozenset().union(*(below.get(p, frozenset()) for p in commit.parent_ids))
                named = wanted.get(commit.id)
                if named is None:
                    below[commit.id] = inherited
                else:
                    found[named] = tuple(sorted(inherited))
                    below[commit.id] = frozenset((named,))
        except pygit2.GitError as exc:
            raise MirrorReadError(f"history of {len(wanted)} commits: {exc}") from exc
        return found

    def range_commits(self, base: str, head: str, *, limit: int = 100_000) -> frozenset[str] | None:
        """The commits of ``base..head`` (reachable from ``head``, not from ``base``), as ``git
        rev-list base..head`` lists them; ``None`` past ``limit`` commits. A commit the mirror
        lacks raises :class:`MirrorReadError`."""
        start, stop = self._commit(head), self._commit(base)
        found: set[str] = set()
        try:
            walker = self._repo.walk(start.id, pygit2.enums.SortMode.TOPOLOGICAL)
            walker.hide(stop.id)
            for commit in walker:
                found.add(str(commit.id))
                if len(found) > limit:
                    return None
        except pygit2.GitError as exc:
            raise MirrorReadError(f"history of {base}..{head}: {exc}") from exc
        return frozenset(found)

    def first_parent(self, sha: str) -> str | None:
        commit = self._commit(sha)
        try:
            parent_ids = commit.parent_ids
        except pygit2.GitError as exc:
            raise MirrorReadError(f"parents of {sha}: {exc}") from exc
        return str(parent_ids[0]) if parent_ids else None

    def note_edges(self) -> Iterator[NoteEdge | str]:
        """Sessions named by ``refs/notes/sediment``; a malformed note yields a problem string."""
        try:
            notes = list(self._repo.notes(NOTES_REF))  # type: ignore[call-arg]  # the stub omits the ref
        except (KeyError, pygit2.GitError):
            return
        for note in sorted(notes, key=lambda n: str(n.annotated_id)):
            sha = str(note.annotated_id)
            try:
                body = json.loads(note.message)
                sessions = body["sessions"] if isinstance(body, dict) and body.get("v") == 1 else None
                if not isinstance(sessions, list):
                    raise ValueError("expected {\"v\": 1, \"sessions\": [...]}")
                for entry in sessions:
                    session_id = entry.get("session_id") if isinstance(entry, dict) else None
                    if not isinstance(session_id, str) or not session_id.strip():
                        raise ValueError("a session entry has no session_id")
                    yield NoteEdge(sha, session_id.strip(), entry.get("tool"), entry.get("stamped_at"))
            except (ValueError, AttributeError) as exc:
                yield f"malformed sediment note on {sha}: {exc}"

    def git_ai_notes(self) -> Iterator[tuple[str, str]]:
        """``(annotated commit, note text)`` of every ``refs/notes/ai`` note, by commit; a note
        that is not UTF-8 is read with replacement (its parser refuses what it cannot read)."""
        try:
            notes = list(self._repo.notes(GIT_AI_NOTES_REF))  # type: ignore[call-arg]  # the stub omits the ref
        except (KeyError, pygit2.GitError):
            return
        for note in sorted(notes, key=lambda n: str(n.annotated_id)):
            blob = self._repo[note.id]
            data = blob.data if isinstance(blob, pygit2.Blob) else b""
            yield str(note.annotated_id), data.decode("utf-8", "replace")

    def commits(self) -> Iterator[CommitInfo]:
        """Every commit reachable from the branches, with the text its first-parent diff adds."""
        seen: set[str] = set()
        for branch in sorted(self._repo.branches.local):
            target = self._repo.branches.local[branch].target
            for commit in self._repo.walk(target, pygit2.enums.SortMode.TOPOLOGICAL):
                sha = str(commit.id)
                if sha in seen:
                    continue
                seen.add(sha)
                if commit.parents:
                    diff = commit.parents[0].tree.diff_to_tree(commit.tree)
                else:
                    diff = commit.tree.diff_to_tree(swap=True)
                by_file: list[tuple[str, str]] = []
                for patch in diff:
                    if patch is None or patch.delta.is_binary:
                        continue
                    added = "".join(line.content for hunk in patch.hunks for line in hunk.lines if line.origin == "+")
                    by_file.append((patch.delta.new_file.path, added))
                yield CommitInfo(sha, int(commit.commit_time), "".join(text for _, text in by_file), tuple(by_file))

    def committer_time(self, sha: str) -> int:
        """Committer time in seconds since the epoch, or 0 if unreadable."""
        try:
            return int(self._commit(sha).commit_time)
        except MirrorReadError:
            return 0

    def _first_parent_diff(self, sha: str) -> pygit2.Diff:
        """The diff ``sha`` introduces against its first parent (from the empty tree for a root
        commit), renames found (limit 1000); a git error raises ``pygit2.GitError``."""
        commit = self._commit(sha)
        if commit.parents:
            diff = commit.parents[0].tree.diff_to_tree(commit.tree)
        else:
            diff = commit.tree.diff_to_tree(swap=True)
        diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES, rename_limit=1000)
        return diff

    def commit_patch(self, sha: str) -> str:
        """The patch ``sha`` introduces: its diff from its first parent (from the empty tree for
        a root commit), with rename detection (limit 1000), ``a/``/``b/`` prefixes and every
        file's section in diff order; bytes that are not UTF-8 decode with replacement."""
        try:
            diff = self._first_parent_diff(sha)
            return "".join(patch.data.decode("utf-8", "replace") for patch in diff if patch is not None)
        except pygit2.GitError as exc:
            raise MirrorReadError(f"diff of {sha}: {exc}") from exc

    def file_changes(self, sha: str) -> tuple[FileChange, ...]:
        """Every file's section of the diff ``sha`` introduces against its first parent (from
        the empty tree for a root commit), with rename detection (limit 1000), in diff order."""
        try:
            diff = self._first_parent_diff(sha)
            changes: list[FileChange] = []
            for patch in diff:
                if patch is None:
                    continue
                delta = patch.delta
                status = delta.status
                old = None if status == pygit2.enums.DeltaStatus.ADDED else delta.old_file.path
                new = None if status == pygit2.enums.DeltaStatus.DELETED else delta.new_file.path
                added = "" if delta.is_binary else "".join(
                    line.content for hunk in patch.hunks for line in hunk.lines if line.origin == "+")
                changes.append(FileChange(old, new, bool(delta.is_binary), added))
            return tuple(changes)
        except pygit2.GitError as exc:
            raise MirrorReadError(f"diff of {sha}: {exc}") from exc

    def renamed_paths(self, base: str, head: str, path: str) -> tuple[str, ...]:
        """The paths ``path`` was renamed to between ``base`` and ``head`` (rename detection,
        limit 1000), sorted."""
        try:
            old, new = self._commit(base), self._commit(head)
            diff = old.tree.diff_to_tree(new.tree)
            diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES, rename_limit=1000)
            return tuple(sorted({d.new_file.path for d in diff.deltas
                                 if d.status == pygit2.enums.DeltaStatus.RENAMED and d.old_file.path == path}))
        except pygit2.GitError as exc:
            raise MirrorReadError(f"diff {base}..{head}: {exc}") from exc

    def has_path(self, sha: str, path: str) -> bool:
        """Whether ``path`` names a file (a blob) in ``sha``'s tree."""
        tree = self._commit(sha).tree
        try:
            entry = tree[path]
        except (KeyError, ValueError, pygit2.GitError):
            return False
        return entry.type_str == "blob"

    def file_bytes(self, sha: str, path: str) -> bytes | None:
        """The content of the file ``path`` in ``sha``'s tree, or ``None`` when there is none."""
        tree = self._commit(sha).tree
        try:
            entry = tree[path]
            if entry.type_str != "blob":
                return None
            blob = self._repo[entry.id]
            return bytes(blob.data)  # type: ignore[attr-defined]
        except (KeyError, ValueError) as exc:
            if isinstance(exc, KeyError):
                return None
            raise MirrorReadError(f"cannot read {path} at {sha}: {exc}") from exc
        except pygit2.GitError as exc:
            raise MirrorReadError(f"cannot read {path} at {sha}: {exc}") from exc

    def tree_files(self, sha: str) -> Iterator[tuple[str, int, bytes]]:
        """Every blob of ``sha``'s tree as ``(path, git file mode, content)``, in path order
        (a symlink's content is its target; submodule entries are left out)."""
        try:
            stack: list[tuple[str, pygit2.Tree]] = [("", self._commit(sha).tree)]
            found: list[tuple[str, int, bytes]] = []
            while stack:
                prefix, tree = stack.pop()
                for entry in tree:
                    path = prefix + str(entry.name)
                    if entry.type_str == "tree":
                        stack.append((path + "/", self._repo[entry.id]))  # type: ignore[arg-type]
                    elif entry.type_str == "blob":
                        found.append((path, int(entry.filemode), bytes(self._repo[entry.id].data)))  # type: ignore[attr-defined]
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise MirrorReadError(f"cannot read the tree of {sha}: {exc}") from exc
        yield from sorted(found)

    def diff(self, base: str, head: str) -> str:
        """Unified diff ``base..head`` with rename detection (limit 1000) and ``a/``/``b/`` prefixes."""
        try:
            old, new = self._commit(base), self._commit(head)
            diff = old.tree.diff_to_tree(new.tree)
            diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES, rename_limit=1000)
            return str(diff.patch or "")
        except pygit2.GitError as exc:
            raise MirrorReadError(f"diff {base}..{head}: {exc}") from exc
