"""Buildkite webhooks (``sediment ingest buildkite``) → CIOutcome: ``build.finished`` (and the
other ``build.*`` events, declined until final).

A delivery is a bare payload ``{event, build, pipeline, sender}`` or ``{"headers": {...},
"payload": {...}}``; the event is the ``X-Buildkite-Event`` header or the body's ``event`` (they
must agree). Mapping (inputs.md §1.4, docs/ci-providers.md): ``run_id`` ``build.id`` (a rebuild
is a new build carrying ``rebuilt_from``, so there is no attempt number: CI resolution judges a
build and its rebuilds as one lineage, ordered by ``build.number``, sediment.ci_reruns), ``repo``
``pipeline.repository`` stripped to ``owner/name``, ``commit_sha`` ``build.commit`` (the literal
``HEAD`` of a build made without a SHA is refused), ``branch`` ``build.branch``,
``workflow_name`` ``pipeline.name`` (else ``pipeline.slug``), ``workflow_id`` ``pipeline.id``,
``run_url`` ``build.web_url``, ``pr_number`` ``build.pull_request.id``, ``provider_result``
``build.state``, and a ``cancel_reason`` in ``reason``. A build with ``blocked: true`` is not
final whatever its state (Buildkite keeps the last state, e.g. ``passed``, on a blocked build).
Buildkite names no forge repository id, so outcomes are legacy (no identity triple).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from sediment.facts import CIResult
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci_runs import NOT_TERMINAL, UNSUPPORTED_EVENT_PREFIX, outcome
from sediment.ingest.facts_jsonl import acting_org, json_copy
from sediment.ingest.payload import (
    header,
    id_text,
    lookup,
    obj,
    optional_bool,
    optional_int,
    optional_text,
    repo_from_url,
    sha,
    text,
    unwrap,
)

PROVIDER: Final = "buildkite"

BUILD_RESULTS: Final[Mapping[str, CIResult]] = MappingProxyType({
    "passed": "passed",
    "failed": "failed",
    "canceled": "cancelled",
    "canceling": "cancelled",
    "skipped": "skipped",
    "not_run": "skipped",
})
"""``build.state`` → ``result``; ``scheduled``, ``running``, ``waiting``, ``waiting_failed``,
``blocked``, ``failing`` (and ``blocked: true`` on any state) are not final and declined."""

BUILD_EVENTS: Final = ("build.scheduled", "build.running", "build.failing", "build.finished", "build.skipped")

_PATHS: Final = MappingProxyType({
    "run_id": "build.id",
    "repo": "pipeline.repository",
    "commit_sha": "build.commit",
    "branch": "build.branch",
    "workflow_name": "pipeline.name",
    "workflow_id": "pipeline.id",
    "run_url": "build.web_url",
    "provider_result": "build.state",
    "reason": "build.cancel_reason",
    "pr_number": "build.pull_request.id",
    "source_event_type": "event",
})


def _pr_number(payload: Mapping[str, Any]) -> int | None:
    value = lookup(payload, "build.pull_request.id")
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and not value.startswith("0"):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise TranslationError(f"build.pull_request.id: expected a pull request number, got {value!r}")


def translate_buildkite(delivery: dict[str, Any], *, event: str | None = None, org_id: str,
                        captured_at: datetime) -> Translation:
    """One Buildkite webhook delivery → its CIOutcome, or the reason it was skipped."""
    payload, headers = unwrap(delivery)
    kind = text(payload, "event")
    named = header(headers, "X-Buildkite-Event") or (event.strip() if event and event.strip() else None)
    if named is not None and named != kind:
        raise TranslationError(f"event: {kind!r} disagrees with the event {named!r} (X-Buildkite-Event)")
    if kind not in BUILD_EVENTS:
        return Translation.skip(f"{UNSUPPORTED_EVENT_PREFIX}{kind}")
    obj(payload, "build")
    state = text(payload, "build.state")
    blocked = optional_bool(payload, "build.blocked") is True
    result = "unknown" if blocked else BUILD_RESULTS.get(state, "unknown")
    if result == "unknown":
        return Translation.skip(NOT_TERMINAL)
    commit = text(payload, "build.commit")
    if commit.strip().upper() == "HEAD":
        raise TranslationError("build.commit: 'HEAD' is not a commit SHA (a build made without one)")
    # a rebuild names the build it rebuilt and comes later in the pipeline's numbering (sediment.ci_reruns)
    optional_int(payload, "build.number")
    if obj(payload, "build.rebuilt_from", required=False) is not None:
        id_text(payload, "build.rebuilt_from.id")
    fields = {
        "org_id": acting_org(org_id),
        "provider": PROVIDER,
        "run_id": id_text(payload, "build.id"),
        "run_attempt": None,
        "repo": repo_from_url(text(payload, "pipeline.repository"), "pipeline.repository"),
        "commit_sha": sha(commit, "build.commit"),
        "branch": optional_text(payload, "build.branch") or "",
        "result": result,
        "workflow_name": optional_text(payload, "pipeline.name") or optional_text(payload, "pipeline.slug") or "",
        "workflow_id": id_text(payload, "pipeline.id", required=False),
        "run_url": optional_text(payload, "build.web_url"),
        "provider_result": state,
        "reason": optional_text(payload, "build.cancel_reason") or None,
        "source_event_type": kind,
        "pr_number": _pr_number(payload),
        "captured_at": captured_at,
        "raw": json_copy(dict(payload)),
    }
    return outcome(fields, _PATHS)
