"""Validated identity types shared by every Fact and derived artifact.

Each type is an ``Annotated`` string (or datetime) whose validator normalizes and
rejects, so a model that carries one can never hold an ill-formed identity.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, PlainSerializer

_ORG_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_SLUG_PART = re.compile(r"^[A-Za-z0-9._-]+$")


def has_unpaired_surrogate(text: str) -> bool:
    """True when ``text`` holds a lone UTF-16 surrogate (it cannot be encoded as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _org_id(value: str) -> str:
    normalized = value.strip().lower()
    if not _ORG_ID.fullmatch(normalized):
        raise ValueError(f"org id must match {_ORG_ID.pattern}: {value!r}")
    return normalized


def _non_empty_id(value: str) -> str:
    stripped = value.strip()
    if not stripped:
        raise ValueError("identifier must not be empty")
    if "\x00" in stripped:
        raise ValueError("identifier must not contain NUL")
    if has_unpaired_surrogate(stripped):
        raise ValueError("identifier must not contain unpaired surrogates")
    return stripped


def _commit_sha(value: str) -> str:
    normalized = value.strip().lower()
    if not _SHA.fullmatch(normalized):
        raise ValueError(f"commit SHA must be 40 or 64 hex characters: {value!r}")
    return normalized


def normalize_repo_slug(value: str) -> str:
    """Normalize ``owner/repo`` (stripped, lowercased); ``""`` is the explicit absent value."""
    normalized = value.strip().lower()
    if normalized == "":
        return ""
    owner, sep, name = normalized.partition("/")
    if (
        not sep
        or not _SLUG_PART.fullmatch(owner)
        or not _SLUG_PART.fullmatch(name)
        or name in {".", ".."}
        or owner in {".", ".."}
    ):
        raise ValueError(f"repository must be 'owner/repo': {value!r}")
    return normalized


def _non_empty_repo(value: str) -> str:
    normalized = normalize_repo_slug(value)
    if not normalized:
        raise ValueError("repository must not be empty")
    return normalized


def _branch(value: str) -> str:
    stripped = value.strip()
    while stripped.startswith("refs/heads/"):
        stripped = stripped[len("refs/heads/") :]
    return stripped


def to_utc(value: datetime) -> datetime:
    """Normalize an aware datetime to UTC."""
    return value.astimezone(UTC)


def render_datetime(value: datetime) -> str:
    """Render a datetime as UTC ISO-8601 with a ``Z`` suffix (the row and bundle form)."""
    text = value.astimezone(UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


OrgId = Annotated[str, AfterValidator(_org_id)]
NonEmptyId = Annotated[str, AfterValidator(_non_empty_id)]
CommitSha = Annotated[str, AfterValidator(_commit_sha)]
RepoSlug = Annotated[str, AfterValidator(normalize_repo_slug)]
NonEmptyRepoSlug = Annotated[str, AfterValidator(_non_empty_repo)]
BranchName = Annotated[str, AfterValidator(_branch)]
UtcDatetime = Annotated[
    AwareDatetime,
    AfterValidator(to_utc),
    PlainSerializer(render_datetime, return_type=str, when_used="json"),
]
