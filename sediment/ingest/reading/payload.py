"""Reading a vendor webhook payload by dotted path, strictly: a value is the type the field has
or the record is refused with a :class:`~sediment.ingest.TranslationError` naming the path.

Shared by the CI provider translators (:mod:`sediment.ingest.ci.gitlab`,
:mod:`sediment.ingest.ci.circleci`, :mod:`sediment.ingest.ci.buildkite`,
:mod:`sediment.ingest.ci.github_checks`); nothing here coerces (a number is never read from a
string, a string never from a number, except where a provider documents an id as either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from sediment.identifiers import CommitSha, TimestampError
from sediment.ingest import TranslationError
from sediment.ingest.facts_jsonl import describe_validation_error
from sediment.model.ci_keys import provider_time

_SHA: Final = TypeAdapter(CommitSha)


def lookup(payload: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path``, or None when any step is absent or null."""
    value: Any = payload
    for step in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def obj(payload: Mapping[str, Any], path: str, *, required: bool = True) -> Mapping[str, Any] | None:
    value = lookup(payload, path)
    if value is None:
        if required:
            raise TranslationError(f"{path}: missing")
        return None
    if not isinstance(value, Mapping):
        raise TranslationError(f"{path}: expected an object, got {type(value).__name__}")
    return value


def optional_text(payload: Mapping[str, Any], path: str) -> str | None:
    value = lookup(payload, path)
    if value is not None and not isinstance(value, str):
        raise TranslationError(f"{path}: expected a string, got {type(value).__name__}")
    return value


def text(payload: Mapping[str, Any], path: str) -> str:
    value = optional_text(payload, path)
    if value is None or not value.strip():
        raise TranslationError(f"{path}: missing")
    return value


def optional_bool(payload: Mapping[str, Any], path: str) -> bool | None:
    value = lookup(payload, path)
    if value is not None and not isinstance(value, bool):
        raise TranslationError(f"{path}: expected true or false, got {value!r}")
    return value


def optional_int(payload: Mapping[str, Any], path: str, *, minimum: int = 0) -> int | None:
    value = lookup(payload, path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TranslationError(f"{path}: expected an integer of at least {minimum}, got {value!r}")
    return value


def optional_time(payload: Mapping[str, Any], path: str) -> str | None:
    """A provider timestamp at ``path`` (:func:`sediment.model.ci_keys.provider_time` reads it: RFC 3339
    or GitLab's forms), checked and returned as the text it is; a time that cannot be read is
    refused, because it orders a run's re-runs."""
    value = optional_text(payload, path)
    if value is None:
        return None
    try:
        provider_time(value)
    except TimestampError as exc:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise TranslationError(f"{path}: {exc}, got {shown!r}") from None
    return value


def id_text(payload: Mapping[str, Any], path: str, *, required: bool = True) -> str | None:
    """A provider id given as a number or a non-empty string, as text."""
    value = lookup(payload, path)
    if value is None:
        if required:
            raise TranslationError(f"{path}: missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int | str) or (isinstance(value, str) and not value.strip()):
        raise TranslationError(f"{path}: expected a number or a non-empty string, got {value!r}")
    return str(value)


def sha(value: str, path: str) -> str:
    try:
        return _SHA.validate_python(value)
    except ValidationError as exc:
        raise TranslationError(f"{path}: {describe_validation_error(exc)}") from exc


def header(headers: Mapping[Any, Any], name: str) -> str | None:
    """A header by case-insensitive name; repeated spellings must agree."""
    found: str | None = None
    for key, value in headers.items():
        if not isinstance(key, str) or key.lower() != name.lower():
            continue
        if not isinstance(value, str):
            raise TranslationError(f"headers.{key}: expected a string, got {type(value).__name__}")
        if found is not None and value.strip() != found:
            raise TranslationError(f"headers.{name}: given twice with different values")
        found = value.strip()
    return found or None


def unwrap(delivery: Any) -> tuple[Mapping[str, Any], Mapping[Any, Any]]:
    """``(payload, headers)`` of a bare payload (no headers) or a ``{"headers", "payload"}`` envelope."""
    if not isinstance(delivery, Mapping):
        raise TranslationError(f"delivery: expected a JSON object, got {type(delivery).__name__}")
    if "headers" in delivery and "payload" in delivery:
        headers = delivery["headers"]
        if not isinstance(headers, Mapping):
            raise TranslationError(f"headers: expected an object, got {type(headers).__name__}")
        payload = delivery["payload"]
        if not isinstance(payload, Mapping):
            raise TranslationError(f"payload: expected an object, got {type(payload).__name__}")
        return payload, headers
    return delivery, {}


def repo_from_url(url: str, path: str) -> str:
    """``owner/name`` (or ``group/sub/name``) of a git or web URL of a repository.

    ``https://host/owner/name(.git)``, ``git@host:owner/name.git`` and ``ssh://git@host/owner/name``
    all give ``owner/name``; a URL with fewer than two path segments is refused."""
    rest = url.strip()
    if "://" in rest:
        rest = rest.split("://", 1)[1]
        rest = rest.split("/", 1)[1] if "/" in rest else ""
    elif ":" in rest and "@" in rest.split(":", 1)[0]:
        rest = rest.split(":", 1)[1]
    rest = rest.split("?", 1)[0].split("#", 1)[0].strip("/")
    if rest.endswith(".git"):
        rest = rest[: -len(".git")]
    segments = [segment for segment in rest.split("/") if segment]
    if len(segments) < 2:
        raise TranslationError(f"{path}: {url!r} does not name an owner/name repository")
    return "/".join(segments)
