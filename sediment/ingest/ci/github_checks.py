"""GitHub's job-level and check events → CIOutcome: ``workflow_job``, ``check_run``, ``check_suite``.

Called by :func:`sediment.ingest.ci.github.translate_github` for these event names, so they arrive
through ``sediment ingest github`` like every other GitHub delivery. Mapping
(docs/ci-providers.md):

- ``workflow_job``: one job (``workflow_job.id``) of the Actions run ``workflow_job.run_id``,
  attempt ``workflow_job.run_attempt`` (absent in old payloads); ``workflow_name``
  ``workflow_job.workflow_name``; ``run_url`` built from the run id.
- ``check_run``: one check. The app ``github-actions`` makes it a job of the Actions run whose id
  follows ``/actions/runs/`` in ``details_url`` (else ``html_url``; provider ``github_actions``);
  any other app makes it a check of the suite ``check_run.check_suite.id`` (provider
  ``github_checks``). No attempt; ``workflow_name`` is the check's ``name``. The embedded suite's
  conclusion is never read (a timed-out job's suite reports ``cancelled``).
- ``check_suite``: the run-level outcome of a third-party app's suite (provider
  ``github_checks``, ``run_id`` ``check_suite.id``; a re-requested suite keeps its id, so each
  final event is its own Fact, keyed and ordered by ``check_suite.updated_at``,
  sediment.ci.reruns). The suite of a GitHub Actions run is
  declined as ``check_suite_of_actions_run``: that run is recorded by its ``workflow_run`` (or
  its jobs), under the run id, which the suite payload does not carry.

``result`` follows upstream's mapping table (:data:`sediment.ingest.ci.github_fields.CONCLUSION_RESULTS`); only a
``completed`` status is stored (others: ``ci_run_not_terminal``); ``provider_result`` is
``status/conclusion``; ``source_event_type`` is ``github.<event>.<action>``. Jobs are grouped
into their run by CI resolution (:mod:`sediment.ci.jobs`): a run that also arrived as
``workflow_run`` is judged by that alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from sediment.ci.reruns import CHECK_SUITE_TIME
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.github_fields import GITHUB_HOST, github_result, pull_request_number, repository_identity
from sediment.ingest.ci.runs import NOT_TERMINAL, joined, outcome
from sediment.ingest.facts_jsonl import json_copy
from sediment.ingest.reading.payload import id_text, obj, optional_int, optional_text, optional_time, sha, text

ACTIONS_APP: Final = "github-actions"
CHECKS_PROVIDER: Final = "github_checks"
ACTIONS_PROVIDER: Final = "github_actions"

SKIP_REASONS: Final[tuple[str, ...]] = ("check_suite_of_actions_run",)
"""Declined on purpose here, besides ``ci_run_not_terminal``."""

_RUN_IN_URL: Final = re.compile(r"/actions/runs/([0-9]+)(?:[/?#]|$)")


class _Event:
    def __init__(self, name: str, payload: Mapping[str, Any], delivery_id: str | None, org_id: str,
                 captured_at: datetime, warnings: list[str]) -> None:
        self.name, self.payload, self.delivery_id = name, payload, delivery_id
        self.org_id, self.captured_at, self.warnings = org_id, captured_at, warnings

    def common(self, action: str) -> dict[str, Any]:
        return {
            **repository_identity(self.payload, "repository"),
            "org_id": self.org_id,
            "repo": text(self.payload, "repository.full_name"),
            "source_event_type": f"github.{self.name}.{action}",
            "source_event_id": self.delivery_id,
            "captured_at": self.captured_at,
        }


def _workflow_job(event: _Event) -> Translation:
    payload = event.payload
    action = text(payload, "action")
    job = obj(payload, "workflow_job")
    assert job is not None
    status = optional_text(payload, "workflow_job.status")
    conclusion = optional_text(payload, "workflow_job.conclusion")
    if status != "completed":
        return Translation.skip(NOT_TERMINAL)
    id_text(payload, "workflow_job.id")  # the job's own id keys the outcome (sediment.ci.jobs)
    run_id = id_text(payload, "workflow_job.run_id")
    attempt = optional_int(payload, "workflow_job.run_attempt", minimum=1)
    repo = text(payload, "repository.full_name")
    run_url = f"https://{GITHUB_HOST}/{repo}/actions/runs/{run_id}"
    if attempt is not None:
        run_url += f"/attempts/{attempt}"
    fields = {
        **event.common(action),
        "provider": ACTIONS_PROVIDER,
        "run_id": run_id,
        "run_attempt": attempt,
        "commit_sha": sha(text(payload, "workflow_job.head_sha"), "workflow_job.head_sha"),
        "branch": optional_text(payload, "workflow_job.head_branch") or "",
        "result": github_result(status, conclusion),
        "workflow_name": optional_text(payload, "workflow_job.workflow_name") or "",
        "run_url": run_url,
        "provider_result": joined(status, conclusion),
        "raw": json_copy(dict(job)),
    }
    return outcome(fields, _JOB_PATHS, tuple(event.warnings))


_JOB_PATHS: Final = MappingProxyType({
    "run_id": "workflow_job.run_id",
    "run_attempt": "workflow_job.run_attempt",
    "repo": "repository.full_name",
    "branch": "workflow_job.head_branch",
    "workflow_name": "workflow_job.workflow_name",
    "source_event_id": "headers.X-GitHub-Delivery",
})


def actions_run_id(payload: Mapping[str, Any]) -> str | None:
    """The Actions run id after ``/actions/runs/`` in ``check_run.details_url`` (else ``html_url``)."""
    for path in ("check_run.details_url", "check_run.html_url"):
        url = optional_text(payload, path)
        match = _RUN_IN_URL.search(url) if url else None
        if match:
            return match.group(1)
    return None


def _check_run(event: _Event) -> Translation:
    payload = event.payload
    action = text(payload, "action")
    check = obj(payload, "check_run")
    assert check is not None
    status = optional_text(payload, "check_run.status")
    conclusion = optional_text(payload, "check_run.conclusion")
    if status != "completed":
        return Translation.skip(NOT_TERMINAL)
    optional_time(payload, "check_run.completed_at")  # numbers a re-run job's check runs (sediment.ci.jobs)
    id_text(payload, "check_run.id")  # the check's own id keys the outcome (sediment.ci.jobs)
    if optional_text(payload, "check_run.app.slug") == ACTIONS_APP:
        provider = ACTIONS_PROVIDER
        run_id = actions_run_id(payload)
        if run_id is None:
            raise TranslationError("check_run.details_url: an Actions check run names no /actions/runs/<id>")
    else:
        provider = CHECKS_PROVIDER
        run_id = id_text(payload, "check_run.check_suite.id")
    fields = {
        **event.common(action),
        "provider": provider,
        "run_id": run_id,
        "run_attempt": None,
        "commit_sha": sha(text(payload, "check_run.head_sha"), "check_run.head_sha"),
        "branch": optional_text(payload, "check_run.check_suite.head_branch") or "",
        "result": github_result(status, conclusion),
        "workflow_name": optional_text(payload, "check_run.name") or "",
        "run_url": optional_text(payload, "check_run.html_url") or optional_text(payload, "check_run.details_url"),
        "provider_result": joined(status, conclusion),
        "pr_number": pull_request_number(payload, "check_run.pull_requests", event.warnings),
        "raw": json_copy(dict(check)),
    }
    return outcome(fields, _CHECK_RUN_PATHS, tuple(event.warnings))


_CHECK_RUN_PATHS: Final = MappingProxyType({
    "run_id": "check_run.check_suite.id",
    "repo": "repository.full_name",
    "branch": "check_run.check_suite.head_branch",
    "workflow_name": "check_run.name",
    "run_url": "check_run.html_url",
    "source_event_id": "headers.X-GitHub-Delivery",
})


def _check_suite(event: _Event) -> Translation:
    payload = event.payload
    action = text(payload, "action")
    suite = obj(payload, "check_suite")
    assert suite is not None
    if optional_text(payload, "check_suite.app.slug") == ACTIONS_APP:
        return Translation.skip("check_suite_of_actions_run")
    status = optional_text(payload, "check_suite.status")
    conclusion = optional_text(payload, "check_suite.conclusion")
    if status != "completed":
        return Translation.skip(NOT_TERMINAL)
    optional_time(payload, CHECK_SUITE_TIME)  # orders a re-requested suite's final events (sediment.ci.reruns)
    fields = {
        **event.common(action),
        "provider": CHECKS_PROVIDER,
        "run_id": id_text(payload, "check_suite.id"),
        "run_attempt": None,
        "commit_sha": sha(text(payload, "check_suite.head_sha"), "check_suite.head_sha"),
        "branch": optional_text(payload, "check_suite.head_branch") or "",
        "result": github_result(status, conclusion),
        "workflow_name": optional_text(payload, "check_suite.app.name") or "",
        "provider_result": joined(status, conclusion),
        "pr_number": pull_request_number(payload, "check_suite.pull_requests", event.warnings),
        "raw": json_copy(dict(suite)),
    }
    return outcome(fields, _SUITE_PATHS, tuple(event.warnings))


_SUITE_PATHS: Final = MappingProxyType({
    "run_id": "check_suite.id",
    "repo": "repository.full_name",
    "branch": "check_suite.head_branch",
    "workflow_name": "check_suite.app.name",
    "source_event_id": "headers.X-GitHub-Delivery",
})


HANDLERS: Final[Mapping[str, Callable[[_Event], Translation]]] = MappingProxyType({
    "workflow_job": _workflow_job,
    "check_run": _check_run,
    "check_suite": _check_suite,
})


def translate_check_event(name: str, payload: Mapping[str, Any], *, delivery_id: str | None, org_id: str,
                          captured_at: datetime) -> Translation:
    """One ``workflow_job`` / ``check_run`` / ``check_suite`` payload → its CIOutcome or a skip."""
    return HANDLERS[name](_Event(name, payload, delivery_id, org_id, captured_at, []))
