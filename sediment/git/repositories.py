"""Repository identity: qualified keys and the repository context (docs/operate.md, Repository identity).

A repository is **identified** when its evidence carries the forge's immutable identity
(:class:`~sediment.model.facts.RepositoryIdentity`: provider, host, ``repository_id``; GitHub's
``repository.id``) and **legacy** otherwise, keyed by its ``owner/repo`` name. Sort keys:
identified ``(org, "identified", provider, host, repository_id)``, legacy ``(org, "legacy",
repo)``; a commit's appends its SHA, so identified repositories sort first. A name, clone URL,
SHA or Session never supplies an identity: equal ids are one repository whatever it was
called, different ids are different repository lifetimes however alike their names.

The :class:`RepositoryContext` of an org is built once from its **population**: one
:class:`RepositoryEvidence` per repository reference of every identity-capable Fact (CIOutcome,
Push, PullRequestMerge and its head repository, SessionCommitObservation) and every
RepositoryRename. From it:

- the **names** of each identity (evidence and renames); its representative label is the
  smallest, never "the current name", so labels do not depend on ingest order;
- the **claims** on each name: every identity that ever held it;
- **unsafe** names: those of evidence that contradicts itself (two copies of one Fact that
  disagree; two copies of one rename delivery that disagree).

Every reference is qualified, or declined with one reason of :data:`REPOSITORY_SKIP_REASONS`:

- ``repository_identity_unresolved``: an identity the context does not know under that name
  (and, without a context at all, every identified Fact);
- ``repository_identity_absent``: a reference without an identity, or without a name, whose
  name an identified repository holds: it can join neither that repository (a name never
  supplies identity) nor a legacy one (which would split one repository's evidence in two);
- ``repository_identity_conflict``: the evidence contradicts itself (the Fact differs from the
  context's copy of it, or its name is unsafe);
- ``repository_source_absent``: the Fact is not in the population (captured after it was read);
- ``repository_mirror_identity_unresolved``: a mirror whose identity cannot be established
  (a name several identities held, or an unsafe one).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sediment.model.facts import (
    FactModel,
    RepositoryIdentity,
    RepositoryRename,
    SessionCommitObservation,
)
from sediment.model.repository_evidence import (
    RepositoryEvidence,
    RepositoryRole,
    SourceKey,
    evidence_of_all,
    identity_of,
)

if TYPE_CHECKING:
    from sediment.store import FactStore

#: The resolver's repository reasons, in vocabulary order (docs/exports.md, Skip reasons).
REPOSITORY_SKIP_REASONS: tuple[str, ...] = (
    "repository_identity_absent",
    "repository_identity_conflict",
    "repository_identity_unresolved",
    "repository_mirror_identity_unresolved",
    "repository_source_absent",
)
#: Version of the identity rules below (a bundle records it).
REPOSITORY_IDENTITY_VERSION = "1"


# --- keys ------------------------------------------------------------------------------


def identity_sort_key(identity: RepositoryIdentity) -> tuple[str, str, str]:
    return (identity.provider, identity.host, identity.repository_id)


def repository_sort_key(org_id: str, repo: str, identity: RepositoryIdentity | None) -> tuple[str, ...]:
    """``(org, "identified", provider, host, id)`` or ``(org, "legacy", repo)``: an identified
    repository's label is not part of its key."""
    if identity is not None:
        return (org_id, "identified", *identity_sort_key(identity))
    return (org_id, "legacy", repo)


def describe(identity: RepositoryIdentity) -> str:
    """``github.com repository 424242``: an identity as messages name it."""
    return f"{identity.host} repository {identity.repository_id}"


@dataclass(frozen=True)
class Resolution:
    """A repository reference qualified (``repo`` is its label) or declined (``reason``)."""

    repo: str | None = None
    identity: RepositoryIdentity | None = None
    reason: str | None = None

    @classmethod
    def declined(cls, reason: str) -> Resolution:
        return cls(reason=reason)


# --- the population --------------------------------------------------------------------


@dataclass(frozen=True)
class RenameClaim:
    """What a rename says: an identity held ``old_repo`` and then ``new_repo``. Built from our
    RepositoryRename Facts, and from the records of an upstream bundle."""

    rename_id: str
    org_id: str
    identity: RepositoryIdentity | None
    old_repo: str
    new_repo: str
    source_event_id: str | None
    captured_at: datetime

    @classmethod
    def of(cls, rename: RepositoryRename) -> RenameClaim:
        return cls(rename.rename_id, rename.org_id, identity_of(rename), rename.old_repo, rename.new_repo,
                   rename.source_event_id, rename.captured_at)


Rename = RepositoryRename | RenameClaim


def _claim_of(rename: Rename) -> RenameClaim:
    return rename if isinstance(rename, RenameClaim) else RenameClaim.of(rename)


def _rename_order(rename: Rename) -> tuple[Any, ...]:
    """Population order ``(captured_at, rename_id)``, then what differing copies say."""
    claim = _claim_of(rename)
    identity = identity_sort_key(claim.identity) if claim.identity else ()
    return (claim.captured_at, claim.rename_id, identity, claim.old_repo, claim.new_repo, claim.source_event_id or "")


def superseded_observations(observations: Iterable[SessionCommitObservation]) -> frozenset[str]:
    """The ids of legacy observations (no repository identity) that an identified observation
    restates: the same name, commit and Session. Such an edge was read from a legacy mirror that
    was later keyed by its repository's identity (``sediment.ingest.git_notes.settle_legacy_mirrors``);
    the identified observation is the evidence, the legacy one is neither evidence nor a skip."""
    items = list(observations)
    identified = {(o.repo, o.commit_sha, o.session_id) for o in items if o.repository_id is not None}
    return frozenset(o.observation_id for o in items
                     if o.repository_id is None and (o.repo, o.commit_sha, o.session_id) in identified)


def visible_observations(store: FactStore, org_id: str) -> list[SessionCommitObservation]:
    """The org's visible SessionCommitObservations (read once by derive: the context and the
    noted commits come from the same list)."""
    return [f for f in store.facts("session_commit_observations", org_id) if isinstance(f, SessionCommitObservation)]


# --- the context -----------------------------------------------------------------------


@dataclass(frozen=True)
class RepositoryContext:
    """The repository identities of one org, from its population (evidence and renames)."""

    org_id: str
    #: The latest capture time in the population (None for an org without any): Facts
    #: captured later are not part of this context.
    as_of: datetime | None
    #: The population it was built from, in population order (what a bundle records).
    evidence: tuple[RepositoryEvidence, ...] = field(repr=False)
    renames: tuple[Rename, ...] = field(repr=False)
    _sources: Mapping[SourceKey, RepositoryEvidence] = field(repr=False)
    _conflicts: frozenset[SourceKey] = field(repr=False)
    _names: Mapping[RepositoryIdentity, tuple[str, ...]] = field(repr=False)
    _claims: Mapping[str, frozenset[RepositoryIdentity]] = field(repr=False)
    _unsafe: frozenset[str] = field(repr=False)
    #: Renames that contradict another copy of the same rename or delivery (not applied).
    rename_conflicts: int = 0

    @classmethod
    def build(cls, org_id: str, evidence: Iterable[RepositoryEvidence | FactModel],
              renames: Iterable[Rename] = (), *, as_of: datetime | None = None) -> RepositoryContext:
        """The context of ``org_id`` from evidence (Facts or their evidence) and renames.

        Other orgs' rows are left out; so is what was captured after ``as_of`` (by default the
        latest capture time in the population). Order-independent.
        """
        rows: list[RepositoryEvidence] = []
        for item in evidence:
            rows.extend((item,) if isinstance(item, RepositoryEvidence) else evidence_of_all((item,)))
        rows = [r for r in rows if r.org_id == org_id]
        kept = [r for r in renames if r.org_id == org_id]
        if as_of is None:
            times = [r.captured_at for r in rows] + [r.captured_at for r in kept]
            as_of = max(times) if times else None
        else:
            rows = [r for r in rows if r.captured_at <= as_of]
            kept = [r for r in kept if r.captured_at <= as_of]
        # an identical copy adds nothing; differing copies of one source keep a fixed order
        rows = sorted(set(rows), key=lambda r: (r.order_key, r.model_dump_json()))
        kept = sorted(set(kept), key=_rename_order)

        sources: dict[SourceKey, RepositoryEvidence] = {}
        conflicts: set[SourceKey] = set()
        for row in rows:
            earlier = sources.setdefault(row.source, row)
            if earlier != row:
                conflicts.add(row.source)
        names: dict[RepositoryIdentity, set[str]] = defaultdict(set)
        claims: dict[str, set[RepositoryIdentity]] = defaultdict(set)
        unsafe: set[str] = set()
        for row in rows:  # every copy claims its name; only consistent evidence names an identity
            identity = row.identity
            if row.source in conflicts:
                unsafe.add(row.repo)
            if identity is not None and row.repo:
                claims[row.repo].add(identity)
                if row.source not in conflicts:
                    names[identity].add(row.repo)

        said = [_claim_of(r) for r in kept]
        copies: dict[tuple[Any, ...], list[RenameClaim]] = defaultdict(list)
        for claim in said:  # copies of one rename, and of one delivery, must say the same
            copies[("rename", claim.rename_id)].append(claim)
            if claim.source_event_id is not None and claim.identity is not None:
                copies[("delivery", claim.identity.provider, claim.identity.host, claim.source_event_id)].append(claim)
        conflicting = {claim.rename_id for group in copies.values()
                       if len({(c.identity, c.old_repo, c.new_repo) for c in group}) > 1 for claim in group}
        for claim in said:
            if claim.identity is None:
                continue  # a rename without an id names no identity: a name never supplies one
            for name in (claim.old_repo, claim.new_repo):
                claims[name].add(claim.identity)
                if claim.rename_id in conflicting:
                    unsafe.add(name)
                else:
                    names[claim.identity].add(name)
        return cls(
            org_id=org_id, as_of=as_of, evidence=tuple(rows), renames=tuple(kept),
            _sources={k: v for k, v in sources.items() if k not in conflicts},
            _conflicts=frozenset(conflicts),
            _names={identity: tuple(sorted(found)) for identity, found in names.items()},
            _claims={name: frozenset(found) for name, found in claims.items()},
            _unsafe=frozenset(unsafe),
            rename_conflicts=len(conflicting),
        )

    @classmethod
    def from_store(cls, store: FactStore, org_id: str,
                   observations: Iterable[SessionCommitObservation] | None = None) -> RepositoryContext:
        """The context of ``org_id`` from its visible Facts (quarantined ones are not evidence,
        nor are legacy observations an identified one restates:
        :func:`sediment.ingest.git_notes.superseded_observations`)."""
        if observations is None:
            observations = visible_observations(store, org_id)
        superseded = superseded_observations(observations)
        evidence = (row for row in store.repository_evidence(org_id)
                    if not (row.source_table == "session_commit_observations" and row.source_fact_id in superseded))
        return cls.build(org_id, evidence, store.repository_renames(org_id))

    # --- what the context knows -------------------------------------------------------

    def identities(self) -> tuple[RepositoryIdentity, ...]:
        """Every identity the population names, in key order."""
        return tuple(sorted(self._names, key=identity_sort_key))

    def names(self, identity: RepositoryIdentity) -> tuple[str, ...]:
        """Every name ``identity`` was seen with (evidence and renames), sorted."""
        return self._names.get(identity, ())

    def label(self, identity: RepositoryIdentity) -> str | None:
        """The representative label: the smallest name in the population."""
        names = self.names(identity)
        return names[0] if names else None

    def identities_named(self, repo: str) -> frozenset[RepositoryIdentity]:
        """The identities that ever held the name ``repo``."""
        return self._claims.get(repo, frozenset())

    # --- resolving --------------------------------------------------------------------

    def resolve_reference(self, repo: str, identity: RepositoryIdentity | None) -> Resolution:
        """Qualify a reference by name and identity, whatever Fact made it."""
        if not repo:
            return Resolution.declined("repository_identity_absent")
        if repo in self._unsafe:
            return Resolution.declined("repository_identity_conflict")
        if identity is not None:
            if repo not in self.names(identity):
                return Resolution.declined("repository_identity_unresolved")
            return Resolution(self.label(identity), identity)
        if repo in self._claims:
            return Resolution.declined("repository_identity_absent")
        return Resolution(repo, None)

    def resolve_fact(self, fact: FactModel, role: RepositoryRole = "repo") -> Resolution:
        """Qualify one Fact's repository, checked against the population's copy of it."""
        row = RepositoryEvidence.of(fact, role)
        if row.source in self._conflicts:
            return Resolution.declined("repository_identity_conflict")
        stored = self._sources.get(row.source)
        if stored is None:
            return Resolution.declined("repository_source_absent")
        if stored != row:
            return Resolution.declined("repository_identity_conflict")
        return self.resolve_reference(row.repo, row.identity)

    # --- mirrors ----------------------------------------------------------------------

    def mirror_identity(self, repo: str) -> Resolution:
        """The identity a new mirror of ``repo`` is keyed by: the one identity that held the
        name (none: a legacy mirror), or ``repository_mirror_identity_unresolved`` when several
        did or the name's evidence contradicts itself."""
        claims = self.identities_named(repo)
        if repo in self._unsafe or len(claims) > 1:
            return Resolution.declined("repository_mirror_identity_unresolved")
        if claims:
            return Resolution(repo, next(iter(claims)))
        return Resolution(repo, None)

    def mirror_conflict(self, repo: str, identity: RepositoryIdentity) -> str | None:
        """Why a mirror of ``repo`` may not be keyed by ``identity`` (an operator's choice):
        the population names that identity, but never ``repo``."""
        names = self.names(identity)
        if names and repo not in names:
            return (f"the stored Facts name {describe(identity)} {', '.join(names)}, never {repo}")
        return None

    def legacy_mirror_usable(self, repo: str) -> bool:
        """Whether a mirror keyed only by the name ``repo`` may qualify commits: not when an
        identified repository held the name (its commits would be a name supplying identity)."""
        return repo not in self._claims and repo not in self._unsafe


__all__ = [
    "REPOSITORY_IDENTITY_VERSION",
    "REPOSITORY_SKIP_REASONS",
    "RenameClaim",
    "RepositoryContext",
    "Resolution",
    "describe",
    "repository_sort_key",
    "superseded_observations",
    "visible_observations",
]
