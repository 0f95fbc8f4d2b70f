"""Store scenarios for tests: :func:`fact_store` opens a fact store with Facts written;
:func:`store_notes` stores a mirror's git-note edges as a refresh does; :func:`store_evidence`
(re-exported) is the evidence of a direct export from the store, for
:func:`sediment.testing.exports.export_evidence`; :func:`derive_bundle` (re-exported) derives
the store's bundle, as ``sediment derive`` does."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sediment.derive.sessions import StoreRollouts, derive_bundle
from sediment.evidence.context import store_evidence
from sediment.git.mirror_root import MirrorRoot
from sediment.ingest.git_notes import observe_notes
from sediment.model.facts import FactModel, RepositoryIdentity
from sediment.store import FactStore
from sediment.testing.builders import ORG, REPO, T0

__all__ = ["FactStore", "StoreRollouts", "derive_bundle", "fact_store", "observe_notes", "store_evidence",
           "store_notes"]


def fact_store(url: str, facts: Iterable[FactModel] = ()) -> FactStore:
    """The fact store at ``url`` (e.g. the ``store_url`` fixture's, or ``sqlite:///PATH``) with
    ``facts`` appended, as ingest stores them (``store.append`` adds more later)."""
    store = FactStore(url)
    facts = list(facts)
    if facts:
        store.append(facts)
    return store


def store_notes(store: FactStore, mirrors: MirrorRoot, *, org_id: str = ORG, repo: str = REPO,
                captured_at: datetime = T0 + timedelta(days=1), identity: RepositoryIdentity | None = None) -> int:
    """Store the (commit, Session) edges of ``repo``'s ``refs/notes/sediment`` (written with
    :meth:`sediment.testing.GitRepo.note`) as observations, as a mirror refresh does; asserts
    no problem and returns how many were new."""
    result = observe_notes(mirrors, store, org_id, repo, captured_at, identity)
    assert not result.problems, result.problems
    return result.stored
