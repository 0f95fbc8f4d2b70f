"""Credentials are redacted from a captured record before it is stored as a Fact's ``raw``.

One list, :data:`CREDENTIAL_NAMES`, names every header and every field whose value is a
credential: the request's auth headers (``Authorization``, ``x-api-key``, …), cookies, and
the keys a gateway logs beside the call (LiteLLM's ``litellm_params.api_key``, the virtual
key's ``metadata.user_api_key_hash``, and the client's ``x-*`` headers, which LiteLLM copies
into ``metadata.requester_custom_headers``, so a client's ``x-api-key`` lands there).
Names match case-insensitively, ``-`` and ``_`` alike; ``*`` in an entry stands for any
characters (``*-api-key``: ``x-portkey-api-key``, ``azure_api_key``, …); LiteLLM's
``llm_provider-`` prefix on forwarded provider headers (``hidden_params.additional_headers``)
is ignored. A name matches as a header (a member of a header map such as ``headers``) and as
a field (a member of any other object); both are object members of the parsed record. In
an ``http(s)`` URL a query parameter matches too, by those names or by
:data:`QUERY_PARAMETERS` (``key``: Google's API key parameter, which LiteLLM's logged
``api_base`` of a Gemini call carries, its masking of the first characters aside), and so does
the password of its userinfo (a git remote ``https://oauth2:<token>@gitlab.com/…``, which
Copilot reports) or a userinfo that is a forge token (:data:`TOKEN_PREFIXES`).

The value of a matching member (or query parameter) becomes :func:`marker` of it, the string
``"[redacted sha256:<hex>]"`` (the SHA-256 of the value's UTF-8 bytes), so a consumer can
still join two calls made with the same key. A string stays a string; a list (a recorder's
repeated header) has each item redacted; an object has each of its values redacted; null,
booleans and numbers are kept. A value that already is a marker is kept, so redacting twice
changes nothing. The hash of a short, guessable value can be guessed back: it hides keys and
tokens, not passwords.

Only metadata is read: the content of a call is never touched, whatever its member names.
Content is the conversation (members named in :data:`CONTENT_MEMBERS`: ``messages``,
``input``, ``instructions``, ``system``, ``prompt``, ``tools``, ``functions``, ``choices``,
``output``, ``content``) and JSON Schemas (``schema``, ``parameters``, ``input_schema``,
``properties``): a tool whose schema has an ``api_key`` property, or tool arguments with an
``authorization`` key, are kept exactly. Everything but the redacted values is kept as
received, in its order; nothing is ever removed.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from sediment.ingest import TranslationError
from sediment.records import sha256_hex

#: Headers and fields whose value is a credential (matched as :func:`is_credential_name` says).
CREDENTIAL_NAMES: tuple[str, ...] = (
    # HTTP headers: the request's credentials, and the cookies a provider sets.
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",  # also the field api_key (Azure OpenAI's header, the SDKs' parameter, litellm_params)
    "openai-api-key",
    "anthropic-api-key",
    "x-goog-api-key",
    "x-litellm-api-key",
    "*-api-key",  # any vendor's key header or field: x-portkey-api-key, azure_api_key, …
    "helicone-auth",
    "x-amz-security-token",
    "ocp-apim-subscription-key",
    "cookie",
    "set-cookie",
    # Fields a gateway logs beside the call.
    "user_api_key",  # LiteLLM's older name for the hashed virtual key
    "user_api_key_hash",
    "aws_secret_access_key",
    "aws_session_token",
    "azure_ad_token",
    "client_secret",
    "vertex_credentials",
)

#: URL query parameters that are credentials besides :data:`CREDENTIAL_NAMES` (exact, any case).
QUERY_PARAMETERS: tuple[str, ...] = ("key",)

#: Members whose value is the call's content (the conversation, JSON Schemas): never read.
CONTENT_MEMBERS: frozenset[str] = frozenset(
    {
        "messages",
        "input",
        "instructions",
        "system",
        "prompt",
        "tools",
        "functions",
        "choices",
        "output",
        "content",
        "schema",
        "parameters",
        "input_schema",
        "properties",
    }
)

MARKER_PREFIX = "[redacted sha256:"
_MARKER = re.compile(r"\[redacted sha256:[0-9a-f]{64}\]")
_FORWARDED_PREFIX = "llm_provider_"
_QUERY_MEMBER = re.compile(r"([^&=]+)=([^&]*)")
_USERINFO = re.compile(r"([Hh][Tt][Tt][Pp][Ss]?://)([^/?#@]*)@")
#: Forge tokens a URL may carry as its user name (GitHub's classic and fine-grained, GitLab's).
TOKEN_PREFIXES: tuple[str, ...] = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-")


def _normalized(name: str) -> str:
    return name.lower().replace("-", "_")


_NAMES = frozenset(_normalized(name) for name in CREDENTIAL_NAMES if "*" not in name)
_PATTERNS = tuple(_normalized(name) for name in CREDENTIAL_NAMES if "*" in name)


def _listed(normalized: str) -> bool:
    return normalized in _NAMES or any(fnmatchcase(normalized, pattern) for pattern in _PATTERNS)


@lru_cache(maxsize=8192)
def is_credential_name(name: str) -> bool:
    """True when ``name`` matches an entry of :data:`CREDENTIAL_NAMES`: any case, ``-`` and
    ``_`` alike, ``*`` any characters, with or without LiteLLM's ``llm_provider-`` prefix."""
    normalized = _normalized(name)
    return _listed(normalized) or _listed(normalized.removeprefix(_FORWARDED_PREFIX))


def is_marker(value: Any) -> bool:
    """True when ``value`` is a redaction marker."""
    return isinstance(value, str) and _MARKER.fullmatch(value) is not None


def marker(value: str) -> str:
    """``"[redacted sha256:<hex>]"``: the SHA-256 of ``value``'s UTF-8 bytes (lone surrogates
    kept, as every digest here); a marker is returned as it is."""
    if is_marker(value):
        return value
    return f"{MARKER_PREFIX}{sha256_hex(value)}]"


def _is_query_credential(name: str) -> bool:
    name = unquote(name)
    return name.lower() in QUERY_PARAMETERS or is_credential_name(name)


def _redact_userinfo(text: str) -> str:
    """An ``http(s)`` URL with the password of its userinfo (``https://user:secret@host``), or a
    userinfo that is a forge token (``https://ghp_…@github.com``), as a marker."""
    match = _USERINFO.match(text)
    if match is None:
        return text
    userinfo = match.group(2)
    if is_marker(userinfo):
        return text
    user, colon, password = userinfo.partition(":")
    if colon and password and not is_marker(password):
        redacted = f"{user}:{marker(password)}"
    elif not colon and user.startswith(TOKEN_PREFIXES):
        redacted = marker(user)
    else:
        return text
    return f"{match.group(1)}{redacted}@{text[match.end():]}"


def _redact_url(text: str) -> str:
    """An ``http(s)`` URL with its credential query parameters' values, and its userinfo
    password, as markers; any other text, and a URL without one, comes back as the very string."""
    if not text[:8].lower().startswith(("http://", "https://")):
        return text
    text = _redact_userinfo(text)
    if "?" not in text:
        return text
    head, _, rest = text.partition("?")
    query, hash_mark, fragment = rest.partition("#")

    def member(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if not value or not _is_query_credential(name):
            return match.group(0)
        return f"{name}={marker(value)}"

    redacted = _QUERY_MEMBER.sub(member, query)
    return text if redacted == query else f"{head}?{redacted}{hash_mark}{fragment}"


def _redact_value(value: Any) -> Any:
    """A credential value redacted: strings become markers, containers are redacted item by
    item, other scalars are kept. Unchanged values come back as the very object."""
    if isinstance(value, str):
        return marker(value)
    if isinstance(value, list):
        items = [_redact_value(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        members = {key: _redact_value(item) for key, item in value.items()}
        return value if all(members[key] is item for key, item in value.items()) else members
    return value


def _walk(value: Any) -> Any:
    """``value`` with its credentials redacted: the very object when it holds none (nothing
    is copied or mutated), else a copy of each container on the way to a redacted value."""
    if isinstance(value, dict):
        copied: dict[Any, Any] | None = None
        for key, item in value.items():
            if not isinstance(key, str) or key in CONTENT_MEMBERS:
                continue
            redacted = _redact_value(item) if is_credential_name(key) else _walk(item)
            if redacted is not item:
                if copied is None:
                    copied = dict(value)
                copied[key] = redacted
        return value if copied is None else copied
    if isinstance(value, list):
        listed: list[Any] | None = None
        for index, item in enumerate(value):
            redacted = _walk(item)
            if redacted is not item:
                if listed is None:
                    listed = list(value)
                listed[index] = redacted
        return value if listed is None else listed
    if isinstance(value, str):
        return _redact_url(value)
    return value


def redact_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every credential value replaced by its :func:`marker`.

    The record itself is never mutated; when it holds no credential it is returned as it is.
    A record nested too deeply to walk fails as a :class:`~sediment.ingest.TranslationError`.
    """
    try:
        redacted: dict[str, Any] = _walk(record)
    except RecursionError:
        raise TranslationError("record: nested too deeply") from None
    return redacted
