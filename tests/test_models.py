"""Fact models and identity types (docs/evidence.md)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from sediment.identifiers import has_unpaired_surrogate, normalize_repo_slug
from sediment.model.facts import (
    CIOutcome,
    DeveloperDecision,
    InferenceCall,
    InferenceMessage,
    PullRequestMerge,
    Push,
    ReasoningPart,
    RepositoryIdentity,
    RepositoryRename,
    SessionCommitObservation,
    TestCaseResult,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SHA40 = "0123456789abcdef0123456789abcdef01234567"
SHA64 = "0123456789abcdef" * 4
IDENTITY = {
    "repository_provider": "github",
    "repository_host": "github.com",
    "repository_id": "123456",
}

CI_OUTCOME_FIELDS = [
    "schema_version",
    "repository_provider",
    "repository_host",
    "repository_id",
    "outcome_id",
    "org_id",
    "provider",
    "run_id",
    "run_attempt",
    "repo",
    "commit_sha",
    "branch",
    "result",
    "workflow_name",
    "workflow_id",
    "workflow_path",
    "run_url",
    "provider_result",
    "error_type",
    "reason",
    "source_event_type",
    "source_spec_version",
    "source_event_id",
    "pr_number",
    "captured_at",
    "raw",
]

INFERENCE_CALL_FIELDS = [
    "schema_version",
    "inference_call_id",
    "org_id",
    "session_id",
    "user_id",
    "gateway_provider",
    "model_provider",
    "model",
    "input_messages",
    "output_messages",
    "tools",  # the request's tool definitions (not yet in the upstream Fact's field list)
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "model_call_id",
    "observed_at",
    "raw",
    "capture",  # how a call not recorded on the wire was captured (docs/transcripts.md; not an upstream field)
]


# --- factories -----------------------------------------------------------------------


def invalid(field: str, message: str = "") -> str:
    """The ``match`` pattern of a ValidationError on ``field`` (pydantic prints each error's
    location on its own line, the message indented below it), optionally with ``message``."""
    return rf"\n{re.escape(field)}\n  {message}"


def model_error(message: str) -> str:
    """The ``match`` pattern of a model-level error (no location line), by its message."""
    return rf"validation error for \w+\n  Value error, {message}"


def ci_outcome(**overrides: Any) -> CIOutcome:
    return CIOutcome(**{"outcome_id": "out-1", "org_id": "acme", "provider": "github_actions", "run_id": "run-1",
                        "repo": "acme/widget", "commit_sha": SHA40, "branch": "main", "result": "passed",
                        "captured_at": T0} | overrides)


def inference_call(**overrides: Any) -> InferenceCall:
    return InferenceCall(**{"inference_call_id": "call-1", "org_id": "acme", "session_id": "sess-1",
                            "observed_at": T0} | overrides)


def decision(**overrides: Any) -> DeveloperDecision:
    return DeveloperDecision(**{"decision_id": "dec-1", "org_id": "acme", "session_id": "sess-1",
                                "agent_harness": "codex", "accepted": False, "explicit": True,
                                "interaction_mode": "inline", "occurred_at": T0, "captured_at": T0} | overrides)


def observation(**overrides: Any) -> SessionCommitObservation:
    return SessionCommitObservation(**{"observation_id": "obs-1", "org_id": "acme", "repo": "acme/widget",
                                       "commit_sha": SHA40, "session_id": "sess-1", "captured_at": T0} | overrides)


def merge(**overrides: Any) -> PullRequestMerge:
    return PullRequestMerge(**{"merge_id": "m-1", "org_id": "acme", "repo": "acme/widget", "pr_number": 7,
                               "head_ref": "refs/heads/feature", "head_sha": SHA40, "base_ref": "main",
                               "base_sha": SHA40, "merge_commit_sha": SHA40, "merged_at": T0,
                               "captured_at": T0} | overrides)


# --- org ids -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("acme", "acme"),
        ("Acme", "acme"),
        ("  ACME-Corp  ", "acme-corp"),
        ("acme.io_team-2", "acme.io_team-2"),
        ("0rg", "0rg"),
        ("a" * 64, "a" * 64),
    ],
)
def test_org_id_is_normalized_to_lowercase(raw: str, normalized: str) -> None:
    assert ci_outcome(org_id=raw).org_id == normalized
    assert inference_call(org_id=raw).org_id == normalized
    assert decision(org_id=raw).org_id == normalized


@pytest.mark.parametrize(
    "raw", ["", "   ", "-acme", ".acme", "_acme", "acme corp", "acme/x", "a" * 65, "ácme", "acme\x00"]
)
def test_invalid_org_ids_are_rejected(raw: str) -> None:
    with pytest.raises(ValidationError, match=invalid("org_id", "Value error, org id must match")):
        ci_outcome(org_id=raw)
    with pytest.raises(ValidationError, match=invalid("org_id", "Value error, org id must match")):
        inference_call(org_id=raw)


# --- non-empty ids -------------------------------------------------------------------


def test_ids_are_stripped() -> None:
    outcome = ci_outcome(outcome_id="  out-1 ", run_id="\t42\n")
    assert outcome.outcome_id == "out-1"
    assert outcome.run_id == "42"
    call = inference_call(inference_call_id=" c ", session_id=" s ", model=" gpt ")
    assert (call.inference_call_id, call.session_id, call.model) == ("c", "s", "gpt")


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("a\x00b", id="nul"),
        pytest.param("\x00", id="only-nul"),
        pytest.param("id-\ud800", id="lone-high-surrogate"),
        pytest.param("\udc00-id", id="lone-low-surrogate"),
    ],
)
def test_non_empty_ids_reject_empty_nul_and_lone_surrogates(bad: str) -> None:
    for field, build in (
        ("outcome_id", lambda: ci_outcome(outcome_id=bad)),
        ("run_id", lambda: ci_outcome(run_id=bad)),
        ("inference_call_id", lambda: inference_call(inference_call_id=bad)),
        ("session_id", lambda: inference_call(session_id=bad)),
        ("user_id", lambda: inference_call(user_id=bad)),
        ("call_id", lambda: decision(call_id=bad)),
        ("session_id", lambda: observation(session_id=bad)),
        ("id", lambda: ToolCallPart(id=bad, name="x", arguments={})),
        ("id", lambda: ToolCallResponsePart(id=bad, result=None)),
    ):
        with pytest.raises(ValidationError, match=invalid(field, "Value error, identifier must not")):
            build()


def test_astral_characters_are_valid_in_ids() -> None:
    assert ci_outcome(outcome_id="out-🙂").outcome_id == "out-🙂"
    assert not has_unpaired_surrogate("🙂")
    assert has_unpaired_surrogate("\ud83d")


# --- commit SHAs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        (SHA40, SHA40),
        (SHA40.upper(), SHA40),
        (f"  {SHA40}\n", SHA40),
        (SHA64, SHA64),
        (SHA64.upper(), SHA64),
    ],
)
def test_commit_shas_are_full_length_and_lowercased(raw: str, normalized: str) -> None:
    assert ci_outcome(commit_sha=raw).commit_sha == normalized
    assert observation(commit_sha=raw).commit_sha == normalized
    assert decision(commit_sha=raw).commit_sha == normalized


@pytest.mark.parametrize(
    "raw",
    ["", SHA40[:7], SHA40[:39], SHA40 + "0", SHA64[:63], SHA64 + "0", "g" * 40, SHA40[:39] + " "],
)
def test_invalid_commit_shas_are_rejected(raw: str) -> None:
    with pytest.raises(ValidationError, match=invalid("commit_sha", "Value error, commit SHA must be 40 or 64 hex")):
        ci_outcome(commit_sha=raw)
    with pytest.raises(ValidationError, match=invalid("commit_sha", "Value error, commit SHA must be 40 or 64 hex")):
        decision(commit_sha=raw)


def test_decision_commit_sha_is_optional() -> None:
    assert decision().commit_sha is None


# --- repository slugs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("acme/widget", "acme/widget"),
        ("Acme/Widget", "acme/widget"),
        ("  ACME/Widget.JS  ", "acme/widget.js"),
        ("my-org/my_repo.v2", "my-org/my_repo.v2"),
    ],
)
def test_repo_slug_is_stripped_and_lowercased(raw: str, normalized: str) -> None:
    assert ci_outcome(repo=raw).repo == normalized
    assert observation(repo=raw).repo == normalized
    assert normalize_repo_slug(raw) == normalized


@pytest.mark.parametrize(
    "raw", ["", "   ", "acme", "acme/", "/widget", "a/b/c", "acme/..", "../widget", "ac me/widget"]
)
def test_invalid_repo_slugs_are_rejected(raw: str) -> None:
    with pytest.raises(ValidationError, match=invalid("repo", "Value error, repository must ")):
        ci_outcome(repo=raw)


def test_empty_repo_slug_is_the_absent_sentinel_where_allowed() -> None:
    assert normalize_repo_slug("") == ""
    assert normalize_repo_slug("   ") == ""
    assert merge(head_repo="").head_repo == ""
    assert merge(head_repo="Fork/Widget").head_repo == "fork/widget"
    with pytest.raises(ValidationError, match=invalid("head_repo", "Value error, repository must be 'owner/repo'")):
        merge(head_repo="not-a-slug")


# --- branches ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("main", "main"),
        ("refs/heads/main", "main"),
        ("refs/heads/refs/heads/main", "main"),
        ("refs/heads/refs/heads/refs/heads/feature/x", "feature/x"),
        ("  refs/heads/release/1.0  ", "release/1.0"),
        ("refs/tags/v1", "refs/tags/v1"),
        ("feature/refs/heads/x", "feature/refs/heads/x"),
    ],
)
def test_branch_strips_repeated_refs_heads_prefix(raw: str, normalized: str) -> None:
    assert ci_outcome(branch=raw).branch == normalized
    assert merge(head_ref=raw).head_ref == normalized


# --- repository identity triple ------------------------------------------------------


def test_identity_triple_wholly_present_is_accepted() -> None:
    outcome = ci_outcome(**IDENTITY)
    assert outcome.schema_version == 2
    assert (outcome.repository_provider, outcome.repository_host, outcome.repository_id) == (
        "github",
        "github.com",
        "123456",
    )
    assert outcome.is_identified
    assert not ci_outcome().is_identified
    assert observation(**IDENTITY).repository_id == "123456"


@pytest.mark.parametrize(
    "partial",
    [
        {"repository_provider": "github"},
        {"repository_host": "github.com"},
        {"repository_id": "123"},
        {"repository_provider": "github", "repository_host": "github.com"},
        {"repository_provider": "github", "repository_id": "123"},
        {"repository_host": "github.com", "repository_id": "123"},
    ],
)
def test_partial_identity_triple_is_rejected(partial: dict[str, str]) -> None:
    message = model_error("repository_provider, repository_host and repository_id are all present or all absent")
    with pytest.raises(ValidationError, match=message):
        ci_outcome(**partial)
    with pytest.raises(ValidationError, match=message):
        observation(**partial)
    with pytest.raises(ValidationError, match=message):
        merge(**partial)


@pytest.mark.parametrize("repository_id", ["0", "007", "-1", "12a", "", " 12", "1.0", "１２"])
def test_repository_id_must_be_canonical_positive_decimal(repository_id: str) -> None:
    message = model_error("repository_id must be canonical positive decimal text")
    with pytest.raises(ValidationError, match=message):
        ci_outcome(**{**IDENTITY, "repository_id": repository_id})
    with pytest.raises(ValidationError, match=message):
        RepositoryIdentity(provider="github", host="github.com", repository_id=repository_id)


@pytest.mark.parametrize("host", ["", "GitHub.com", " github.com"])
def test_repository_host_must_be_lowercase(host: str) -> None:
    with pytest.raises(ValidationError, match=model_error("repository_host must be a lowercase DNS host")):
        ci_outcome(**{**IDENTITY, "repository_host": host})


def test_repository_provider_vocabulary() -> None:
    assert ci_outcome(**{**IDENTITY, "repository_provider": "gitlab"}).repository_provider == "gitlab"
    assert RepositoryIdentity(provider="gitlab", host="gitlab.com", repository_id="1").provider == "gitlab"
    with pytest.raises(ValidationError, match=invalid("repository_provider", "Input should be 'github' or 'gitlab'")):
        ci_outcome(**{**IDENTITY, "repository_provider": "bitbucket"})
    with pytest.raises(ValidationError, match=invalid("provider", "Input should be 'github' or 'gitlab'")):
        RepositoryIdentity(provider="bitbucket", host="bitbucket.org", repository_id="1")  # type: ignore[arg-type]


def test_schema_version_one_forbids_identity() -> None:
    legacy = ci_outcome(schema_version=1)
    assert legacy.schema_version == 1
    assert not legacy.is_identified
    message = model_error("repository identity is forbidden on schema_version 1 Facts")
    with pytest.raises(ValidationError, match=message):
        ci_outcome(schema_version=1, **IDENTITY)
    with pytest.raises(ValidationError, match=message):
        observation(schema_version=1, **IDENTITY)


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (0, "Input should be 1 or 2"),
        (3, "Input should be 1 or 2"),
        ("2.0", "Input should be a valid integer, got str"),
        ("2", "Input should be a valid integer, got str"),
        (2.0, "Input should be a valid integer, got number"),
        (True, "Input should be a valid integer, got boolean"),
    ],
)
def test_unknown_schema_versions_are_rejected(version: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=invalid("schema_version", message)):
        ci_outcome(schema_version=version)


def test_inference_call_schema_version_is_one_only() -> None:
    assert inference_call().schema_version == 1
    with pytest.raises(ValidationError, match=invalid("schema_version", "Input should be 1")):
        inference_call(schema_version=2)
    with pytest.raises(ValidationError, match=invalid("schema_version", "Input should be a valid integer, got boolean")):
        inference_call(schema_version=True)


# --- CIOutcome field rules -----------------------------------------------------------


def test_ci_outcome_field_order_matches_contract() -> None:
    assert list(CIOutcome.model_fields) == CI_OUTCOME_FIELDS
    assert list(ci_outcome().model_dump()) == CI_OUTCOME_FIELDS
    assert list(ci_outcome(**IDENTITY).model_dump(mode="json")) == CI_OUTCOME_FIELDS


def test_inference_call_field_order_matches_contract() -> None:
    assert list(InferenceCall.model_fields) == INFERENCE_CALL_FIELDS


def test_ci_outcome_defaults() -> None:
    outcome = ci_outcome()
    assert outcome.schema_version == 2
    assert outcome.run_attempt is None
    assert outcome.workflow_name == ""
    for name in (
        "repository_provider",
        "repository_host",
        "repository_id",
        "workflow_id",
        "workflow_path",
        "run_url",
        "provider_result",
        "error_type",
        "reason",
        "source_event_type",
        "source_spec_version",
        "source_event_id",
        "pr_number",
    ):
        assert getattr(outcome, name) is None, name
    assert outcome.raw == {}


@pytest.mark.parametrize(
    "result", ["passed", "failed", "error", "timed_out", "cancelled", "skipped", "neutral", "unknown"]
)
def test_ci_result_vocabulary(result: str) -> None:
    outcome = ci_outcome(result=result)
    assert outcome.result == result
    assert outcome.is_verdict is (result in {"passed", "failed"})


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        pytest.param({"result": "success"}, "result", "Input should be 'passed'", id="result"),
        pytest.param({"provider": "travis"}, "provider", "Input should be 'github_actions'", id="provider"),
        pytest.param({"run_attempt": 0}, "run_attempt", "Input should be greater than or equal to 1", id="attempt-zero"),
        pytest.param({"run_attempt": -1}, "run_attempt", "Input should be greater than or equal to 1",
                     id="attempt-negative"),
        pytest.param({"run_attempt": True}, "run_attempt", "Input should be a valid integer", id="attempt-bool"),
        pytest.param({"run_attempt": "3"}, "run_attempt", "Input should be a valid integer", id="attempt-string"),
        pytest.param({"run_attempt": 3.0}, "run_attempt", "Input should be a valid integer", id="attempt-float"),
        pytest.param({"pr_number": 0}, "pr_number", "Input should be greater than or equal to 1", id="pr-zero"),
        pytest.param({"pr_number": "7"}, "pr_number", "Input should be a valid integer", id="pr-string"),
        pytest.param({"reason": "x" * 4097}, "reason", "String should have at most 4096 characters",
                     id="reason-too-long"),
        pytest.param({"outcome_id": "x" * 201}, "outcome_id", "String should have at most 200 characters",
                     id="id-too-long"),
        pytest.param({"captured_at": datetime(2024, 5, 1, 12, 0)}, "captured_at", "Input should have timezone info",
                     id="naive-datetime"),
        pytest.param({"captured_at": "2"}, "captured_at", "expected an RFC 3339 timestamp, got '2'",
                     id="time-digit-string"),
        pytest.param({"captured_at": 2}, "captured_at", "expected an RFC 3339 timestamp string, got number",
                     id="time-unix-seconds"),
        pytest.param({"captured_at": "0001-01-01T00:00:00+14:00"}, "captured_at", "timestamp out of range",
                     id="time-out-of-range"),
        pytest.param({"unexpected": 1}, "unexpected", "Extra inputs are not permitted", id="unknown-field"),
    ],
)
def test_ci_outcome_rejects_invalid_values(overrides: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ValidationError, match=invalid(field, re.escape(message))):
        ci_outcome(**overrides)


def test_ci_outcome_accepts_boundary_values() -> None:
    outcome = ci_outcome(run_attempt=1, pr_number=1, reason="x" * 4096)
    assert (outcome.run_attempt, outcome.pr_number, len(outcome.reason or "")) == (1, 1, 4096)
    for provider in ("github_actions", "jenkins", "gitlab_ci", "circleci", "buildkite", "other", "github_checks"):
        assert ci_outcome(provider=provider).provider == provider


def test_aware_datetimes_are_normalized_to_utc() -> None:
    local = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    outcome = ci_outcome(captured_at=local)
    assert outcome.captured_at == T0
    assert outcome.captured_at.utcoffset() == timedelta(0)
    assert inference_call(observed_at=local).observed_at.utcoffset() == timedelta(0)


def test_models_are_frozen() -> None:
    outcome = ci_outcome()
    with pytest.raises(ValidationError, match=invalid("result", "Instance is frozen")):
        outcome.result = "failed"  # type: ignore[misc]


# --- lossless raw payloads -----------------------------------------------------------


def _tricky_raw() -> dict[str, Any]:
    return {
        "nan": float("nan"),
        "inf": float("inf"),
        "neg_inf": float("-inf"),
        "lone": "value-\ud800",
        "key-\udfff": "surrogate key",
        "nul": "a\x00b",
        "nested": {"list": [float("nan"), "\udc00", {"deep": float("-inf")}]},
    }


def _assert_tricky_raw(raw: dict[str, Any]) -> None:
    assert math.isnan(raw["nan"])
    assert raw["inf"] == math.inf
    assert raw["neg_inf"] == -math.inf
    assert raw["lone"] == "value-\ud800"
    assert raw["key-\udfff"] == "surrogate key"
    assert raw["nul"] == "a\x00b"
    nested = raw["nested"]["list"]
    assert math.isnan(nested[0])
    assert nested[1] == "\udc00"
    assert nested[2]["deep"] == -math.inf


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda raw: ci_outcome(raw=raw), id="ci-outcome"),
        pytest.param(lambda raw: inference_call(raw=raw), id="inference-call"),
        pytest.param(lambda raw: decision(raw=raw), id="decision"),
    ],
)
def test_non_finite_numbers_and_lone_surrogates_survive_in_raw(build: Any) -> None:
    model = build(_tricky_raw())
    _assert_tricky_raw(model.raw)
    dumped = model.model_dump()
    _assert_tricky_raw(dumped["raw"])
    assert list(dumped["raw"]) == list(_tricky_raw())


def test_free_form_content_keeps_non_finite_numbers_and_surrogates() -> None:
    message = InferenceMessage(
        role="assistant",
        parts=(
            TextPart(content="text \ud800"),
            ReasoningPart(content=""),
            ToolCallPart(id="t1", name="edit", arguments={"score": float("nan"), "\udc00": 1}),
            ToolCallResponsePart(id="t1", result=[float("inf"), "\ud83d"]),
        ),
    )
    call = inference_call(output_messages=(message,))
    dumped = call.model_dump()["output_messages"][0]["parts"]
    assert dumped[0] == {"type": "text", "content": "text \ud800"}
    assert math.isnan(dumped[2]["arguments"]["score"])
    assert dumped[2]["arguments"]["\udc00"] == 1
    assert dumped[3]["result"][0] == math.inf
    assert dumped[3]["result"][1] == "\ud83d"


# --- message parts -------------------------------------------------------------------


def test_parts_are_a_discriminated_union_on_type() -> None:
    message = InferenceMessage.model_validate(
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "hi"},
                {"type": "reasoning", "content": "hmm"},
                {"type": "tool_call", "id": "t1", "name": "run", "arguments": {"cmd": "ls"}},
                {"type": "tool_call_response", "id": "t1", "result": {"stdout": ""}},
            ],
            "finish_reason": "tool_calls",
        }
    )
    assert [type(p) for p in message.parts] == [
        TextPart,
        ReasoningPart,
        ToolCallPart,
        ToolCallResponsePart,
    ]
    assert message.finish_reason == "tool_calls"
    with pytest.raises(ValidationError, match=invalid("parts.0", "Input tag 'image' found using 'type' does not match")):
        InferenceMessage.model_validate({"role": "user", "parts": [{"type": "image", "url": "x"}]})


def test_inference_call_vocabularies_and_bounds() -> None:
    for gateway in ("litellm", "portkey", "helicone", "unknown"):
        assert inference_call(gateway_provider=gateway).gateway_provider == gateway
    assert inference_call().gateway_provider == "unknown"
    with pytest.raises(ValidationError, match=invalid("gateway_provider", "Input should be 'litellm'")):
        inference_call(gateway_provider="openrouter")
    assert inference_call(duration_ms=2**63 - 1).duration_ms == 2**63 - 1
    for bad, message in (
        ({"duration_ms": 2**63}, "Input should be less than or equal to 9223372036854775807"),
        ({"duration_ms": -1}, "Input should be greater than or equal to 0"),
        ({"duration_ms": 1.0}, "Input should be a valid integer"),
        ({"input_tokens": -1}, "Input should be greater than or equal to 0"),
        ({"input_tokens": True}, "Input should be a valid integer"),
        ({"output_tokens": "5"}, "Input should be a valid integer"),
        ({"model": "  "}, "Value error, identifier must not be empty"),
        ({"observed_at": datetime(2024, 1, 1)}, "Input should have timezone info"),
        ({"observed_at": 1704067200}, "expected an RFC 3339 timestamp string, got number"),
    ):
        (field,) = bad
        with pytest.raises(ValidationError, match=invalid(field, re.escape(message))):
            inference_call(**bad)


def test_decision_vocabularies_and_ranges() -> None:
    assert decision().file_path == ""
    for harness in ("claude-code", "copilot", "codex", "cursor", "pi"):
        assert decision(agent_harness=harness).agent_harness == harness
    assert decision(edit_retention_score=0.0).edit_retention_score == 0.0
    assert decision(edit_retention_score=1.0).edit_retention_score == 1.0
    assert decision(edit_retention_score=1).edit_retention_score == 1.0  # a JSON number, integral or not
    for bad, message in (
        ({"agent_harness": "vim"}, "Input should be 'claude-code'"),
        ({"interaction_mode": "chat"}, "Input should be 'agent' or 'inline'"),
        ({"edit_retention_score": 1.5}, "Input should be less than or equal to 1"),
        ({"edit_retention_score": -0.1}, "Input should be greater than or equal to 0"),
        ({"edit_retention_score": False}, "Input should be a valid number"),
        ({"edit_retention_score": "0.5"}, "Input should be a valid number"),
        ({"observation_delay_ms": -1}, "Input should be greater than or equal to 0"),
        ({"observation_delay_ms": "3"}, "Input should be a valid integer"),
        ({"accepted": 1}, "Input should be a valid boolean"),
        ({"explicit": "yes"}, "Input should be a valid boolean"),
        ({"occurred_at": "2024-05-01T12:00:00"}, "timestamp must carry a UTC offset"),
    ):
        (field,) = bad
        with pytest.raises(ValidationError, match=invalid(field, re.escape(message))):
            decision(**bad)


@pytest.mark.parametrize("host", ["..", "GitHub.com", "a/b", "", "-x.com"])
def test_repository_host_must_be_a_dns_host(host: str) -> None:
    from sediment.model.facts import RepositoryIdentity

    with pytest.raises(ValidationError, match=model_error("repository_host must be a lowercase DNS host")):
        RepositoryIdentity(provider="github", host=host, repository_id="1")


# --- strictness where the wire format is strict -------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:00:00Z", T0),
        ("2024-05-01T12:00:00z", T0),
        ("2024-05-01t14:00:00+02:00", T0),
        ("2024-05-01 12:00:00+00:00", T0),  # the space RFC 3339 allows in place of T
        ("2024-05-01T12:00:00-00:00", T0),
        ("2024-05-01T12:00:00.5Z", T0 + timedelta(microseconds=500000)),
        ("2024-05-01T12:00:00.000001Z", T0 + timedelta(microseconds=1)),
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
        ("9999-12-31T23:59:59.999999Z", datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ],
)
def test_rfc3339_times_are_read(text: str, expected: datetime) -> None:
    assert ci_outcome(captured_at=text).captured_at == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2024-05-01T12:00:00", "timestamp must carry a UTC offset, got '2024-05-01T12:00:00'"),
        ("2024-05-01", "expected an RFC 3339 timestamp, got '2024-05-01'"),
        ("2024-05-01T12:00Z", "expected an RFC 3339 timestamp, got '2024-05-01T12:00Z'"),
        ("20240501T120000Z", "expected an RFC 3339 timestamp, got '20240501T120000Z'"),
        (" 2024-05-01T12:00:00Z", "expected an RFC 3339 timestamp, got ' 2024-05-01T12:00:00Z'"),
        ("2024-05-01T12:00:00+0200", "expected an RFC 3339 timestamp, got '2024-05-01T12:00:00+0200'"),
        ("2024-05-01T12:00:00.1234567Z", "timestamp has more than microsecond precision"),
        ("2024-13-01T12:00:00Z", "expected an RFC 3339 timestamp: month must be in 1..12"),
        ("2024-05-01T23:59:60Z", "expected an RFC 3339 timestamp: second must be in 0..59"),
        ("2024-05-01T12:00:00+24:00", "expected an RFC 3339 timestamp: offset +24:00 out of range"),
        ("0000-01-01T00:00:00Z", "timestamp out of range"),
        ("0001-01-01T00:00:00+14:00", "timestamp out of range"),
        ("9999-12-31T23:59:59-10:00", "timestamp out of range"),
        ("2", "expected an RFC 3339 timestamp, got '2'"),
        ("١٩٧٠-01-01T00:00:00Z", "expected an RFC 3339 timestamp"),  # only ASCII digits
        (1714564800, "expected an RFC 3339 timestamp string, got number"),
        (1714564800.5, "expected an RFC 3339 timestamp string, got number"),
        (True, "expected an RFC 3339 timestamp string, got boolean"),
        (None, "expected an RFC 3339 timestamp string, got null"),
        ([2024, 5, 1], "expected an RFC 3339 timestamp string, got array"),
    ],
)
def test_times_are_never_coerced(value: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=invalid("captured_at", re.escape(message))):
        ci_outcome(captured_at=value)


def test_a_datetime_that_has_no_utc_equivalent_is_out_of_range() -> None:
    far_east = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))
    with pytest.raises(ValidationError, match=invalid("captured_at", "timestamp out of range")):
        ci_outcome(captured_at=far_east)


@pytest.mark.parametrize(
    ("build", "field", "value", "message"),
    [
        (lambda v: ci_outcome(run_attempt=v), "run_attempt", True, "Input should be a valid integer"),
        (lambda v: ci_outcome(pr_number=v), "pr_number", False, "Input should be a valid integer"),
        (lambda v: merge(pr_number=v), "pr_number", "7", "Input should be a valid integer"),
        (lambda v: merge(pr_number=v), "pr_number", 7.0, "Input should be a valid integer"),
        (lambda v: decision(observation_delay_ms=v), "observation_delay_ms", True, "Input should be a valid integer"),
        (lambda v: decision(edit_retention_score=v), "edit_retention_score", True, "Input should be a valid number"),
        (lambda v: decision(accepted=v), "accepted", 0, "Input should be a valid boolean"),
        (lambda v: decision(explicit=v), "explicit", "true", "Input should be a valid boolean"),
        (lambda v: ToolDefinition(name="t", strict=v), "strict", 1, "Input should be a valid boolean"),
        (lambda v: observation(schema_version=v), "schema_version", True, "Input should be a valid integer, got boolean"),
    ],
)
def test_numbers_and_flags_are_never_coerced(build: Any, field: str, value: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=invalid(field, re.escape(message))):
        build(value)


def test_canonical_records_still_validate_from_parsed_json() -> None:
    """Strict scalars, lax containers: what the store and bundles hold reads back."""
    from sediment.records import decode_record, encode_record

    for fact in (ci_outcome(run_attempt=2, pr_number=3, raw={"n": 2**64}), inference_call(tools=(ToolDefinition(name="t", strict=True),)),
                 decision(edit_retention_score=0.5, observation_delay_ms=3), merge(), observation()):
        assert type(fact).model_validate(decode_record(encode_record(fact))) == fact


def _test_result(**overrides: Any) -> TestCaseResult:
    return TestCaseResult(**{"test_result_id": "t-1", "org_id": "acme", "provider": "github_actions", "run_id": "1",
                             "run_attempt": 1, "repo": "acme/widget", "commit_sha": SHA40, "runner": "pytest",
                             "test_id": "t.py::a", "outcome": "passed", "name": "a", "report_sha256": "a" * 64,
                             "locator": "testsuite/testcase[0]", "captured_at": T0} | overrides)


def test_a_test_results_run_attempt_fits_the_store_column() -> None:
    assert _test_result(run_attempt=2**31 - 1).run_attempt == 2**31 - 1
    with pytest.raises(ValidationError, match=invalid("run_attempt", "Input should be less than or equal to 2147483647")):
        _test_result(run_attempt=2**31)


def test_every_fact_model_carries_its_current_schema_version() -> None:
    """The version a new Fact is written with (docs/evidence.md): InferenceCall and
    TestCaseResult know only 1; the repository-scoped Facts that may carry the identity triple
    are at 2 (1 is the legacy payload), identity or not; DeveloperDecision and RepositoryRename
    have no version field."""
    assert inference_call().schema_version == 1
    assert _test_result().schema_version == 1
    assert ci_outcome().schema_version == 2
    assert observation().schema_version == 2
    assert merge().schema_version == 2
    push = Push(push_id="p-1", org_id="acme", repo="acme/widget", ref="main", after_sha=SHA40, captured_at=T0)
    assert push.schema_version == 2
    for model, version in ((InferenceCall, 1), (TestCaseResult, 1), (CIOutcome, 2), (SessionCommitObservation, 2),
                           (Push, 2), (PullRequestMerge, 2)):
        assert model.model_fields["schema_version"].default == version, model.__name__
    assert "schema_version" not in DeveloperDecision.model_fields
    assert "schema_version" not in RepositoryRename.model_fields
