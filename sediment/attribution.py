"""Attribution: which commits a Session produced.

Git notes (``refs/notes/sediment``, stored as SessionCommitObservation Facts when a mirror is
fetched) bind a Session to commits and win. A Session without notes falls back to Jaccard
similarity, scored **per call and per code file**: the lowercased tokens of one call's
completion text against the lowercased tokens one code file of a commit adds (its
first-parent diff); a commit matches when any (call, code file) pair reaches the policy's
``min_similarity``. Candidates are the commits made within the lookback window after the
Session's calls (by committer time: see docs/operate.md for why not by push arrival). Files
that are not code (documentation, data, lock files, binaries) are not scored. Sessions not
bound are counted by why: no candidate commit, no code file among the candidates, no match.
Commits are ordered by committer time, ties by their qualified sort key.
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

_TOKEN = re.compile(r"[a-z0-9_]+")
#: Suffixes of files that are not code: never scored by the Jaccard fallback.
NOT_CODE_SUFFIXES = frozenset({
    ".md", ".markdown", ".rst", ".txt", ".adoc", ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".csv",
    ".tsv", ".lock", ".svg", ".xml", ".html", ".css", ".log",
})
#: Why a Session without git notes was not bound (counted as ``attribution.<reason>``).
JACCARD_UNBOUND: tuple[str, ...] = ("jaccard_no_candidate_commit", "jaccard_no_code_diff", "jaccard_no_match")


def tokens(text: str) -> frozenset[str]:
    """Lowercased word tokens (letters, digits, underscores)."""
    return frozenset(_TOKEN.findall(text.lower()))


def is_code_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return not any(name.endswith(suffix) for suffix in NOT_CODE_SUFFIXES) and name not in {"license", "copying"}

def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0

@dataclass(frozen=True)
class IndexedCommit:
    repo: str
    sha: str
    committer_time: int
    #: the added tokens of each code file of the commit
    code_file_tokens: tuple[frozenset[str], ...]

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
                        files = tuple(tokens(text) for path, text in info.added_by_file if is_code_file(path))
                        commits.append(IndexedCommit(repo, info.sha, info.committer_time,
                                                     tuple(f for f in files if f)))
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
    #: why a Session without notes was not bound (one of JACCARD_UNBOUND), else None
    unbound: str | None = None

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
        return Attribution((), "jaccard", "jaccard_no_candidate_commit")
    call_tokens = [t for c in calls if (t := tokens(scoring_text(c.output_messages)))]
    start = min(c.observed_at for c in calls)
    end = max(c.observed_at for c in calls) + timedelta(minutes=policy.jaccard.lookback_window_minutes)
    candidates = index.candidates(start, end)
    threshold = policy.jaccard.min_similarity
    matched = [
        CommitRef(repo=c.repo, commit_sha=c.sha)
        for c in candidates
        if any(jaccard(call, file) >= threshold for file in c.code_file_tokens for call in call_tokens)
    ]
    unbound = None
    if not matched:
        unbound = ("jaccard_no_candidate_commit" if not candidates
                   else "jaccard_no_code_diff" if not any(c.code_file_tokens for c in candidates)
                   else "jaccard_no_match")
    return Attribution(trajectory_order(matched, org_id, index), "jaccard", unbound)
