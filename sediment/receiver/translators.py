"""What each receiver route's deliveries become: the same translators ``sediment ingest`` uses.

Each route names its translator in :data:`TRANSLATORS`; the worker hands it the spooled delivery
(headers as received, the body parsed exactly as ``sediment ingest`` reads files) and the
acting org and receive time, so a delivery processed again after a restart yields the same
Facts. Forge webhooks (GitHub, GitLab, CircleCI, Buildkite) go through the provider translator
registry (:mod:`sediment.ingest.ci.webhooks`, ``translate(provider, event_name, body)``) by the
provider's name, with the event header's value and the delivery id; which forges there are and
their headers come from the provider table (:mod:`sediment.ingest.ci.providers`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.providers import FORGES as PROVIDER_FORGES
from sediment.ingest.reading.files import describe_refusal
from sediment.ingest.reading.json_text import JsonReader, RecordProblem
from sediment.receiver.spool import Delivery


@dataclass(frozen=True)
class Acting:
    """The trusted configuration a delivery is translated under (never taken from a request)."""

    org_id: str
    gitlab_host: str = "gitlab.com"


Translate = Callable[[Delivery, Any, Acting, datetime], list[Translation]]
"""``(delivery, parsed body (OTLP only, else None), acting configuration, received at)`` → the
Translations of its records."""

FORGES: Final = tuple(provider.name for provider in PROVIDER_FORGES)
"""Forges and CI services whose signed webhooks the provider translator registry translates
(:mod:`sediment.ingest.ci.webhooks`); a route exists for each, from the provider table
(:mod:`sediment.ingest.ci.providers`)."""

EVENT_HEADERS: Final = {provider.name: provider.event_header.lower() for provider in PROVIDER_FORGES
                        if provider.event_header is not None}
"""Per forge, the header naming the event (lower-cased: the receiver reads headers so)."""


def parse_body(body: bytes, *, keep_flaws: bool = False) -> Any:
    """The body read exactly (duplicate keys, overflowing numbers and bad UTF-8 refused, as
    ``sediment ingest`` refuses them); a RecordProblem names what is wrong."""
    return JsonReader(keep_flaws=keep_flaws).parse(body)


def parse_records(body: bytes) -> list[Any | RecordProblem]:
    """A capture source's body as records: one JSON value (an array holds records), or JSON
    Lines (LiteLLM's ``ndjson`` log format). A line that is not JSON is its own problem."""
    try:
        value = parse_body(body)
    except RecordProblem as exc:
        if not exc.syntax or b"\n" not in body.strip():
            raise
        records: list[Any | RecordProblem] = []
        for line in body.splitlines():
            if line.strip():
                try:
                    records.append(parse_body(line))
                except RecordProblem as problem:
                    records.append(problem)
        return records
    return value if isinstance(value, list) else [value]


def _each(body: bytes, translate: Callable[[dict[str, Any]], Translation]) -> list[Translation]:
    """One Translation per record; a bad record is a problem of its own (``[INDEX]: field:
    message``), never the loss of the records around it."""
    from pydantic import ValidationError

    translations = []
    for index, record in enumerate(parse_records(body)):
        try:
            if isinstance(record, RecordProblem):
                raise record
            if not isinstance(record, dict):
                raise TranslationError(f"a record must be a JSON object, not {type(record).__name__}")
            translations.append(translate(record))
        except (TranslationError, ValidationError) as exc:
            translations.append(Translation(problems=(f"[{index}]: {describe_refusal(exc)}",)))
    return translations


def _ci(delivery: Delivery, body: Any, acting: Acting, received_at: datetime) -> list[Translation]:
    from sediment.ingest.ci.neutral import translate_ci

    return _each(delivery.body, lambda record: translate_ci(record, org_id=acting.org_id, captured_at=received_at))


def _gateway(delivery: Delivery, body: Any, acting: Acting, received_at: datetime) -> list[Translation]:
    from sediment.ingest.calls import translate_call

    return _each(delivery.body, lambda record: translate_call(record, format="litellm", org_id=acting.org_id,
                                                                 captured_at=received_at))


def _otlp(delivery: Delivery, body: Any, acting: Acting, received_at: datetime) -> list[Translation]:
    from sediment.ingest.otlp import translate_otlp

    if not isinstance(body, dict):
        raise TranslationError(f"body: an OTLP logs export must be a JSON object, not {type(body).__name__}")
    return [translate_otlp(body, org_id=acting.org_id, captured_at=received_at)]


DELIVERY_ID_HEADERS: Final = {provider.name: provider.delivery_header.lower() for provider in PROVIDER_FORGES
                              if provider.delivery_header is not None}
"""The header a forge names its delivery by, kept as the Facts' ``source_event_id``."""


def provider_supported(provider: str) -> bool:
    """Whether the provider translator registry knows ``provider``'s webhooks."""
    from sediment.ingest.ci import webhooks

    return provider in webhooks.PROVIDERS and webhooks.event_header(provider) is not None


def _forge(provider: str) -> Translate:
    def translate(delivery: Delivery, body: Any, acting: Acting, received_at: datetime) -> list[Translation]:
        from sediment.ingest.ci import webhooks

        header = DELIVERY_ID_HEADERS.get(provider)
        return [webhooks.translate(provider, delivery.header(EVENT_HEADERS[provider]), delivery.body,
                                   org_id=acting.org_id, captured_at=received_at,
                                   delivery_id=delivery.header(header) if header is not None else None,
                                   gitlab_host=acting.gitlab_host)]

    return translate


TRANSLATORS: Final[dict[str, Translate]] = {
    "ci": _ci,
    "gateway": _gateway,
    "otlp": _otlp,
    **{provider: _forge(provider) for provider in FORGES},
}
"""Route name → translator."""


RECORD_ROUTES: Final = frozenset({"ci", "gateway"})
"""Routes whose body is records (one, an array of them, or JSON Lines), each translated on its own."""


def translate_delivery(delivery: Delivery, acting: Acting) -> list[Translation]:
    """The Translations of one spooled delivery; TranslationError when it is refused whole."""
    try:  # forge bodies are read by the registry, record bodies record by record
        body = parse_body(delivery.body, keep_flaws=True) if delivery.route == "otlp" else None
    except RecordProblem as exc:
        raise TranslationError(f"body: {exc}") from None
    try:
        return TRANSLATORS[delivery.route](delivery, body, acting, delivery.received_at)
    except RecordProblem as exc:
        raise TranslationError(f"body: {exc}") from None
