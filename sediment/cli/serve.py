"""``sediment serve``: the live receiver on uvicorn (see docs/receiver.md)."""

from __future__ import annotations

import socket

import typer

from sediment.cli import console, settings
from sediment.errors import ConfigurationError

HELP = (
    "Receive webhooks and telemetry live: verified deliveries are spooled durably, acknowledged, then "
    "ingested into the fact store in the background.\n\n"
    "Routes: POST /ingest/github (every GitHub event; X-Hub-Signature-256 against "
    "SEDIMENT_GITHUB_WEBHOOK_SECRET), /ingest/gitlab (X-Gitlab-Token: SEDIMENT_GITLAB_WEBHOOK_TOKEN), "
    "/ingest/circleci (circleci-signature: SEDIMENT_CIRCLECI_WEBHOOK_SECRET) and /ingest/buildkite "
    "(X-Buildkite-Signature or X-Buildkite-Token: SEDIMENT_BUILDKITE_WEBHOOK_TOKEN) when their "
    "translators are installed; with a bearer token of SEDIMENT_INGEST_TOKENS (a JSON object {\"source "
    "name\": \"token\"}): /ingest/gateway (the LiteLLM callback), /ingest/ci (vendor-neutral CI outcomes) "
    "and /v1/logs (OTLP/HTTP JSON logs of agent hooks). GET /healthz reports the spool.\n\n"
    "Listens on 127.0.0.1 unless told otherwise: put a TLS-terminating reverse proxy in front of it for "
    "anything beyond this machine. Stop it with Ctrl-C; deliveries acknowledged but not yet ingested are "
    "ingested at the next start."
)


def serve(
    host: str | None = typer.Option(None, "--host", help="Address to listen on (default: SEDIMENT_RECEIVER_HOST, "
                                    "else 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", min=0, max=65535,
                                    help="Port (default: SEDIMENT_RECEIVER_PORT, else 8000; 0 picks a free one)."),
    max_body_bytes: int | None = typer.Option(None, "--max-body-bytes", min=1, metavar="BYTES",
                                              help="Largest request body accepted; larger ones get 413 (default: "
                                                   "SEDIMENT_RECEIVER_MAX_BODY_BYTES, else 25 MiB)."),
    spool: str | None = typer.Option(None, "--spool", metavar="DIR",
                                     help="Where deliveries are spooled before ingest (default: "
                                          "SEDIMENT_RECEIVER_SPOOL, else $SEDIMENT_HOME/spool)."),
    gitlab_host: str | None = typer.Option(None, "--gitlab-host", metavar="HOST",
                                           help="The GitLab server's host, which keys GitLab repository identity "
                                                "(default: SEDIMENT_GITLAB_HOST, else gitlab.com)."),
    org: str | None = typer.Option(None, "--org", help="Org id every delivery is stored for "
                                   "(default: SEDIMENT_ORG_ID; never taken from a request)."),
) -> None:
    import logging
    import os
    from pathlib import Path

    import uvicorn

    from sediment.cli import collector
    from sediment.home import ensure_home
    from sediment.receiver.app import create_app, route_table
    from sediment.receiver.config import GITLAB_HOST_ENV, from_environment
    from sediment.store import FactStore, database_url

    collector.as_the_interpreter()  # a server running for days collects as the interpreter would
    org_id = settings.org_id(org)
    url = database_url()
    FactStore(url).close()  # a store that cannot be opened is one line now, not a retry loop later
    raw_mirrors = os.environ.get(settings.MIRROR_ENV, "").strip()
    home = ensure_home()
    mirrors = Path(raw_mirrors) if raw_mirrors else home / "mirrors"  # refreshed only while it exists
    environ = dict(os.environ)
    if gitlab_host is not None:
        environ[GITLAB_HOST_ENV] = gitlab_host
    config = from_environment(environ=environ, org_id=org_id, database_url=url, home=home, mirror_path=mirrors,
                              host=host, port=port, max_body_bytes=max_body_bytes,
                              spool=Path(spool) if spool else None)
    settings.content_redaction()
    app = create_app(config)
    paths = sorted({getattr(route, "path", "") for route in route_table(app.state.receiver)})
    for name in ("github", "gitlab", "circleci", "buildkite"):
        if name not in config.secrets and f"/ingest/{name}" in paths:
            console.warning(f"no {name} webhook secret configured: /ingest/{name} refuses every delivery")
    if not config.ingest_tokens:
        console.warning("SEDIMENT_INGEST_TOKENS is empty: /ingest/gateway, /ingest/ci and /v1/logs refuse "
                        "every delivery")
    listener = _listen(config.host, config.port)  # bound before it is announced: --port 0 names the real port
    bound = listener.getsockname()[1]
    shown_host = f"[{config.host}]" if ":" in config.host else config.host
    console.say(f"receiving for org {org_id} on http://{shown_host}:{bound} ({', '.join(paths)}); "
                f"spool {config.spool}")
    logging.getLogger("sediment").setLevel(min(logging.getLogger("sediment").getEffectiveLevel(), logging.INFO))
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=bound, log_level="info",
                                           proxy_headers=True, server_header=False, lifespan="on"))
    with listener:
        server.run(sockets=[listener])


def _listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: a free port the system picks), ready for uvicorn."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        listener = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    listener.set_inheritable(True)
    return listener


serve.__doc__ = HELP
