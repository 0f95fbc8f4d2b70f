"""CircleCI outbound webhooks (``sediment ingest circleci``) → CIOutcome: ``workflow-completed``
and ``job-completed``.

A delivery is a bare payload or ``{"headers": {...}, "payload": {...}}``; the event is the
``circleci-event-type`` header or the body's ``type`` (they must agree). Mapping
(docs/ci-providers.md): ``run_id`` ``workflow.id`` (a rerun is a new workflow id, so there is no
attempt number: CI resolution judges the workflows of one ``pipeline.id`` and ``workflow.name`` as
one lineage, ordered by ``workflow.created_at``, sediment.ci.reruns), ``repo`` from
``pipeline.vcs.target_repository_url``, else (GitLab and GitHub App projects carry no ``vcs``)
``pipeline.trigger_parameters.gitlab.web_url`` or
``pipeline.trigger_parameters.git.checkout_url``; ``commit_sha`` ``pipeline.vcs.revision`` else
``trigger_parameters.git.checkout_sha``; ``branch`` likewise (``""`` for a tag pipeline);
``provider_result`` ``workflow.status`` (``job.status`` for a job); the delivery ``id`` is the
``source_event_id`` (CircleCI says deliveries may repeat). A ``job-completed`` reports one job
(``job.id``) of the workflow ``workflow.id`` (sediment.ci.jobs). CircleCI projects carry no forge
repository id, so outcomes are legacy (no identity triple).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.runs import NOT_TERMINAL, UNSUPPORTED_EVENT_PREFIX, outcome
from sediment.ingest.facts_jsonl import acting_org, json_copy
from sediment.ingest.reading.payload import (
    header,
    id_text,
    lookup,
    optional_text,
    optional_time,
    repo_from_url,
    sha,
    text,
    unwrap,
)
from sediment.model.facts import CIResult

PROVIDER: Final = "circleci"

WORKFLOW_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "success": "passed",
    "failed": "failed",
    "error": "failed",
    "canceled": "cancelled",
    "not_run": "skipped",
})
"""``workflow.status`` → ``result``; ``on_hold``, ``running``, ``failing`` are not final and
``unauthorized`` carries no verdict: all declined."""

JOB_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "success": "passed",
    "failed": "failed",
    "infrastructure_fail": "failed",
    "timedout": "timed_out",
    "canceled": "cancelled",
    "not_run": "skipped",
})
"""``job.status`` → ``result``; ``unauthorized``, ``terminated-unknown`` and others are declined."""

_PATHS: Final = MappingProxyType({
    "run_id": "workflow.id",
    "repo": "pipeline.vcs.target_repository_url",
    "commit_sha": "pipeline.vcs.revision",
    "branch": "pipeline.vcs.branch",
    "workflow_name": "workflow.name",
    "run_url": "workflow.url",
    "provider_result": "workflow.status",
    "source_event_type": "type",
    "source_event_id": "id",
})


def _repo(payload: Mapping[str, Any]) -> str:
    for path in ("pipeline.vcs.target_repository_url", "pipeline.trigger_parameters.gitlab.web_url",
                 "pipeline.trigger_parameters.git.checkout_url"):
        url = optional_text(payload, path)
        if url:
            return repo_from_url(url, path)
    raise TranslationError("pipeline.vcs.target_repository_url: missing (and no trigger_parameters URL)")


def _first_text(payload: Mapping[str, Any], *paths: str) -> tuple[str | None, str]:
    for path in paths:
        value = optional_text(payload, path)
        if value:
            return value, path
    return None, paths[0]


def translate_circleci(delivery: dict[str, Any], *, event: str | None = None, org_id: str,
                       captured_at: datetime) -> Translation:
    """One CircleCI webhook delivery → its CIOutcome, or the reason it was skipped."""
    payload, headers = unwrap(delivery)
    kind = text(payload, "type")
    named = header(headers, "circleci-event-type") or (event.strip() if event and event.strip() else None)
    if named is not None and named != kind:
        raise TranslationError(f"type: {kind!r} disagrees with the event {named!r} (circleci-event-type)")
    if kind == "workflow-completed":
        status = text(payload, "workflow.status")
        result = WORKFLOW_RESULTS.get(status, "unknown")
    elif kind == "job-completed":
        status = text(payload, "job.status")
        result = JOB_RESULTS.get(status, "unknown")
        id_text(payload, "job.id")  # the job's own id keys the outcome (sediment.ci.jobs)
    else:
        return Translation.skip(f"{UNSUPPORTED_EVENT_PREFIX}{kind}")
    if result == "unknown":
        return Translation.skip(NOT_TERMINAL)
    revision, revision_path = _first_text(payload, "pipeline.vcs.revision",
                                          "pipeline.trigger_parameters.git.checkout_sha")
    if revision is None:
        raise TranslationError("pipeline.vcs.revision: missing (and no trigger_parameters.git.checkout_sha)")
    vcs = lookup(payload, "pipeline.vcs")
    if vcs is not None and not isinstance(vcs, Mapping):
        raise TranslationError(f"pipeline.vcs: expected an object, got {type(vcs).__name__}")
    branch = (optional_text(payload, "pipeline.vcs.branch") if vcs is not None
              else optional_text(payload, "pipeline.trigger_parameters.git.branch"))
    # a rerun is a new workflow of the same pipeline and name, ordered by its creation (sediment.ci.reruns)
    id_text(payload, "pipeline.id", required=False)
    optional_time(payload, "workflow.created_at")
    fields = {
        "org_id": acting_org(org_id),
        "provider": PROVIDER,
        "run_id": id_text(payload, "workflow.id"),
        "run_attempt": None,
        "repo": _repo(payload),
        "commit_sha": sha(revision, revision_path),
        "branch": branch or "",
        "result": result,
        "workflow_name": optional_text(payload, "workflow.name") or "",
        "run_url": optional_text(payload, "workflow.url"),
        "provider_result": status,
        "source_event_type": kind,
        "source_event_id": id_text(payload, "id", required=False),
        "captured_at": captured_at,
        "raw": json_copy(dict(payload)),
    }
    paths = _PATHS if kind == "workflow-completed" else {**_PATHS, "provider_result": "job.status"}
    return outcome(fields, paths)
