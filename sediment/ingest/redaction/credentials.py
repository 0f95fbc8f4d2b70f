"""Credentials are redacted from a received record before it is stored: a call's or an OTLP
record's ``raw``, a CI webhook's ``raw`` (:func:`sediment.ingest.facts_jsonl.stored_raw`) and a
trajectory's ``raw_record`` text (:func:`redact_json_text`). One rule for all of them.

One list, :data:`CREDENTIAL_NAMES`, names every header and every field whose value is a
credential: the request's auth headers (``Authorization``, ``x-api-key``, …), cookies, the
keys a gateway logs beside the call (LiteLLM's ``litellm_params.api_key``, the virtual key's
``metadata.user_api_key_hash``, and the client's ``x-*`` headers, which LiteLLM copies into
``metadata.requester_custom_headers``, so a client's ``x-api-key`` lands there), and any name
shaped like a credential's: ``*_token`` (``refresh_token``, ``GITHUB_TOKEN``), ``*secret*``
(``aws_secret_access_key``), ``*password*``.
Names match case-insensitively, ``-`` and ``_`` alike, a camelCase boundary as ``_``
(``refreshToken``); ``*`` in an entry stands for any characters (``*-api-key``:
``x-portkey-api-key``, ``azure_api_key``, …); LiteLLM's ``llm_provider-`` prefix on forwarded
provider headers (``hidden_params.additional_headers``) is ignored; a dotted name also matches
by its last segment (OpenTelemetry's ``http.request.header.authorization``). A name matches as
a header (a member of a header map such as ``headers``) and as a field (a member of any other
object); both are object members of the parsed record. In a URL (any scheme) a query parameter
matches too, by those names or by :data:`QUERY_PARAMETERS` (``key``: Google's API key
parameter, which LiteLLM's logged ``api_base`` of a Gemini call carries, its masking of the
first characters aside), and so does the secret of its userinfo (:func:`redact_userinfo`: the
password of a git remote ``https://oauth2:<token>@gitlab.com/…``, which Copilot reports, or a
user alone that is a token); the host and path are kept, and a password that only names a
variable (``${GITLAB_TOKEN}``) is kept.

The value of a matching member (or query parameter) becomes :func:`marker` of it, the string
``"[redacted sha256:<hex>]"`` (the SHA-256 of the value's UTF-8 bytes), so a consumer can
still join two calls made with the same key. A string stays a string; a list (a recorder's
repeated header) has each item redacted; an object has each of its values redacted; null,
booleans and numbers are kept. A value that already is a marker is kept, so redacting twice
changes nothing. The hash of a short, guessable value can be guessed back: it hides keys and
tokens, not passwords. The stored record is the redacted record: it is what is read back.

Only metadata is read in a call: the content of a call is never touched, whatever its member
names. Content is the conversation (members named in :data:`CONTENT_MEMBERS`: ``messages``,
``input``, ``instructions``, ``system``, ``prompt``, ``tools``, ``functions``, ``choices``,
``output``, ``content``) and JSON Schemas (``schema``, ``parameters``, ``input_schema``,
``properties``): a tool whose schema has an ``api_key`` property, or tool arguments with an
``authorization`` key, are kept exactly. A record that holds no conversation (a CI webhook)
is walked whole (``content=frozenset()``). Everything but the redacted values is kept as
received, in its order; nothing is ever removed.
"""

from __future__ import annotations

import json
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
    # Any name of these shapes (CI secrets, OAuth/OIDC tokens, environment variables).
    "*_token",  # refresh_token, id_token, session_token, github_token, x-auth-token, …
    "*secret*",  # secret, webhook_secret, aws_secret_access_key, …
    "*password*",  # password, db_password, password_confirmation, …
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
#: A URL's scheme and userinfo: everything before the last ``@`` of the authority.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^/?#]*)@")
#: The same anywhere in a text (a URL inside a JSON string: no blank, quote or backslash).
_TEXT_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^\s/?#\"\\]*)@")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://")
#: Forge tokens a URL may carry as its user name (GitHub's classic and fine-grained, GitLab's).
TOKEN_PREFIXES: tuple[str, ...] = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-")
#: A user name alone that is a token by its shape: 32 or more letters, digits, ``_`` or ``-``
#: (GitHub's classic 40-hex tokens and other opaque tokens; no person's login is that long).
_TOKEN_USER = re.compile(r"[A-Za-z0-9_-]{32,}")
#: A reference to a secret, not the secret: ``$NAME``, ``${NAME}``, ``%NAME%``, ``{{ … }}``
#: (a script or a CI template naming the variable that holds it). Kept as written.
_PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|\{\{[^{}]*\}\}")


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _normalized(name: str) -> str:
    """``name`` lower-cased with ``-`` as ``_`` and a camelCase boundary as ``_`` (``apiKey``,
    ``refreshToken`` are ``api_key``, ``refresh_token``)."""
    return _CAMEL.sub("_", name).lower().replace("-", "_")


_NAMES = frozenset(_normalized(name) for name in CREDENTIAL_NAMES if "*" not in name)
_PATTERNS = tuple(_normalized(name) for name in CREDENTIAL_NAMES if "*" in name)


def _listed(normalized: str) -> bool:
    return normalized in _NAMES or any(fnmatchcase(normalized, pattern) for pattern in _PATTERNS)


@lru_cache(maxsize=8192)
def is_credential_name(name: str) -> bool:
    """True when ``name`` matches an entry of :data:`CREDENTIAL_NAMES`: any case, ``-`` and
    ``_`` alike, ``*`` any characters, with or without LiteLLM's ``llm_provider-`` prefix; a
    dotted name (an OpenTelemetry attribute such as ``http.request.header.authorization``)
    also matches by its last segment."""
    normalized = _normalized(name)
    if _listed(normalized) or _listed(normalized.removeprefix(_FORWARDED_PREFIX)):
        return True
    last = normalized.rpartition(".")[2]
    return last != normalized and bool(last) and _listed(last)


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


def redact_userinfo(userinfo: str) -> str | None:
    """A URL's userinfo with its secret as a marker: the password of ``user:password`` (the
    user kept), or a user alone that is a token (a forge prefix, or :data:`_TOKEN_USER`'s
    shape); None when it holds none (a plain user, an empty password, a placeholder such as
    ``${GITLAB_TOKEN}``, a marker already)."""
    if is_marker(userinfo):
        return None
    user, colon, password = userinfo.partition(":")
    if colon and password and not is_marker(password) and not _PLACEHOLDER.fullmatch(password):
        return f"{user}:{marker(password)}"
    if not colon and (user.startswith(TOKEN_PREFIXES) or _TOKEN_USER.fullmatch(user)):
        return marker(user)
    return None


def _redact_userinfo(text: str) -> str:
    """A URL with the secret of its userinfo as a marker (:func:`redact_userinfo`); the host,
    path and everything else are kept."""
    match = _USERINFO.match(text)
    if match is None:
        return text
    redacted = redact_userinfo(match.group(2))
    return text if redacted is None else f"{match.group(1)}{redacted}@{text[match.end():]}"


def _redact_url(text: str) -> str:
    """A URL (any scheme: ``https``, ``git+https``, ``postgres``, …) with its credential query
    parameters' values, and its userinfo secret, as markers; any other text, and a URL without
    one, comes back as the very string."""
    if _SCHEME.match(text) is None:
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


def _walk(value: Any, content: frozenset[str]) -> Any:
    """``value`` with its credentials redacted, members named in ``content`` left unread: the
    very object when it holds none (nothing is copied or mutated), else a copy of each
    container on the way to a redacted value."""
    if isinstance(value, dict):
        copied: dict[Any, Any] | None = None
        for key, item in value.items():
            if not isinstance(key, str) or key in content:
                continue
            redacted = _redact_value(item) if is_credential_name(key) else _walk(item, content)
            if redacted is not item:
                if copied is None:
                    copied = dict(value)
                copied[key] = redacted
        return value if copied is None else copied
    if isinstance(value, list):
        listed: list[Any] | None = None
        for index, item in enumerate(value):
            redacted = _walk(item, content)
            if redacted is not item:
                if listed is None:
                    listed = list(value)
                listed[index] = redacted
        return value if listed is None else listed
    if isinstance(value, str):
        return _redact_url(value)
    return value


def redact_record(record: dict[str, Any], *, content: frozenset[str] = CONTENT_MEMBERS) -> dict[str, Any]:
    """``record`` with every credential value replaced by its :func:`marker`.

    ``content`` names the members never read (a call's conversation and schemas, by default);
    a record that holds no conversation (a CI webhook) passes an empty set, so a Jenkins
    build's ``parameters`` or a payload's ``input`` are redacted like any other member.
    The record itself is never mutated; when it holds no credential it is returned as it is.
    A record nested too deeply to walk fails as a :class:`~sediment.ingest.TranslationError`.
    """
    try:
        redacted: dict[str, Any] = _walk(record, content)
    except RecursionError:
        raise TranslationError("record: nested too deeply") from None
    return redacted


# --- JSON text ------------------------------------------------------------------------------

#: Words one of which every name :func:`is_credential_name` accepts contains (a prefilter for
#: :func:`redact_json_text`; ``tests/test_redaction.py`` checks every entry of the list has one).
NAME_WORDS: tuple[str, ...] = ("key", "token", "secret", "password", "auth", "cookie", "credential")
_TEXT_MEMBER = re.compile(
    r'"(?P<name>[A-Za-z0-9_.-]*(?:' + "|".join(NAME_WORDS) + r')[A-Za-z0-9_.-]*)"'
    r'(?P<sep>\s*:\s*)"(?P<value>(?:[^"\\]|\\.)*)"',
    re.IGNORECASE,
)
#: Values that already hide the secret: masks (``"****"``), markers, and empty or null-like text.
_MASKED = re.compile(r"^(?:\**|\[redacted sha256:[0-9a-f]{64}\]|null|none|)$", re.IGNORECASE)


def _json_string(escaped: str) -> str:
    """The value of a JSON string's escaped text (the text itself if it does not decode)."""
    if "\\" not in escaped:
        return escaped
    try:
        value = json.loads(f'"{escaped}"')
    except ValueError:
        return escaped
    return value if isinstance(value, str) else escaped


def redact_json_text(text: str) -> tuple[str, int]:
    """JSON text (a source record kept byte for byte) with the same rule applied in place:
    every string member whose name :func:`is_credential_name` accepts, at any depth, and
    every URL userinfo secret (:func:`redact_userinfo`) become :func:`marker` of the value (of
    the decoded string, so a marker here equals one of :func:`redact_record`); a value that
    already hides the secret (``"****"``, ``""``, ``"null"``, a marker) or only names it (a
    placeholder such as ``"${API_KEY}"``) is kept. Every other
    byte is kept. Returns the text and how many values were replaced."""
    count = 0

    def member(match: re.Match[str]) -> str:
        nonlocal count
        value = match.group("value")
        if _MASKED.match(value) or _PLACEHOLDER.fullmatch(value) or not is_credential_name(match.group("name")):
            return match.group()
        count += 1
        return f'"{match.group("name")}"{match.group("sep")}"{marker(_json_string(value))}"'

    def userinfo(match: re.Match[str]) -> str:
        nonlocal count
        redacted = redact_userinfo(match.group(2))
        if redacted is None:
            return match.group()
        count += 1
        return f"{match.group(1)}{redacted}@"

    lowered = text.lower()
    if any(word in lowered for word in NAME_WORDS):
        text = _TEXT_MEMBER.sub(member, text)
    if "://" in text and "@" in text:
        text = _TEXT_USERINFO.sub(userinfo, text)
    return text, count
