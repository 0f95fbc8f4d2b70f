"""Attribution: which commits a Session produced.

Git notes (``refs/notes/sediment``, stored as SessionCommitObservation Facts when a mirror is
fetched) bind a Session to commits and win. A Session without notes falls back to Jaccard
similarity between the tokens of its completion text and the tokens each commit's diff adds,
for commits made within the policy's lookback window after the Session's calls. Commits are
ordered by committer time, ties by their qualified sort key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sediment.facts import InferenceCall, SessionCommitObservation
from sediment.mirrors import Mirror, MirrorReadError, MirrorRoot
from sediment.policy import AttributionPolicy
from sediment.rollout import AttributionSource, CommitRef, scoring_text

_TOKEN = re.compile(r"[A-Za-z0-9_]+")

def tokens(text: str) -> frozenset[str]:
    return frozenset(_TOKEN.findall(text))

def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0

@dataclass(frozen=True)
class IndexedCommit:
    repo: str
    sha: str
    committer_time: int
    added_tokens: frozenset[str]

class CommitIndex:
    """Commits of every mirrored repository of one org, read once per derivation."""

    def __init__(self, mirrors: MirrorRoot | None, org_id: str) -> None:
        self._mirrors = mirrors
        self._org_id = org_id
        self._commits: list[IndexedCommit] | None = None
        self._times: dict[tuple[str, str], int] = {}
        self._opened: dict[str, Mirror | None] = {}

    def _load(self) -> list[IndexedCommit]:
        if self._commits is None:
            commits: list[IndexedCommit] = []
            if self._mirrors is not None:
                for repo in self._mirrors.legacy_mirrors(self._org_id):
                    mirror = self._mirrors.open(self._org_id, repo)
                    if mirror is None:
                        continue
                    for info in mirror.commits():
                        commits.append(IndexedCommit(repo, info.sha, info.committer_time, tokens(info.added_text)))
            self._commits = commits
            self._times = {(c.repo, c.sha): c.committer_time for c in commits}
        return self._commits

    def first_parent(self, repo: str, sha: str) -> str | None:
        """The first parent of a mirrored commit; ``None`` for a root, or when the mirror or
        the commit is absent."""
        if self._mirrors is None:
            return None
        if repo not in self._opened:
            self._opened[repo] = self._mirrors.open(self._org_id, repo)
        mirror = self._opened[repo]
        if mirror is None or not mirror.has_commit(sha):
            return None
        try:
            return mirror.first_parent(sha)
        except MirrorReadError:
            return None

    def committer_time(self, repo: str, sha: str) -> int:
        """Committer time of a mirrored commit; 0 when the mirror or commit is absent."""
        self._load()
        return self._times.get((repo, sha), 0)

    def candidates(self, start: datetime, end: datetime) -> list[IndexedCommit]:
        low, high = int(start.timestamp()), int(end.timestamp())
        return [c for c in self._load() if low <= c.committer_time <= high]

@dataclass(frozen=True)
class Attribution:
    commits: tuple[CommitRef, ...]
    source: AttributionSource

def trajectory_order(refs: Iterable[CommitRef], org_id: str, index: CommitIndex) -> tuple[CommitRef, ...]:
    """Ascending committer time, ties by ``(org, "legacy", repo, sha)``."""
    unique = {(r.repo, r.commit_sha): r for r in refs}
    return tuple(sorted(unique.values(), key=lambda r: (index.committer_time(r.repo, r.commit_sha),
                                                       org_id, "legacy", r.repo, r.commit_sha)))

def attribute(
    org_id: str,
    calls: Sequence[InferenceCall],
    observations: Sequence[SessionCommitObservation],
    index: CommitIndex,
    policy: AttributionPolicy,
) -> Attribution:
    """Bind a Session to commits: its git-note observations, else the Jaccard fallback."""
    noted = [CommitRef(repo=o.repo, commit_sha=o.commit_sha) for o in observations]
    if noted:
        return Attribution(trajectory_order(noted, org_id, index), "git_notes")
    if not calls:
        return Attribution((), "jaccard")
    session_tokens = tokens("\n".join(scoring_text(c.output_messages) for c in calls))
    start = min(c.observed_at for c in calls)

    end = max(c.observed_at for c in calls) + timedelta(minutes=policy.jaccard.lookback_window_minutes)
    matched = [
        CommitRef(repo=c.repo, commit_sha=c.sha)
        for c in index.candidates(start, end)
        if jaccard(session_tokens, c.added_tokens) >= policy.jaccard.min_similarity
    ]
    return Attribution(trajectory_order(matched, org_id, index), "jaccard")
