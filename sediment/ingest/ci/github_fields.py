"""What GitHub's run, job and check events share: the result of a run, a repository's identity,
and the pull request a run belongs to. Read by :mod:`sediment.ingest.ci.github` and
:mod:`sediment.ingest.ci.github_checks`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from sediment.ingest import TranslationError
from sediment.ingest.reading.payload import lookup as _lookup
from sediment.model.facts import CIResult

GITHUB_HOST: Final = "github.com"
"""The forge host of every GitHub delivery (GitHub Enterprise Server is not supported yet)."""


CONCLUSION_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "success": "passed",
    "failure": "failed",
    "startup_failure": "failed",
    "cancelled": "cancelled",
    "timed_out": "timed_out",
    "skipped": "skipped",
    "neutral": "skipped",
})
"""``conclusion`` → ``result`` of every GitHub run, job and check (docs/ci-providers.md's table): a run
that failed to start failed; ``neutral`` carries no verification signal, so it is ``skipped``.
Anything else — ``action_required``, ``stale``, null, a value GitHub adds later — is ``unknown``."""


def github_result(status: str | None, conclusion: str | None) -> CIResult:
    """The normalized result of a run: only a ``completed`` run with a known conclusion counts."""
    if status is not None and status != "completed":
        return "unknown"
    if conclusion is None:
        return "unknown"
    return CONCLUSION_RESULTS.get(conclusion, "unknown")


def repository_identity(payload: Mapping[str, Any], path: str, prefix: str = "repository"
                        ) -> dict[str, str | None]:
    """The identity triple (``<prefix>_provider``/``_host``/``_id``) of the repository object at
    ``path``: GitHub's immutable ``id`` on :data:`GITHUB_HOST`, all ``None`` without an id."""
    value = _lookup(payload, f"{path}.id")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise TranslationError(f"{path}.id: expected a positive integer, got {value!r}")
    identified = value is not None
    return {f"{prefix}_provider": "github" if identified else None,
            f"{prefix}_host": GITHUB_HOST if identified else None,
            f"{prefix}_id": str(value) if identified else None}


def pull_request_number(payload: Mapping[str, Any], path: str, warnings: list[str]) -> int | None:
    """The first pull request listed at ``path`` whose base is this repository (docs/ci-providers.md).

    ``pull_requests`` can list a pull request of another repository that shares the head
    commit (octokit ``workflow_run.completed.2``). Entries whose ``base.repo.id`` differs from
    ``repository.id`` are passed over (warned in ``warnings``); entries without ids are taken as given.
    """
    prs = _lookup(payload, path)
    if prs is None:
        return None
    if not isinstance(prs, list):
        raise TranslationError(f"{path}: expected an array, got {type(prs).__name__}")
    repository_id = _lookup(payload, "repository.id")
    for index, pr in enumerate(prs):
        where = f"{path}[{index}]"
        if not isinstance(pr, Mapping):
            raise TranslationError(f"{where}: expected an object, got {type(pr).__name__}")
        base_id = _lookup(pr, "base.repo.id")
        if repository_id is not None and base_id is not None and base_id != repository_id:
            warnings.append("pull_request_of_other_repository")
            continue
        number = pr.get("number")
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise TranslationError(f"{where}.number: expected a positive integer, got {number!r}")
        return number
    return None
