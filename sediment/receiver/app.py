"""The receiver's ASGI application (Starlette): verify, spool durably, acknowledge, ingest later.

A request is handled in this order, each step refusing on its own:

1. the body size: a ``Content-Length`` above the limit is refused with 413 before a byte is
   read, and a body streamed past the limit is refused as soon as it crosses it (never held);
2. authentication: a bearer route checks ``Authorization`` before reading the body, a forge
   route verifies its signature over the exact bytes received; a failure is 401 and stores
   nothing;
3. the body must be JSON (400 otherwise, nothing stored; a capture source may send an array
   of records or JSON Lines, refused only when no record is JSON) and a forge's delivery must
   name its event;
4. the delivery is written to the spool and ``fsync``'d; only then the answer: 202
   ``{"accepted": true, "duplicate": false, "delivery": KEY}``, or 200 with ``"duplicate":
   true`` for a redelivery (same ``X-GitHub-Delivery`` or sender delivery id, else the same
   body on the same route). ``POST /v1/logs`` answers ``{}`` (OTLP success). A spool the disk
   refuses is 503, so the sender retries.

Translation and storing happen afterwards, in :mod:`sediment.receiver.worker`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sediment import __version__
from sediment.ingest.ci.providers import FORGES as PROVIDER_FORGES
from sediment.ingest.reading.json_text import RecordProblem
from sediment.receiver import auth
from sediment.receiver.config import ReceiverConfig
from sediment.receiver.spool import Spool, body_digest, delivery_key
from sediment.receiver.translators import (
    EVENT_HEADERS,
    FORGES,
    RECORD_ROUTES,
    parse_body,
    parse_records,
    provider_supported,
)
from sediment.receiver.worker import IngestWorker

log = logging.getLogger(__name__)

KEPT_HEADERS: Final = frozenset({
    "content-type", "user-agent", "x-github-hook-id", "x-gitlab-instance",
    *(header.lower() for provider in PROVIDER_FORGES
      for header in (provider.event_header, provider.delivery_header, *provider.redelivery_headers)
      if header is not None),
})
"""Headers kept with a spooled delivery: event names and delivery ids (never a secret or token)."""

DELIVERY_ID_HEADERS: Final = {provider.name: tuple(header.lower() for header in provider.redelivery_headers)
                              for provider in PROVIDER_FORGES if provider.redelivery_headers}
"""Per forge, the headers naming a delivery, which a redelivery repeats (first present wins)."""


class BodyTooLarge(Exception):
    pass


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdecimal() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _unreadable(route: str, body: bytes) -> RecordProblem | None:
    """Why the body cannot be read as its route's JSON, else None (run off the event loop:
    a body of megabytes takes a while to parse)."""
    try:
        if route in RECORD_ROUTES:
            records = parse_records(body)
            if records and all(isinstance(record, RecordProblem) for record in records):
                return records[0]
        else:
            parse_body(body, keep_flaws=route == "otlp")
    except RecordProblem as exc:
        return exc
    return None


@dataclass
class Receiver:
    config: ReceiverConfig
    spool: Spool
    worker: IngestWorker

    # --- accepting ---------------------------------------------------------------------

    async def _accept(self, request: Request, route: str, source: str, body: bytes, identity: str | None,
                      *, ok: Callable[[str, bool], Response] | None = None) -> Response:
        problem = await run_in_threadpool(_unreadable, route, body)
        if problem is not None:
            return _error(400, f"body: {problem}")
        headers = {name: value for name, value in request.headers.items() if name in KEPT_HEADERS}
        key = delivery_key(route, identity or body_digest(body))
        try:
            new = await run_in_threadpool(self.spool.accept, key, route=route, source=source, headers=headers,
                                          received_at=datetime.now(UTC), body=body)
        except OSError as exc:
            log.error("cannot spool a %s delivery: %s", route, exc)
            return _error(503, "the delivery could not be stored durably; retry later")
        if new:
            self.worker.notify()
        if ok is not None:
            return ok(key, new)
        return JSONResponse({"accepted": True, "duplicate": not new, "delivery": key},
                            status_code=202 if new else 200)

    async def _body(self, request: Request) -> bytes | Response:
        try:
            return await _read_body(request, self.config.max_body_bytes)
        except BodyTooLarge:
            return _error(413, f"request body larger than {self.config.max_body_bytes} bytes")

    # --- forge webhooks ----------------------------------------------------------------

    def _verified(self, provider: str, request: Request, body: bytes) -> bool:
        secret = self.config.secrets.get(provider)
        headers = request.headers
        if provider == "github":
            return auth.github_signature(secret, body, headers.get("x-hub-signature-256"))
        if provider == "gitlab":
            return auth.gitlab_token(secret, headers.get("x-gitlab-token"))
        if provider == "circleci":
            return auth.circleci_signature(secret, body, headers.get("circleci-signature"))
        return auth.buildkite_signature(secret, body, headers.get("x-buildkite-signature"),
                                        headers.get("x-buildkite-token"))

    def forge(self, provider: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            body = await self._body(request)
            if isinstance(body, Response):
                return body
            if not self._verified(provider, request, body):
                return _error(401, f"{provider} webhook signature missing or invalid")
            event = request.headers.get(EVENT_HEADERS[provider], "").strip()
            if not event:
                return _error(400, f"header {EVENT_HEADERS[provider]}: missing")
            identity = next((f"{name}:{request.headers[name].strip()}" for name in DELIVERY_ID_HEADERS.get(provider, ())
                             if request.headers.get(name, "").strip()), None)
            return await self._accept(request, provider, provider, body, identity)

        return endpoint

    # --- capture sources ---------------------------------------------------------------

    def captured(self, route: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            source = auth.bearer_source(self.config.ingest_tokens, request.headers.get("authorization"))
            if source is None:
                return _error(401, "bearer token missing or not one of the configured capture sources")
            if route == "otlp" and not _json_content(request.headers.get("content-type")):
                return _error(415, "OTLP/HTTP logs must be sent as JSON (Content-Type: application/json); "
                                   "set the exporter's protocol to http/json")
            body = await self._body(request)
            if isinstance(body, Response):
                return body
            ok = (lambda _key, _new: JSONResponse({})) if route == "otlp" else None
            return await self._accept(request, route, source, body, None, ok=ok)

        return endpoint

    # --- health ------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        stats = self.worker.stats
        counts = await run_in_threadpool(self.spool.counts)
        alive = self.worker.alive
        return JSONResponse({
            "status": "ok" if alive else "ingest worker stopped", "version": __version__, "spool": counts,
            "ingested": {"processed": stats.processed, "refused": stats.refused,
                         "stored": dict(sorted(stats.stored.items())),
                         "duplicates": dict(sorted(stats.duplicates.items())),
                         "store_errors": stats.store_errors, "mirror_refreshes": stats.mirror_refreshes,
                         "last_error": stats.last_error},
        }, status_code=200 if alive else 503)


def _json_content(content_type: str | None) -> bool:
    if content_type is None:
        return True
    return content_type.split(";")[0].strip().lower() in {"application/json", ""}


GITHUB_PATHS: Final = ("/ingest/github", "/ingest/github/push", "/ingest/github/ci", "/ingest/github/pull-request",
                       "/ingest/github/repository")
"""One endpoint for every GitHub event (the event header decides), under the per-event paths too."""


def route_table(receiver: Receiver) -> list[Route]:
    routes = [Route("/healthz", receiver.health, methods=["GET"]), Route("/health", receiver.health, methods=["GET"])]
    routes += [Route(path, receiver.forge("github"), methods=["POST"]) for path in GITHUB_PATHS]
    routes += [Route(f"/ingest/{provider}", receiver.forge(provider), methods=["POST"])
               for provider in FORGES if provider != "github" and provider_supported(provider)]
    routes += [Route("/ingest/gateway", receiver.captured("gateway"), methods=["POST"]),
               Route("/ingest/ci", receiver.captured("ci"), methods=["POST"]),
               Route("/v1/logs", receiver.captured("otlp"), methods=["POST"])]
    return routes


def create_app(config: ReceiverConfig) -> Starlette:
    """The receiver for ``config``; its worker starts (and drains what is pending) with the app."""
    spool = Spool(config.spool)
    worker = IngestWorker(spool, org_id=config.org_id, database_url=config.database_url,
                          mirror_path=config.mirror_path, gitlab_host=config.gitlab_host)
    receiver = Receiver(config, spool, worker)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        worker.start()
        try:
            yield
        finally:
            worker.stop()

    app = Starlette(routes=route_table(receiver), lifespan=lifespan)
    app.state.receiver = receiver
    return app
