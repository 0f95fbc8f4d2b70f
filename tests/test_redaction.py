"""Credential redaction of captured records (sediment.ingest.redaction.credentials): the one list, the
marker, what is never touched, and that docs/operate.md documents the very list."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest import TranslationError
from sediment.ingest.redaction.credentials import (
    CONTENT_MEMBERS,
    CREDENTIAL_NAMES,
    MARKER_PREFIX,
    NAME_WORDS,
    QUERY_PARAMETERS,
    is_credential_name,
    is_marker,
    marker,
    redact_json_text,
    redact_record,
)

OPERATE = Path(__file__).resolve().parents[1] / "docs" / "operate.md"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_the_marker_is_a_string_keeping_the_sha256_of_the_value() -> None:
    assert marker("Bearer sk-1") == f"[redacted sha256:{sha256('Bearer sk-1')}]"
    assert MARKER_PREFIX == "[redacted sha256:"
    assert is_marker(marker("Bearer sk-1"))
    assert marker(marker("Bearer sk-1")) == marker("Bearer sk-1")  # a marker is not redacted again
    assert not is_marker("[redacted sha256:abc]") and not is_marker(f" {marker('x')}")
    lone = "half \ud83d"
    assert marker(lone) == f"[redacted sha256:{sha256(lone)}]"  # lone surrogates hash too
    assert marker("") == f"[redacted sha256:{sha256('')}]"


def test_the_list_is_one_list_of_distinct_names() -> None:
    normalized = [name.lower().replace("-", "_") for name in CREDENTIAL_NAMES]
    assert len(set(normalized)) == len(normalized)
    assert all(name == name.lower().strip() for name in CREDENTIAL_NAMES)
    for required in ("authorization", "proxy-authorization", "x-api-key", "api-key", "openai-api-key",
                     "anthropic-api-key", "cookie", "set-cookie", "x-goog-api-key", "user_api_key_hash"):
        assert required in CREDENTIAL_NAMES
    assert is_credential_name("api_key")  # the field and the Azure header are one entry


def test_a_star_stands_for_any_characters() -> None:
    for name in ("x-portkey-api-key", "azure_api_key", "GROQ_API_KEY", "llm_provider-x-custom-api-key"):
        assert is_credential_name(name)
    for name in ("api-key-id", "x-api-keys", "apikey"):
        assert not is_credential_name(name)


@pytest.mark.parametrize("entry", CREDENTIAL_NAMES)
def test_every_listed_name_is_redacted_in_any_case_as_header_and_as_field(entry: str) -> None:
    name = entry.replace("*", "vendor")
    spellings = {name, name.upper(), name.title(), name.replace("-", "_"), name.replace("_", "-")}
    for spelling in spellings:
        assert is_credential_name(spelling)
        record = {"headers": {spelling: "secret-1", "accept": "*/*"}, "metadata": {spelling: "secret-2"}}
        assert redact_record(record) == {
            "headers": {spelling: marker("secret-1"), "accept": "*/*"},
            "metadata": {spelling: marker("secret-2")},
        }


def test_litellm_forwarded_provider_headers_match_without_their_prefix() -> None:
    record = {"hidden_params": {"additional_headers": {"llm_provider-set-cookie": "__cf_bm=1",
                                                       "llm_provider-x-request-id": "req_1"}}}
    assert redact_record(record) == {"hidden_params": {"additional_headers": {
        "llm_provider-set-cookie": marker("__cf_bm=1"), "llm_provider-x-request-id": "req_1"}}}


@pytest.mark.parametrize(
    "name",
    ["user_api_key_user_id", "user_api_key_alias", "user_api_key_team_id", "x-sediment-session",
     "x-codex-turn-metadata", "api_base", "cache_key", "session_id", "user_id", "key", "token",
     "prompt_tokens", "x-request-id", "authorization-hint", "api_key_id"],
)
def test_names_off_the_list_are_kept(name: str) -> None:
    assert not is_credential_name(name)
    record = {"headers": {name: "v"}, "metadata": {name: "v"}}
    assert redact_record(record) is record


def test_values_keep_their_type() -> None:
    record: dict[str, Any] = {
        "headers": {"cookie": ["a=1", "b=2"], "authorization": None, "x-api-key": 7, "api-key": True},
        "litellm_params": {"vertex_credentials": {"type": "service_account", "private_key": "-----BEGIN"}},
    }
    assert redact_record(record) == {
        "headers": {"cookie": [marker("a=1"), marker("b=2")], "authorization": None, "x-api-key": 7, "api-key": True},
        "litellm_params": {"vertex_credentials": {"type": marker("service_account"), "private_key": marker("-----BEGIN")}},
    }


def test_redaction_copies_only_the_path_to_a_credential_and_never_mutates() -> None:
    messages = [{"role": "user", "content": "hi"}]
    record = {"request": {"messages": messages}, "headers": {"Authorization": "Bearer x"}, "extra": {"a": [1]}}
    received = copy.deepcopy(record)
    redacted = redact_record(record)
    assert record == received
    assert redacted is not record and redacted["headers"] is not record["headers"]
    assert redacted["request"] is record["request"] and redacted["extra"] is record["extra"]
    assert list(redacted) == list(record)  # member order kept
    assert redact_record(redacted) == redacted  # idempotent: redacting twice changes nothing
    clean = {"request": {"messages": messages}, "headers": {"x-sediment-session": "s"}}
    assert redact_record(clean) is clean


def test_credentials_are_found_at_any_depth_of_the_metadata_and_in_lists() -> None:
    record = {"calls": [{"meta": {"deep": {"api_key": "k"}}}, {"x": 1}], "a": {"b": [[{"cookie": "c"}]]}}
    assert redact_record(record) == {
        "calls": [{"meta": {"deep": {"api_key": marker("k")}}}, {"x": 1}],
        "a": {"b": [[{"cookie": marker("c")}]]},
    }


@pytest.mark.parametrize("member", sorted(CONTENT_MEMBERS))
def test_content_is_never_touched(member: str) -> None:
    content = {"authorization": "Bearer in a tool result", "properties": {"api_key": {"type": "string"}},
               "nested": [{"cookie": "c=1"}]}
    record = {"request": {member: content}, "response": {member: [content]}, member: content}
    assert redact_record(record) is record


def test_a_tool_schema_with_credential_property_names_is_kept() -> None:
    schema = {"type": "object", "properties": {"api_key": {"type": "string"}}, "required": ["api_key"]}
    record = {"request": {"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
                          "text": {"format": {"type": "json_schema", "schema": schema}}}}
    assert redact_record(record) is record


def test_operate_md_documents_the_list_and_the_marker() -> None:
    text = OPERATE.read_text(encoding="utf-8")
    section = text[text.index("### Capture: what a call keeps"):]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    listed = re.search(r"Redacted names: (.*?)\.\n", section, re.S)
    assert listed is not None
    assert re.findall(r"`([^`]+)`", listed.group(1)) == list(CREDENTIAL_NAMES)
    assert '"[redacted sha256:<hex>]"' in section
    assert all(f"`{name}`" in section for name in QUERY_PARAMETERS)
    for member in CONTENT_MEMBERS:
        assert f"`{member}`" in section


def test_a_record_too_deep_to_walk_is_a_translation_error() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(TranslationError, match=r"^record: nested too deeply$"):
        redact_record({"metadata": deep})


def test_credential_query_parameters_of_a_url_are_redacted() -> None:
    # LiteLLM logs a Gemini call's api_base with Google's ?key= (its masking hides only a prefix).
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?key=*****yA1b&alt=sse"
    record = {"hidden_params": {"api_base": url}, "api_base": "HTTPS://proxy.internal/v1?API_KEY=k2#frag",
              "links": ["https://example.com/page?alt=json&page=2"], "note": "key=not-a-url"}
    assert redact_record(record) == {
        "hidden_params": {"api_base": url.replace("*****yA1b", marker("*****yA1b"))},
        "api_base": f"HTTPS://proxy.internal/v1?API_KEY={marker('k2')}#frag",
        "links": ["https://example.com/page?alt=json&page=2"],
        "note": "key=not-a-url",
    }
    assert QUERY_PARAMETERS == ("key",)
    redacted = redact_record(record)
    assert redact_record(redacted) is redacted
    content = {"messages": [{"role": "user", "content": url}]}
    assert redact_record(content) is content


def test_userinfo_passwords_and_forge_tokens_in_urls_are_redacted() -> None:
    """A git remote with a token (Copilot reports the workspace's remote URL)."""
    record = {"remote": "https://oauth2:glpat-SeCrEt@gitlab.com/group/repo.git",
              "mirror": "https://x-access-token:ghs_abc123@github.com/o/r.git?ref=main&token=t1",
              "bare": "https://ghp_0123456789abcdef@github.com/o/r.git",
              "user_only": "https://alice@example.com/repo.git", "empty": "https://:@example.com/",
              "ssh": "git@github.com:o/r.git", "plain": "https://github.com/o/r.git"}
    redacted = redact_record(record)
    assert redacted == {
        "remote": f"https://oauth2:{marker('glpat-SeCrEt')}@gitlab.com/group/repo.git",
        "mirror": f"https://x-access-token:{marker('ghs_abc123')}@github.com/o/r.git?ref=main&token=t1",
        "bare": f"https://{marker('ghp_0123456789abcdef')}@github.com/o/r.git",
        "user_only": "https://alice@example.com/repo.git", "empty": "https://:@example.com/",
        "ssh": "git@github.com:o/r.git", "plain": "https://github.com/o/r.git",
    }
    assert redact_record(redacted) is redacted  # idempotent, the very record
    clean = {"plain": "https://github.com/o/r.git"}
    assert redact_record(clean) is clean


# --- the shared rule for credential-shaped names, dotted attributes and URL userinfo ---------


@pytest.mark.parametrize("name", [
    "refresh_token", "github_token", "id_token", "session_token", "aws_secret_access_key", "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "x-auth-token", "secret", "webhook_secret", "SecretKey", "password",
    "db_password", "DEPLOY_PASSWORD", "accessToken", "apiKey", "openaiApiKey", "clientSecret",
    "http.request.header.authorization", "http.request.header.x-api-key", "http.request.header.cookie",
    "auth.refresh_token",
])
def test_credential_shaped_names_match(name: str) -> None:
    assert is_credential_name(name)
    record = {"env": {name: "s3cr3t-value"}}
    assert redact_record(record) == {"env": {name: marker("s3cr3t-value")}}


@pytest.mark.parametrize("name", ["max_tokens", "maxTokens", "input_tokens", "gen_ai.usage.input_tokens",
                                  "http.request.header.content-type", "token_count", "tokens",
                                  "http.request.method", "keyboard", "a.", "."])
def test_names_that_only_look_alike_are_kept(name: str) -> None:
    assert not is_credential_name(name)


def test_every_listed_name_holds_a_word_of_the_text_prefilter() -> None:
    for entry in CREDENTIAL_NAMES:
        assert any(word in entry for word in NAME_WORDS), entry


def test_url_userinfo_of_any_scheme_keeps_the_host() -> None:
    record = {"db": "postgres://app:pa55w0rd@db.internal:5432/main",
              "at_sign": "https://deploy:p@ss@git.example.com/r.git",
              "classic": f"https://{'0123456789abcdef' * 2}01234567@github.com/o/r.git",
              "template": "https://oauth2:${GITLAB_TOKEN}@gitlab.com/g/r.git",
              "login": "https://octocat@github.com/o/r.git", "path_at": "https://example.com/pkg@1.2.3"}
    assert redact_record(record) == {
        "db": f"postgres://app:{marker('pa55w0rd')}@db.internal:5432/main",
        "at_sign": f"https://deploy:{marker('p@ss')}@git.example.com/r.git",
        "classic": f"https://{marker('0123456789abcdef' * 2 + '01234567')}@github.com/o/r.git",
        "template": "https://oauth2:${GITLAB_TOKEN}@gitlab.com/g/r.git",
        "login": "https://octocat@github.com/o/r.git", "path_at": "https://example.com/pkg@1.2.3"}


def test_content_members_are_read_when_the_caller_says_the_record_holds_no_conversation() -> None:
    record = {"build": {"parameters": {"DEPLOY_PASSWORD": "hunter2"}, "input": {"api_key": "k"}}}
    assert redact_record(record) is record  # a call's content is never read
    assert redact_record(record, content=frozenset()) == {
        "build": {"parameters": {"DEPLOY_PASSWORD": marker("hunter2")}, "input": {"api_key": marker("k")}}}


def test_json_text_is_redacted_in_place_by_the_same_rule() -> None:
    text = ('{"config": {"refresh_token": "rt\\u002d1", "github_token" : "gh-2", "api_key": "********",\n'
            ' "password": "", "session_token": "${SESSION_TOKEN}", "max_tokens": 5, "note": "id_token"},\n'
            ' "log": "remote: https://ci:tok3n@git.example.com/r.git and bob@example.com"}')
    redacted, count = redact_json_text(text)
    assert count == 3
    assert redacted == (
        f'{{"config": {{"refresh_token": "{marker("rt-1")}", "github_token" : "{marker("gh-2")}", '
        '"api_key": "********",\n'
        ' "password": "", "session_token": "${SESSION_TOKEN}", "max_tokens": 5, "note": "id_token"},\n'
        f' "log": "remote: https://ci:{marker("tok3n")}@git.example.com/r.git and bob@example.com"}}')
    assert json.loads(redacted)["config"]["refresh_token"] == redact_record({"t": {"refresh_token": "rt-1"}})["t"][
        "refresh_token"]  # the marker of the decoded value, as redact_record gives
    assert redact_json_text(redacted) == (redacted, 0)  # redacting twice changes nothing
