"""GitHub webhook deliveries (``sediment ingest github``) → Facts.

A delivery is either a bare payload or an envelope ``{"headers": {...}, "payload": {...}}``
whose headers name the event and carry the delivery id (``X-GitHub-Delivery``, kept as
``source_event_id``). GitHub names the event only in the ``X-GitHub-Event`` header; for a bare
payload it is read from the payload's top-level keys where exactly one event fits them
(:func:`evident_event`), else it must be given (``--event``). Four events yield Facts:

- ``workflow_run`` ``completed`` → CIOutcome (provider ``github_actions``);
- ``push`` to a branch (not a deletion) → Push;
- ``pull_request`` ``closed`` and merged → PullRequestMerge;
- ``repository`` ``renamed`` → RepositoryRename;
- ``workflow_job``, ``check_run`` and ``check_suite`` ``completed`` → CIOutcome of a job or a
  check suite (:mod:`.github_checks`, docs/ci-providers.md).

Other actions of those events are skipped with a reason from :data:`SKIP_REASONS`; any other
event is skipped as ``unsupported_event:<name>``, never an error. A malformed payload (missing
``head_sha``, a short SHA, no ``repository``) raises TranslationError naming the payload path.

Repository identity: GitHub names every repository by an immutable numeric ``repository.id``,
so the identity-capable Facts (CIOutcome, Push, PullRequestMerge and its head repository) carry
the triple ``github`` / ``github.com`` / that id, written as :data:`IDENTITY_CAPABLE_VERSION`
(2, the current payload version; 1 is the legacy payload written before identity existed). A
payload without the id yields a Fact without the triple (legacy evidence); an id that is not a
positive integer is refused, never coerced. The host is this translator's constant, never read
from a URL in the payload.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.github_checks import translate_check_event
from sediment.ingest.ci.github_fields import GITHUB_HOST, github_result, pull_request_number, repository_identity
from sediment.ingest.facts_jsonl import (
    PENDING_ID,
    acting_org,
    build_fact,
    content_hash,
    stored_raw,
    with_natural_id,
)
from sediment.ingest.reading.payload import header as _header
from sediment.ingest.reading.payload import id_text as _id_text
from sediment.ingest.reading.payload import lookup as _lookup
from sediment.ingest.reading.payload import obj, unwrap
from sediment.ingest.reading.payload import optional_text as _optional_text
from sediment.ingest.reading.payload import sha as _sha
from sediment.ingest.reading.payload import text as _text
from sediment.model.facts import CIOutcome, FactModel, PullRequestMerge, Push, RepositoryRename

CI_PROVIDER: Final = "github_actions"

IDENTITY_CAPABLE_VERSION: Final = 2
"""``schema_version`` of the identity-capable Facts written here (the models' current version)."""


SKIP_REASONS: Final[tuple[str, ...]] = (
    "workflow_run_not_completed",
    "push_not_branch",
    "push_deletion",
    "pull_request_not_merged",
    "repository_not_renamed",
    "ci_run_not_terminal",
    "check_suite_of_actions_run",
)
"""Declined on purpose; besides these, ``unsupported_event:<name>`` for any other event. The
last two come from the job and check events (:mod:`.github_checks`)."""

UNSUPPORTED_EVENT_PREFIX: Final = "unsupported_event:"

_ZERO_SHA: Final = re.compile(r"^0+$")


# --- payload access (the accessors are sediment.ingest.reading.payload's) -----------------------


def _object(payload: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    found = obj(payload, path, required=True)
    if found is None:  # obj raises first: a required object is never None
        raise TranslationError(f"{path}: missing")
    return found


def _optional_positive_int(payload: Mapping[str, Any], path: str) -> int | None:
    value = _lookup(payload, path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TranslationError(f"{path}: expected a positive integer, got {value!r}")
    return value


def _is_zero(sha: str) -> bool:
    return bool(_ZERO_SHA.fullmatch(sha.strip()))


def _required_sha(payload: Mapping[str, Any], path: str) -> str:
    return _sha(_text(payload, path), path)


# --- the delivery -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Delivery:
    payload: Mapping[str, Any]
    delivery_id: str | None
    org_id: str
    captured_at: datetime
    warnings: list[str] = field(default_factory=list)

    def done(self, fact: FactModel) -> Translation:
        return Translation(facts=(fact,), warnings=tuple(self.warnings))


#: Top-level keys every GitHub webhook payload may carry, whatever its event.
_COMMON_KEYS: Final = frozenset({"action", "enterprise", "installation", "organization", "repository", "sender"})
#: Per event this translator reads: the keys that show it (all present) and every top-level key
#: GitHub documents for its payload (octokit/webhooks payload schemas).
_EVIDENT_EVENTS: Final[Mapping[str, tuple[frozenset[str], frozenset[str]]]] = MappingProxyType({
    "workflow_run": (frozenset({"workflow_run"}), frozenset({"workflow", "workflow_run"})),
    "workflow_job": (frozenset({"workflow_job"}), frozenset({"workflow_job", "deployment"})),
    "check_run": (frozenset({"check_run"}), frozenset({"check_run", "requested_action"})),
    "check_suite": (frozenset({"check_suite"}), frozenset({"check_suite"})),
    "pull_request": (frozenset({"pull_request", "number"}), frozenset({
        "pull_request", "number", "assignee", "label", "milestone", "reason", "changes", "before", "after",
        "requested_reviewer", "requested_team"})),
    "push": (frozenset({"ref", "before", "after", "commits"}), frozenset({
        "ref", "before", "after", "commits", "base_ref", "compare", "created", "deleted", "forced", "head_commit",
        "pusher"})),
    "repository": (frozenset({"repository", "action"}), frozenset({"changes"})),
})
#: A ``repository`` payload has no key of its own: it is evident only with one of the event's
#: documented actions (``watch``'s ``started`` or ``branch_protection_configuration``'s
#: ``enabled`` have the same keys).
_REPOSITORY_ACTIONS: Final = frozenset({"archived", "created", "deleted", "edited", "privatized", "publicized",
                                        "renamed", "transferred", "unarchived"})


def evident_event(payload: Mapping[str, Any]) -> str | None:
    """The event a bare payload's top-level keys show, when exactly one event this translator
    reads fits them: the event's own keys are present and every key is one GitHub documents for
    that event. ``None`` when no event fits, or more than one would (never a guess)."""
    keys = set(payload)
    fitting = [name for name, (shown_by, documented) in _EVIDENT_EVENTS.items()
               if shown_by <= keys and keys <= documented | _COMMON_KEYS]
    if "repository" in fitting and payload.get("action") not in _REPOSITORY_ACTIONS:
        fitting.remove("repository")
    return fitting[0] if len(fitting) == 1 else None


def _keys(payload: Mapping[str, Any]) -> str:
    shown = sorted(str(k) for k in payload)
    return ", ".join(shown[:8]) + (", …" if len(shown) > 8 else "") if shown else "none"


def _unwrap(delivery: Any, event: str | None) -> tuple[str, Mapping[str, Any], str | None]:
    """``(event name, payload, delivery id)`` of a bare payload or a headers/payload envelope.

    The event is the ``X-GitHub-Event`` header, else the one the payload's keys show
    (:func:`evident_event`), else ``event`` (``--event``); a given event that disagrees with the
    header or with what the payload shows is refused."""
    payload, headers = unwrap(delivery)
    given = event.strip().lower() if event is not None and event.strip() else None
    enveloped = payload is not delivery
    named = _header(headers, "X-GitHub-Event") if enveloped else None
    named = named.lower() if named is not None else None
    if named is not None:
        if given is not None and named != given:
            raise TranslationError(
                f"headers.X-GitHub-Event: {named!r} disagrees with the given event {given!r}"
            )
        return named, payload, _header(headers, "X-GitHub-Delivery")
    shown = evident_event(payload)
    if shown is not None and given is not None and shown != given:
        raise TranslationError(f"event: the payload's keys ({_keys(payload)}) show a {shown} delivery, "
                               f"not the given event {given!r}")
    name = shown or given
    if name is None:
        where = "headers.X-GitHub-Event: missing" if enveloped else "event"
        raise TranslationError(
            f"{where}: the payload's top-level keys ({_keys(payload)}) do not show which GitHub event it is; "
            "pass --event NAME (GitHub sends it in the X-GitHub-Event header)"
        )
    return name, payload, _header(headers, "X-GitHub-Delivery") if enveloped else None


def translate_github(
    delivery: dict[str, Any], *, event: str | None, org_id: str, captured_at: datetime
) -> Translation:
    """One GitHub webhook delivery → its Fact, or the reason it was skipped."""
    name, payload, delivery_id = _unwrap(delivery, event)
    handler = _HANDLERS.get(name)
    if handler is None:
        return Translation.skip(f"{UNSUPPORTED_EVENT_PREFIX}{name}")
    return handler(_Delivery(payload, delivery_id, acting_org(org_id), captured_at))


# --- events -----------------------------------------------------------------------------


def _workflow_run(delivery: _Delivery) -> Translation:
    payload = delivery.payload
    if _text(payload, "action") != "completed":
        return Translation.skip("workflow_run_not_completed")
    run = _object(payload, "workflow_run")
    repo = _text(payload, "repository.full_name")
    run_id = _id_text(payload, "workflow_run.id", required=True)
    head_sha = _required_sha(payload, "workflow_run.head_sha")
    status = _optional_text(payload, "workflow_run.status")
    conclusion = _optional_text(payload, "workflow_run.conclusion")
    if status is not None and status != "completed":
        delivery.warnings.append("workflow_run_status_not_completed")
    fields = {
        "schema_version": IDENTITY_CAPABLE_VERSION,
        **repository_identity(payload, "repository"),
        "outcome_id": PENDING_ID,
        "org_id": delivery.org_id,
        "provider": CI_PROVIDER,
        "run_id": run_id,
        "run_attempt": _optional_positive_int(payload, "workflow_run.run_attempt"),
        "repo": repo,
        "commit_sha": head_sha,
        "branch": _optional_text(payload, "workflow_run.head_branch") or "",
        "result": github_result(status, conclusion),
        "workflow_name": (_optional_text(payload, "workflow_run.name")
                          or _optional_text(payload, "workflow.name") or ""),
        "workflow_id": (_id_text(payload, "workflow_run.workflow_id", required=False)
                        or _id_text(payload, "workflow.id", required=False)),
        "workflow_path": (_optional_text(payload, "workflow_run.path")
                          or _optional_text(payload, "workflow.path")),
        "run_url": _optional_text(payload, "workflow_run.html_url"),
        "provider_result": conclusion,
        "source_event_type": "github.workflow_run.completed",
        "source_event_id": delivery.delivery_id,
        "pr_number": pull_request_number(payload, "workflow_run.pull_requests", delivery.warnings),
        "captured_at": delivery.captured_at,
        "raw": stored_raw(run),
    }
    outcome = build_fact(CIOutcome, fields, _CI_PATHS)
    return delivery.done(with_natural_id(outcome, "outcome_id"))


_CI_PATHS: Final = MappingProxyType({
    "run_id": "workflow_run.id",
    "run_attempt": "workflow_run.run_attempt",
    "repo": "repository.full_name",
    "commit_sha": "workflow_run.head_sha",
    "branch": "workflow_run.head_branch",
    "workflow_name": "workflow_run.name",
    "workflow_id": "workflow_run.workflow_id",
    "workflow_path": "workflow_run.path",
    "run_url": "workflow_run.html_url",
    "provider_result": "workflow_run.conclusion",
    "source_event_id": "headers.X-GitHub-Delivery",
    "pr_number": "workflow_run.pull_requests[].number",
})


def _push(delivery: _Delivery) -> Translation:
    payload = delivery.payload
    ref = _text(payload, "ref")
    if not ref.startswith("refs/heads/"):
        return Translation.skip("push_not_branch")
    after = _text(payload, "after")
    if payload.get("deleted") is True or _is_zero(after):
        return Translation.skip("push_deletion")
    before = _optional_text(payload, "before")
    commits = payload.get("commits")
    if commits is None:
        commits = []
    if not isinstance(commits, list):
        raise TranslationError(f"commits: expected an array, got {type(commits).__name__}")
    commit_shas = []
    for index, commit in enumerate(commits):
        if not isinstance(commit, Mapping):
            raise TranslationError(f"commits[{index}]: expected an object, got {type(commit).__name__}")
        sha = commit.get("id")
        if not isinstance(sha, str):
            raise TranslationError(f"commits[{index}].id: expected a commit SHA, got {sha!r}")
        commit_shas.append(_sha(sha, f"commits[{index}].id"))
    fields = {
        "schema_version": IDENTITY_CAPABLE_VERSION,
        **repository_identity(payload, "repository"),
        "push_id": PENDING_ID,
        "org_id": delivery.org_id,
        "repo": _text(payload, "repository.full_name"),
        "ref": ref,
        "before_sha": None if before is None or _is_zero(before) else _sha(before, "before"),
        "after_sha": _sha(after, "after"),
        "commit_shas": tuple(commit_shas),
        "pusher": _optional_text(payload, "pusher.name"),
        "source_event_id": delivery.delivery_id,
        "pushed_at": _optional_text(payload, "head_commit.timestamp"),
        "captured_at": delivery.captured_at,
        "raw": stored_raw(payload),
    }
    push = build_fact(Push, fields, _PUSH_PATHS)
    return delivery.done(with_natural_id(push, "push_id"))


_PUSH_PATHS: Final = MappingProxyType({
    "repo": "repository.full_name",
    "pusher": "pusher.name",
    "pushed_at": "head_commit.timestamp",
    "source_event_id": "headers.X-GitHub-Delivery",
})


def _pull_request(delivery: _Delivery) -> Translation:
    payload = delivery.payload
    action = _text(payload, "action")
    pr = _object(payload, "pull_request")
    merged = pr.get("merged")
    if merged is None:  # older payloads carry only merged_at
        merged = pr.get("merged_at") is not None
    if action != "closed" or merged is not True:
        return Translation.skip("pull_request_not_merged")
    number = _optional_positive_int(payload, "pull_request.number")
    if number is None:
        number = _optional_positive_int(payload, "number")
    if number is None:
        raise TranslationError("pull_request.number: missing")
    if _lookup(payload, "pull_request.head.repo") is None:
        head_repo = ""
        delivery.warnings.append("head_repository_deleted")
    else:
        head_repo = _text(payload, "pull_request.head.repo.full_name")
    fields = {
        "schema_version": IDENTITY_CAPABLE_VERSION,
        **repository_identity(payload, "repository"),
        "merge_id": PENDING_ID,
        "org_id": delivery.org_id,
        "repo": _text(payload, "repository.full_name"),
        "pr_number": number,
        "head_repo": head_repo,
        **repository_identity(payload, "pull_request.head.repo", "head_repository"),
        "head_ref": _text(payload, "pull_request.head.ref"),
        "head_sha": _required_sha(payload, "pull_request.head.sha"),
        "base_ref": _text(payload, "pull_request.base.ref"),
        "base_sha": _required_sha(payload, "pull_request.base.sha"),
        "merge_commit_sha": _required_sha(payload, "pull_request.merge_commit_sha"),
        "merged_at": _text(payload, "pull_request.merged_at"),
        "source_event_id": delivery.delivery_id,
        "captured_at": delivery.captured_at,
    }
    merge = build_fact(PullRequestMerge, fields, _MERGE_PATHS)
    return delivery.done(with_natural_id(merge, "merge_id"))


_MERGE_PATHS: Final = MappingProxyType({
    "repo": "repository.full_name",
    "head_repo": "pull_request.head.repo.full_name",
    "head_ref": "pull_request.head.ref",
    "base_ref": "pull_request.base.ref",
    "merged_at": "pull_request.merged_at",
    "source_event_id": "headers.X-GitHub-Delivery",
})


def _repository(delivery: _Delivery) -> Translation:
    payload = delivery.payload
    if _text(payload, "action") != "renamed":
        return Translation.skip("repository_not_renamed")
    old_name = _text(payload, "changes.repository.name.from")
    owner = _text(payload, "repository.owner.login")
    repository_id = _optional_positive_int(payload, "repository.id")
    fields = {
        "rename_id": PENDING_ID,
        "org_id": delivery.org_id,
        "repository_host": GITHUB_HOST,
        "repository_id": None if repository_id is None else str(repository_id),
        "old_repo": f"{owner}/{old_name}",
        "new_repo": _text(payload, "repository.full_name"),
        "renamed_at": delivery.captured_at,  # GitHub gives no occurrence time
        "source_event_id": delivery.delivery_id,
        "captured_at": delivery.captured_at,
    }
    rename = build_fact(RepositoryRename, fields, _RENAME_PATHS)
    return delivery.done(with_natural_id(rename, "rename_id", event_hash=content_hash(dict(payload))))


_RENAME_PATHS: Final = MappingProxyType({
    "old_repo": "changes.repository.name.from",
    "new_repo": "repository.full_name",
    "source_event_id": "headers.X-GitHub-Delivery",
})


def _check_event(name: str) -> Callable[[_Delivery], Translation]:
    def handle(delivery: _Delivery) -> Translation:
        return translate_check_event(name, delivery.payload, delivery_id=delivery.delivery_id,
                                     org_id=delivery.org_id, captured_at=delivery.captured_at)
    return handle


_HANDLERS: Final[Mapping[str, Callable[[_Delivery], Translation]]] = MappingProxyType({
    "workflow_run": _workflow_run,
    "push": _push,
    "pull_request": _pull_request,
    "repository": _repository,
    "workflow_job": _check_event("workflow_job"),
    "check_run": _check_event("check_run"),
    "check_suite": _check_event("check_suite"),
})
