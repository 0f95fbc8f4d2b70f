"""Repository evidence: one repository reference of one identity-capable Fact.

The rows a repository context is built from (:mod:`sediment.git.repositories`), the records of
a bundle's ``repository_identities.jsonl``, and what the store reads out of its Fact tables
(:data:`EVIDENCE_TABLES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from pydantic import model_validator

from sediment.identifiers import FactId, NonEmptyId, OrgId, RepoSlug, UtcDatetime
from sediment.model.facts import (
    CIOutcome,
    FactModel,
    ForgeProvider,
    PullRequestMerge,
    Push,
    RepositoryIdentity,
    RepositoryRename,
    SessionCommitObservation,
    check_identity_triple,
)

RepositoryRole = Literal["repo", "head_repo"]


SourceTable = Literal["ci_outcomes", "pushes", "pull_request_merges", "pull_request_revisions",
                      "session_commit_observations"]


SourceKey = tuple[str, str, str]
"""``(table, fact id, role)``: one repository reference of one Fact."""


#: The Fact tables whose rows are repository evidence, and each one's model and id field.
EVIDENCE_TABLES: Mapping[str, tuple[type[FactModel], str]] = {
    "ci_outcomes": (CIOutcome, "outcome_id"),
    "pushes": (Push, "push_id"),
    "pull_request_merges": (PullRequestMerge, "merge_id"),
    "session_commit_observations": (SessionCommitObservation, "observation_id"),
}


_TABLE_OF: dict[type[FactModel], str] = {model: table for table, (model, _) in EVIDENCE_TABLES.items()}


_HEAD_TABLES = ("pull_request_merges", "pull_request_revisions")


def identity_of(fact: Any, role: RepositoryRole = "repo") -> RepositoryIdentity | None:
    """The identity a Fact (or a rename) carries for its repository, or its pull request's head."""
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


class RepositoryEvidence(FactModel):
    """One repository reference of one identity-capable Fact: what the context is built from,
    and a record of a bundle's ``repository_identities.jsonl``."""

    source_table: SourceTable
    source_fact_id: FactId
    role: RepositoryRole = "repo"
    org_id: OrgId
    repo: RepoSlug
    repository_provider: ForgeProvider | None = None
    repository_host: str | None = None
    repository_id: str | None = None
    captured_at: UtcDatetime
    source_push_id: NonEmptyId | None = None

    @model_validator(mode="after")
    def _well_formed(self) -> RepositoryEvidence:
        check_identity_triple(self.repository_provider, self.repository_host, self.repository_id)
        if self.role == "head_repo" and self.source_table not in _HEAD_TABLES:
            raise ValueError(f"{self.source_table} has no head repository")
        return self

    @classmethod
    def of(cls, fact: FactModel, role: RepositoryRole = "repo") -> RepositoryEvidence:
        """The repository reference ``role`` of an identity-capable Fact."""
        table = _TABLE_OF.get(type(fact))
        if table is None:
            raise TypeError(f"not a repository Fact: {type(fact).__name__}")
        identity = identity_of(fact, role)
        return cls(
            source_table=table,
            source_fact_id=getattr(fact, EVIDENCE_TABLES[table][1]), role=role, org_id=getattr(fact, "org_id"),  # noqa: B009
            repo=getattr(fact, role),
            repository_provider=identity.provider if identity else None,
            repository_host=identity.host if identity else None,
            repository_id=identity.repository_id if identity else None,
            captured_at=getattr(fact, "captured_at"),  # noqa: B009
            source_push_id=fact.source_push_id if isinstance(fact, SessionCommitObservation) else None,
        )

    @property
    def identity(self) -> RepositoryIdentity | None:
        return identity_of(self)

    @property
    def source(self) -> SourceKey:
        return (self.source_table, self.source_fact_id, self.role)

    @property
    def order_key(self) -> tuple[Any, ...]:
        """Population order: ``(captured_at, table, fact id, role)``."""
        return (self.captured_at, *self.source)


def evidence_of_all(facts: Iterable[FactModel]) -> Iterator[RepositoryEvidence]:
    """Every repository reference of ``facts`` (a merge also names its head repository)."""
    for fact in facts:
        yield RepositoryEvidence.of(fact)
        if isinstance(fact, PullRequestMerge):
            yield RepositoryEvidence.of(fact, "head_repo")
