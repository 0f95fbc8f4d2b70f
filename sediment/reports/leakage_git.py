"""Commit ranges and ancestry for the leakage report, read from the mirrors (docs/leakage.md).

A row's range is ``base..head`` for each head it names; the mirror of its repository is the one
:meth:`sediment.git.mirror_root.MirrorRoot.locate` finds for the row's org (or ``--org``). A row
whose mirror is absent, or whose commits the mirror lacks, is counted, never guessed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pygit2

from sediment.errors import SedimentError
from sediment.git.mirror import Mirror, MirrorReadError
from sediment.git.mirror_root import MirrorRoot
from sediment.reports.leakage_rows import ExportedRow


class MirrorRanges:
    """Walks rows' commit ranges in the mirrors under ``root``, one opened mirror per repository."""

    def __init__(self, root: Path, org_id: str | None = None) -> None:
        self.root = MirrorRoot(root)
        self.org_id = org_id
        self._mirrors: dict[tuple[str, str], Mirror | None] = {}
        self.unchecked: Counter[str] = Counter()  #: reason -> rows or checks that could not be made

    def mirror(self, org_id: str, repo: str) -> Mirror | None:
        org = org_id or self.org_id or ""
        key = (org, repo)
        if key not in self._mirrors:
            found = None
            try:
                location = self.root.locate(org, repo) if org else None
                if location is None and self.org_id and self.org_id != org:
                    location = self.root.locate(self.org_id, repo)
                if location is not None:
                    found = Mirror(pygit2.Repository(str(location.path)))
            except (SedimentError, pygit2.GitError, OSError):
                found = None
            self._mirrors[key] = found
        return self._mirrors[key]

    def walk(self, row: ExportedRow) -> frozenset[str] | None:
        """Every commit of the row's ranges (``base..head`` for each head), or None when the
        mirror is absent, lacks a commit, or a range is too long."""
        mirror = self.mirror(row.org_id, row.repo_name or row.repo)
        if mirror is None:
            self.unchecked["mirror_absent"] += 1
            return None
        found: set[str] = set()
        try:
            for head in row.head_commits:
                commits = mirror.range_commits(row.base_commit, head)
                if commits is None:
                    self.unchecked["range_too_long"] += 1
                    return None
                found |= commits
        except MirrorReadError:
            self.unchecked["commit_absent"] += 1
            return None
        return frozenset(found)

    def reaches(self, row: ExportedRow, sha: str) -> bool | None:
        """Whether ``sha`` lies in one of the row's ranges (the base itself counts); None when it
        cannot be told."""
        mirror = self.mirror(row.org_id, row.repo_name or row.repo)
        if mirror is None:
            self.unchecked["mirror_absent"] += 1
            return None
        try:
            if not mirror.has_commit(sha):
                self.unchecked["benchmark_commit_absent"] += 1
                return None
            if not mirror.is_ancestor_or_equal(row.base_commit, sha):
                return False
            return any(mirror.is_ancestor_or_equal(sha, head) for head in row.head_commits)
        except MirrorReadError:
            self.unchecked["commit_absent"] += 1
            return None
