"""One entry point for a live receiver: ``translate(provider, event_name, body)`` → Facts or a refusal.

A receiver (``sediment serve``) verifies a delivery's signature or token, then hands the event
name from the provider's header and the raw body bytes here. The body is read exactly as
``sediment ingest`` reads a file (duplicate keys, numbers out of range, bad UTF-8 and too-deep
nesting are refused, never coerced) and translated by the same translator the matching
``sediment ingest`` command uses, so a delivery stored live and the same delivery ingested from a
file are the same Fact (one natural key; a redelivery collapses in the store).

Providers (:data:`PROVIDERS`) and the header whose value is ``event_name``:

=============  =========================  =============================================
provider       event header               translator
=============  =========================  =============================================
``github``     ``X-GitHub-Event``         :func:`sediment.ingest.ci.github.translate_github`
``gitlab``     ``X-Gitlab-Event``         :func:`sediment.ingest.ci.gitlab.translate_gitlab`
``circleci``   ``circleci-event-type``    :func:`sediment.ingest.ci.circleci.translate_circleci`
``buildkite``  ``X-Buildkite-Event``      :func:`sediment.ingest.ci.buildkite.translate_buildkite`
``ci``         (none)                     :func:`sediment.ingest.ci.neutral.translate_ci` (vendor-neutral)
``litellm``    (none)                     :func:`sediment.ingest.calls.translate_call`, LiteLLM
=============  =========================  =============================================

``delivery_id`` (GitHub's ``X-GitHub-Delivery``, GitLab's ``X-Gitlab-Event-UUID``) becomes the
Facts' ``source_event_id`` where the translator keeps one. The result is a
:class:`~sediment.ingest.Translation` (its Facts, or ``skipped`` with the reason a delivery was
declined on purpose); a delivery that cannot be read or translated raises
:class:`WebhookRefusal`, whose message is one line naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from sediment.ingest import Translation, TranslationError
from sediment.ingest.reading.json_text import JsonReader, RecordProblem


class WebhookRefusal(TranslationError):
    """The delivery was refused: its body is not exact JSON, or a field is missing or wrong."""


_EVENT_HEADERS: Final[Mapping[str, str | None]] = MappingProxyType({
    "github": "X-GitHub-Event",
    "gitlab": "X-Gitlab-Event",
    "circleci": "circleci-event-type",
    "buildkite": "X-Buildkite-Event",
    "ci": None,
    "litellm": None,
})
_DELIVERY_HEADERS: Final[Mapping[str, str]] = MappingProxyType({
    "github": "X-GitHub-Delivery",
    "gitlab": "X-Gitlab-Event-UUID",
})

PROVIDERS: Final[tuple[str, ...]] = tuple(_EVENT_HEADERS)


def event_header(provider: str) -> str | None:
    """The request header whose value a receiver passes as ``event_name`` (None: no event name)."""
    return _EVENT_HEADERS[provider]


def _translator(provider: str) -> Callable[..., Translation]:
    if provider == "github":
        from sediment.ingest.ci.github import translate_github
        return translate_github
    if provider == "gitlab":
        from sediment.ingest.ci.gitlab import translate_gitlab
        return translate_gitlab
    if provider == "circleci":
        from sediment.ingest.ci.circleci import translate_circleci
        return translate_circleci
    if provider == "buildkite":
        from sediment.ingest.ci.buildkite import translate_buildkite
        return translate_buildkite
    raise AssertionError(provider)


def parse_body(body: bytes) -> dict[str, Any]:
    """The delivery body as one exact JSON object, or a refusal naming what is wrong."""
    try:
        value = JsonReader().parse(body)
    except RecordProblem as exc:
        raise WebhookRefusal(f"body: {exc}") from None
    if not isinstance(value, dict):
        raise WebhookRefusal(f"body: expected a JSON object, got {type(value).__name__}")
    return value


def translate(provider: str, event_name: str | None, body: bytes, *, org_id: str, captured_at: datetime,
              delivery_id: str | None = None, gitlab_host: str = "gitlab.com") -> Translation:
    """Translate one verified delivery of ``provider`` (see the module) into its Facts or a skip.

    ``gitlab_host`` is the receiver's configured GitLab host (it keys GitLab repository identity).

    Raises :class:`WebhookRefusal` (one line, naming the field) when it cannot be stored, and
    ``ValueError`` for a provider outside :data:`PROVIDERS` (a receiver's bug, not the sender's).
    """
    if provider not in _EVENT_HEADERS:
        raise ValueError(f"unknown webhook provider {provider!r}; known: {', '.join(PROVIDERS)}")
    payload = parse_body(body)
    try:
        if provider == "ci":
            from sediment.ingest.ci.neutral import translate_ci
            return translate_ci(payload, org_id=org_id, captured_at=captured_at)
        if provider == "litellm":
            from sediment.ingest.calls import translate_call
            return translate_call(payload, format="litellm", org_id=org_id, captured_at=captured_at)
        headers: dict[str, str] = {}
        header = _EVENT_HEADERS[provider]
        if event_name is not None and event_name.strip() and header is not None:
            headers[header] = event_name
        if delivery_id is not None and delivery_id.strip() and provider in _DELIVERY_HEADERS:
            headers[_DELIVERY_HEADERS[provider]] = delivery_id
        delivery: dict[str, Any] = {"headers": headers, "payload": payload} if headers else payload
        extra = {"host": gitlab_host} if provider == "gitlab" else {}
        return _translator(provider)(delivery, event=None, org_id=org_id, captured_at=captured_at, **extra)
    except WebhookRefusal:
        raise
    except TranslationError as exc:
        raise WebhookRefusal(str(exc)) from None
    except ValueError as exc:  # a model's ValidationError names the field
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(record)"
            raise WebhookRefusal(f"{where}: {first['msg']}") from None
        raise
