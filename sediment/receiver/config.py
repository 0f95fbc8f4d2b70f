"""The receiver's configuration: where it listens, what it accepts, whom it trusts.

Everything comes from the environment (the ``sediment serve`` flags override host, port, body
limit and spool); the org is the deployment's, never taken from a request.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from sediment.errors import ConfigurationError

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
DEFAULT_MAX_BODY_BYTES: Final = 25 * 1024 * 1024

HOST_ENV: Final = "SEDIMENT_RECEIVER_HOST"
PORT_ENV: Final = "SEDIMENT_RECEIVER_PORT"
MAX_BODY_ENV: Final = "SEDIMENT_RECEIVER_MAX_BODY_BYTES"
SPOOL_ENV: Final = "SEDIMENT_RECEIVER_SPOOL"
GITHUB_SECRET_ENV: Final = "SEDIMENT_GITHUB_WEBHOOK_SECRET"
GITLAB_TOKEN_ENV: Final = "SEDIMENT_GITLAB_WEBHOOK_TOKEN"
CIRCLECI_SECRET_ENV: Final = "SEDIMENT_CIRCLECI_WEBHOOK_SECRET"
BUILDKITE_TOKEN_ENV: Final = "SEDIMENT_BUILDKITE_WEBHOOK_TOKEN"
INGEST_TOKENS_ENV: Final = "SEDIMENT_INGEST_TOKENS"
GITLAB_HOST_ENV: Final = "SEDIMENT_GITLAB_HOST"
DEFAULT_GITLAB_HOST: Final = "gitlab.com"


@dataclass(frozen=True)
class ReceiverConfig:
    org_id: str
    database_url: str
    spool: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: forge webhook secrets by provider (``github``, ``gitlab``, ``circleci``, ``buildkite``)
    secrets: Mapping[str, str] = field(default_factory=dict)
    #: bearer tokens by capture-source name (LiteLLM callback, vendor-neutral CI, OTLP logs)
    ingest_tokens: Mapping[str, str] = field(default_factory=dict)
    #: root of the bare mirrors refreshed after a push (None: no refresh)
    mirror_path: Path | None = None
    #: the GitLab server's host (trusted configuration; it keys GitLab repository identity)
    gitlab_host: str = DEFAULT_GITLAB_HOST


def _positive(name: str, value: str) -> int:
    if not value.isdecimal() or int(value) <= 0:
        raise ConfigurationError(f"{name} must be a positive integer: {value!r}")
    return int(value)


def port_number(name: str, value: str) -> int:
    port = int(value) if value.isdecimal() else -1
    if not 0 <= port <= 65535:
        raise ConfigurationError(f"{name} must be a port number (0-65535): {value!r}")
    return port


def gitlab_host(value: str) -> str:
    from sediment.model.facts import check_identity_triple

    try:
        check_identity_triple("gitlab", value, "1")
    except ValueError:
        raise ConfigurationError(f"{GITLAB_HOST_ENV} must be a lowercase DNS host (gitlab.example.com): "
                                 f"{value!r}") from None
    return value


def ingest_tokens(raw: str) -> dict[str, str]:
    """``SEDIMENT_INGEST_TOKENS``: a JSON object mapping capture-source names to bearer tokens."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise ConfigurationError(f"{INGEST_TOKENS_ENV} must be a JSON object of source name to token") from None
    if not isinstance(value, dict):
        raise ConfigurationError(f"{INGEST_TOKENS_ENV} must be a JSON object of source name to token")
    tokens: dict[str, str] = {}
    seen: dict[str, str] = {}
    for source, token in value.items():
        if not isinstance(token, str) or len(token.strip()) < 16:
            raise ConfigurationError(f"{INGEST_TOKENS_ENV}: the token of {source!r} must be a string of at least "
                                     "16 characters")
        if not source.strip() or not source.isprintable():
            raise ConfigurationError(f"{INGEST_TOKENS_ENV}: a source name must be printable and not empty: "
                                     f"{source!r}")
        if token.strip() in seen:
            raise ConfigurationError(f"{INGEST_TOKENS_ENV}: {seen[token.strip()]!r} and {source!r} share a token")
        seen[token.strip()] = source
        tokens[source] = token.strip()
    return tokens


def from_environment(*, org_id: str, database_url: str, home: Path, mirror_path: Path | None,
                     environ: Mapping[str, str] | None = None, host: str | None = None, port: int | None = None,
                     max_body_bytes: int | None = None, spool: Path | None = None) -> ReceiverConfig:
    env = os.environ if environ is None else environ

    def text(name: str) -> str:
        return env.get(name, "").strip()

    secrets = {provider: text(name) for provider, name in (
        ("github", GITHUB_SECRET_ENV), ("gitlab", GITLAB_TOKEN_ENV), ("circleci", CIRCLECI_SECRET_ENV),
        ("buildkite", BUILDKITE_TOKEN_ENV)) if text(name)}
    return ReceiverConfig(
        org_id=org_id,
        database_url=database_url,
        spool=spool or (Path(text(SPOOL_ENV)) if text(SPOOL_ENV) else home / "spool"),
        host=host or text(HOST_ENV) or DEFAULT_HOST,
        port=port if port is not None else (port_number(PORT_ENV, text(PORT_ENV)) if text(PORT_ENV)
                                            else DEFAULT_PORT),
        max_body_bytes=max_body_bytes or (_positive(MAX_BODY_ENV, text(MAX_BODY_ENV)) if text(MAX_BODY_ENV)
                                          else DEFAULT_MAX_BODY_BYTES),
        secrets=secrets,
        ingest_tokens=ingest_tokens(env.get(INGEST_TOKENS_ENV, "")),
        mirror_path=mirror_path,
        gitlab_host=gitlab_host(text(GITLAB_HOST_ENV) or DEFAULT_GITLAB_HOST),
    )
