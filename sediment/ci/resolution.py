"""CI resolution (CIResolutionPolicy version "2"; docs/exports.md, Rewards come from recorded
CI only).

Recorded CI attempts are grouped into provider runs, each run resolves to one workflow
verdict ordered only by ``run_attempt`` (null sorts as 0), and workflows on one commit
aggregate into a commit verdict with a reliability. Pure and order-independent.

Re-runs a provider does not number (:mod:`sediment.ci.reruns`) extend the contract's rule, and
leave GitHub's numbered attempts as they are: runs of one lineage (a CircleCI workflow and its
reruns, a Buildkite build and its rebuilds) resolve as one run, and within an attempt the final
events of a run re-run under its id (a GitLab pipeline, a third-party check suite) and the runs
of a lineage are ordered by the provider's own order (``(lineage position, attempt, re-run time)``).
Two outcomes of one attempt with different results are a conflict only when that order cannot
tell them apart. A failed run that passed on a re-run is thus a suspected flake with the last
verdict, as a GitHub re-run is.

Each outcome's repository is qualified first (docs/operate.md, Repository identity): with a
repository context (:mod:`sediment.git.repositories`) an identified outcome is keyed by its
identity and labelled with the repository's representative name, and an outcome the context
declines is counted by its reason; without one (a low-level caller), only legacy outcomes
resolve and identified ones are declined as ``repository_identity_unresolved``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sediment.ci.jobs import judged_attempts, run_name
from sediment.ci.reruns import lineage_of, lineage_position, rebuilt_from
from sediment.git.repositories import REPOSITORY_SKIP_REASONS, RepositoryContext, repository_sort_key
from sediment.model.ci_keys import rerun_time
from sediment.model.facts import CIOutcome, FactModel, RepositoryIdentity
from sediment.model.policy import Provenance
from sediment.model.rollout import CommitRef

CI_POLICY_VERSION = "2"

#: Resolver skip reasons, in vocabulary order (docs/exports.md, Skip reasons).
RESOLVER_SKIP_REASONS: tuple[str, ...] = (
    "conflicting_run_identity",
    "ambiguous_workflow_verdicts",
    *REPOSITORY_SKIP_REASONS,
)

Verdict = Literal["passed", "failed"]


class CIResolutionPolicy(BaseModel):
    """Reliability values of CI resolution; its digest lands in every resolution's provenance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    clean_reliability: float = 1.0
    suspected_flake_reliability: float = 0.0
    non_verdict_reliability: float = 1.0
    policy_version: str = Field(default=CI_POLICY_VERSION, min_length=1)

    @field_validator("clean_reliability", "suspected_flake_reliability", "non_verdict_reliability",
                     mode="before")
    @classmethod
    def _unit_interval(cls, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise ValueError(f"reliability must be a real number in [0, 1], got {value!r}")
        return float(value)

    @property
    def digest(self) -> str:
        text = json.dumps(self.model_dump(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


DEFAULT_CI_POLICY = CIResolutionPolicy()


class CIWorkflowResolution(FactModel):
    provider: str
    run_id: str
    workflow_id: str | None
    workflow_name: str
    workflow_path: str | None
    branch: str
    verdict: Verdict | None
    reliability: float | None
    suspected_flake: bool
    source_outcome_ids: tuple[str, ...]
    verdict_outcome_id: str | None
    non_verdict_outcome_ids: tuple[str, ...]


class CIResolution(FactModel):
    org_id: str
    repo: str
    commit_sha: str
    verdict: Verdict | None
    reliability: float | None
    suspected_flake: bool
    workflow_resolutions: tuple[CIWorkflowResolution, ...]
    source_outcome_ids: tuple[str, ...]
    verdict_outcome_ids: tuple[str, ...]
    non_verdict_outcome_ids: tuple[str, ...]
    provenance: Provenance
    repository_identity: RepositoryIdentity | None = None

    @property
    def commit_key(self) -> CommitKey:
        return CommitKey(self.org_id, self.repo, self.commit_sha, self.repository_identity)


@dataclass(frozen=True)
class CommitKey:
    """A commit qualified by its repository (identified or legacy)."""

    org_id: str
    repo: str
    commit_sha: str
    identity: RepositoryIdentity | None = None

    @property
    def repository_sort_key(self) -> tuple[str, ...]:
        return repository_sort_key(self.org_id, self.repo, self.identity)

    @property
    def sort_key(self) -> tuple[str, ...]:
        return (*self.repository_sort_key, self.commit_sha)

    def same_commit(self, other: CommitKey) -> bool:
        """Qualified equality: the repository key and the SHA (labels of identified repos aside)."""
        return self.sort_key == other.sort_key


def commit_key_of(org_id: str, ref: CommitRef) -> CommitKey:
    return CommitKey(org_id, ref.repo, ref.commit_sha, ref.repository_identity)


@dataclass
class CIResolutionResult:
    """Resolutions in commit-sort order plus the skip tally."""

    resolutions: tuple[CIResolution, ...]
    skipped: Counter[str] = field(default_factory=Counter)
    conflicting_commit_keys: frozenset[tuple[str, ...]] = frozenset()
    outcomes_by_commit: dict[tuple[str, ...], tuple[CIOutcome, ...]] = field(default_factory=dict)


def _outcome_commit_key(outcome: CIOutcome, repositories: RepositoryContext | None
                        ) -> tuple[CommitKey | None, str | None]:
    """The outcome's qualified commit, or the reason its repository is declined. Without a
    repository context only legacy outcomes resolve."""
    if repositories is None:
        if outcome.is_identified:
            return None, "repository_identity_unresolved"
        return CommitKey(outcome.org_id, outcome.repo, outcome.commit_sha), None
    resolved = repositories.resolve_fact(outcome)
    if resolved.reason is not None or resolved.repo is None:
        return None, resolved.reason or "repository_identity_unresolved"
    return CommitKey(outcome.org_id, resolved.repo, outcome.commit_sha, resolved.identity), None


def outcome_commit_key(outcome: CIOutcome, repositories: RepositoryContext | None) -> CommitKey | None:
    """The qualified commit an outcome is on, as resolution keys it, or ``None`` when its
    repository is declined (without a context only legacy outcomes qualify)."""
    return _outcome_commit_key(outcome, repositories)[0]


def _run_key(outcome: CIOutcome) -> tuple[str, ...]:
    if outcome.repository_provider is not None:
        return (outcome.org_id, outcome.provider, "identified", outcome.repository_provider,
                outcome.repository_host or "", outcome.run_id)
    return (outcome.org_id, outcome.provider, "legacy", "", "", outcome.run_id)


Position = tuple[str | None, int, str | None]


@dataclass(frozen=True)
class _Judged:
    """An outcome CI resolution judges a run by, and where it falls in its lineage: the run's
    place among the lineage's runs, the attempt it speaks for (a job of a run known only from its
    jobs may speak for several, sediment.ci.jobs.judged_attempts), then the time of the final
    event of a run re-run under its id (sediment.ci.reruns). ``None`` parts are unknown; for
    GitHub only the attempt is ever known."""

    outcome: CIOutcome
    position: Position


def _judged(run: Sequence[CIOutcome]) -> list[_Judged]:
    return [_Judged(o, (lineage_position(o), o.run_attempt or 0 if attempt is None else attempt, rerun_time(o)))
            for o, attempt in judged_attempts(run)]


def _order(judged: _Judged) -> tuple[str, int, str, str]:
    return (*_order_key(judged.position), judged.outcome.outcome_id)


def _order_key(position: Position) -> tuple[str, int, str]:
    return (position[0] or "", position[1], position[2] or "")


def _unorderable(items: Sequence[tuple[Position, str]], index: int = 0) -> bool:
    """Whether two of ``(position, result)`` have different results and positions the order
    cannot tell apart: equal, or first differing in a part one of them does not know."""
    if index == 3:
        return len({result for _, result in items}) > 1
    groups: dict[str | int | None, list[tuple[Position, str]]] = defaultdict(list)
    for item in items:
        groups[item[0][index]].append(item)
    if None in groups and len(groups) > 1 and len({result for _, result in items}) > 1:
        return True  # an unknown part against a known one, with different results
    return any(_unorderable(group, index + 1) for group in groups.values())


def _lineages(run_keys: Iterable[tuple[str, ...]], members: dict[tuple[str, ...], list[CIOutcome]]
              ) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
    """The runs each lineage holds, by lineage key (a run alone is its own lineage).

    A CircleCI run joins the lineage ``(pipeline.id, workflow.name)`` of its repository's run key;
    Buildkite builds joined by ``rebuilt_from`` form one lineage, keyed by the smallest build id of
    the chain (the chain's builds need not all be recorded). Independent of input order."""
    parent: dict[tuple[str, ...], tuple[str, ...]] = {}

    def find(key: tuple[str, ...]) -> tuple[str, ...]:
        root = key
        while parent.get(root, root) != root:
            root = parent[root]
        while key != root:  # every key on the path now points at the root: long chains stay cheap
            parent[key], key = root, parent.get(key, root)
        parent[root] = root
        return root

    def union(a: tuple[str, ...], b: tuple[str, ...]) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            low, high = sorted((ra, rb))
            parent[high] = low

    for run_key in run_keys:
        find(run_key)
        for outcome in members[run_key]:
            lineage = lineage_of(outcome)
            if lineage is not None:
                union(run_key, (*run_key[:-1], "\x00lineage", *lineage))
            source = rebuilt_from(outcome)
            if source is not None:
                union(run_key, (*run_key[:-1], source))
    lineages: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
    for run_key in run_keys:
        lineages[find(run_key)].append(run_key)
    return lineages


def _is_conflicting(judged: Sequence[_Judged], keys: Sequence[CommitKey]) -> bool:
    run = [j.outcome for j in judged]

    def distinct(values: Iterable[str | None]) -> int:
        return len({v for v in values if v})

    if len({o.branch for o in run}) > 1:
        return True
    if distinct(o.workflow_id for o in run) > 1 or distinct(run_name(o) for o in run) > 1:
        return True
    if distinct(o.workflow_path for o in run) > 1:
        return True
    # two results the order cannot tell apart (for GitHub: two results of one attempt)
    if _unorderable([(j.position, j.outcome.result) for j in judged]):
        return True
    return len({k.sort_key for k in keys}) > 1


def _resolve_workflow(judged: Sequence[_Judged], policy: CIResolutionPolicy) -> CIWorkflowResolution:
    in_order = [j.outcome for j in sorted(judged, key=_order)]
    verdicts = [o for o in in_order if o.is_verdict]
    ordered = list({o.outcome_id: o for o in in_order}.values())  # an outcome once, where it first speaks
    non_verdicts = [o for o in ordered if not o.is_verdict]
    flake = {"passed", "failed"} <= {o.result for o in verdicts}
    reliability: float | None
    if verdicts:
        reliability = policy.suspected_flake_reliability if flake else policy.clean_reliability
        if non_verdicts:
            reliability = min(reliability, policy.non_verdict_reliability)
    elif non_verdicts:
        reliability = policy.non_verdict_reliability
    else:
        reliability = None
    first = ordered[0]
    verdict_outcome = verdicts[-1] if verdicts else None
    return CIWorkflowResolution(
        provider=first.provider,
        run_id=first.run_id,
        workflow_id=next((o.workflow_id for o in ordered if o.workflow_id), None),
        workflow_name=next((run_name(o) for o in ordered if run_name(o)), ""),
        workflow_path=next((o.workflow_path for o in ordered if o.workflow_path), None),
        branch=first.branch,
        verdict=verdict_outcome.result if verdict_outcome else None,
        reliability=reliability,
        suspected_flake=flake,
        source_outcome_ids=tuple(sorted(o.outcome_id for o in ordered)),
        verdict_outcome_id=verdict_outcome.outcome_id if verdict_outcome else None,
        non_verdict_outcome_ids=tuple(sorted(o.outcome_id for o in non_verdicts)),
    )


def _workflow_sort_key(w: CIWorkflowResolution) -> tuple[str, ...]:
    return (w.provider, w.workflow_id or "", w.workflow_path or "", w.workflow_name, w.run_id)


def resolve_ci(
    outcomes: Iterable[CIOutcome],
    *,
    quarantine_revision: int,
    policy: CIResolutionPolicy = DEFAULT_CI_POLICY,
    repositories: RepositoryContext | None = None,
) -> CIResolutionResult:
    """Resolve recorded CI attempts into per-commit verdicts (docs/exports.md, Rewards come
    from recorded CI only).

    With ``repositories`` (a repository context), outcomes of another org or captured after
    its ``as_of`` are left out, and each outcome's repository is qualified by the context.
    """
    skipped: Counter[str] = Counter()
    runs: dict[tuple[str, ...], list[tuple[CIOutcome, CommitKey | None]]] = defaultdict(list)
    for outcome in outcomes:
        if repositories is not None and (
            outcome.org_id != repositories.org_id
            or (repositories.as_of is not None and outcome.captured_at > repositories.as_of)
        ):
            continue
        key, reason = _outcome_commit_key(outcome, repositories)
        if reason is not None:
            skipped[reason] += 1
        runs[_run_key(outcome)].append((outcome, key))

    conflicting: set[tuple[str, ...]] = set()
    workflows_by_commit: dict[tuple[str, ...], list[CIWorkflowResolution]] = defaultdict(list)
    outcomes_by_commit: dict[tuple[str, ...], list[CIOutcome]] = defaultdict(list)
    commit_keys: dict[tuple[str, ...], CommitKey] = {}
    lineages = _lineages(sorted(runs), {k: [o for o, _ in v] for k, v in runs.items()})
    for lineage_key in sorted(lineages):
        members = [member for run_key in lineages[lineage_key] for member in runs[run_key]]
        if any(key is None for _, key in members):
            continue  # incomplete: already counted by its repository reason
        # each run is judged by its run-level outcomes, else its jobs; a lineage by all its runs
        judged = [j for run_key in lineages[lineage_key] for j in _judged([o for o, _ in runs[run_key]])]
        chosen = {j.outcome.outcome_id: j.outcome for j in judged}
        keys = [key for o, key in members if key is not None and o.outcome_id in chosen]
        if _is_conflicting(judged, keys):
            skipped["conflicting_run_identity"] += 1
            conflicting.update(k.sort_key for k in keys)
            continue
        commit = keys[0]
        commit_keys[commit.sort_key] = commit
        outcomes_by_commit[commit.sort_key].extend(chosen.values())
        workflows_by_commit[commit.sort_key].append(_resolve_workflow(judged, policy))

    provenance = Provenance(
        policy_version=policy.policy_version,
        quarantine_revision=quarantine_revision,
        policy_digest=policy.digest,
    )
    resolutions: list[CIResolution] = []
    for sort_key in sorted(workflows_by_commit):
        commit = commit_keys[sort_key]
        workflows = sorted(workflows_by_commit[sort_key], key=_workflow_sort_key)
        verdicts = {w.verdict for w in workflows if w.verdict is not None}
        reliabilities = [w.reliability for w in workflows if w.reliability is not None]
        verdict: Verdict | None = None
        reliability: float | None = None
        if len(verdicts) > 1:
            skipped["ambiguous_workflow_verdicts"] += 1
        elif len(verdicts) == 1:
            verdict = next(iter(verdicts))
            reliability = min(reliabilities)
        resolutions.append(
            CIResolution(
                org_id=commit.org_id,
                repo=commit.repo,
                commit_sha=commit.commit_sha,
                verdict=verdict,
                reliability=reliability,
                suspected_flake=any(w.suspected_flake for w in workflows),
                workflow_resolutions=tuple(workflows),
                source_outcome_ids=tuple(sorted({i for w in workflows for i in w.source_outcome_ids})),
                verdict_outcome_ids=tuple(
                    sorted(w.verdict_outcome_id for w in workflows if w.verdict_outcome_id)
                ),
                non_verdict_outcome_ids=tuple(
                    sorted({i for w in workflows for i in w.non_verdict_outcome_ids})
                ),
                provenance=provenance,
                repository_identity=commit.identity,
            )
        )
    return CIResolutionResult(
        resolutions=tuple(resolutions),
        skipped=skipped,
        conflicting_commit_keys=frozenset(conflicting),
        outcomes_by_commit={
            k: tuple(sorted(v, key=lambda o: (o.captured_at, o.outcome_id)))
            for k, v in outcomes_by_commit.items()
        },
    )


def select_reward_resolution(
    resolutions: Iterable[CIResolution], org_id: str, commits: Sequence[CommitRef]
) -> CIResolution | None:
    """The resolution of the last attributed commit that has a verdict."""
    position = {commit_key_of(org_id, ref).sort_key: i for i, ref in enumerate(commits)}
    best: tuple[int, CIResolution] | None = None
    for resolution in resolutions:
        index = position.get(resolution.commit_key.sort_key)
        if index is None or resolution.verdict is None:
            continue
        if best is None or index > best[0]:
            best = (index, resolution)
    return best[1] if best else None


__all__ = [
    "CI_POLICY_VERSION",
    "DEFAULT_CI_POLICY",
    "RESOLVER_SKIP_REASONS",
    "CIResolution",
    "CIResolutionPolicy",
    "CIResolutionResult",
    "CIWorkflowResolution",
    "CommitKey",
    "outcome_commit_key",
    "resolve_ci",
    "select_reward_resolution",
]
