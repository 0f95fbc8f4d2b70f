"""What each receiver route's deliveries become: the same translators ``sediment ingest`` uses.

A route names its translator by a :class:`Kind`; the worker hands it the spooled delivery
(headers as received, the body parsed exactly as ``sediment ingest`` reads files) and the
acting org and receive time, so a delivery processed again after a restart yields the same
Facts. The forge webhooks of GitLab, CircleCI and Buildkite go through the provider translator
registry (:mod:`sediment.ingest.webhooks`, ``translate(provider, event_name, body)``): their
routes exist only when that registry knows the provider.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from sediment.ingest import Translation, TranslationError
from sediment.ingest.json_text import JsonReader, RecordProblem
from sediment.receiver.spool import Delivery

Translate = Callable[[Delivery, Any, str, datetime], list[Translation]]
"""``(delivery, parsed body, org id, received at)`` → the Translations of its records."""

WEBHOOK_PROVIDERS: Final = ("gitlab", "circleci", "buildkite")
"""Forges whose webhooks the provider registry translates; each route lights up when it does."""

EVENT_HEADERS: Final = {
    "github": "x-github-event",
    "gitlab": "x-gitlab-event",
    "circleci": "circleci-event-type",
    "buildkite": "x-buildkite-event",
}


def parse_body(body: bytes, *, keep_flaws: bool = False) -> Any:
    """The body read exactly (duplicate keys, overflowing numbers and bad UTF-8 refused, as
    ``sediment ingest`` refuses them); a RecordProblem names what is wrong."""
    return JsonReader(keep_flaws=keep_flaws).parse(body)


def _github(delivery: Delivery, body: Any, org_id: str, received_at: datetime) -> list[Translation]:
    from sediment.ingest.github import translate_github

    headers = {"X-GitHub-Event": delivery.header("x-github-event") or ""}
    delivered = delivery.header("x-github-delivery")
    if delivered:
        headers["X-GitHub-Delivery"] = delivered
    return [translate_github({"headers": headers, "payload": body}, event=None, org_id=org_id,
                             captured_at=received_at)]


def _records(body: Any) -> list[dict[str, Any]]:
    items = body if isinstance(body, list) else [body]
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            where = f"[{index}]" if isinstance(body, list) else "body"
            raise TranslationError(f"{where}: a record must be a JSON object, not {type(item).__name__}")
    return items


def _ci(delivery: Delivery, body: Any, org_id: str, received_at: datetime) -> list[Translation]:
    from sediment.ingest.ci import translate_ci

    return [translate_ci(record, org_id=org_id, captured_at=received_at) for record in _records(body)]


def _gateway(delivery: Delivery, body: Any, org_id: str, received_at: datetime) -> list[Translation]:
    from sediment.ingest.calls import translate_call

    return [translate_call(record, format="litellm", org_id=org_id, captured_at=received_at)
            for record in _records(body)]


def _otlp(delivery: Delivery, body: Any, org_id: str, received_at: datetime) -> list[Translation]:
    from sediment.ingest.otlp import translate_otlp

    if not isinstance(body, dict):
        raise TranslationError(f"body: an OTLP logs export must be a JSON object, not {type(body).__name__}")
    return [translate_otlp(body, org_id=org_id, captured_at=received_at)]


def provider_registry() -> Any | None:
    """The provider translator registry, when this installation has it."""
    try:
        return importlib.import_module("sediment.ingest.webhooks")
    except ModuleNotFoundError as exc:
        if exc.name != "sediment.ingest.webhooks":
            raise
        return None


def provider_supported(provider: str) -> bool:
    registry = provider_registry()
    if registry is None:
        return False
    providers = getattr(registry, "PROVIDERS", None)
    return providers is not None and provider in providers


def _provider(provider: str) -> Translate:
    def translate(delivery: Delivery, body: Any, org_id: str, received_at: datetime) -> list[Translation]:
        registry = provider_registry()
        if registry is None:
            raise TranslationError(f"no translator for {provider} webhooks is installed")
        event = delivery.header(EVENT_HEADERS[provider]) or ""
        result = registry.translate(provider, event, body, org_id=org_id, captured_at=received_at)
        return list(result) if isinstance(result, list | tuple) else [result]

    return translate


TRANSLATORS: Final[dict[str, Translate]] = {
    "github": _github,
    "ci": _ci,
    "gateway": _gateway,
    "otlp": _otlp,
    **{provider: _provider(provider) for provider in WEBHOOK_PROVIDERS},
}
"""Route name → translator."""


def translate_delivery(delivery: Delivery, org_id: str) -> list[Translation]:
    """The Translations of one spooled delivery; TranslationError when it is refused whole."""
    try:
        body = parse_body(delivery.body, keep_flaws=delivery.route == "otlp")
    except RecordProblem as exc:
        raise TranslationError(f"body: {exc}") from None
    return TRANSLATORS[delivery.route](delivery, body, org_id, delivery.received_at)
