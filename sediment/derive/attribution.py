"""Attribution: which commits a Session produced.

Git notes (``refs/notes/sediment``, stored as SessionCommitObservation Facts when a mirror is
fetched) bind a Session to commits and win. A Session without notes falls back to Jaccard
similarity, scored **per call and per code file**: the lowercased tokens of one call's
completion text against the lowercased tokens one code file of a commit adds (its
first-parent diff); a commit matches when any (call, code file) pair reaches the policy's
``min_similarity``. Candidates are the commits made within the lookback window after the
Session's calls (by committer time: see docs/operate.md for why not by push arrival), except
the commits a note binds to any Session (a note is evidence, a similarity an estimate). Files
that are not code (documentation, data, lock files, binaries) are not scored. Sessions not
bound are counted by why: no candidate commit, no code file among the candidates, no match.
Commits are ordered by committer time, ties by their qualified sort key.

Every attributed commit is qualified by its repository (:mod:`sediment.git.repositories`): a git
note's commit by its observation's identity (an observation the repository context declines
binds nothing and is counted by its reason), a Jaccard candidate by the mirror it was read
from (identified mirrors by their identity and label; a legacy mirror of a name an identified
repository holds is not read, since its commits would take an identity from a name).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sediment.ci.resolution import commit_key_of
from sediment.git.mirror import Mirror, MirrorReadError
from sediment.git.mirror_root import MirrorRoot
from sediment.git.repositories import RepositoryContext, Resolution, repository_sort_key
from sediment.model.facts import InferenceCall, RepositoryIdentity, SessionCommitObservation
from sediment.model.policy import AttributionPolicy
from sediment.model.repository_evidence import identity_of
from sediment.model.rollout import AttributionSource, CommitRef, FileAttribution, scoring_text

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
    identity: RepositoryIdentity | None
    sha: str
    committer_time: int
    #: each code file of the commit whose first-parent diff adds tokens: (path, added tokens)
    code_files: tuple[tuple[str, frozenset[str]], ...]

    @property
    def code_file_tokens(self) -> tuple[frozenset[str], ...]:
        """The added tokens of each code file of the commit."""
        return tuple(tokens for _, tokens in self.code_files)

    @property
    def ref(self) -> CommitRef:
        return CommitRef(repo=self.repo, commit_sha=self.sha, repository_identity=self.identity)


class CommitIndex:
    """Commits of every usable mirror of one org, read once per derivation.

    Identified mirrors are labelled with their identity's representative label in
    ``repositories`` (the name they were added under when it names none); legacy mirrors of a
    name an identified repository holds are left out.
    """

    def __init__(self, mirrors: MirrorRoot | None, org_id: str, repositories: RepositoryContext | None = None) -> None:
        self._mirrors = mirrors
        self._org_id = org_id
        self._repositories = repositories
        self._commits: list[IndexedCommit] | None = None
        self._times: dict[tuple[str, ...], int] = {}
        self._by_key: dict[tuple[str, ...], IndexedCommit] = {}
        self._opened: dict[tuple[str, ...], Mirror | None] = {}

    def _load(self) -> list[IndexedCommit]:
        if self._commits is None:
            commits: list[IndexedCommit] = []
            for location in self._mirrors.mirrors(self._org_id) if self._mirrors is not None else ():
                label = location.repo
                if location.identity is not None:
                    known = self._repositories.label(location.identity) if self._repositories else None
                    label = known or location.repo
                elif self._repositories is not None and not self._repositories.legacy_mirror_usable(location.repo):
                    continue
                mirror = self._open(label, location.identity)
                if mirror is None:
                    continue
                for info in mirror.commits():
                    files = ((path, tokens(text)) for path, text in info.added_by_file if is_code_file(path))
                    commits.append(IndexedCommit(label, location.identity, info.sha, info.committer_time,
                                                 tuple((path, found) for path, found in files if found)))
            self._commits = commits
            self._by_key = {commit_key_of(self._org_id, c.ref).sort_key: c for c in commits}
            self._times = {key: c.committer_time for key, c in self._by_key.items()}
        return self._commits

    def _open(self, repo: str, identity: RepositoryIdentity | None) -> Mirror | None:
        """The mirror of a qualified repository (opened once), ``None`` when absent or unusable."""
        key = repository_sort_key(self._org_id, repo, identity)
        if key not in self._opened:
            self._opened[key] = None
            if self._mirrors is not None and (identity is not None or self._repositories is None
                                              or self._repositories.legacy_mirror_usable(repo)):
                self._opened[key] = self._mirrors.open(self._org_id, repo, identity)
        return self._opened[key]

    def first_parent(self, ref: CommitRef) -> str | None:
        """The first parent of a mirrored commit; ``None`` for a root, or when the mirror or
        the commit is absent."""
        mirror = self._open(ref.repo, ref.repository_identity)
        if mirror is None or not mirror.has_commit(ref.commit_sha):
            return None
        try:
            return mirror.first_parent(ref.commit_sha)
        except MirrorReadError:
            return None

    def committer_time(self, ref: CommitRef) -> int:
        """Committer time of a mirrored commit; 0 when the mirror or commit is absent."""
        self._load()
        return self._times.get(commit_key_of(self._org_id, ref).sort_key, 0)

    def commit(self, ref: CommitRef) -> IndexedCommit | None:
        """The indexed commit ``ref`` names (qualified), ``None`` when no usable mirror holds it."""
        self._load()
        return self._by_key.get(commit_key_of(self._org_id, ref).sort_key)

    def candidates(self, start: datetime, end: datetime) -> list[IndexedCommit]:
        low, high = int(start.timestamp()), int(end.timestamp())
        return [c for c in self._load() if low <= c.committer_time <= high]


@dataclass(frozen=True)
class Attribution:
    commits: tuple[CommitRef, ...]
    source: AttributionSource
    #: why a Session without notes was not bound (one of JACCARD_UNBOUND), else None
    unbound: str | None = None
    #: the Session's observations the repository context qualified, each with its commit
    observed: tuple[tuple[SessionCommitObservation, CommitRef], ...] = ()
    #: observations it declined, by repository reason
    declined: Counter[str] = field(default_factory=Counter)


def trajectory_order(refs: Iterable[CommitRef], org_id: str, index: CommitIndex) -> tuple[CommitRef, ...]:
    """Ascending committer time, ties by the qualified commit sort key."""
    unique = {commit_key_of(org_id, r).sort_key: r for r in refs}
    return tuple(sorted(unique.values(), key=lambda r: (index.committer_time(r), *commit_key_of(org_id, r).sort_key)))


def qualify_observation(observation: SessionCommitObservation,
                        repositories: RepositoryContext | None) -> Resolution:
    """An observation's repository, qualified by the context (without one, only legacy ones)."""
    if repositories is not None:
        return repositories.resolve_fact(observation)
    if identity_of(observation) is not None:
        return Resolution.declined("repository_identity_unresolved")
    return Resolution(observation.repo, None)


def attribute(
    org_id: str,
    calls: Sequence[InferenceCall],
    observations: Sequence[SessionCommitObservation],
    index: CommitIndex,
    policy: AttributionPolicy,
    repositories: RepositoryContext | None = None,
    noted: frozenset[str] = frozenset(),
) -> Attribution:
    """Bind a Session to commits: its git-note observations, else the Jaccard fallback.

    A Session with notes is bound to the commits of the observations the repository context
    qualifies; when it declines every one, the Session keeps ``git_notes`` and no commit (its
    notes say which commits it made; a similarity guess must not replace them).

    ``noted``: the SHAs of every commit a note (ours or git-ai's) binds to any Session of the
    org. A note is recorded evidence and a similarity score an estimate, so a noted commit is
    never a Jaccard candidate of another Session, however similar, in any repository.
    """
    if observations:
        observed: list[tuple[SessionCommitObservation, CommitRef]] = []
        declined: Counter[str] = Counter()
        for observation in observations:
            resolved = qualify_observation(observation, repositories)
            if resolved.reason is not None or resolved.repo is None:
                declined[resolved.reason or "repository_identity_unresolved"] += 1
                continue
            observed.append((observation, CommitRef(repo=resolved.repo, commit_sha=observation.commit_sha,
                                                    repository_identity=resolved.identity)))
        commits = trajectory_order((ref for _, ref in observed), org_id, index)
        # a Session bound only by git-ai authorship notes says so; one sediment note makes it git_notes
        source: AttributionSource = ("git_ai_notes" if all(o.attribution_source == "git_ai_notes"
                                                            for o in observations) else "git_notes")
        return Attribution(commits, source, observed=tuple(observed), declined=declined)
    if not calls:
        return Attribution((), "jaccard", "jaccard_no_candidate_commit")
    call_tokens = [t for c in calls if (t := tokens(scoring_text(c.output_messages)))]
    start = min(c.observed_at for c in calls)
    end = max(c.observed_at for c in calls) + timedelta(minutes=policy.jaccard.lookback_window_minutes)
    candidates = [c for c in index.candidates(start, end) if c.sha not in noted]
    threshold = policy.jaccard.min_similarity
    matched = [
        c.ref
        for c in candidates
        if any(jaccard(call, file) >= threshold for file in c.code_file_tokens for call in call_tokens)
    ]
    unbound = None
    if not matched:
        unbound = ("jaccard_no_candidate_commit" if not candidates
                   else "jaccard_no_code_diff" if not any(c.code_file_tokens for c in candidates)
                   else "jaccard_no_match")
    return Attribution(trajectory_order(matched, org_id, index), "jaccard", unbound)


#: Why a file attribution was not made (counted as ``file_attribution.<reason>``): an attributed
#: commit no usable mirror holds, or a changed code file no call of the Session matches.
FILE_ATTRIBUTION_SKIPS: tuple[str, ...] = ("commit_unavailable", "no_match")


@dataclass(frozen=True)
class FileAttributions:
    attributions: tuple[FileAttribution, ...]
    #: by reason of :data:`FILE_ATTRIBUTION_SKIPS`
    skipped: Counter[str] = field(default_factory=Counter)


def attribute_files(
    org_id: str,
    calls: Sequence[InferenceCall],
    commits: Sequence[CommitRef],
    source: AttributionSource,
    index: CommitIndex,
    policy: AttributionPolicy,
) -> FileAttributions:
    """Bind each code file of the Session's attributed ``commits`` to one of its ``calls``.

    Per commit, the candidates are the calls observed from the lookback window of ``source``
    (``policy.git_notes`` or ``policy.jaccard``) before the commit's committer time up to
    ``policy.post_push_grace_period_minutes`` after it; per code file whose first-parent diff
    adds tokens, the candidate whose completion tokens have the highest Jaccard similarity with
    them, at least the window's ``min_similarity`` and above 0, is attributed (ties: the earliest
    ``(observed_at, inference_call_id)``). Sorted by (qualified commit, file path).
    """
    window = policy.jaccard if source == "jaccard" else policy.git_notes  # git-ai notes bind like ours
    grace = timedelta(minutes=policy.post_push_grace_period_minutes)
    lookback = timedelta(minutes=window.lookback_window_minutes)
    scored = [(c, t) for c in sorted(calls, key=lambda c: (c.observed_at, c.inference_call_id))
              if (t := tokens(scoring_text(c.output_messages)))]
    found: list[FileAttribution] = []
    skipped: Counter[str] = Counter()
    for ref in sorted(commits, key=lambda r: commit_key_of(org_id, r).sort_key):
        indexed = index.commit(ref)
        if indexed is None:
            skipped["commit_unavailable"] += 1
            continue
        made = datetime.fromtimestamp(indexed.committer_time, tz=UTC)
        candidates = [(c, t) for c, t in scored if made - lookback <= c.observed_at <= made + grace]
        for path, file_tokens in sorted(indexed.code_files):
            best: tuple[InferenceCall, float] | None = None
            for candidate, candidate_tokens in candidates:
                score = jaccard(candidate_tokens, file_tokens)
                if score > 0.0 and score >= window.min_similarity and (best is None or score > best[1]):
                    best = (candidate, score)
            if best is None:
                skipped["no_match"] += 1
                continue
            found.append(FileAttribution(inference_call_id=best[0].inference_call_id, repo=ref.repo,
                                         commit_sha=ref.commit_sha, repository_identity=ref.repository_identity,
                                         file_path=path, similarity_score=best[1]))
    return FileAttributions(tuple(found), skipped)


@dataclass(frozen=True)
class FileScore:
    """One code file of a candidate commit: the best Jaccard similarity any call of the Session
    reaches with the tokens it adds, and that call (the earliest on a tie; None when no call
    has completion text)."""

    path: str
    score: float
    call_id: str | None


@dataclass(frozen=True)
class CandidateScore:
    commit: CommitRef
    committer_time: int
    #: a note binds the commit to another Session: never a Jaccard candidate of this one
    noted_elsewhere: bool
    files: tuple[FileScore, ...]
    #: some file reaches the threshold (and the commit is a candidate)
    matched: bool


@dataclass(frozen=True)
class NoteBinding:
    """One git-note observation of the Session: the commit it names and whether the repository
    context qualified it (``declined`` names why not)."""

    commit_sha: str
    repo: str
    source: str
    declined: str | None


@dataclass(frozen=True)
class AttributionExplanation:
    """The figures behind :func:`attribute` for one Session (``sediment derive --explain-attribution``)."""

    session_id: str
    result: Attribution
    notes: tuple[NoteBinding, ...]
    calls: int  #: calls of the Session whose completion has text to score
    window: tuple[datetime, datetime] | None  #: when candidate commits may have been made
    threshold: float
    candidates: tuple[CandidateScore, ...]

    def as_json(self) -> dict[str, object]:
        def ref(commit: CommitRef) -> dict[str, object]:
            return commit.model_dump(mode="json")

        return {
            "session_id": self.session_id,
            "attribution_source": self.result.source,
            "commits": [ref(c) for c in self.result.commits],
            "unbound": self.result.unbound,
            "bound_by_notes": bool(self.notes) and any(n.declined is None for n in self.notes),
            "notes": [{"commit_sha": n.commit_sha, "repo": n.repo, "source": n.source, "declined": n.declined}
                      for n in self.notes],
            "calls_scored": self.calls,
            "window": None if self.window is None else [t.isoformat().replace("+00:00", "Z") for t in self.window],
            "threshold": self.threshold,
            "candidates": [{"commit": ref(c.commit), "committer_time": datetime.fromtimestamp(
                c.committer_time, tz=UTC).isoformat().replace("+00:00", "Z"), "noted_elsewhere": c.noted_elsewhere,
                "matched": c.matched, "files": [{"path": f.path, "score": f.score, "call_id": f.call_id}
                                                for f in c.files]} for c in self.candidates],
        }


def explain_attribution(
    org_id: str,
    session_id: str,
    calls: Sequence[InferenceCall],
    observations: Sequence[SessionCommitObservation],
    index: CommitIndex,
    policy: AttributionPolicy,
    repositories: RepositoryContext | None = None,
    noted: frozenset[str] = frozenset(),
) -> AttributionExplanation:
    """Why :func:`attribute` bound ``session_id`` as it did: its notes (and which the repository
    context declined), and the Jaccard fallback's window, threshold and candidate commits with
    the best score of each code file, the commits other Sessions' notes hold flagged. The
    candidates are scored whether or not notes bind the Session (notes win; the scores then
    only inform)."""
    result = attribute(org_id, calls, observations, index, policy, repositories, noted)
    notes = []
    for observation in sorted(observations, key=lambda o: (o.commit_sha, o.repo, o.observation_id)):
        resolved = qualify_observation(observation, repositories)
        declined = None if resolved.reason is None and resolved.repo is not None else (
            resolved.reason or "repository_identity_unresolved")
        notes.append(NoteBinding(observation.commit_sha, observation.repo, observation.attribution_source, declined))
    ordered = sorted(calls, key=lambda c: (c.observed_at, c.inference_call_id))
    scored = [(c.inference_call_id, t) for c in ordered if (t := tokens(scoring_text(c.output_messages)))]
    threshold = policy.jaccard.min_similarity
    own = {o.commit_sha for o in observations}
    if not calls:
        return AttributionExplanation(session_id, result, tuple(notes), 0, None, threshold, ())
    start = min(c.observed_at for c in calls)
    end = max(c.observed_at for c in calls) + timedelta(minutes=policy.jaccard.lookback_window_minutes)
    candidates = []
    for commit in sorted(index.candidates(start, end),
                         key=lambda c: (c.committer_time, *commit_key_of(org_id, c.ref).sort_key)):
        files = []
        for path, file_tokens in sorted(commit.code_files):
            best: tuple[float, str | None] = (0.0, None)
            for call_id, call_tokens in scored:
                score = jaccard(call_tokens, file_tokens)
                if best[1] is None or score > best[0]:
                    best = (score, call_id)
            files.append(FileScore(path, best[0], best[1]))
        elsewhere = commit.sha in noted and commit.sha not in own
        candidates.append(CandidateScore(commit.ref, commit.committer_time, elsewhere, tuple(files),
                                         not elsewhere and any(f.score >= threshold for f in files)))
    return AttributionExplanation(session_id, result, tuple(notes), len(scored), (start, end), threshold,
                                  tuple(candidates))
