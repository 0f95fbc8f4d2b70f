"""Git-note edges seen in a mirror become SessionCommitObservation Facts (first seen wins)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sediment.facts import SessionCommitObservation
from sediment.ingest.facts_jsonl import PENDING_ID, with_natural_id
from sediment.mirrors import MirrorRoot
from sediment.store import FactStore


@dataclass
class ObservationResult:
    stored: int = 0
    already_seen: int = 0
    problems: list[str] = field(default_factory=list)


def observe_notes(mirrors: MirrorRoot, store: FactStore, org_id: str, repo: str,
                  captured_at: datetime) -> ObservationResult:
    """Store every (commit, session) edge of ``repo``'s sediment notes not stored before."""
    result = ObservationResult()
    mirror = mirrors.open(org_id, repo)
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
                session_id=edge.session_id, source_push_id=None, captured_at=captured_at,
            )
            facts.append(with_natural_id(observation, "observation_id"))
        except ValueError as exc:
            result.problems.append(f"note on {edge.commit_sha}: {exc}")
    appended = store.append(facts)
    result.stored = appended.stored["session_commit_observations"]
    result.already_seen = appended.duplicates["session_commit_observations"]
    return result
