"""Secrets inside content: the pattern set that finds them in any text, and the marker that
replaces them.

An agent that runs ``cat .env`` or ``env`` puts live credentials in a tool result; one that
pastes a key puts it in a message. :func:`redact_text` finds them by shape, wherever they are,
and replaces **only the secret's characters** with :func:`content_marker`,
``[redacted:<kind> sha256:<hex>]`` (the SHA-256 of the secret's UTF-8 bytes), so
``AWS_SECRET_ACCESS_KEY=wJalr…`` becomes ``AWS_SECRET_ACCESS_KEY=[redacted:aws_secret
sha256:…]``: the key name, the surrounding text and every other byte stay. The same secret
gives the same marker wherever it appears (a consumer can still join two calls made with one
key), and a name-based marker of :mod:`sediment.ingest.redaction.credentials` (``[redacted sha256:<hex>]``)
of the same value carries the same digest.

The kinds, in the order they are looked for (:data:`PATTERNS`; docs/operate.md lists them):

``private_key``
    the body of a PEM or PGP private key block (``-----BEGIN … PRIVATE KEY-----`` up to its
    ``-----END …-----`` line, or up to the last line of key characters when the block was cut
    off); the BEGIN and END lines stay. Public keys and certificates are not secrets.
``jwt``
    a JSON Web Token: ``eyJ…`` (a base64url JSON header), ``.eyJ…`` (its payload), ``.`` and the
    signature.
``anthropic_key``, ``openai_key``
    ``sk-ant-…``; ``sk-…``, ``sk-proj-…``, ``sk-svcacct-…``, ``sk-admin-…`` (20 or more key
    characters, at least one of them a digit).
``google_api_key``
    ``AIza`` and 35 key characters.
``huggingface_token``
    ``hf_`` and 30 or more letters and digits.
``github_token``
    ``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_`` and 30 or more letters and digits;
    ``github_pat_`` and 30 or more.
``gitlab_token``
    ``glpat-``, ``gldt-``, ``glrt-``, ``glptt-``, ``glcbt-``, ``gloas-``, ``glimt-``, ``glft-``,
    ``glsoat-`` and 20 or more key characters.
``aws_access_key_id``
    ``AKIA``, ``ASIA``, ``ABIA`` or ``ACCA`` and 16 capitals or digits, as a whole word.
``slack_token``, ``slack_webhook``
    ``xoxb-``, ``xoxp-``, ``xoxa-``, ``xoxo-``, ``xoxr-``, ``xoxs-``, ``xoxe-``, ``xapp-`` tokens;
    the secret last segment of a ``hooks.slack.com/services/…`` URL.
``bearer``
    the credential after ``Bearer`` (16 or more token characters, at least one a digit).
``basic_auth``
    the credential after ``Basic`` when it is base64 of ``user:password``.
``url_userinfo``
    the password of a URL's ``user:password@`` (any scheme: ``https``, ``postgres``, …), or a
    user alone that is a token (:func:`sediment.ingest.redaction.credentials.redact_userinfo`'s rule); the
    user name and host stay.
``aws_secret``, ``named_secret``
    the value of a ``KEY=value`` line (``.env``, ``env`` output, ``export KEY=value``, an INI
    ``key = value``) or of a quoted assignment (``"KEY": "value"``, ``KEY: "value"``,
    ``KEY = 'value'``) whose key names a secret: a name of
    :data:`~sediment.ingest.redaction.credentials.CREDENTIAL_NAMES` (``*_token``, ``*secret*``,
    ``*password*``, ``*-api-key``, …) or of :data:`ASSIGNED_NAMES`; ``aws_secret`` when the
    name is an AWS secret access key's. A value that only names the secret (``$TOKEN``,
    ``${TOKEN}``, ``%TOKEN%``, ``{{ … }}``), hides it already (``***``, a marker) or is empty
    is kept; for the generic names (``*_key``, ``token``) only a value of 12 or more
    characters holding a letter and a digit is a secret.

What is never touched: ordinary high-entropy text that is not a secret (commit SHAs, UUIDs,
content hashes, base64 image data), because every pattern needs a vendor prefix or a
secret-naming context. Redacting is idempotent (a marker is never redacted again) and
deterministic per string: the same text always gives the same bytes, which keeps replayed
context deduplicated (the store's blob hashes) and ids stable.

Cost: a text is first checked for the patterns' literal anchors (:data:`ANCHORS`: a token's
whole literal prefix, so ordinary words do not send a text to the expressions), in one scan per
leading character of the anchors rather than one per anchor; only a text holding one is searched
with the regular expressions. A text seen recently (the same characters) is looked up, not
checked again (:func:`redact_text`).
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache, partial
from operator import itemgetter
from typing import Final

import ahocorasick_rs

from sediment.ingest.redaction.credentials import TOKEN_PREFIXES, is_credential_name
from sediment.records import sha256_hex

#: A marker of either form: name-based (``[redacted sha256:…]``) or content (``[redacted:<kind> sha256:…]``).
MARKER = re.compile(r"\[redacted(?::[a-z0-9_]+)? sha256:[0-9a-f]{64}\]")

Finding = tuple[str, str]
"""One secret found: its kind and the SHA-256 hex of its value."""


def content_marker(kind: str, secret: str) -> str:
    """``[redacted:<kind> sha256:<hex>]``: the SHA-256 of ``secret``'s UTF-8 bytes (lone
    surrogates kept)."""
    return f"[redacted:{kind} sha256:{sha256_hex(secret)}]"


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: the literal substrings one of which a text holds before it is
    searched (``anchors``), the expression (group ``secret``, or the whole match, is the
    secret; groups ``lead`` / ``trail`` inside it are kept), and an optional check of a
    candidate secret."""

    kind: str
    anchors: tuple[str, ...]
    regex: re.Pattern[str]
    check: Callable[[str], bool] | None = None


def _has_digit(value: str) -> bool:
    return any(char.isdigit() for char in value)


def _is_basic_credential(value: str) -> bool:
    """True when ``value`` is base64 of ``user:password`` text."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    _user, colon, password = decoded.partition(":")
    return bool(colon and password and decoded.isprintable())


_KEY_CHARS = r"[A-Za-z0-9_-]"
_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_PEM_BODY = r"[A-Za-z0-9+/=\s:,.()-]"

#: Every kind, in the order it is looked for: a later pattern sees the earlier ones' markers
#: (so ``GITHUB_TOKEN=ghp_…`` is one ``github_token``, and ``Bearer eyJ…`` one ``jwt``).
_TOKEN_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern("private_key", ("PRIVATE KEY",), re.compile(
        rf"-----BEGIN (?P<label>{_PEM_LABEL})-----(?P<secret>{_PEM_BODY}{{1,65536}}?)(?=-----END (?P=label)-----)"
        rf"|-----BEGIN {_PEM_LABEL}-----(?P<cut>(?:[ \t]*\r?\n[ \t]*(?:[A-Za-z0-9+/=]{{8,}}|[A-Za-z-]+:[^\n]*))+)")),
    SecretPattern("jwt", ("eyJ",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    SecretPattern("anthropic_key", ("sk-ant-",), re.compile(rf"\bsk-ant-{_KEY_CHARS}{{32,}}")),
    SecretPattern("openai_key", ("sk-",), re.compile(
        rf"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?{_KEY_CHARS}{{20,}}"), _has_digit),
    SecretPattern("google_api_key", ("AIza",), re.compile(rf"\bAIza{_KEY_CHARS}{{35}}(?!{_KEY_CHARS})")),
    SecretPattern("huggingface_token", ("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    SecretPattern("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    SecretPattern("gitlab_token", ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glimt-", "glft-",
                                   "glsoat-"), re.compile(
        rf"\bgl(?:pat|dt|rt|ptt|cbt|oas|imt|ft|soat)-{_KEY_CHARS}{{20,}}")),
    SecretPattern("aws_access_key_id", ("AKIA", "ASIA", "ABIA", "ACCA"), re.compile(
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    SecretPattern("slack_token", ("xox", "xapp-"), re.compile(
        r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]+-[A-Za-z0-9-]{10,})")),
    SecretPattern("slack_webhook", ("hooks.slack.com",), re.compile(
        r"://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/(?P<secret>[A-Za-z0-9]{16,})")),
    SecretPattern("bearer", ("earer",), re.compile(r"\b[Bb]earer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,})"),
                  _has_digit),
    SecretPattern("basic_auth", ("asic",), re.compile(
        r"\b[Bb]asic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"), _is_basic_credential),
)

#: URL userinfo: the scheme, then everything before the authority's last ``@`` (no blank,
#: quote, backslash, ``/``, ``?`` or ``#``).
_USERINFO = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}://(?P<info>[^\s/?#\"'\\<>`]*)@")
#: A user name alone that is a token by its shape (the name-based rule's).
_TOKEN_USER = re.compile(r"[A-Za-z0-9_-]{32,}")
#: A value that names a secret instead of holding it, or hides it already.
_PLACEHOLDER = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|\{\{[^{}]*\}\}|<[^<>]*>|\**|x{3,}|X{3,}|"
    r"(?i:null|none|nil|true|false|changeme|redacted|\[redacted\]|your[_-].*|\.\.\.)"
)

#: Names of assigned values that are secrets besides :data:`~sediment.ingest.redaction.credentials.CREDENTIAL_NAMES`
#: (matched as those are: any case, ``-`` as ``_``). ``*_key`` and ``token`` are generic: their
#: value is a secret only when it looks like one (12 or more characters, a letter and a digit).
ASSIGNED_NAMES: tuple[str, ...] = ("passwd", "*_passwd", "pwd", "*_pwd", "apikey", "*_apikey", "*private_key*",
                                   "*access_key", "*_credentials")
GENERIC_NAMES: tuple[str, ...] = ("token", "*_key")
_AWS_SECRET_NAMES: tuple[str, ...] = ("aws_secret_access_key", "secret_access_key", "secretaccesskey",
                                      "aws_secret_key", "aws_secret")

_KEY = r"[A-Za-z_][A-Za-z0-9_.-]*"
#: A ``KEY=value`` line: optional ``export`` / ``set``, the value bare or quoted, then the line's end.
_ASSIGNED_LINE = re.compile(
    rf"(?m)^[ \t]*(?:export[ \t]+|set[ \t]+)?(?P<key>{_KEY})[ \t]*=[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"'`,;()\[\]{}<>]+))[ \t]*\r?$"
)
#: A quoted assignment anywhere: ``"KEY": "value"``, ``KEY: 'value'``, ``KEY = "value"``.
_ASSIGNED_QUOTED = re.compile(
    rf"(?P<q>[\"']?)(?P<key>{_KEY})(?P=q)[ \t]*(?::|=(?!=))[ \t]*(?:\"(?P<dq>[^\"\\\n]*)\"|'(?P<sq>[^'\\\n]*)')"
)
#: Words one of which every secret-naming key holds (the assignment patterns' anchors).
_NAME_WORDS: tuple[str, ...] = ("key", "token", "secret", "passw", "pwd", "auth", "cookie", "credential")
ANCHORS: tuple[str, ...] = tuple(dict.fromkeys(
    [anchor for pattern in _TOKEN_PATTERNS for anchor in pattern.anchors] + ["://"]))


def _normalized(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("-", "_")


@lru_cache(maxsize=4096)
def assigned_kind(name: str) -> tuple[str, bool] | None:
    """The kind of a value assigned to ``name`` and whether the name is generic (its value must
    look like a secret), or None when the name names no secret."""
    normalized = _normalized(name)
    last = normalized.rpartition(".")[2]
    if last in _AWS_SECRET_NAMES:
        return "aws_secret", False
    if is_credential_name(name) or any(fnmatchcase(last, pattern) for pattern in ASSIGNED_NAMES):
        return "named_secret", False
    if any(fnmatchcase(last, pattern) for pattern in GENERIC_NAMES):
        return "named_secret", True
    return None


def _looks_secret(value: str) -> bool:
    return len(value) >= 12 and _has_digit(value) and any(char.isalpha() for char in value)


def _kept_value(value: str) -> bool:
    """True when an assigned value holds no secret to hide: empty, a placeholder, a mask, a marker."""
    return not value.strip() or _PLACEHOLDER.fullmatch(value) is not None or MARKER.fullmatch(value) is not None


class _Redactor:
    """One text's replacements: each secret span becomes its marker, each finding is kept."""

    def __init__(self) -> None:
        self.found: list[Finding] = []

    def replace(self, kind: str, secret: str) -> str:
        self.found.append((kind, sha256_hex(secret)))
        return content_marker(kind, secret)

    def span(self, match: re.Match[str], group: str, kind: str) -> str:
        """The match with group ``group`` replaced by its marker (its leading and trailing blanks kept)."""
        start, end = match.span(group)
        secret = match.string[start:end]
        stripped = secret.strip()
        lead = secret[: len(secret) - len(secret.lstrip())]
        trail = secret[len(secret.rstrip()):]
        whole_start = match.start()
        return (match.string[whole_start:start] + lead + self.replace(kind, stripped) + trail
                + match.string[end:match.end()])

    def token(self, pattern: SecretPattern, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            group = next((name for name in ("secret", "cut") if name in pattern.regex.groupindex
                          and match.group(name) is not None), None)
            secret = match.group() if group is None else match.group(group)
            if not secret.strip() or MARKER.search(secret) or (pattern.check and not pattern.check(secret.strip())):
                return match.group()
            return self.replace(pattern.kind, secret) if group is None else self.span(match, group, pattern.kind)

        return pattern.regex.sub(one, text)

    def userinfo(self, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            info = match.group("info")
            if MARKER.search(info):
                return match.group()
            user, colon, password = info.partition(":")
            if colon:
                if not password or _PLACEHOLDER.fullmatch(password):
                    return match.group()
                start = match.start("info") + len(user) + 1
                head = match.string[match.start():start]
                return f"{head}{self.replace('url_userinfo', password)}@"
            if user.startswith(TOKEN_PREFIXES) or _TOKEN_USER.fullmatch(user):
                return f"{match.string[match.start():match.start('info')]}{self.replace('url_userinfo', user)}@"
            return match.group()

        return _USERINFO.sub(one, text)

    def assigned(self, regex: re.Pattern[str], text: str) -> str:
        def one(match: re.Match[str]) -> str:
            group = next(name for name in ("dq", "sq", "bare") if name in regex.groupindex
                         and match.group(name) is not None)
            value = match.group(group)
            named = assigned_kind(match.group("key"))
            if named is None or _kept_value(value) or (named[1] and not _looks_secret(value)):
                return match.group()
            return self.span(match, group, named[0])

        return regex.sub(one, text)


def _has_name_word(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in _NAME_WORDS)


def _redact_searched(text: str, fired: frozenset[str] | None = None) -> tuple[str, tuple[Finding, ...]]:
    """``text`` searched with every expression; ``fired`` (the leading characters whose
    prefilter test found an anchor in ``text``, :func:`_fired`) skips each token pattern none of
    whose anchors' prefilter tests fired, while nothing has been replaced yet (then the text is
    the one the tests saw, and a pattern whose anchor it held would have fired one)."""
    redactor = _Redactor()
    original = text
    for pattern in _TOKEN_PATTERNS:
        firsts = _PREFILTER_FIRSTS[pattern.kind]
        if fired is not None and firsts is not None and text is original and fired.isdisjoint(firsts):
            continue
        if _anchored(pattern.anchors)(text):
            text = redactor.token(pattern, text)
    if "://" in text and "@" in text:
        text = redactor.userinfo(text)
    if ("=" in text or ":" in text) and _has_name_word(text):
        if "=" in text:
            text = redactor.assigned(_ASSIGNED_LINE, text)
        if "'" in text or '"' in text:
            text = redactor.assigned(_ASSIGNED_QUOTED, text)
    return text, tuple(redactor.found)


#: Anchors another anchor contains (``sk-`` finds ``sk-ant-``, ``key`` finds ``PRIVATE KEY``, ``://``
#: finds a Slack webhook's URL).
_SUBSUMED = frozenset({"sk-ant-", "PRIVATE KEY", "hooks.slack.com"})
#: Lower-case substrings one of which a text holds before any pattern can match in it (the
#: patterns' anchors and the secret-naming words, lower-cased): the cheap first test.
_PREFILTER: tuple[str, ...] = tuple(dict.fromkeys(
    [anchor.lower() for anchor in ANCHORS if anchor not in _SUBSUMED] + list(_NAME_WORDS)))


def _searches(anchors: tuple[str, ...]) -> tuple[tuple[str, Callable[[str], object]], ...]:
    """One test per first character of ``anchors``, with that character, each true when the text
    holds one of the anchors starting with it: ``in`` for a lone anchor, else one expression (the
    character, then the anchors' rests as alternatives), which the regular expression engine
    scans for by that leading character in one pass instead of one pass per anchor."""
    groups: dict[str, list[str]] = {}
    for anchor in anchors:
        groups.setdefault(anchor[:1], []).append(anchor)
    tests: list[tuple[str, Callable[[str], object]]] = []
    for first, group in groups.items():
        if len(group) == 1 or not first:
            tests.extend((first, partial(_holds, anchor)) for anchor in group)
        else:
            rests = "|".join(re.escape(anchor[1:]) for anchor in group)
            tests.append((first, re.compile(f"{re.escape(first)}(?:{rests})").search))
    return tuple(tests)


def _holds(anchor: str, text: str) -> bool:
    return anchor in text


@lru_cache(maxsize=64)
def _anchored(anchors: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a text holds one of a pattern's ``anchors`` (case as written)."""
    tests = tuple(test for _, test in _searches(anchors))
    return lambda text: any(test(text) for test in tests)


#: The prefilter's tests, each with the leading character of the anchors it looks for.
_PREFILTER_GROUPS = _searches(_PREFILTER)


def _prefilter_firsts(pattern: SecretPattern) -> frozenset[str] | None:
    """The leading characters of the prefilter tests one of which fires on every text that holds
    one of ``pattern``'s anchors: those of the prefilter anchors inside each of its anchors
    (lower-cased). None (always searched) when an anchor holds none (the Slack webhook's is
    found through ``://``, which the expression needs but the anchor does not spell)."""
    firsts: set[str] = set()
    for own in pattern.anchors:
        inside = [anchor[:1] for anchor in _PREFILTER if anchor in own.lower()]
        if not inside:
            return None
        firsts.update(inside)
    return frozenset(firsts)


#: Per token pattern (by kind), :func:`_prefilter_firsts`.
_PREFILTER_FIRSTS: dict[str, frozenset[str] | None] = {
    pattern.kind: _prefilter_firsts(pattern) for pattern in _TOKEN_PATTERNS}


#: Every prefilter anchor at once (Aho-Corasick, in one pass over a text instead of one per test):
#: its matches overlap, so an anchor inside or across another's match is still found.
#: Built as a DFA: it scans about a third faster than the default automaton, and 36 short anchors
#: keep its tables small.
_PREFILTER_AUTOMATON: Final = ahocorasick_rs.AhoCorasick(list(_PREFILTER), matchkind=ahocorasick_rs.MatchKind.Standard,
                                                         implementation=ahocorasick_rs.Implementation.DFA)
_PREFILTER_LEADS: Final = tuple(anchor[:1] for anchor in _PREFILTER)
_ANCHOR_INDEX: Final = itemgetter(0)  # a match's anchor, by its index in _PREFILTER
#: The characters of a long text searched at a time (what a window's matches take stays bounded:
#: a text of nothing but anchors has about one a character); windows overlap by an anchor less one.
_WINDOW: Final = 1 << 16
_OVERLAP: Final = max(len(anchor) for anchor in _PREFILTER) - 1


def _leads(lowered: str) -> frozenset[str]:
    """The leading characters of the prefilter anchors ``lowered`` holds. An ASCII text is
    searched by the automaton, window by window; any other by one substring test per leading
    character (the automaton reads UTF-8, which a lone surrogate has none of)."""
    if not lowered.isascii():
        return frozenset(first for first, test in _PREFILTER_GROUPS if test(lowered))
    found: set[int] = set()  # the anchors met (gathered at C speed: a text may hold many)
    for start in range(0, max(len(lowered) - _OVERLAP, 1), _WINDOW - _OVERLAP):  # a short text: one window, itself
        window = lowered[start:start + _WINDOW]
        found.update(map(_ANCHOR_INDEX, _PREFILTER_AUTOMATON.find_matches_as_indexes(window, overlapping=True)))
    return frozenset(_PREFILTER_LEADS[anchor] for anchor in found)


def might_hold_secret(text: str) -> bool:
    """False when ``text`` holds none of the patterns' anchors: it holds no secret."""
    return bool(_fired(text))


def _fired(text: str) -> frozenset[str]:
    """The leading characters of the prefilter anchors ``text`` holds (lower-cased): empty when
    it holds no secret."""
    if len(text) < 8:
        return frozenset()
    return _leads(text.lower())


class _Seen:
    """The texts already looked at and what redacting them gave (None: no secret), least
    recently used first out once they take more than ``limit`` bytes (``sys.getsizeof``: one to four
    bytes a character). A text seen again
    (the same characters, wherever they come from: a message part and the raw record that holds
    it, a call's output replayed as the next call's input) is looked up, not scanned again."""

    _ENTRY: Final = 64  # what an entry costs besides its string, in bytes

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._size = 0
        self._texts: OrderedDict[str, tuple[str, tuple[Finding, ...]] | None] = OrderedDict()
        self._lock = threading.Lock()

    def redact(self, text: str) -> tuple[str, tuple[Finding, ...]]:
        with self._lock:
            if text in self._texts:
                self._texts.move_to_end(text)
                hit = self._texts[text]
                return (text, ()) if hit is None else hit
        result = _scan(text)  # with no finding, the very string, as a hit gives it
        with self._lock:
            if text not in self._texts:
                self._texts[text] = result if result[1] else None
                self._size += sys.getsizeof(text) + self._ENTRY
                while self._size > self._limit and self._texts:
                    old, _ = self._texts.popitem(last=False)
                    self._size -= sys.getsizeof(old) + self._ENTRY
        return result


#: How many bytes of looked-at text :func:`redact_text` remembers inside :func:`remembering_texts`.
SEEN_BYTES: Final = 32 * 1024 * 1024
_MEMORY: ContextVar[_Seen | None] = ContextVar("sediment_redaction_memory", default=None)


@contextmanager
def remembering_texts(limit: int = SEEN_BYTES) -> Iterator[None]:
    """Inside the block, :func:`redact_text` remembers up to ``limit`` bytes (as the strings take
    them in memory) of the texts it looked at (:class:`_Seen`), so a batch ingest scans a
    replayed text once. The memory is the block's own and is dropped when it ends: a
    long-running process (``serve``) keeps no captured text, redacted or not, between its
    requests, and outside any block every text is scanned."""
    token = _MEMORY.set(_Seen(limit))
    try:
        yield
    finally:
        _MEMORY.reset(token)


def _scan(text: str) -> tuple[str, tuple[Finding, ...]]:
    fired = _fired(text)
    result = _redact_searched(text, fired) if fired else (text, ())
    return result if result[1] else (text, ())


def redact_text(text: str) -> tuple[str, tuple[Finding, ...]]:
    """``text`` with every secret of :data:`PATTERNS` replaced by its :func:`content_marker`,
    and what was found (kind and digest, in order). A text without a secret comes back as the
    very string, with no finding. Deterministic per string, so inside :func:`remembering_texts`
    a text seen recently is looked up instead of scanned again (:class:`_Seen`)."""
    if len(text) < 8:
        return text, ()
    seen = _MEMORY.get()
    return _scan(text) if seen is None else seen.redact(text)


#: The kinds, in the order they are looked for (docs/operate.md lists them).
KINDS: tuple[str, ...] = (*(pattern.kind for pattern in _TOKEN_PATTERNS), "url_userinfo", "aws_secret",
                          "named_secret")
PATTERNS = _TOKEN_PATTERNS
