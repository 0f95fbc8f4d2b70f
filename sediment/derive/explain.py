"""One Session's attribution, explained from the fact store and mirrors, as derive sees it.

Reads what :class:`sediment.derive.sessions.StoreRollouts` reads for the Session (its visible
calls, its observations without the superseded ones, the org's repository context and noted
commits) and returns :func:`sediment.derive.attribution.explain_attribution`'s figures.
"""

from __future__ import annotations

from sediment.derive.attribution import AttributionExplanation, CommitIndex, explain_attribution
from sediment.derive.sessions import noted_commits
from sediment.errors import UsageError
from sediment.git.mirror_root import MirrorRoot
from sediment.git.repositories import RepositoryContext, superseded_observations, visible_observations
from sediment.model.policy import DerivationPolicy
from sediment.store import FactStore


def explain_session(store: FactStore, org_id: str, session_id: str, *, policy: DerivationPolicy,
                    mirrors: MirrorRoot | None) -> AttributionExplanation:
    """The attribution figures of ``session_id``; a Session without visible calls is a usage error."""
    calls = store.calls_for_session(org_id, session_id)
    if not calls:
        raise UsageError(f"no Session {session_id!r} with visible inference calls in org {org_id!r}")
    everything = visible_observations(store, org_id)
    repositories = RepositoryContext.from_store(store, org_id, everything)
    found = store.observations_for_session(org_id, session_id)
    superseded = superseded_observations(found)
    observations = [o for o in found if o.observation_id not in superseded]
    return explain_attribution(org_id, session_id, calls, observations, CommitIndex(mirrors, org_id, repositories),
                               policy.attribution, repositories, noted_commits(everything))
