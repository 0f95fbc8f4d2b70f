"""What an OTLP log record keeps of itself in a Fact's ``raw``: the record as sent, without the
client's account attributes and with credentials redacted.

- ``user.email``, ``user.account_id`` and ``user.account_uuid`` (Codex sends the first two on
  every record) are personal account data, not evidence: their attribute entries are left out
  (docs/evidence.md). ``user.id`` stays: it is the Fact's ``user_id``.
- An attribute whose key is a credential name (:data:`~sediment.ingest.redaction.credentials.CREDENTIAL_NAMES`:
  ``authorization``, ``x-api-key``, …) has every string of its value replaced by the redaction
  marker; then the record goes through :func:`~sediment.ingest.redaction.credentials.redact_record` (object
  members named like credentials, credential query parameters and passwords in URLs).

Nothing else changes: key order, value kinds and the exact ``timeUnixNano`` are kept.
"""

from __future__ import annotations

from typing import Any, Final

from sediment.ingest import TranslationError
from sediment.ingest.redaction.content import redact_value
from sediment.ingest.redaction.credentials import is_credential_name, marker, redact_record

ACCOUNT_ATTRIBUTES: Final = frozenset({"user.email", "user.account_id", "user.account_uuid"})
_SECRET_KINDS: Final = frozenset({"stringValue", "bytesValue"})


def _secret(value: Any) -> Any:
    """An AnyValue with every string it holds as a marker."""
    if isinstance(value, dict):
        return {k: (marker(v) if k in _SECRET_KINDS and isinstance(v, str) else
                    v if k == "key" else _secret(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_secret(item) for item in value]
    return value


def _attributes(value: Any) -> Any:
    """``value`` with the values of credential-named attributes (at any depth) redacted: the very
    object when it holds none, else a copy of each container on the way to one."""
    if isinstance(value, list):
        items = [_attributes(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("key"), str) and "value" in value and is_credential_name(value["key"]):
        return {k: (_secret(v) if k == "value" else v) for k, v in value.items()}
    members = {k: _attributes(v) for k, v in value.items()}
    return value if all(members[k] is v for k, v in value.items()) else members


def provenance(record: dict[str, Any]) -> dict[str, Any]:
    """The record as ``raw`` keeps it (see the module docstring)."""
    attributes = record.get("attributes")
    if isinstance(attributes, list):
        kept = [item for item in attributes
                if not (isinstance(item, dict) and item.get("key") in ACCOUNT_ATTRIBUTES)]
        if len(kept) != len(attributes):
            record = {key: (kept if key == "attributes" else value) for key, value in record.items()}
    try:
        redacted: dict[str, Any] = _attributes(record)
        redacted = redact_record(redacted)
        content: dict[str, Any] = redact_value(redacted)  # secrets inside bodies and attribute values
    except RecursionError:
        raise TranslationError("record: nested too deeply") from None
    return content
