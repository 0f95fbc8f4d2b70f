"""Git-note edges seen in a mirror become SessionCommitObservation Facts (first seen wins).

An identified mirror's observations carry its repository identity (and the name it was added
under); a legacy mirror's carry only the name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sediment.facts import RepositoryIdentity, SessionCommitObservation
from sediment.ingest.facts_jsonl import PENDING_ID, with_natural_id
from sediment.mirrors import MirrorRoot
from sediment.store import FactStore


@dataclass
class ObservationResult:
    stored: int = 0
    already_seen: int = 0
    problems: list[str] = field(default_factory=list)


def observe_notes(mirrors: MirrorRoot, store: FactStore, org_id: str, repo: str,
                  captured_at: datetime, identity: RepositoryIdentity | None = None) -> ObservationResult:
    """Store every (commit, session) edge of the sediment notes of ``repo``'s mirror (the one
    keyed by ``identity`` when given) not stored before."""
    result = ObservationResult()
    mirror = mirrors.open(org_id, repo, identity)
    forge = ({"repository_provider": identity.provider, "repository_host": identity.host,
              "repository_id": identity.repository_id} if identity is not None else {})
    if mirror is None:
        result.problems.append(f"no mirror of {repo}")
        return result
    facts = []
    for edge in mirror.note_edges():
        if isinstance(edge, str):
            result.problems.append(edge)
            continue
        try:
            observation = SessionCommitObservation(
                observation_id=PENDING_ID, org_id=org_id, repo=repo, commit_sha=edge.commit_sha,
                session_id=edge.session_id, source_push_id=None, captured_at=captured_at, **forge,
            )
            facts.append(with_natural_id(observation, "observation_id"))
        except ValueError as exc:
            result.problems.append(f"note on {edge.commit_sha}: {exc}")
    appended = store.append(facts)
    result.stored = appended.stored["session_commit_observations"]
    result.already_seen = appended.duplicates["session_commit_observations"]
    return result
