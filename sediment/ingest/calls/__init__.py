"""One recorded model call → one :class:`~sediment.model.facts.InferenceCall`.

Four wire formats are read (``CALL_FORMATS``), one module each: a LiteLLM
``StandardLoggingPayload`` (``litellm``: one gateway log record per call), and request/response
pairs of the OpenAI Chat Completions (``openai_chat``), OpenAI Responses (``openai_responses``)
and Anthropic Messages (``anthropic``) APIs wrapped in a small envelope::

    {"request": {...}, "response": {...}, "session_id"?, "observed_at"?, "headers"?,
     "duration_ms"?, "user_id"?}

A pair's ``response`` may also be the raw SSE text of a streamed call; each format module
assembles its own stream into the response object the API would have returned.

What the formats share is in ``toolkit`` (the envelope, parts, Sessions, building the Fact),
``fields`` (field access), ``streams`` (Server-Sent Events), ``tool_definitions`` and ``replay``
(the replay memo); the format
modules import from those, and this module only picks the module for a format. Every call's
``raw`` is the record with its credentials redacted (:mod:`sediment.ingest.redaction.credentials`); ids and
parts are read from the record as received.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sediment.ingest import Translation
from sediment.ingest.calls import anthropic, litellm, openai_chat, openai_responses
from sediment.ingest.calls.fields import as_object
from sediment.ingest.calls.replay import ReplayMemo
from sediment.ingest.calls.toolkit import (
    CALL_SKIP_REASONS,
    CALL_WARNINGS,
    CallSkipReason,
    CallWarning,
    PairFormat,
    translate_pair,
)

CallFormat = Literal["litellm", "openai-chat", "openai-responses", "anthropic"]
CALL_FORMATS: tuple[CallFormat, ...] = ("litellm", "openai-chat", "openai-responses", "anthropic")

_PAIR_FORMATS: dict[str, PairFormat] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
}


def translate_call(record: dict[str, Any], *, format: str, org_id: str, captured_at: datetime,
                   memo: ReplayMemo | None = None) -> Translation:
    """Translate one recorded model call in ``format`` (one of ``CALL_FORMATS``).

    Returns one InferenceCall, or a skip (``no_session``: no Session could be read;
    ``error_response``: the call failed and produced no output; ``not_a_model_call``: a
    gateway log of an embedding, image, audio, moderation or rerank call). Malformed input raises
    :class:`~sediment.ingest.TranslationError` naming the field. A :class:`ReplayMemo` shared
    across the calls of a log makes replayed context cost one comparison instead of one
    translation.
    """
    if format not in CALL_FORMATS:
        raise ValueError(f"format: unknown call format {format!r} (expected one of {', '.join(CALL_FORMATS)})")
    record = as_object(record, "record")
    if format == "litellm":
        return litellm.translate(record, org_id=org_id, captured_at=captured_at, memo=memo)
    return translate_pair(record, _PAIR_FORMATS[format], org_id=org_id, captured_at=captured_at, memo=memo)


__all__ = [
    "CALL_FORMATS",
    "CALL_SKIP_REASONS",
    "CALL_WARNINGS",
    "CallFormat",
    "CallSkipReason",
    "CallWarning",
    "ReplayMemo",
    "translate_call",
]
