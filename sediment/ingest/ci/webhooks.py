"""One entry point for a live receiver: ``translate(provider, event_name, body)`` → Facts or a refusal.

A receiver (``sediment serve``) verifies a delivery's signature or token, then hands the event
name from the provider's header and the raw body bytes here. The body is read exactly as
``sediment ingest`` reads a file (duplicate keys, numbers out of range, bad UTF-8 and too-deep
nesting are refused, never coerced) and translated by the same translator the matching
``sediment ingest`` command uses, so a delivery stored live and the same delivery ingested from a
file are the same Fact (one natural key; a redelivery collapses in the store).

Providers (:data:`PROVIDERS`, in the order of the provider table
:data:`sediment.ingest.ci.providers.TABLE`) and the header whose value is ``event_name``:

=============  =========================  =================================================
provider       event header               translator
=============  =========================  =================================================
``github``     ``X-GitHub-Event``         :func:`sediment.ingest.ci.github.translate_github`
``gitlab``     ``X-Gitlab-Event``         :func:`sediment.ingest.ci.gitlab.translate_gitlab`
``circleci``   ``circleci-event-type``    :func:`sediment.ingest.ci.circleci.translate_circleci`
``buildkite``  ``X-Buildkite-Event``      :func:`sediment.ingest.ci.buildkite.translate_buildkite`
``ci``         (none)                     :func:`sediment.ingest.ci.neutral.translate_ci` (vendor-neutral)
``litellm``    (none)                     :func:`sediment.ingest.calls.translate_call`, LiteLLM
=============  =========================  =================================================

``delivery_id`` (GitHub's ``X-GitHub-Delivery``, GitLab's ``X-Gitlab-Event-UUID``) becomes the
Facts' ``source_event_id`` where the translator keeps one. The result is a
:class:`~sediment.ingest.Translation` (its Facts, or ``skipped`` with the reason a delivery was
declined on purpose); a delivery that cannot be read or translated raises
:class:`WebhookRefusal`, whose message is one line naming the field.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from sediment.errors import validation_message
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.providers import PROVIDERS as PROVIDER_TABLE
from sediment.ingest.ci.providers import provider as provider_row
from sediment.ingest.reading.json_text import RecordProblem, read_json


class WebhookRefusal(TranslationError):
    """The delivery was refused: its body is not exact JSON, or a field is missing or wrong."""


PROVIDERS: Final[tuple[str, ...]] = tuple(PROVIDER_TABLE)


def event_header(provider: str) -> str | None:
    """The request header whose value a receiver passes as ``event_name`` (None: no event name)."""
    return PROVIDER_TABLE[provider].event_header


def parse_body(body: bytes) -> dict[str, Any]:
    """The delivery body as one exact JSON object, or a refusal naming what is wrong."""
    try:
        value = read_json(body)
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
    row = provider_row(provider)
    payload = parse_body(body)
    try:
        translator: Callable[..., Translation] = row.load()
        if provider == "ci":
            return translator(payload, org_id=org_id, captured_at=captured_at)
        if provider == "litellm":
            return translator(payload, format="litellm", org_id=org_id, captured_at=captured_at)
        headers: dict[str, str] = {}
        if event_name is not None and event_name.strip() and row.event_header is not None:
            headers[row.event_header] = event_name
        if delivery_id is not None and delivery_id.strip() and row.delivery_header is not None:
            headers[row.delivery_header] = delivery_id
        delivery: dict[str, Any] = {"headers": headers, "payload": payload} if headers else payload
        extra = {"host": gitlab_host} if provider == "gitlab" else {}
        return translator(delivery, event=None, org_id=org_id, captured_at=captured_at, **extra)
    except WebhookRefusal:
        raise
    except TranslationError as exc:
        raise WebhookRefusal(str(exc)) from None
    except ValueError as exc:  # a model's ValidationError names the field
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(record)"
            raise WebhookRefusal(f"{where}: {validation_message(first)}") from None
        raise
