"""Deterministic Fact ids derived from natural keys, so re-ingesting stores nothing new."""

from __future__ import annotations

from collections.abc import Callable

from sediment.records import canonical_digest


def fact_id(prefix: str, *key: str | int | None) -> str:
    """``<prefix>_<32 hex>``: the canonical digest of the natural key (a JSON list of scalars)."""
    return f"{prefix}_{canonical_digest(list(key))[:32]}"


def inference_call_id(org_id: str, session_id: str, gateway_provider: str | None, model_call_id: str | None,
                      content_digest: Callable[[], str]) -> str:
    """The id of an inference call: every translator (``build_call``, ``natural_id``) derives it here.

    A provider's response id is unique only within a Session (test servers and local models
    reuse ``chatcmpl-1`` in every Session), so a call that has one is identified by
    ``(org, gateway, session, model_call_id)``, the natural key the store dedups it on. A call
    without one is identified by its Session and ``content_digest()`` (called only then): the
    digest of what was recorded.
    """
    if model_call_id is not None:
        return fact_id("call", org_id, gateway_provider, session_id, model_call_id)
    return fact_id("call", org_id, session_id, content_digest())
