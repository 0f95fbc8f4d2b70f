"""Secrets inside content are redacted at capture: the pattern set (positive and negative
examples per kind, high-entropy text that must survive), the marker, determinism, the setting,
and one end-to-end test per ingest path (calls, transcripts, OTLP, a CI webhook, trajectory
import) showing the secret absent from what is stored and the marker present.

Every secret here is FAKE: made-up characters in the shape of the real thing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sediment.ingest.calls import ReplayMemo, translate_call
from sediment.ingest.redaction import secret_patterns
from sediment.ingest.redaction.content import (
    RedactionTally,
    content_redaction,
    redact_json_source,
    redact_value,
    tallying,
)
from sediment.ingest.redaction.secret_patterns import KINDS, MARKER, content_marker, redact_text
from sediment.model.facts import InferenceCall
from sediment.store import FactStore

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
ORG = "acme"

# --- fake secrets (shapes only) ---------------------------------------------------------------
GITHUB = "ghp_" + "Q7wErT9yUi3oPa5sDf1gHj8kLz2xCv4bNm6M"
GITHUB_PAT = "github_pat_11ABCDEFG0" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7" * 2
GITLAB = "glpat-" + "xY3zW9vU7tS5rQ1pO2nM"
OPENAI = "sk-proj-" + "T3stK3yN0tR3al" * 3
ANTHROPIC = "sk-ant-api03-" + "F4k3K3yF0rT3st1ng" * 3
GOOGLE = "AIza" + "SyD3m0K3yF4k3F0rT3st1ngOnly12345678"
HUGGINGFACE = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
AWS_ID = "AKIA" + "Z7X3Q9W2E5R8T1Y4"
AWS_SECRET = "k9Vb2Nq8Rt5Ws3Xy7Za1Cd4Ef6Gh0Jk2Lm4Np6Q"
SLACK = "xoxb-" + "1234567890-0987654321-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK_SECRET = "Zq8Xw7Cv6Bn5Ml4Kj3Hg2Fd1"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJzdWIiOiJmYWtlLXVzZXIiLCJpYXQiOjE3MDAwMDAwMDB9"
       + ".c2lnbmF0dXJlLW9mLWEtZmFrZS10b2tlbi1vbmx5")
BEARER = "tk_live_4f9a8b7c6d5e4f3a2b1c"
BASIC = base64.b64encode(b"deploy:hunter2-fake").decode()
PASSWORD = "Fake-DB-Pass-123"
PEM_BODY = "MIIEowIBAAKCAQEAfakeFAKEfake0123456789abcdefABCDEF\nZmFrZSBwcml2YXRlIGtleSBib2R5IG9ubHkgZm9yIHRlc3Rz\n"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----"

# --- the high-entropy text that is not a secret -----------------------------------------------
COMMIT_SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
UUID = "123e4567-e89b-12d3-a456-426614174000"
SHA256 = hashlib.sha256(b"content").hexdigest()
PNG_BASE64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


# (kind, text holding the secret, the secret) — one or more per kind
POSITIVE: list[tuple[str, str, str]] = [
    ("private_key", f"$ cat id_rsa\n{PEM}\n", PEM_BODY.strip()),
    ("private_key", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}(cut off)", PEM_BODY.strip()),
    ("jwt", f"cookie session={JWT}; Path=/", JWT),
    ("anthropic_key", f"client = Anthropic(api_key={ANTHROPIC})", ANTHROPIC),
    ("openai_key", f"I set my key to {OPENAI} in the shell", OPENAI),
    ("google_api_key", f"https://maps.example.com/api?k={GOOGLE}&q=x", GOOGLE),
    ("huggingface_token", f"huggingface-cli login --token {HUGGINGFACE}", HUGGINGFACE),
    ("github_token", f"export GITHUB_TOKEN={GITHUB}\n", GITHUB),
    ("github_token", f"token: {GITHUB_PAT}", GITHUB_PAT),
    ("gitlab_token", f"git clone https://oauth2:{GITLAB}@gitlab.com/acme/app.git", GITLAB),
    ("aws_access_key_id", f"aws_access_key_id = {AWS_ID}", AWS_ID),
    ("aws_secret", f"[default]\naws_secret_access_key = {AWS_SECRET}\n", AWS_SECRET),
    ("aws_secret", f'{{"AccessKeyId": "x", "SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET),
    ("slack_token", f"SLACK_BOT={SLACK}", SLACK),
    ("slack_webhook", f"curl https://hooks.slack.com/services/T0FAKE123/B0FAKE456/{SLACK_HOOK_SECRET}",
     SLACK_HOOK_SECRET),
    ("bearer", f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com", BEARER),
    ("basic_auth", f"Authorization: Basic {BASIC}", BASIC),
    ("url_userinfo", f"DATABASE_URL=postgres://app:{PASSWORD}@db.internal:5432/app", PASSWORD),
    ("named_secret", f"DB_PASSWORD={PASSWORD}\n", PASSWORD),
    ("named_secret", f'config = {{"client_secret": "{PASSWORD}"}}', PASSWORD),
    ("named_secret", f"  STRIPE_KEY='{PASSWORD}'", PASSWORD),
]

# (kind, text that must survive untouched)
NEGATIVE: list[tuple[str, str]] = [
    ("private_key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----"),
    ("private_key", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9 is just a base64 header, no payload"),
    ("anthropic_key", "the sk-ant- prefix marks Anthropic keys"),
    ("openai_key", "risk-assessment-framework-v2 and task-manager-service-long-name"),
    ("openai_key", "sk-learn-is-not-a-key-but-a-long-phrase"),
    ("google_api_key", "AIzaShort"),
    ("huggingface_token", "hf_hub_download(repo_id='x')"),
    ("github_token", "ghp_short and gho_ and github_pat_ prefixes"),
    ("gitlab_token", "glpat- tokens start with glpat-, e.g. glpat-xxxx"),
    ("aws_access_key_id", "AKIA12345 is too short; akiaz7x3q9w2e5r8t1y4 is lower case"),
    ("aws_secret", "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}\n"),
    ("slack_token", "xoxb- tokens are Slack bot tokens"),
    ("slack_webhook", "see https://hooks.slack.com/services for docs"),
    ("bearer", "send a bearer token in the Authorization header"),
    ("bearer", "Authorization: Bearer $TOKEN"),
    ("bearer", "Authorization: Bearer <token>"),
    ("basic_auth", "Basic usage: run the tool with --help"),
    ("basic_auth", "Authorization: Basic aGVsbG8gd29ybGQ="),  # base64 of text without a colon
    ("url_userinfo", "git@github.com:acme/app.git and https://github.com/acme/app and ssh://git@host/x"),
    ("url_userinfo", "https://oauth2:${GITLAB_TOKEN}@gitlab.com/acme/app.git"),
    ("named_secret", "def login(password: str, token=None):\n    api_key=api_key,\n"),
    ("named_secret", "SECRET_KEY=\nSORT_KEY=name\nPASSWORD=${DB_PASSWORD}\nAPI_KEY=<your key>\nTOKEN=***\n"),
    ("named_secret", 'if key == "abc": pass\nmax_tokens = 4096\n'),
]

HIGH_ENTROPY = [
    f"commit {COMMIT_SHA}\nAuthor: Dev <dev@example.com>",
    f"request id {UUID}",
    f"sha256:{SHA256}  content.tar.gz",
    f"data:image/png;base64,{PNG_BASE64}",
    f"git log --format=%H: {COMMIT_SHA} {COMMIT_SHA[:7]} {SHA256}",
    f"integrity sha512-{base64.b64encode(hashlib.sha512(b'x').digest()).decode()}",
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_each_pattern_replaces_only_the_secret_with_its_kind_and_sha256(kind: str, text: str, secret: str) -> None:
    redacted, found = redact_text(text)
    assert secret not in redacted
    assert content_marker(kind, secret) in redacted
    assert found == ((kind, sha(secret)),)
    # only the secret's characters changed: the text around it is kept byte for byte
    before, _, after = text.partition(secret)
    assert redacted == before + content_marker(kind, secret) + after


@pytest.mark.parametrize(("kind", "text"), NEGATIVE, ids=[f"{k}-{i}" for i, (k, _) in enumerate(NEGATIVE)])
def test_text_that_only_looks_like_a_secret_survives(kind: str, text: str) -> None:
    assert redact_text(text) == (text, ())


@pytest.mark.parametrize("text", HIGH_ENTROPY)
def test_ordinary_high_entropy_text_survives_untouched(text: str) -> None:
    assert redact_text(text) == (text, ())


def test_every_kind_has_a_positive_and_a_negative_example() -> None:
    assert {kind for kind, _, _ in POSITIVE} == set(KINDS)
    assert {kind for kind, _ in NEGATIVE} == set(KINDS)


def test_the_key_name_is_kept_and_the_marker_names_the_kind() -> None:
    text = f"AWS_ACCESS_KEY_ID={AWS_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
    redacted, found = redact_text(text)
    assert redacted == (f"AWS_ACCESS_KEY_ID=[redacted:aws_access_key_id sha256:{sha(AWS_ID)}]\n"
                        f"AWS_SECRET_ACCESS_KEY=[redacted:aws_secret sha256:{sha(AWS_SECRET)}]\n")
    assert sorted(kind for kind, _ in found) == ["aws_access_key_id", "aws_secret"]
    assert all(MARKER.fullmatch(m) for m in ("[redacted sha256:" + "0" * 64 + "]", content_marker("jwt", JWT)))


def test_a_token_assigned_to_a_secret_name_is_one_finding_of_the_token_kind() -> None:
    redacted, found = redact_text(f"GITHUB_TOKEN={GITHUB}\nAuthorization: Bearer {JWT}\n")
    assert [kind for kind, _ in found] == ["jwt", "github_token"]
    assert redacted.count("[redacted:") == 2


def test_redaction_is_idempotent_and_deterministic_under_repeat_and_shuffle() -> None:
    texts = [text for _, text, _ in POSITIVE] + [text for _, text in NEGATIVE] + HIGH_ENTROPY
    once = {text: redact_text(text) for text in texts}
    for redacted, _ in once.values():
        assert redact_text(redacted) == (redacted, ())  # a marker is never redacted again
    shuffled = list(texts)
    random.Random(7).shuffle(shuffled)
    assert {text: redact_text(text) for text in shuffled} == once
    values = [{"a": [text, {"b": text}]} for text in texts]
    assert redact_value(values) == redact_value(list(values)) == [
        {"a": [once[t][0], {"b": once[t][0]}]} for t in texts]


def test_a_value_without_a_secret_is_the_very_object() -> None:
    value = {"messages": [{"role": "user", "content": f"commit {COMMIT_SHA}"}], "n": 1}
    assert redact_value(value) is value


# Pieces texts are drawn from: vendor prefixes whole and cut short, key characters, separators.
PIECES = ["gh", "ghp_", "gho_", "ghx_", "github_pat_", "github_", "gl", "glpat-", "glpat", "gldt-", "glsoat-",
          "glx-", "Q7wErT9yUi3oPa5sDf1gHj8kLz2x", "aB3dE6gH9jK2mN5pQ8sT1", "_", "-", " ", "\n", "token=", ":", "é"]


#: Every documented prefix of the GitHub and GitLab tokens, in a token (the anchors must let each through).
PREFIXED = [f"x {prefix}{'aB3dE6gH9jK2mN5pQ8sT1vW4yZ7' * 2}" for prefix in (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-",
    "glimt-", "glft-", "glsoat-")]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.sampled_from(PREFIXED), st.lists(st.sampled_from(PIECES), max_size=14).map("".join)))
@example(PREFIXED[4])
def test_the_anchors_only_skip_texts_no_pattern_matches(text: str) -> None:
    """A pattern's anchors are only a shortcut: searching with every pattern run whatever the
    anchors gives the same text and findings (regression: ``gh``/``gl`` narrowed to the
    tokens' literal prefixes)."""
    always = tuple(replace(pattern, anchors=("",)) for pattern in secret_patterns._TOKEN_PATTERNS)
    expected = secret_patterns._redact_searched(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(secret_patterns, "_TOKEN_PATTERNS", always)
        assert secret_patterns._redact_searched(text) == expected
    assert redact_text(text) == expected


@pytest.mark.parametrize("text", PREFIXED)
def test_every_github_and_gitlab_prefix_is_found(text: str) -> None:
    redacted, found = redact_text(text)
    assert "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7" not in redacted and len(found) == 1


ANCHOR_PIECES = [*secret_patterns._PREFILTER, *secret_patterns.ANCHORS, "G", "GL", "gl", "x", "A", "a", "-", "_",
                 " ", "Key", "TOKEN", "ghp", "xo", "as", "é"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ANCHOR_PIECES), max_size=8).map("".join))
def test_the_grouped_anchor_searches_are_the_plain_substring_tests(text: str) -> None:
    """The prefilter and the patterns' anchor checks scan once per leading character (an
    expression of the anchors' rests); they answer what one substring test per anchor answers."""
    lowered = text.lower()
    assert secret_patterns.might_hold_secret(text) == (
        len(text) >= 8 and any(anchor in lowered for anchor in secret_patterns._PREFILTER))
    for pattern in secret_patterns._TOKEN_PATTERNS:
        assert secret_patterns._anchored(pattern.anchors)(text) == any(anchor in text for anchor in pattern.anchors)


SECRETS_AND_PIECES = [text for _, text, _ in POSITIVE] + [text for _, text in NEGATIVE] + ANCHOR_PIECES + PIECES


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(SECRETS_AND_PIECES), max_size=6).map(" ".join))
def test_the_patterns_the_prefilter_rules_out_are_skipped_with_the_same_result(text: str) -> None:
    """A scan searches only with the token patterns whose anchors' prefilter tests fired (and
    every pattern once a replacement changed the text): it finds what searching with every
    pattern finds, secrets of several kinds in one text included. The tests that fired are the
    leading characters of the prefilter anchors the text holds."""
    lowered = text.lower()
    assert secret_patterns._fired(text) == (frozenset(
        anchor[:1] for anchor in secret_patterns._PREFILTER if anchor in lowered) if len(text) >= 8 else frozenset())
    every = secret_patterns._redact_searched(text)
    assert secret_patterns._scan(text) == (every if every[1] else (text, ()))


@pytest.mark.parametrize("window", [16, 40])
def test_a_long_text_is_searched_window_by_window_and_no_anchor_across_a_window_edge_is_missed(
        monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    """A text longer than a window is searched in overlapping windows: each anchor, placed at
    every offset around the windows' edges (alone, or overlapping another anchor), is found as
    the substring tests find it, in ASCII text (the automaton) and in text that is not."""
    monkeypatch.setattr(secret_patterns, "_WINDOW", max(window, 2 * secret_patterns._OVERLAP + 2))
    size = secret_patterns._WINDOW
    step = size - secret_patterns._OVERLAP
    for anchor in (*secret_patterns._PREFILTER, "keyj", "tokenkey"):
        # every position from just before a window's successor starts to just past its own end
        for offset in sorted({*range(step - len(anchor) - 1, size + 2), *range(2 * step - len(anchor) - 1, step + size + 2)}):
            for filler in ("x", "é"):
                text = filler * offset + anchor + filler * (2 * size)
                assert secret_patterns._fired(text) == frozenset(
                    lead[:1] for lead in secret_patterns._PREFILTER if lead in text.lower()), (anchor, offset, filler)
    tail = "x" * (3 * size) + "token"  # an anchor at the very end
    assert secret_patterns._fired(tail) == frozenset("t")
    short = "xx://xxx"  # shorter than the overlap: one window, the text itself
    assert len(short) <= secret_patterns._OVERLAP and secret_patterns._fired(short) == frozenset(":")


def test_the_windows_of_the_real_size_cover_their_edges() -> None:
    """At the real window size, anchors straddling the ends of the first two windows are found."""
    size = secret_patterns._WINDOW
    step = size - secret_patterns._OVERLAP
    text = "x" * (size - 2) + "token" + "x" * (step - 6) + "ghp_" + "x" * size + "credential"
    assert text.index("token") < size < text.index("token") + 5
    assert text.index("ghp_") < step + size < text.index("ghp_") + 4
    assert len(text) > 2 * size
    assert secret_patterns._fired(text) == frozenset("tgc")


def test_every_token_pattern_is_ruled_out_only_by_tests_its_anchors_fire() -> None:
    """Each token pattern is skipped only when none of the prefilter tests its anchors fire
    fired; a pattern whose anchor no prefilter anchor lies inside is always searched."""
    for pattern in secret_patterns._TOKEN_PATTERNS:
        firsts = secret_patterns._PREFILTER_FIRSTS[pattern.kind]
        for own in pattern.anchors:
            fired = secret_patterns._fired(f"text {own} text")
            assert firsts is None or not fired.isdisjoint(firsts), (pattern.kind, own)
    assert secret_patterns._PREFILTER_FIRSTS["slack_webhook"] is None


def test_a_text_seen_again_is_looked_up_and_one_byte_more_is_a_new_text() -> None:
    seen = secret_patterns._Seen(10_000)
    text = "the tool printed " + "x" * 300 + "\n"
    assert seen.redact(text) == (text, ())
    kept = "the key is " + "x" * 300  # searched (it holds an anchor), nothing found: the very string
    assert seen.redact(kept)[0] is kept and seen.redact("".join(list(kept)))[0] is not kept
    copy = "".join(list(text))  # equal characters, another object: the very argument comes back
    assert copy is not text and seen.redact(copy)[0] is copy
    with_secret = text[:-1] + " " + GITHUB + "\n"  # the replayed text with a secret added
    redacted, found = seen.redact(with_secret)
    assert GITHUB not in redacted and found == (("github_token", sha(GITHUB)),)
    assert seen.redact(with_secret) == (redacted, found) == redact_text(with_secret)


def test_texts_are_remembered_only_inside_a_batch_and_dropped_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside :func:`remembering_texts` (the receiver handling one delivery) nothing captured is
    kept: every text is scanned. Inside it (a batch ingest) a text seen again is looked up, and the
    memory, which holds text as captured (secrets included), is dropped when the block ends."""
    scanned: list[str] = []
    real = secret_patterns._scan
    monkeypatch.setattr(secret_patterns, "_scan", lambda text: scanned.append(text) or real(text))
    text = "the tool printed " + "z" * 300 + f" {GITHUB}\n"
    assert secret_patterns._MEMORY.get() is None
    assert redact_text(text) == redact_text(text) and len(scanned) == 2
    with secret_patterns.remembering_texts():
        memory = secret_patterns._MEMORY.get()
        assert memory is not None
        assert redact_text(text) == redact_text(text) and len(scanned) == 3
        assert text in memory._texts
    assert secret_patterns._MEMORY.get() is None
    redact_text(text)
    assert len(scanned) == 4


def test_the_texts_remembered_stay_within_the_bound() -> None:
    seen = secret_patterns._Seen(2_000)
    texts = [f"text {n} " + "y" * 200 + (f" {GITHUB}" if n % 3 == 0 else "") for n in range(50)]
    results = [seen.redact(text) for text in texts]
    assert seen._size <= 2_000 and len(seen._texts) < 10
    assert [seen.redact(text) for text in reversed(texts)] == results[::-1]  # evicted ones scanned again alike
    assert results == [redact_text(text) for text in texts]


def test_json_source_text_keeps_every_byte_but_the_secret_string() -> None:
    source = '{"a": "caf\\u00e9",  "cmd": "export GITHUB_TOKEN=' + GITHUB + '\\nls", "sha": "' + COMMIT_SHA + '"}'
    redacted, found = redact_json_source(source)
    assert found == (("github_token", sha(GITHUB)),)
    assert redacted.startswith('{"a": "caf\\u00e9",  "cmd": ')
    assert json.loads(redacted)["cmd"] == f"export GITHUB_TOKEN={content_marker('github_token', GITHUB)}\nls"
    assert json.loads(redacted)["sha"] == COMMIT_SHA


def test_the_setting_turns_content_redaction_off(monkeypatch: pytest.MonkeyPatch) -> None:
    text = f"GITHUB_TOKEN={GITHUB}"
    with content_redaction(False):
        assert redact_value(text) == text
    monkeypatch.setenv("SEDIMENT_REDACT_CONTENT", "0")
    assert redact_value(text) == text
    with content_redaction(True):
        assert GITHUB not in redact_value(text)
    monkeypatch.setenv("SEDIMENT_REDACT_CONTENT", "1")
    assert GITHUB not in redact_value(text)


def test_the_tally_counts_distinct_secrets_by_kind() -> None:
    tally = RedactionTally()
    with tallying(tally):
        redact_value([f"GITHUB_TOKEN={GITHUB}", f"again {GITHUB}", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
                      f"x {GITHUB_PAT}"])
    assert tally.counts() == {"aws_secret": 1, "github_token": 2}


# --- the calls path: parts, raw, replay ----------------------------------------------------------


def chat_pair(messages: list[dict[str, Any]], answer: str, response_id: str) -> dict[str, Any]:
    return {"session_id": "sess-secret", "observed_at": "2026-07-01T00:00:00Z",
            "request": {"model": "gpt-4.1", "messages": messages},
            "response": {"id": response_id, "model": "gpt-4.1", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}]}}


def session_records() -> list[dict[str, Any]]:
    """A replaying session: a tool call whose result is `cat .env`, a pasted key, an image part."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": f"use my key {OPENAI} please"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_BASE64}"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"cmd": "cat .env", "env": {"X": GITHUB}})}}]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nGIT_SHA={COMMIT_SHA}\n"},
    ]
    first = chat_pair(list(history), f"Done; commit {COMMIT_SHA}.", "resp-1")
    history.append({"role": "assistant", "content": f"Done; commit {COMMIT_SHA}."})
    history.append({"role": "user", "content": "thanks"})
    second = chat_pair(list(history), "ok", "resp-2")
    return [first, second]


def call_text(call: InferenceCall) -> str:
    return call.model_dump_json()


def test_a_call_keeps_markers_in_parts_and_raw_and_the_high_entropy_text() -> None:
    translation = translate_call(session_records()[0], format="openai-chat", org_id=ORG,
                                 captured_at=__import__("datetime").datetime(2026, 7, 1, tzinfo=__import__("datetime").UTC))
    (call,) = translation.facts
    assert isinstance(call, InferenceCall)
    text = call_text(call)
    for secret in (OPENAI, GITHUB, AWS_SECRET):
        assert secret not in text
    assert content_marker("openai_key", OPENAI) in call.input_messages[0].parts[0].content  # type: ignore[union-attr]
    assert call.input_messages[1].parts[0].arguments["env"]["X"] == content_marker("github_token", GITHUB)  # type: ignore[union-attr]
    assert content_marker("aws_secret", AWS_SECRET) in call.input_messages[2].parts[0].result  # type: ignore[union-attr]
    assert COMMIT_SHA in text and PNG_BASE64 in text  # the image part's base64 stays in raw, untouched
    raw_tool = call.raw["request"]["messages"][2]["content"]
    assert raw_tool == f"AWS_SECRET_ACCESS_KEY={content_marker('aws_secret', AWS_SECRET)}\nGIT_SHA={COMMIT_SHA}\n"


def test_a_replayed_message_redacts_to_the_bytes_of_its_first_appearance() -> None:
    from datetime import UTC, datetime

    memo = ReplayMemo()
    first, second = (translate_call(r, format="openai-chat", org_id=ORG, captured_at=datetime(2026, 7, 1, tzinfo=UTC),
                                    memo=memo).facts[0] for r in session_records())
    plain = [translate_call(r, format="openai-chat", org_id=ORG, captured_at=datetime(2026, 7, 1, tzinfo=UTC)).facts[0]
             for r in session_records()]
    assert isinstance(first, InferenceCall) and isinstance(second, InferenceCall)
    assert second.input_messages[:3] == first.input_messages
    assert second.raw["request"]["messages"][:3] == first.raw["request"]["messages"]
    assert [first, second] == plain  # the identity cache changes nothing


def test_a_cached_walk_of_replayed_lists_gives_what_an_uncached_walk_gives() -> None:
    """Call after call a list replays the previous one's very items, with items rewritten
    (a secret added, one character more), dropped from the front (compaction) or added; the
    cached walk (the prefix of very items reused) gives the same values and findings, in the
    same order, as walking each list from scratch."""
    from sediment.ingest.redaction.content import ContentCache, redact_found

    pool = [f"plain text {n} " + "z" * 40 for n in range(4)] + [f"key {GITHUB}", f"DB_PASSWORD={PASSWORD}\n",
                                                                f"near ghp_{'Q' * 29}"]
    for seed in range(25):
        rng = random.Random(seed)
        cache = ContentCache()
        items: list[Any] = []
        for _ in range(8):
            step = rng.choice(["add", "add", "rewrite", "compact", "grow"])
            if step == "rewrite" and items:
                items[rng.randrange(len(items))] = {"role": "tool", "content": rng.choice(pool)}
            elif step == "compact" and items:
                items = items[rng.randrange(len(items)):]
            elif step == "grow" and items:
                index = rng.randrange(len(items))
                items[index] = {**items[index], "content": items[index]["content"] + "Q"}
            items.append({"role": rng.choice(["user", "assistant"]), "content": rng.choice(pool)})
            record = {"request": {"messages": list(items)}, "note": rng.choice(pool)}
            cached = redact_found(record, cache=cache)
            cache.turn()
            assert cached == redact_found(json.loads(json.dumps(record)))


# --- end to end, one per path --------------------------------------------------------------


def sediment(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": "/usr/bin:/bin", "SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": ORG,
               "SEDIMENT_CAPTURE_TIME": "2026-07-09T00:00:00Z", **(env or {})}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=300)


def stored(home: Path, table: str) -> str:
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    try:
        return "\n".join(fact.model_dump_json() for fact in store.facts(table, ORG))
    finally:
        store.close()


def test_ingest_calls_stores_markers_and_counts_them_and_the_flag_turns_it_off(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in session_records()), encoding="utf-8")
    home = tmp_path / "home"
    done = sediment("ingest", "calls", str(path), "--format", "openai-chat", "--json", home=home)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["stored"] == {"inference_calls": 2}
    assert report["redacted"] == {"aws_secret": 1, "github_token": 1, "openai_key": 1}
    text = stored(home, "inference_calls")
    assert all(secret not in text for secret in (OPENAI, GITHUB, AWS_SECRET))
    assert content_marker("aws_secret", AWS_SECRET) in text and COMMIT_SHA in text
    human = sediment("ingest", "calls", str(path), "--format", "openai-chat", home=tmp_path / "human")
    assert "redacted: aws_secret: 1, github_token: 1, openai_key: 1" in human.stderr
    assert "content redaction is off" not in human.stderr
    # the bundle derived from the store holds the markers, never the secrets
    bundle = tmp_path / "bundle"
    derived = sediment("derive", "--out", str(bundle), home=home)
    assert derived.returncode == 0, derived.stderr
    written = "".join(p.read_text(encoding="utf-8", errors="replace") for p in bundle.rglob("*") if p.is_file())
    assert all(secret not in written for secret in (OPENAI, GITHUB, AWS_SECRET))
    off = sediment("ingest", "--no-redact-content", "calls", str(path), "--format", "openai-chat", "--json",
                   home=tmp_path / "off")
    assert off.returncode == 0, off.stderr
    assert off.stderr.count("content redaction is off") == 1
    assert json.loads(off.stdout)["redacted"] == {}
    assert AWS_SECRET in stored(tmp_path / "off", "inference_calls")
    by_env = sediment("ingest", "calls", str(path), "--format", "openai-chat", home=tmp_path / "env",
                      env={"SEDIMENT_REDACT_CONTENT": "0"})
    assert by_env.stderr.count("SEDIMENT_REDACT_CONTENT=0") == 1


def test_ingest_otlp_redacts_bodies_and_attribute_values(tmp_path: Path) -> None:
    batch = json.loads((FIXTURES / "otlp" / "claude_code.json").read_text(encoding="utf-8"))
    records = batch["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    decision = next(r for r in records if r["body"].get("stringValue") == "claude_code.tool_decision"
                    and {"key": "tool_name", "value": {"stringValue": "Read"}} not in r["attributes"])
    decision["attributes"].append({"key": "tool_parameters", "value": {
        "stringValue": json.dumps({"command": f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com"})}})
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps(batch), encoding="utf-8")
    home = tmp_path / "home"
    done = sediment("ingest", "otlp", str(path), "--json", home=home)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["redacted"] == {"bearer": 1}
    text = stored(home, "developer_decisions")
    assert BEARER not in text and sha(BEARER) in text


def test_a_ci_webhook_payload_is_stored_with_markers(tmp_path: Path) -> None:
    delivery = json.loads((FIXTURES / "github" / "workflow_run.completed.success.json").read_text(encoding="utf-8"))
    body = delivery.get("payload", delivery)
    body["workflow_run"]["head_commit"]["message"] = f"ci: rotate key\n\nold key was {GITHUB}"
    path = tmp_path / "hook.json"
    path.write_text(json.dumps(delivery), encoding="utf-8")
    home = tmp_path / "home"
    done = sediment("ingest", "github", str(path), "--json", home=home)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["redacted"] == {"github_token": 1}
    text = stored(home, "ci_outcomes")
    assert GITHUB not in text and content_marker("github_token", GITHUB) in text


def test_ingest_transcripts_redacts_tool_results(tmp_path: Path) -> None:
    session = "0b5c1f3e-2a4d-4e6f-8a9b-1c2d3e4f5a6b"
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": session, "timestamp": "2026-07-01T00:00:00Z",
         "cwd": "/repo", "version": "2.1.0", "message": {"role": "user", "content": "show me the env file"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": session,
         "timestamp": "2026-07-01T00:00:01Z", "requestId": "req_1", "cwd": "/repo", "version": "2.1.0",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "tool_use",
                     "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat .env"}}],
                     "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": session, "timestamp": "2026-07-01T00:00:02Z",
         "cwd": "/repo", "version": "2.1.0",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": f"DB_PASSWORD={PASSWORD}\nSLACK={SLACK}\n"}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "u2", "sessionId": session,
         "timestamp": "2026-07-01T00:00:03Z", "requestId": "req_2", "cwd": "/repo", "version": "2.1.0",
         "message": {"id": "msg_2", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
                     "content": [{"type": "text", "text": "It holds a database password and a Slack token."}],
                     "usage": {"input_tokens": 20, "output_tokens": 9}}},
    ]
    path = tmp_path / f"{session}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    home = tmp_path / "home"
    done = sediment("ingest", "transcripts", "claude-code", str(path), "--json", home=home)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["redacted"] == {"named_secret": 1, "slack_token": 1}
    text = stored(home, "inference_calls")
    assert text and PASSWORD not in text and SLACK not in text
    assert content_marker("named_secret", PASSWORD) in text


def test_trajectory_import_redacts_events_and_raw_record_and_records_it(tmp_path: Path) -> None:
    source = (FIXTURES / "sweagent" / "acme__calc-7.history_short.traj").read_text(encoding="utf-8")
    assert "bash-$" in source
    dirty = source.replace("bash-$", f"bash-$ cat .env\\nHF_TOKEN={HUGGINGFACE}\\n", 1)
    path = tmp_path / "acme__calc-7.traj"
    path.write_text(dirty, encoding="utf-8")
    out = tmp_path / "records.jsonl"
    done = sediment("trajectory", "import", "swe-agent-traj", str(path), "--out", str(out), home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert HUGGINGFACE not in text
    assert content_marker("huggingface_token", HUGGINGFACE) in text
    (record,) = (json.loads(line) for line in text.splitlines())
    assert [t for t in record["transformations"] if t["detail"].get("field") == "content"] == [
        {"name": "redact-secrets", "version": "1", "detail": {"field": "content", "kinds": {"huggingface_token": 1}}}]
    again = tmp_path / "again.jsonl"
    assert sediment("trajectory", "import", "swe-agent-traj", str(path), "--out", str(again),
                    home=tmp_path / "home").returncode == 0
    assert again.read_text(encoding="utf-8") == text  # deterministic: the same id and bytes


def test_an_earlier_commands_no_redact_content_never_carries_over() -> None:
    """Each capturing command sets redaction anew: after `ingest --no-redact-content`, a later
    command in the same process (a test runner, a chain of commands) redacts again."""
    from sediment.cli import settings
    from sediment.ingest.redaction.content import content_redaction_enabled

    settings.content_redaction(True)
    assert not content_redaction_enabled()
    settings.content_redaction()
    assert content_redaction_enabled()
