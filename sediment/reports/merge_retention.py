"""How much of each attributed agent edit survives to its pull request (docs/reports.md).

The report starts from the attributed completions of every Session of an org (one per inference
call, commit and file: :mod:`sediment.derive.attributed_completions`):

1. **Candidates.** An attributed file counts only when a SessionCommitObservation (a git note)
   binds its Session to its commit; every other distinct (commit, Session) edge is counted once
   under ``session_commit_unobserved``.
2. **Membership.** Each candidate's commit is matched against the org's pull-request merges of
   the same qualified repository (captured at or before the boundary): a merge matches when one
   of the commit's CI outcomes names its ``pr_number``, or when the commit is an ancestor of (or
   equal to) the merge's ``head_sha`` but not of its ``base_sha``. Exactly one match is
   ``joined``; several are ``ambiguous_pr_membership``; an ancestry check that cannot be made (no
   mirror, a commit the mirror lacks, a git error) is ``ancestry_check_failed``, and none is
   ``attribution_without_merge``.
3. **Scoring.** For a joined candidate, the added lines of the file's section in the source
   commit's first-parent diff are scored against the file's text at the pull request's head and
   at its merge commit with four-gram containment (:func:`sediment.derive.edit_retention.four_gram_containment`,
   clamped to [0, 1]): 1.0 means every four-gram the agent added is still there. A file renamed
   on the way is followed when exactly one rename of it exists between the source commit and the
   head (or merge). The first problem declines the candidate with one reason
   (:data:`SCORING_SKIP_REASONS`, in check order).

:func:`merge_retention` is a pure function of the stored Facts, the mirrors and the boundary:
the same inputs in any ingest order give an equal report and equal rows. It never prints.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sediment.derive.attributed_completions import ATTRIBUTED_COMPLETION_POLICY_VERSION, AttributedCompletion
from sediment.derive.edit_retention import four_gram_containment
from sediment.git.mirror import Mirror, MirrorReadError
from sediment.git.mirror_root import MirrorRoot
from sediment.git.repositories import RepositoryContext, repository_sort_key
from sediment.model.facts import PullRequestMerge
from sediment.model.policy import Provenance
from sediment.records import plain
from sediment.reports.statistics import Distribution, Threshold, distribution, thresholds

#: The version of the membership and scoring rules below (Provenance ``policy_version``).
MERGE_RETENTION_POLICY_VERSION = "3"
MERGE_RETENTION_SCHEMA_ID = "https://sediment.so/schemas/derived-artifacts/merge-retention/v3.json"

#: Membership of a candidate's commit, in report order (``joined`` first, then why not).
MEMBERSHIP_REASONS: tuple[str, ...] = (
    "joined",
    "attribution_without_merge",
    "ambiguous_pr_membership",
    "ancestry_check_failed",
)
#: Why a joined candidate has no row, in the order the checks run.
SCORING_SKIP_REASONS: tuple[str, ...] = (
    "mirror_absent",
    "source_commit_absent",
    "merge_commit_absent",
    "head_commit_absent",
    "source_diff_unavailable",
    "source_file_diff_absent",
    "source_text_empty",
    "head_path_unresolved",
    "merge_path_unresolved",
    "file_read_failed",
    "head_file_absent",
    "merge_file_absent",
    "binary_file",
    "file_oversized",
    "scorer_error",
    "invalid_score",
)
#: Why an attributed file is not a candidate (per distinct commit and Session edge).
ATTRIBUTION_SKIP_REASONS: tuple[str, ...] = ("session_commit_unobserved",)
#: The row's fields, in the order they are written (``--rows-out``).
ROW_FIELDS: tuple[str, ...] = (
    "org_id", "repo", "pr_number", "merge_id", "inference_call_id", "session_id", "source_commit_sha",
    "source_file_path", "head_commit_sha", "head_file_path", "merge_commit_sha", "merge_file_path",
    "head_retention_score", "merge_retention_score", "attribution_source", "attribution_similarity_score",
    "provenance", "session_commit_observation_ids", "repository_identity",
)


@dataclass(frozen=True)
class MergeRetentionPolicy:
    """The report's knobs: files larger than ``max_file_bytes`` are not scored."""

    max_file_bytes: int = 1_000_000
    policy_version: str = MERGE_RETENTION_POLICY_VERSION

    def __post_init__(self) -> None:
        if isinstance(self.max_file_bytes, bool) or not isinstance(self.max_file_bytes, int) \
                or self.max_file_bytes < 1:
            raise ValueError(f"MergeRetentionPolicy.max_file_bytes must be >= 1 (got {self.max_file_bytes})")


@dataclass(frozen=True)
class RetentionScores:
    """One side (head or merge): the scores' distribution and how many fall below each threshold."""

    distribution: Distribution
    thresholds: list[Threshold]


@dataclass(frozen=True)
class MergeRetentionReport:
    """The report (``--json`` is this dataclass, keys in this order; docs/reports.md)."""

    org_id: str
    attributed_file_candidates: int
    candidates_joined_to_merge: int
    scored_rows: int
    joined_pull_requests: int
    scored_pull_requests: int
    membership: dict[str, int]
    scoring_skips: dict[str, int]
    attribution_skips: dict[str, int]
    decision_attachment_skips: dict[str, int]
    head: RetentionScores
    merge: RetentionScores
    explicit_accept_rows: int
    explicit_accept_head_thresholds: list[Threshold]
    explicit_accept_merge_thresholds: list[Threshold]
    attribution_provenance: dict[str, Any]
    merge_retention_provenance: dict[str, Any]
    repository_skipped: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The report as JSON values, keys in declaration order; ``repository_skipped`` only
        when something was skipped."""
        from dataclasses import asdict

        found = asdict(self)
        if not found["repository_skipped"]:
            del found["repository_skipped"]
        return found


@dataclass(frozen=True)
class MergeRetention:
    """The report and its rows (``derived-artifacts/merge-retention`` v3, :data:`ROW_FIELDS`)."""

    report: MergeRetentionReport
    rows: tuple[dict[str, Any], ...]


def _ordered(counts: Counter[str], vocabulary: Iterable[str] = ()) -> dict[str, int]:
    """Counts with the vocabulary's keys first (in its order, zeros kept), then others sorted."""
    known = list(vocabulary)
    result = {k: counts.get(k, 0) for k in known}
    result.update({k: counts[k] for k in sorted(counts) if k not in result and counts[k]})
    return result


class _Mirrors:
    def __init__(self, root: MirrorRoot | None, org_id: str) -> None:
        self._root = root
        self._org_id = org_id
        self._open: dict[tuple[str, ...], Mirror | None] = {}

    def of(self, completion: AttributedCompletion) -> Mirror | None:
        assert completion.repo is not None
        key = repository_sort_key(completion.org_id, completion.repo, completion.repository_identity)
        if key not in self._open:
            self._open[key] = None if self._root is None else self._root.open(
                self._org_id, completion.repo, completion.repository_identity)
        return self._open[key]


def _qualified_merges(merges: Iterable[PullRequestMerge], repositories: RepositoryContext, as_of: datetime | None,
                      skipped: Counter[str]) -> dict[tuple[str, ...], list[PullRequestMerge]]:
    by_repository: dict[tuple[str, ...], list[PullRequestMerge]] = {}
    for merge in sorted(merges, key=lambda m: m.merge_id):
        if as_of is not None and merge.captured_at > as_of:
            continue
        resolved = repositories.resolve_fact(merge)
        if resolved.reason is not None or resolved.repo is None:
            skipped[resolved.reason or "repository_identity_unresolved"] += 1
            continue
        key = repository_sort_key(merge.org_id, resolved.repo, resolved.identity)
        by_repository.setdefault(key, []).append(merge)
    return by_repository


def _membership(completion: AttributedCompletion, merges: list[PullRequestMerge], mirror: Mirror | None
                ) -> tuple[str, PullRequestMerge | None]:
    sha = completion.commit_sha
    assert sha is not None
    pr_numbers = {o.pr_number for o in completion.ci_outcomes if o.pr_number is not None and o.commit_sha == sha}
    matched: dict[str, PullRequestMerge] = {}
    uncertain = False
    for merge in merges:
        if merge.pr_number in pr_numbers:
            matched[merge.merge_id] = merge
            continue
        if mirror is None:
            uncertain = True
            continue
        try:
            in_head = mirror.is_ancestor_or_equal(sha, merge.head_sha)
            if in_head and not mirror.is_ancestor_or_equal(sha, merge.base_sha):
                matched[merge.merge_id] = merge
        except MirrorReadError:
            uncertain = True
    if len(matched) > 1:
        return "ambiguous_pr_membership", None
    if uncertain:
        return "ancestry_check_failed", None
    if matched:
        return "joined", next(iter(matched.values()))
    return "attribution_without_merge", None


def _path_at(mirror: Mirror, source: str, target: str, path: str) -> str | None:
    """``path`` as it is named at ``target``: itself while it exists there (or when nothing
    renamed it), else the one path a rename since ``source`` gave it; ``None`` for several."""
    if mirror.has_path(target, path):
        return path
    renamed = mirror.renamed_paths(source, target, path)
    if len(renamed) > 1:
        return None
    return renamed[0] if renamed else path


def _text(data: bytes | None, absent: str, policy: MergeRetentionPolicy) -> str:
    if data is None:
        raise _Skip(absent)
    if b"\x00" in data:
        raise _Skip("binary_file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Skip("binary_file") from None
    if len(data) > policy.max_file_bytes:
        raise _Skip("file_oversized")
    return text


class _Skip(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _score(added: str, text: str) -> float:
    try:
        value = four_gram_containment(added, text)
    except Exception as exc:  # a scorer bug declines the one candidate, named
        raise _Skip("scorer_error") from exc
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise _Skip("invalid_score")
    return min(1.0, max(0.0, float(value)))


def _scored(completion: AttributedCompletion, merge: PullRequestMerge, mirror: Mirror | None,
            policy: MergeRetentionPolicy) -> tuple[str, str, float, float]:
    """``(head path, merge path, head score, merge score)``, or :class:`_Skip` with the reason."""
    source, path = completion.commit_sha, completion.file_path
    assert source is not None and path is not None
    if mirror is None:
        raise _Skip("mirror_absent")
    for sha, reason in ((source, "source_commit_absent"), (merge.merge_commit_sha, "merge_commit_absent"),
                        (merge.head_sha, "head_commit_absent")):
        if not mirror.has_commit(sha):
            raise _Skip(reason)
    try:
        changes = mirror.file_changes(source)
    except MirrorReadError:
        raise _Skip("source_diff_unavailable") from None
    sections = [c for c in changes if c.new_path == path]
    if len(sections) != 1:
        raise _Skip("source_file_diff_absent")
    if sections[0].binary:
        raise _Skip("binary_file")
    added = sections[0].added_text
    if not added.strip():
        raise _Skip("source_text_empty")
    try:
        head_path = _path_at(mirror, source, merge.head_sha, path)
        if head_path is None:
            raise _Skip("head_path_unresolved")
        merge_path = _path_at(mirror, source, merge.merge_commit_sha, path)
        if merge_path is None:
            raise _Skip("merge_path_unresolved")
        head_data = mirror.file_bytes(merge.head_sha, head_path)
        merge_data = mirror.file_bytes(merge.merge_commit_sha, merge_path)
    except MirrorReadError:
        raise _Skip("file_read_failed") from None
    head_text = _text(head_data, "head_file_absent", policy)
    merge_text = _text(merge_data, "merge_file_absent", policy)
    return head_path, merge_path, _score(added, head_text), _score(added, merge_text)


def _row(completion: AttributedCompletion, merge: PullRequestMerge, head_path: str, merge_path: str,
         head_score: float, merge_score: float, provenance: Provenance,
         repositories: RepositoryContext) -> dict[str, Any]:
    identity = completion.repository_identity
    label = (repositories.label(identity) if identity is not None else None) or completion.repo
    return {
        "org_id": completion.org_id,
        "repo": label,
        "pr_number": merge.pr_number,
        "merge_id": merge.merge_id,
        "inference_call_id": completion.inference_call_id,
        "session_id": completion.session_id,
        "source_commit_sha": completion.commit_sha,
        "source_file_path": completion.file_path,
        "head_commit_sha": merge.head_sha,
        "head_file_path": head_path,
        "merge_commit_sha": merge.merge_commit_sha,
        "merge_file_path": merge_path,
        "head_retention_score": head_score,
        "merge_retention_score": merge_score,
        "attribution_source": completion.attribution_source,
        "attribution_similarity_score": completion.similarity_score,
        "provenance": plain(provenance),
        "session_commit_observation_ids": list(completion.observation_ids),
        "repository_identity": None if identity is None else plain(identity),
    }


def _sides(rows: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    return [r["head_retention_score"] for r in rows], [r["merge_retention_score"] for r in rows]


def merge_retention(completions: Iterable[AttributedCompletion], merges: Iterable[PullRequestMerge], *,
                    org_id: str, repositories: RepositoryContext, mirrors: MirrorRoot | None,
                    quarantine_revision: int, policy_digest: str | None,
                    attachment_skipped: Mapping[str, int] | None = None, as_of: datetime | None = None,
                    policy: MergeRetentionPolicy | None = None) -> MergeRetention:
    """The report and rows over ``completions`` (module docstring).

    :param completions: the org's attributed completions (abandonment ones are ignored).
    :param merges: the org's pull-request merges; those captured after ``as_of`` are left out.
    :param repositories: the repository context merges and mirrors are qualified with.
    :param mirrors: the mirror root (``None``: every ancestry check is uncertain).
    :param quarantine_revision: the org's quarantine high-water mark (Provenance).
    :param policy_digest: the digest of the derivation policy the completions were derived under.
    :param attachment_skipped: decisions the attachment did not join, by reason.
    """
    policy = policy or MergeRetentionPolicy()
    repository_skipped: Counter[str] = Counter()
    by_repository = _qualified_merges(merges, repositories, as_of, repository_skipped)
    unobserved: set[tuple[Any, ...]] = set()
    candidates: list[AttributedCompletion] = []
    for completion in completions:
        key = completion.commit_key
        if key is None:
            continue
        if not completion.observation_ids:
            unobserved.add((*key.sort_key, completion.session_id))
            continue
        candidates.append(completion)
    candidates.sort(key=lambda c: (c.sort_key, c.session_id))
    provenance = Provenance(policy_version=policy.policy_version, quarantine_revision=quarantine_revision,
                            policy_digest=policy_digest)
    open_mirrors = _Mirrors(mirrors, org_id)
    membership: Counter[str] = Counter()
    scoring: Counter[str] = Counter()
    joined_prs: set[tuple[Any, ...]] = set()
    rows: list[tuple[tuple[Any, ...], dict[str, Any], bool]] = []
    for completion in candidates:
        key = completion.commit_key
        assert key is not None
        mirror = open_mirrors.of(completion)
        status, merge = _membership(completion, by_repository.get(key.repository_sort_key, []), mirror)
        membership[status] += 1
        if merge is None:
            continue
        joined_prs.add((*key.repository_sort_key, merge.pr_number))
        try:
            head_path, merge_path, head_score, merge_score = _scored(completion, merge, mirror, policy)
        except _Skip as skip:
            scoring[skip.reason] += 1
            continue
        row = _row(completion, merge, head_path, merge_path, head_score, merge_score, provenance, repositories)
        explicit_accept = any(d.explicit and d.accepted for d in completion.decisions)
        order = (key.repository_sort_key, merge.pr_number, completion.commit_sha, completion.file_path,
                 completion.inference_call_id)
        rows.append((order, row, explicit_accept))
    rows.sort(key=lambda r: r[0])
    all_rows = [r for _, r, _ in rows]
    accepted_rows = [r for _, r, accepted in rows if accepted]
    scored_prs = {(*o[0], o[1]) for o, _, _ in rows}
    head, merged = _sides(all_rows)
    accepted_head, accepted_merged = _sides(accepted_rows)
    report = MergeRetentionReport(
        org_id=org_id,
        attributed_file_candidates=len(candidates),
        candidates_joined_to_merge=membership["joined"],
        scored_rows=len(all_rows),
        joined_pull_requests=len(joined_prs),
        scored_pull_requests=len(scored_prs),
        membership=_ordered(membership, MEMBERSHIP_REASONS),
        scoring_skips=_ordered(scoring, SCORING_SKIP_REASONS),
        attribution_skips=_ordered(Counter({"session_commit_unobserved": len(unobserved)}), ATTRIBUTION_SKIP_REASONS),
        decision_attachment_skips=_ordered(Counter(attachment_skipped or {})),
        head=RetentionScores(distribution(head), thresholds(head)),
        merge=RetentionScores(distribution(merged), thresholds(merged)),
        explicit_accept_rows=len(accepted_rows),
        explicit_accept_head_thresholds=thresholds(accepted_head),
        explicit_accept_merge_thresholds=thresholds(accepted_merged),
        attribution_provenance={"policy_version": ATTRIBUTED_COMPLETION_POLICY_VERSION,
                                "quarantine_revision": quarantine_revision, "policy_digest": policy_digest},
        merge_retention_provenance={"policy_version": policy.policy_version,
                                    "max_file_bytes": policy.max_file_bytes},
        repository_skipped={"merges": dict(sorted(repository_skipped.items()))} if repository_skipped else {},
    )
    return MergeRetention(report, tuple(all_rows))


def store_merge_retention(store: Any, org_id: str, mirrors: MirrorRoot | None, *, as_of: datetime | None = None,
                          policy: MergeRetentionPolicy | None = None) -> MergeRetention:
    """:func:`merge_retention` over the fact store: the org's Rollouts derived one Session at a
    time under the default derivation policy, their attributed completions, its merges."""
    from sediment.derive.attributed_completions import derive_attributed_completions
    from sediment.evidence.context import export_order, store_evidence

    evidence = store_evidence(store, org_id, mirrors)
    source = evidence.rollouts
    repositories: RepositoryContext = source.repositories  # type: ignore[union-attr]
    facts = evidence.facts
    assert facts is not None
    attachment: Counter[str] = Counter()
    completions: list[AttributedCompletion] = []
    for index in export_order(source):
        found = derive_attributed_completions(source[index], repositories=repositories)
        attachment.update(found.attachment_skipped)
        completions.extend(found.completions)
    merges = [m for m in store.facts("pull_request_merges", org_id) if isinstance(m, PullRequestMerge)]
    return merge_retention(completions, merges, org_id=org_id, repositories=repositories, mirrors=mirrors,
                           quarantine_revision=facts.quarantine_revision, policy_digest=facts.policy.digest,
                           attachment_skipped=attachment, as_of=as_of, policy=policy)
