"""Who may deliver: forge webhook signatures and capture-source bearer tokens.

Every comparison is constant-time (:func:`hmac.compare_digest`) over the exact bytes received,
and nothing about a delivery is examined before it is verified. A route whose secret is not
configured verifies nothing and refuses every delivery.

- GitHub: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body under the secret>``.
- GitLab: ``X-Gitlab-Token`` is the configured secret token itself.
- CircleCI: ``circleci-signature: v1=<hex HMAC-SHA256 of the body>`` (a comma-separated list
  of versioned signatures; one matching ``v1`` entry suffices).
- Buildkite: ``X-Buildkite-Signature: timestamp=<unix seconds>,signature=<hex HMAC-SHA256 of
  "<timestamp>.<body>">`` (timestamp within :data:`BUILDKITE_TOLERANCE_SECONDS` of now), or
  the plain ``X-Buildkite-Token`` equal to the configured token.
- Capture sources (LiteLLM callback, vendor-neutral CI, OTLP logs): ``Authorization: Bearer
  <token>``, one token per named capture source; the source's name is recorded with the delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Mapping
from typing import Final

BUILDKITE_TOLERANCE_SECONDS: Final = 300
_BUILDKITE_SIGNATURE: Final = re.compile(r"timestamp=([0-9]{1,12}),signature=([0-9a-fA-F]{64})")


def _hmac_hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def _equal(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


def github_signature(secret: str | None, body: bytes, header: str | None) -> bool:
    if not secret or header is None:
        return False
    return _equal(header.strip(), "sha256=" + _hmac_hex(secret, body))


def gitlab_token(secret: str | None, header: str | None) -> bool:
    return bool(secret) and header is not None and _equal(header, secret or "")


def circleci_signature(secret: str | None, body: bytes, header: str | None) -> bool:
    if not secret or header is None:
        return False
    expected = _hmac_hex(secret, body)
    matched = False
    for part in header.split(","):
        version, _, value = part.strip().partition("=")
        if version == "v1":
            matched |= _equal(value.lower(), expected)
    return matched


def buildkite_signature(secret: str | None, body: bytes, signature: str | None, token: str | None,
                        now: float | None = None) -> bool:
    if not secret:
        return False
    if signature is not None:
        match = _BUILDKITE_SIGNATURE.fullmatch(signature.strip())
        if match is None:
            return False
        stamp, value = match.groups()
        if abs((time.time() if now is None else now) - int(stamp)) > BUILDKITE_TOLERANCE_SECONDS:
            return False
        return _equal(value.lower(), _hmac_hex(secret, stamp.encode("ascii") + b"." + body))
    return token is not None and _equal(token, secret)


def bearer_source(tokens: Mapping[str, str], authorization: str | None) -> str | None:
    """The capture source whose token the ``Authorization: Bearer`` header carries, else None.
    Every configured token is compared, so the time taken does not tell which one was close."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    found = None
    for source, expected in sorted(tokens.items()):
        if _equal(token.strip(), expected) and found is None:
            found = source
    return found
