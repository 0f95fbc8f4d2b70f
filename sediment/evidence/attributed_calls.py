"""The inference calls attributed to a commit, as the export context offers them to objectives
whose unit of evidence is a commit or a transition between commits (Recovery).

Attribution is per Session (:mod:`sediment.derive.attribution`: git notes, else Jaccard), so a call is
attributed to a commit when its Session's Rollout lists the commit: every call of that Session,
with the Session's attribution source and the ids of its observations of that commit. The
answer is read from the Rollouts in one pass, one Rollout resident at a time, keeping only the
commits asked for, plus a lookup of every call's Session and split side.

Commits are matched by their qualified key (:class:`~sediment.ci.resolution.CommitKey`), the
one place repository identity enters here: :func:`_observation_key` qualifies an observation the
way the Rollout's commits are qualified (by the identity it carries, else by its name).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sediment.ci.resolution import CommitKey, commit_key_of
from sediment.git.repositories import repository_sort_key
from sediment.model.facts import SessionCommitObservation
from sediment.model.repository_evidence import identity_of
from sediment.model.rollout import AttributionSource, Rollout, SessionCommits
from sediment.split import Split


@dataclass(frozen=True)
class AttributedCall:
    """One inference call attributed to one commit."""

    inference_call_id: str
    session_id: str
    #: how the call's Session was bound to the commit (``git_notes`` or ``jaccard``)
    attribution_source: AttributionSource
    #: sorted ids of the Session's observations of the commit (git notes; none for Jaccard)
    session_commit_observation_ids: tuple[str, ...]


@dataclass(frozen=True)
class CallRecord:
    """A visible inference call: its Session and the side of the split that Session is on."""

    session_id: str
    split: Split


@dataclass
class CommitAttributions:
    """The calls attributed to each asked-for commit, and a lookup of every visible call."""

    by_commit: Mapping[tuple[str, ...], tuple[AttributedCall, ...]] = field(default_factory=dict)
    calls_by_id: Mapping[str, CallRecord] = field(default_factory=dict)

    def calls(self, commit: CommitKey) -> tuple[AttributedCall, ...]:
        """The calls attributed to ``commit``, sorted by ``(inference_call_id, session_id)``."""
        return self.by_commit.get(commit.sort_key, ())

    def call(self, inference_call_id: str) -> CallRecord | None:
        """The visible call ``inference_call_id`` (``None`` when the store holds none)."""
        return self.calls_by_id.get(inference_call_id)


def _observation_key(org_id: str, observation: SessionCommitObservation) -> tuple[str, ...]:
    """The qualified commit an observation names (its repository's identity, else its name)."""
    return (*repository_sort_key(org_id, observation.repo, identity_of(observation)), observation.commit_sha)


def commit_attributions(rollouts: Iterable[Rollout | SessionCommits], commits: Iterable[CommitKey]
                        ) -> CommitAttributions:
    """Which calls each of ``commits`` was attributed to, from ``rollouts`` (Rollouts or their
    :class:`SessionCommits`, read once, in order)."""
    wanted = {c.sort_key for c in commits}
    found: dict[tuple[str, ...], set[AttributedCall]] = defaultdict(set)
    calls_by_id: dict[str, CallRecord] = {}
    for read in rollouts:
        rollout = read if isinstance(read, SessionCommits) else SessionCommits.of(read)
        call_ids = rollout.call_ids
        for call_id in call_ids:
            calls_by_id.setdefault(call_id, CallRecord(rollout.session_id, rollout.split))
        for ref in rollout.commits:
            key = commit_key_of(rollout.org_id, ref).sort_key
            if key not in wanted:
                continue
            observed = tuple(sorted({
                o.observation_id for o in rollout.session_commit_observations
                if o.org_id == rollout.org_id and o.session_id == rollout.session_id
                and _observation_key(rollout.org_id, o) == key
            }))
            for call_id in call_ids:
                found[key].add(AttributedCall(call_id, rollout.session_id, rollout.attribution_source, observed))
    by_commit = {key: tuple(sorted(calls, key=lambda c: (c.inference_call_id, c.session_id,
                                                          c.attribution_source, c.session_commit_observation_ids)))
                 for key, calls in found.items()}
    return CommitAttributions(by_commit, calls_by_id)
