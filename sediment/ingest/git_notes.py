"""Git-note edges seen in a mirror become SessionCommitObservation Facts (first seen wins).

Two kinds of notes are read: ours (``refs/notes/sediment``, attribution source ``git_notes``) and
git-ai's authorship notes (``refs/notes/ai``, ``git_ai_notes``; :mod:`sediment.git.ai_notes`):
every agent Session a git-ai note names becomes an edge of the commit the note is attached to
(not its ``base_commit_sha``). Ours are stored first, so an edge both name keeps ``git_notes``.
A git-ai note that cannot be read is one problem line naming the commit and why; its attestation
lines of keys without metadata (dangling keys) and its human lines bind no Session and are
counted. An identified mirror's observations carry its repository identity (and the name it was
added under); a legacy mirror's carry only the name. An edge a legacy mirror gave before it was
keyed by its repository's identity is stored again under that identity (it supersedes the legacy
one) and counted as *restated*, not as new: nothing new was read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sediment.git.ai_notes import GitAiNoteError, parse_note
from sediment.git.mirror_root import MirrorLocation, MirrorRoot
from sediment.ingest.facts_jsonl import PENDING_ID, natural_id, with_natural_id
from sediment.model.facts import ObservationSource, RepositoryIdentity, SessionCommitObservation
from sediment.store import FactStore

if TYPE_CHECKING:
    from sediment.git.repositories import RepositoryContext


@dataclass
class ObservationResult:
    #: observations stored now, ``restated`` ones included
    stored: int = 0
    already_seen: int = 0
    #: of ``stored``: identified observations restating an edge the mirror gave while it was
    #: legacy (same name, commit and Session), stored when the mirror was keyed by its identity
    restated: int = 0
    problems: list[str] = field(default_factory=list)
    #: git-ai attestation lines that bind no Session: ``dangling_key`` (an AI key without
    #: metadata, kept as lines of an unknown agent), ``human`` (a person's lines)
    unbound_attestations: Counter[str] = field(default_factory=Counter)
    git_ai_notes: int = 0

    def counts(self) -> str:
        """The counts as one phrase: edges new to the store, already stored, and (the first
        observation under a newly keyed mirror's identity) restated under that identity."""
        text = f"{self.stored - self.restated} new session-commit observation(s), {self.already_seen} already seen"
        if self.restated:
            text += f", {self.restated} restated under the repository's identity"
        return text


def _restating(store: FactStore, org_id: str, facts: list[SessionCommitObservation]) -> set[str]:
    """The ids of the identified ``facts`` not stored yet whose legacy twin (the same edge
    observed under the name alone) is stored: the edges a legacy mirror gave before it was keyed."""
    legacy = {fact.observation_id: natural_id(fact.model_copy(update={
        "repository_provider": None, "repository_host": None, "repository_id": None})) for fact in facts
        if fact.is_identified}
    if not legacy:
        return set()
    known = store.recorded("session_commit_observations", org_id, [*legacy, *legacy.values()])
    return {fact_id for fact_id, twin in legacy.items() if fact_id not in known and twin in known}


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

    def edge(commit_sha: str, session_id: str, source: ObservationSource) -> None:
        try:
            observation = SessionCommitObservation(
                observation_id=PENDING_ID, org_id=org_id, repo=repo, commit_sha=commit_sha,
                session_id=session_id, source_push_id=None, captured_at=captured_at,
                attribution_source=source, **forge,
            )
            facts.append(with_natural_id(observation, "observation_id"))
        except ValueError as exc:
            kind = "note" if source == "git_notes" else "git-ai note"
            result.problems.append(f"{kind} on {commit_sha}: {exc}")

    for found in mirror.note_edges():
        if isinstance(found, str):
            result.problems.append(found)
            continue
        edge(found.commit_sha, found.session_id, "git_notes")
    for commit_sha, text in mirror.git_ai_notes():
        result.git_ai_notes += 1
        try:
            note = parse_note(text)
        except GitAiNoteError as exc:
            result.problems.append(f"git-ai note on {commit_sha}: {exc}")
            continue
        for attestation in note.attestations:
            if attestation.author_kind == "human":
                result.unbound_attestations["human"] += 1
            elif attestation.agent is None or attestation.agent.session_id is None:
                result.unbound_attestations["dangling_key"] += 1
        for agent in note.sessions:
            assert agent.session_id is not None
            edge(commit_sha, agent.session_id, "git_ai_notes")
    unique, seen = [], set()
    for fact in facts:  # an edge both kinds of notes name is stored once, as ours
        if fact.observation_id not in seen:
            seen.add(fact.observation_id)
            unique.append(fact)
    restating = _restating(store, org_id, unique)
    appended = store.append(unique)
    result.stored = appended.stored["session_commit_observations"]
    result.already_seen = appended.duplicates["session_commit_observations"]
    result.restated = min(len(restating), result.stored)
    return result


#: Fact tables whose new rows can name a repository identity: only they may settle a legacy mirror.
IDENTITY_TABLES = frozenset({"ci_outcomes", "pushes", "pull_request_merges", "session_commit_observations",
                             "repository_renames"})


@dataclass(frozen=True)
class SettledMirror:
    """A legacy mirror keyed by the identity that now holds its name, and the note edges its
    notes gave under that identity."""

    repo: str
    identity: RepositoryIdentity
    path: Path
    observed: ObservationResult


@dataclass
class Settlement:
    """What :func:`settle_legacy_mirrors` did: the mirrors it keyed, and the legacy mirrors it
    had to leave unused (several repositories held the name, or the identity has a mirror)."""

    settled: list[SettledMirror] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


def settle_legacy_mirrors(mirrors: MirrorRoot, store: FactStore, org_id: str, captured_at: datetime,
                          repositories: RepositoryContext | None = None) -> Settlement:
    """Key every legacy mirror of ``org_id`` whose name exactly one identified repository now
    holds by that repository's identity, and observe its notes under it.

    A mirror added before its repository's webhooks arrived is legacy; once Facts name the
    repository's immutable id, a name alone may not qualify its commits. ``mirror add`` after
    those Facts would key the mirror by that identity (:meth:`RepositoryContext.mirror_identity`);
    this applies the same rule to a mirror that came first, so the order of ``mirror add`` and
    ingest never changes what is attributed. The legacy observations the mirror gave before are
    restated under the identity and so superseded
    (:func:`sediment.git.repositories.superseded_observations`). Idempotent:
    a call with nothing to settle reads only the mirror root's listing.
    """
    from sediment.git.repositories import RepositoryContext

    result = Settlement()
    legacy = mirrors.legacy_mirrors(org_id)
    if not legacy:
        return result
    context = repositories if repositories is not None else RepositoryContext.from_store(store, org_id)
    for repo in legacy:
        if context.legacy_mirror_usable(repo):
            continue
        location = MirrorLocation(repo, None, mirrors.mirror_path(org_id, repo))
        rekeyed = mirrors.rekey(org_id, location, context)
        if rekeyed is None or rekeyed.identity is None:
            result.unused.append(repo)
            continue
        observed = observe_notes(mirrors, store, org_id, rekeyed.repo, captured_at, rekeyed.identity)
        result.settled.append(SettledMirror(rekeyed.repo, rekeyed.identity, rekeyed.path, observed))
    return result

