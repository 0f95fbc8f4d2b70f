"""Repository identity: qualified keys, the repository context and its resolver (contract §1.2).

A repository is **identified** when its evidence carries the forge's immutable identity
(:class:`~sediment.facts.RepositoryIdentity`: provider, host, ``repository_id``; GitHub's
``repository.id``), and **legacy** otherwise, keyed by its ``owner/repo`` name. Sort keys:
identified ``(org, "identified", provider, host, repository_id)``, legacy ``(org, "legacy",
repo)``; a commit's appends its SHA. A name, clone URL, SHA or Session never supplies an
identity: equal ids are one repository whatever it was called, different ids are different
repository lifetimes however alike their names.

:class:`RepositoryContext` is built per org from the stored Facts: every identity-capable Fact
(CIOutcome, Push, PullRequestMerge and its head repository, SessionCommitObservation) is one
piece of **evidence** ``(table, fact id, role) → (name, identity or none, captured_at)``, and
every identified RepositoryRename adds its old and new name to its identity. From them:

- the **names** of each identity (the representative label is the smallest: never "the
  current name", so a label does not change with ingest order);
- the **claims** on each name (the identities that ever held it);
- **unsafe** names: those of evidence that contradicts itself (one Fact seen with two
  repository claims; two renames of one delivery that disagree).

:meth:`RepositoryContext.resolve_fact` qualifies one Fact, or declines it with one reason of
the closed vocabulary :data:`REPOSITORY_SKIP_REASONS`:

- ``repository_identity_unresolved`` — an identity the context does not know under that name
  (and every identified Fact when there is no context at all);
- ``repository_identity_absent`` — a Fact without an identity (or without a name) whose name
  an identified repository holds: it can join neither that repository (a name never supplies
  identity) nor a legacy one (which would split the evidence of one repository in two);
- ``repository_identity_conflict`` — the evidence contradicts itself: the Fact differs from the
  context's copy of it, its name is unsafe, or an observation's identity differs from the one
  of the Push it names (``source_push_id``);
- ``repository_source_absent`` — the Fact is not in the context's population (captured after
  it was read), or an identified observation names a Push the store does not hold;
- ``repository_mirror_identity_unresolved`` — a mirror whose identity cannot be established:
  ``mirror add`` of a name several identities held (or an unsafe one), a legacy mirror of a
  name an identified repository holds.

:class:`RolloutRepositories` is the context a derived Rollout carries itself: the identities
and labels of its attributed commits, which the derivation qualified against the store's
context. Exports resolve a Rollout's terminal outcomes with it, so a bundle and a direct
export give the same resolutions without the store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sediment.facts import (
    CIOutcome,
    FactModel,
    PullRequestMerge,
    Push,
    RepositoryIdentity,
    RepositoryRename,
    SessionCommitObservation,
)

if TYPE_CHECKING:
    from sediment.rollout import Rollout
    from sediment.store import FactStore

#: The resolver's repository reasons, in vocabulary order (contract §1.2, §5).
REPOSITORY_SKIP_REASONS: tuple[str, ...] = (
    "repository_identity_absent",
    "repository_identity_conflict",
    "repository_identity_unresolved",
    "repository_mirror_identity_unresolved",
    "repository_source_absent",
)
RepositoryRole = Literal["repo", "head_repo"]
SourceKey = tuple[str, str, str]
"""``(table, fact id, role)``: one repository reference of one Fact."""

#: The Fact tables whose rows are repository evidence, and each one's id field.
EVIDENCE_TABLES: Mapping[str, str] = {
    "ci_outcomes": "outcome_id",
    "pushes": "push_id",
    "pull_request_merges": "merge_id",
    "session_commit_observations": "observation_id",
}
_TABLE_OF: dict[type[FactModel], str] = {
    CIOutcome: "ci_outcomes",
    Push: "pushes",
    PullRequestMerge: "pull_request_merges",
    SessionCommitObservation: "session_commit_observations",
}


# --- keys ------------------------------------------------------------------------------


def identity_of(fact: Any, role: RepositoryRole = "repo") -> RepositoryIdentity | None:
    """The identity a Fact carries for its repository (or its pull request's head), if any."""
    if isinstance(fact, RepositoryRename):
        if fact.repository_host is None or fact.repository_id is None:
            return None
        return RepositoryIdentity(provider=fact.provider, host=fact.repository_host,
                                  repository_id=fact.repository_id)
    prefix = "head_repository" if role == "head_repo" else "repository"
    provider = getattr(fact, f"{prefix}_provider")
    if provider is None:
        return None
    return RepositoryIdentity(provider=provider, host=getattr(fact, f"{prefix}_host"),
                              repository_id=getattr(fact, f"{prefix}_id"))


def identity_sort_key(identity: RepositoryIdentity) -> tuple[str, str, str]:
    return (identity.provider, identity.host, identity.repository_id)


def repository_sort_key(org_id: str, repo: str, identity: RepositoryIdentity | None) -> tuple[str, ...]:
    """``(org, "identified", provider, host, id)`` or ``(org, "legacy", repo)``: the label of an
    identified repository is not part of its key."""
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


# --- evidence --------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """One repository reference of one Fact, as the context compares it."""

    table: str
    fact_id: str
    role: RepositoryRole
    org_id: str
    repo: str
    identity: RepositoryIdentity | None
    captured_at: datetime
    source_push_id: str | None = None

    @property
    def source(self) -> SourceKey:
        return (self.table, self.fact_id, self.role)

    @property
    def claim(self) -> tuple[Any, ...]:
        """What the reference says, compared between two copies of one Fact."""
        return (self.org_id, self.repo, self.identity, self.captured_at, self.source_push_id)


def evidence_of(fact: FactModel, role: RepositoryRole = "repo") -> Evidence:
    """The repository reference ``role`` of an identity-capable Fact."""
    table = _TABLE_OF.get(type(fact))
    if table is None:
        raise TypeError(f"not a repository Fact: {type(fact).__name__}")
    if role == "head_repo" and not isinstance(fact, PullRequestMerge):
        raise ValueError(f"{type(fact).__name__} has no head repository")
    return Evidence(
        table=table, fact_id=getattr(fact, EVIDENCE_TABLES[table]), role=role, org_id=getattr(fact, "org_id"),
        repo=getattr(fact, role), identity=identity_of(fact, role), captured_at=getattr(fact, "captured_at"),
        source_push_id=fact.source_push_id if isinstance(fact, SessionCommitObservation) else None,
    )


def evidence_of_all(facts: Iterable[FactModel]) -> Iterable[Evidence]:
    """Every repository reference of ``facts`` (a merge also names its head repository)."""
    for fact in facts:
        yield evidence_of(fact)
        if isinstance(fact, PullRequestMerge):
            yield evidence_of(fact, "head_repo")


# --- the context -----------------------------------------------------------------------


class RepositoryResolver(Protocol):
    """What CI resolution asks of a repository context."""

    @property
    def org_id(self) -> str: ...

    @property
    def as_of(self) -> datetime | None: ...

    def resolve_outcome(self, outcome: CIOutcome) -> Resolution: ...


@dataclass(frozen=True)
class RepositoryContext:
    """The repository identities of one org, from its stored evidence and renames."""

    org_id: str
    #: The latest capture time among the evidence read (None for an org without any): Facts
    #: captured later are not part of this context.
    as_of: datetime | None
    _sources: Mapping[SourceKey, Evidence] = field(repr=False)
    _conflicts: frozenset[SourceKey] = field(repr=False)
    _names: Mapping[RepositoryIdentity, tuple[str, ...]] = field(repr=False)
    _claims: Mapping[str, frozenset[RepositoryIdentity]] = field(repr=False)
    _unsafe: frozenset[str] = field(repr=False)
    #: RepositoryRename Facts that contradict another rename of the same delivery.
    rename_conflicts: int = 0

    @classmethod
    def build(cls, org_id: str, evidence: Iterable[Evidence | FactModel],
              renames: Iterable[RepositoryRename] = (), *, as_of: datetime | None = None) -> RepositoryContext:
        """The context of ``org_id`` from evidence (Facts or their :class:`Evidence`) and renames.

        ``as_of`` bounds the population (evidence and renames captured later are left out); by
        default it is the latest capture time among them. Order-independent.
        """
        rows: list[Evidence] = []
        for item in evidence:
            if isinstance(item, Evidence):
                rows.append(item)
            else:
                rows.extend(evidence_of_all((item,)))
        rename_rows = [r for r in renames if r.org_id == org_id]
        rows = [r for r in rows if r.org_id == org_id]
        if as_of is None:
            times = [r.captured_at for r in rows] + [r.captured_at for r in rename_rows]
            as_of = max(times) if times else None
        else:
            rows = [r for r in rows if r.captured_at <= as_of]
            rename_rows = [r for r in rename_rows if r.captured_at <= as_of]

        sources: dict[SourceKey, Evidence] = {}
        conflicts: set[SourceKey] = set()
        for row in rows:
            earlier = sources.setdefault(row.source, row)
            if earlier.claim != row.claim:
                conflicts.add(row.source)
        names: dict[RepositoryIdentity, set[str]] = defaultdict(set)
        claims: dict[str, set[RepositoryIdentity]] = defaultdict(set)
        unsafe: set[str] = set()
        for row in rows:  # every copy claims its name; only consistent evidence names an identity
            if not row.repo:
                continue
            if row.source in conflicts:
                unsafe.add(row.repo)
            if row.identity is not None:
                claims[row.repo].add(row.identity)
                if row.source not in conflicts:
                    names[row.identity].add(row.repo)

        by_delivery: dict[tuple[str, str | None, str], list[RepositoryRename]] = defaultdict(list)
        for rename in rename_rows:
            if rename.source_event_id is not None:
                by_delivery[(rename.provider, rename.repository_host, rename.source_event_id)].append(rename)
        conflicting_renames = {
            r.rename_id for group in by_delivery.values()
            if len({(identity_of(r), r.old_repo, r.new_repo) for r in group}) > 1 for r in group
        }
        for rename in rename_rows:
            identity = identity_of(rename)
            if identity is None:
                continue  # a rename without an id names no identity: a name never supplies one
            for name in (rename.old_repo, rename.new_repo):
                claims[name].add(identity)
                if rename.rename_id in conflicting_renames:
                    unsafe.add(name)
                else:
                    names[identity].add(name)
        return cls(
            org_id=org_id, as_of=as_of,
            _sources={k: v for k, v in sources.items() if k not in conflicts},
            _conflicts=frozenset(conflicts),
            _names={identity: tuple(sorted(found)) for identity, found in names.items()},
            _claims={name: frozenset(found) for name, found in claims.items()},
            _unsafe=frozenset(unsafe),
            rename_conflicts=len(conflicting_renames),
        )

    @classmethod
    def from_store(cls, store: FactStore, org_id: str) -> RepositoryContext:
        """The context of ``org_id`` from its visible Facts (quarantined ones are not evidence)."""
        return cls.build(org_id, store.repository_evidence(org_id), store.repository_renames(org_id))

    # --- what the context knows -------------------------------------------------------

    def identities(self) -> tuple[RepositoryIdentity, ...]:
        """Every identity the evidence names, in key order."""
        return tuple(sorted(self._names, key=identity_sort_key))

    def names(self, identity: RepositoryIdentity) -> tuple[str, ...]:
        """Every name ``identity`` was seen with (evidence and renames), sorted."""
        return self._names.get(identity, ())

    def label(self, identity: RepositoryIdentity) -> str | None:
        """The representative label: the smallest name in the evidence."""
        names = self.names(identity)
        return names[0] if names else None

    def identities_named(self, repo: str) -> frozenset[RepositoryIdentity]:
        """The identities that ever held the name ``repo``."""
        return self._claims.get(repo, frozenset())

    def is_unsafe(self, repo: str) -> bool:
        return repo in self._unsafe

    # --- resolving --------------------------------------------------------------------

    def resolve_reference(self, repo: str, identity: RepositoryIdentity | None) -> Resolution:
        """Qualify a reference by name and identity, whatever Fact made it."""
        if identity is not None:
            if repo not in self.names(identity):
                return Resolution.declined("repository_identity_unresolved")
            return Resolution(self.label(identity), identity)
        if repo in self._unsafe:
            return Resolution.declined("repository_identity_conflict")
        if not repo or repo in self._claims:
            return Resolution.declined("repository_identity_absent")
        return Resolution(repo, None)

    def resolve_fact(self, fact: FactModel, role: RepositoryRole = "repo") -> Resolution:
        """Qualify one Fact's repository, checked against the context's copy of it."""
        row = evidence_of(fact, role)
        if row.source in self._conflicts:
            return Resolution.declined("repository_identity_conflict")
        stored = self._sources.get(row.source)
        if stored is None:
            return Resolution.declined("repository_source_absent")
        if stored.claim != row.claim:
            return Resolution.declined("repository_identity_conflict")
        if row.source_push_id is not None:
            reason = self._check_push(row)
            if reason is not None:
                return Resolution.declined(reason)
        return self.resolve_reference(row.repo, row.identity)

    def resolve_outcome(self, outcome: CIOutcome) -> Resolution:
        return self.resolve_fact(outcome)

    def _check_push(self, row: Evidence) -> str | None:
        """An observation's identity must be that of the Push whose mirror refresh exposed it."""
        source = ("pushes", row.source_push_id or "", "repo")
        if source in self._conflicts:
            return "repository_identity_conflict"
        push = self._sources.get(source)
        if push is None:
            return "repository_source_absent" if row.identity is not None else None
        if row.identity is not None and push.identity is None:
            return "repository_identity_unresolved"
        if row.identity is None and push.identity is not None:
            return "repository_identity_absent"
        if row.identity != push.identity or (row.identity is None and row.repo != push.repo):
            return "repository_identity_conflict"
        return None

    # --- mirrors ----------------------------------------------------------------------

    def mirror_identity(self, repo: str) -> Resolution:
        """The identity a mirror of ``repo`` is keyed by: the one identity that held the name
        (none: a legacy mirror), or ``repository_mirror_identity_unresolved`` when several
        did or the name's evidence contradicts itself."""
        claims = self.identities_named(repo)
        if repo in self._unsafe or len(claims) > 1:
            return Resolution.declined("repository_mirror_identity_unresolved")
        if claims:
            return Resolution(repo, next(iter(claims)))
        return Resolution(repo, None)

    def check_mirror(self, repo: str, identity: RepositoryIdentity) -> str | None:
        """Why a mirror of ``repo`` may not be keyed by ``identity`` (an operator's
        ``--repository-id``): the evidence names that identity, but never ``repo``."""
        names = self.names(identity)
        if names and repo not in names:
            return (f"repository_mirror_identity_unresolved: the stored Facts name {describe(identity)} "
                    f"{', '.join(names)}, never {repo}")
        return None

    def legacy_mirror_usable(self, repo: str) -> bool:
        """Whether a mirror keyed only by the name ``repo`` may qualify commits: not when an
        identified repository held the name (its commits would be a name supplying identity)."""
        return repo not in self._claims and repo not in self._unsafe


@dataclass(frozen=True)
class RolloutRepositories:
    """The repository context a derived Rollout carries: its attributed commits' identities
    and labels (qualified by the store's context when the Rollout was derived)."""

    org_id: str
    labels: Mapping[RepositoryIdentity, str]
    as_of: datetime | None = None

    @classmethod
    def of(cls, rollout: Rollout) -> RolloutRepositories:
        labels: dict[RepositoryIdentity, str] = {}
        for ref in rollout.commits:
            if ref.repository_identity is not None:
                known = labels.get(ref.repository_identity)
                labels[ref.repository_identity] = ref.repo if known is None else min(known, ref.repo)
        return cls(rollout.org_id, labels)

    def resolve_outcome(self, outcome: CIOutcome) -> Resolution:
        identity = identity_of(outcome)
        if identity is None:
            return Resolution(outcome.repo, None)
        label = self.labels.get(identity)
        if label is None:
            return Resolution.declined("repository_identity_unresolved")
        return Resolution(label, identity)


__all__ = [
    "EVIDENCE_TABLES",
    "REPOSITORY_SKIP_REASONS",
    "Evidence",
    "RepositoryContext",
    "RepositoryResolver",
    "Resolution",
    "RolloutRepositories",
    "describe",
    "evidence_of",
    "evidence_of_all",
    "identity_of",
    "repository_sort_key",
]
