"""Sediment's own Rollouts read straight from the fact store, for an importer.

:func:`store_source` derives the org's Rollouts one Session at a time (the same derivation a
direct export and a bundle use, :func:`sediment.evidence.context.store_evidence`) and hands an
importer a :class:`StoreSource`: the org, the quarantine revision the derivation is pinned to,
the repository context CI resolves with, and each Rollout with its canonical bundle line (the
bytes a bundle derived from the same store would hold for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sediment.bundle.write import encode_line
from sediment.git.repositories import RepositoryContext
from sediment.model.rollout import Rollout

if TYPE_CHECKING:
    from sediment.git.mirror_root import MirrorRoot
    from sediment.store import FactStore


@dataclass(frozen=True)
class StoreSource:
    """What an importer reads from the fact store (hook ``import_store``).

    :param org_id: the org whose Rollouts these are.
    :param quarantine_revision: the org's quarantine-log high-water mark the derivation read at.
    :param repositories: the org's repository context (CI resolution qualifies outcomes with it).
    :param rollouts: a fresh iterator of ``(Rollout, line)`` in Session order; ``line`` is the
        Rollout's canonical bundle line without its newline.
    """

    org_id: str
    quarantine_revision: int
    repositories: RepositoryContext
    rollouts: Callable[[], Iterator[tuple[Rollout, bytes]]]


def store_source(store: FactStore, org_id: str, mirrors: MirrorRoot | None) -> StoreSource:
    """The org's Rollouts in ``store``, derived lazily one Session at a time (a Session without
    visible inference calls has no Rollout, as in a bundle)."""
    from sediment.derive.sessions import StoreRollouts
    from sediment.evidence.context import store_evidence

    evidence = store_evidence(store, org_id, mirrors)
    derived = evidence.rollouts
    assert isinstance(derived, StoreRollouts)

    def rollouts() -> Iterator[tuple[Rollout, bytes]]:
        for index in range(len(derived)):
            try:
                rollout = derived[index]
            except LookupError:
                continue
            yield rollout, encode_line(rollout).rstrip(b"\n")

    return StoreSource(org_id, derived.quarantine_revision, derived.repositories, rollouts)
