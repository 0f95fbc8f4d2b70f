"""GitLab webhooks (``sediment ingest gitlab``) → CIOutcome: the Pipeline Hook and the Job Hook.

A delivery is a bare payload or ``{"headers": {...}, "payload": {...}}``. The kind is the body's
``object_kind`` (``pipeline``, ``build``); ``X-Gitlab-Event`` (``Pipeline Hook``, ``Job Hook``,
older servers ``Build Hook``) becomes ``source_event_type`` (else the ``object_kind``), and
``X-Gitlab-Event-UUID`` the ``source_event_id``. Mapping (docs/ci-providers.md):

- Pipeline: ``run_id`` ``object_attributes.id`` (global), no attempt (a retried pipeline keeps
  its id: each final event is its own Fact, keyed and ordered by ``object_attributes.finished_at``,
  sediment.ci.reruns), ``repo`` ``project.path_with_namespace``, ``branch`` ``merge_request.source_branch``
  when the pipeline belongs to a merge request, else ``object_attributes.ref`` unless it is a
  tag, ``pr_number`` ``merge_request.iid``, ``provider_result`` ``status/detailed_status``.
  ``failed`` is ``timed_out`` when every failed ``builds[]`` entry names a timeout
  ``failure_reason`` (GitLab reports no pipeline-level timeout).
- Job: a job of the pipeline ``pipeline_id`` (``build_id`` is the job), ``run_attempt``
  ``retries_count + 1`` when the server sends it, ``repo`` the path of ``repository.homepage``,
  ``provider_result`` ``build_status/build_failure_reason`` (the reason only when failed).

Non-final states are declined as ``ci_run_not_terminal``; any other ``object_kind`` is
``unsupported_event:<kind>``.

Repository identity: GitLab names every project by an immutable numeric id (``project.id`` in a
Pipeline Hook, ``project_id`` in a Job Hook), so outcomes carry the triple ``gitlab`` / the host /
that id. The host is the caller's trusted configuration (``--host``, default
:data:`DEFAULT_HOST`), never read from a URL in the payload. A payload without the id (old
servers) yields a legacy outcome; an id that is not a positive integer is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from sediment.ci.reruns import GITLAB_PIPELINE_TIME
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.runs import NOT_TERMINAL, UNSUPPORTED_EVENT_PREFIX, joined, outcome
from sediment.ingest.facts_jsonl import acting_org, json_copy
from sediment.ingest.reading.payload import (
    header,
    id_text,
    lookup,
    obj,
    optional_bool,
    optional_int,
    optional_text,
    optional_time,
    repo_from_url,
    sha,
    text,
    unwrap,
)
from sediment.model.facts import CIResult

PROVIDER: Final = "gitlab_ci"
DEFAULT_HOST: Final = "gitlab.com"

TIMEOUT_FAILURE_REASONS: Final = frozenset({"stuck_or_timeout_failure", "job_execution_timeout"})
"""The ``failure_reason`` values of a job that ran out of time."""

PIPELINE_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "success": "passed",
    "failed": "failed",
    "canceled": "cancelled",
    "canceling": "cancelled",
    "skipped": "skipped",
})
"""``object_attributes.status`` → ``result``; ``failed`` may become ``timed_out`` (see the module)."""

PIPELINE_PENDING: Final = ("created", "waiting_for_resource", "preparing", "pending", "running", "manual",
                           "scheduled")

JOB_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "success": "passed",
    "failed": "failed",
    "canceled": "cancelled",
    "skipped": "skipped",
})
"""``build_status`` → ``result``; ``failed`` with a timeout ``build_failure_reason`` is ``timed_out``."""

JOB_PENDING: Final = ("created", "pending", "running", "manual")

_PATHS: Final = MappingProxyType({
    "repo": "project.path_with_namespace",
    "branch": "object_attributes.ref",
    "workflow_name": "object_attributes.name",
    "workflow_path": "project.ci_config_path",
    "run_url": "object_attributes.url",
    "pr_number": "merge_request.iid",
    "source_event_type": "headers.X-Gitlab-Event",
    "source_event_id": "headers.X-Gitlab-Event-UUID",
    "repository_host": "--host",
})
_JOB_PATHS: Final = MappingProxyType({
    "repo": "repository.homepage",
    "run_attempt": "retries_count",
    "branch": "ref",
    "source_event_type": "headers.X-Gitlab-Event",
    "source_event_id": "headers.X-Gitlab-Event-UUID",
    "repository_host": "--host",
})


def pipeline_result(status: str, builds: list[Any] | None) -> CIResult:
    """The result of a pipeline ``status`` given its ``builds[]`` (``unknown`` when not final).

    A failed entry's ``failure_reason`` is a string or null; any other value is refused with a
    :class:`TranslationError` naming ``builds[i].failure_reason``."""
    result = PIPELINE_RESULTS.get(status, "unknown")
    if result != "failed" or not builds:
        return result
    reasons = [_failure_reason(index, build) for index, build in enumerate(builds)
               if isinstance(build, Mapping) and build.get("status") == "failed"]
    if reasons and all(reason in TIMEOUT_FAILURE_REASONS for reason in reasons):
        return "timed_out"
    return result


def _failure_reason(index: int, build: Mapping[str, Any]) -> str | None:
    reason = build.get("failure_reason")
    if reason is not None and not isinstance(reason, str):
        raise TranslationError(f"builds[{index}].failure_reason: expected a string, got {type(reason).__name__}")
    return reason


def job_result(status: str, failure_reason: str | None) -> CIResult:
    result = JOB_RESULTS.get(status, "unknown")
    if result == "failed" and failure_reason in TIMEOUT_FAILURE_REASONS:
        return "timed_out"
    return result


def _identity(payload: Mapping[str, Any], path: str, host: str) -> dict[str, str | None]:
    project_id = optional_int(payload, path, minimum=1)
    identified = project_id is not None
    return {"repository_provider": "gitlab" if identified else None,
            "repository_host": host if identified else None,
            "repository_id": str(project_id) if identified else None}


def translate_gitlab(delivery: dict[str, Any], *, event: str | None = None, org_id: str,
                     captured_at: datetime, host: str = DEFAULT_HOST) -> Translation:
    """One GitLab webhook delivery → its CIOutcome, or the reason it was skipped; ``host`` is the
    GitLab server's host, from trusted configuration (it keys the repository identity)."""
    payload, headers = unwrap(delivery)
    kind = text(payload, "object_kind")
    named = header(headers, "X-Gitlab-Event") or (event.strip() if event and event.strip() else None)
    common = {
        "org_id": acting_org(org_id),
        "provider": PROVIDER,
        "source_event_type": named or kind,
        "source_event_id": header(headers, "X-Gitlab-Event-UUID"),
        "captured_at": captured_at,
        "raw": json_copy(dict(payload)),
    }
    if kind == "pipeline":
        return _pipeline(payload, {**common, **_identity(payload, "project.id", host)})
    if kind == "build":
        return _job(payload, {**common, **_identity(payload, "project_id", host)})
    return Translation.skip(f"{UNSUPPORTED_EVENT_PREFIX}{kind}")


def _branch(payload: Mapping[str, Any], ref_path: str, tag_path: str) -> str:
    if optional_bool(payload, tag_path) is True:
        return ""
    return optional_text(payload, ref_path) or ""


def _pipeline(payload: Mapping[str, Any], common: dict[str, Any]) -> Translation:
    attributes = obj(payload, "object_attributes")
    assert attributes is not None
    status = text(payload, "object_attributes.status")
    builds = lookup(payload, "builds")
    if builds is not None and not isinstance(builds, list):
        raise TranslationError(f"builds: expected an array, got {type(builds).__name__}")
    result = pipeline_result(status, builds)
    if result == "unknown":
        return Translation.skip(NOT_TERMINAL)
    run_id = id_text(payload, "object_attributes.id")
    optional_time(payload, GITLAB_PIPELINE_TIME)  # orders a retried pipeline's final events (sediment.ci.reruns)
    merge_request = obj(payload, "merge_request", required=False)
    if merge_request is not None:
        branch = text(payload, "merge_request.source_branch")
        pr_number = optional_int(payload, "merge_request.iid", minimum=1)
    else:
        branch = _branch(payload, "object_attributes.ref", "object_attributes.tag")
        pr_number = None
    run_url = optional_text(payload, "object_attributes.url")
    if run_url is None:
        web_url = optional_text(payload, "project.web_url")
        run_url = f"{web_url.rstrip('/')}/-/pipelines/{run_id}" if web_url else None
    fields = {
        **common,
        "run_id": run_id,
        "run_attempt": None,
        "repo": text(payload, "project.path_with_namespace"),
        "commit_sha": sha(text(payload, "object_attributes.sha"), "object_attributes.sha"),
        "branch": branch,
        "result": result,
        "workflow_name": optional_text(payload, "object_attributes.name") or "",
        "workflow_path": optional_text(payload, "project.ci_config_path") or None,
        "run_url": run_url,
        "provider_result": joined(status, optional_text(payload, "object_attributes.detailed_status")),
        "pr_number": pr_number,
    }
    return outcome(fields, _PATHS)


def _job(payload: Mapping[str, Any], common: dict[str, Any]) -> Translation:
    status = text(payload, "build_status")
    reason = optional_text(payload, "build_failure_reason")
    result = job_result(status, reason)
    if result == "unknown":
        return Translation.skip(NOT_TERMINAL)
    id_text(payload, "build_id")  # the job's own id keys the outcome (sediment.ci.jobs); it must be there
    retries = optional_int(payload, "retries_count")
    fields = {
        **common,
        "run_id": id_text(payload, "pipeline_id"),
        "run_attempt": None if retries is None else retries + 1,
        "repo": repo_from_url(text(payload, "repository.homepage"), "repository.homepage"),
        "commit_sha": sha(text(payload, "sha"), "sha"),
        "branch": _branch(payload, "ref", "tag"),
        "result": result,
        "workflow_name": "",
        "provider_result": joined(status, reason if status == "failed" else None),
    }
    return outcome(fields, _JOB_PATHS)
