"""Fact models and identity types (contract §1.1)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from sediment.facts import (
    CIOutcome,
    DeveloperDecision,
    InferenceCall,
    InferenceMessage,
    PullRequestMerge,
    ReasoningPart,
    RepositoryIdentity,
    SessionCommitObservation,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from sediment.identifiers import has_unpaired_surrogate, normalize_repo_slug

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
    "tools",  # the request's tool definitions (not yet in the contract's §1.1 list)
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "model_call_id",
    "observed_at",
    "raw",
]


# --- factories -----------------------------------------------------------------------


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
    with pytest.raises(ValidationError):
        ci_outcome(org_id=raw)
    with pytest.raises(ValidationError):
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
    for build in (
        lambda: ci_outcome(outcome_id=bad),
        lambda: ci_outcome(run_id=bad),
        lambda: inference_call(inference_call_id=bad),
        lambda: inference_call(session_id=bad),
        lambda: inference_call(user_id=bad),
        lambda: decision(call_id=bad),
        lambda: observation(session_id=bad),
        lambda: ToolCallPart(id=bad, name="x", arguments={}),
        lambda: ToolCallResponsePart(id=bad, result=None),
    ):
        with pytest.raises(ValidationError):
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
    with pytest.raises(ValidationError):
        ci_outcome(commit_sha=raw)
    with pytest.raises(ValidationError):
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
    with pytest.raises(ValidationError):
        ci_outcome(repo=raw)


def test_empty_repo_slug_is_the_absent_sentinel_where_allowed() -> None:
    assert normalize_repo_slug("") == ""
    assert normalize_repo_slug("   ") == ""
    assert merge(head_repo="").head_repo == ""
    assert merge(head_repo="Fork/Widget").head_repo == "fork/widget"
    with pytest.raises(ValidationError):
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
    with pytest.raises(ValidationError):
        ci_outcome(**partial)
    with pytest.raises(ValidationError):
        observation(**partial)
    with pytest.raises(ValidationError):
        merge(**partial)


@pytest.mark.parametrize("repository_id", ["0", "007", "-1", "12a", "", " 12", "1.0", "１２"])
def test_repository_id_must_be_canonical_positive_decimal(repository_id: str) -> None:
    with pytest.raises(ValidationError):
        ci_outcome(**{**IDENTITY, "repository_id": repository_id})
    with pytest.raises(ValidationError):
        RepositoryIdentity(provider="github", host="github.com", repository_id=repository_id)


@pytest.mark.parametrize("host", ["", "GitHub.com", " github.com"])
def test_repository_host_must_be_lowercase(host: str) -> None:
    with pytest.raises(ValidationError):
        ci_outcome(**{**IDENTITY, "repository_host": host})


def test_repository_provider_vocabulary() -> None:
    with pytest.raises(ValidationError):
        ci_outcome(**{**IDENTITY, "repository_provider": "gitlab"})
    with pytest.raises(ValidationError):
        RepositoryIdentity(provider="gitlab", host="gitlab.com", repository_id="1")  # type: ignore[arg-type]


def test_schema_version_one_forbids_identity() -> None:
    legacy = ci_outcome(schema_version=1)
    assert legacy.schema_version == 1
    assert not legacy.is_identified
    with pytest.raises(ValidationError):
        ci_outcome(schema_version=1, **IDENTITY)
    with pytest.raises(ValidationError):
        observation(schema_version=1, **IDENTITY)


@pytest.mark.parametrize("version", [0, 3, "2.0"])
def test_unknown_schema_versions_are_rejected(version: Any) -> None:
    with pytest.raises(ValidationError):
        ci_outcome(schema_version=version)


def test_inference_call_schema_version_is_one_only() -> None:
    assert inference_call().schema_version == 1
    with pytest.raises(ValidationError):
        inference_call(schema_version=2)


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
    "overrides",
    [
        pytest.param({"result": "success"}, id="result"),
        pytest.param({"provider": "travis"}, id="provider"),
        pytest.param({"run_attempt": 0}, id="attempt-zero"),
        pytest.param({"run_attempt": -1}, id="attempt-negative"),
        pytest.param({"pr_number": 0}, id="pr-zero"),
        pytest.param({"reason": "x" * 4097}, id="reason-too-long"),
        pytest.param({"captured_at": datetime(2024, 5, 1, 12, 0)}, id="naive-datetime"),
        pytest.param({"unexpected": 1}, id="unknown-field"),
    ],
)
def test_ci_outcome_rejects_invalid_values(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ci_outcome(**overrides)


def test_ci_outcome_accepts_boundary_values() -> None:
    outcome = ci_outcome(run_attempt=1, pr_number=1, reason="x" * 4096)
    assert (outcome.run_attempt, outcome.pr_number, len(outcome.reason or "")) == (1, 1, 4096)
    for provider in ("github_actions", "jenkins", "gitlab_ci", "circleci", "buildkite", "other"):
        assert ci_outcome(provider=provider).provider == provider


def test_aware_datetimes_are_normalized_to_utc() -> None:
    local = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    outcome = ci_outcome(captured_at=local)
    assert outcome.captured_at == T0
    assert outcome.captured_at.utcoffset() == timedelta(0)
    assert inference_call(observed_at=local).observed_at.utcoffset() == timedelta(0)


def test_models_are_frozen() -> None:
    outcome = ci_outcome()
    with pytest.raises(ValidationError):
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
    with pytest.raises(ValidationError):
        InferenceMessage.model_validate({"role": "user", "parts": [{"type": "image", "url": "x"}]})


def test_inference_call_vocabularies_and_bounds() -> None:
    for gateway in ("litellm", "portkey", "helicone", "unknown"):
        assert inference_call(gateway_provider=gateway).gateway_provider == gateway
    assert inference_call().gateway_provider == "unknown"
    with pytest.raises(ValidationError):
        inference_call(gateway_provider="openrouter")
    assert inference_call(duration_ms=2**63 - 1).duration_ms == 2**63 - 1
    for bad in (
        {"duration_ms": 2**63},
        {"duration_ms": -1},
        {"input_tokens": -1},
        {"model": "  "},
        {"observed_at": datetime(2024, 1, 1)},
    ):
        with pytest.raises(ValidationError):
            inference_call(**bad)


def test_decision_vocabularies_and_ranges() -> None:
    assert decision().file_path == ""
    for harness in ("claude-code", "copilot", "codex", "cursor", "pi"):
        assert decision(agent_harness=harness).agent_harness == harness
    assert decision(edit_retention_score=0.0).edit_retention_score == 0.0
    assert decision(edit_retention_score=1.0).edit_retention_score == 1.0
    for bad in (
        {"agent_harness": "vim"},
        {"interaction_mode": "chat"},
        {"edit_retention_score": 1.5},
        {"edit_retention_score": -0.1},
        {"observation_delay_ms": -1},
    ):
        with pytest.raises(ValidationError):
            decision(**bad)


@pytest.mark.parametrize("host", ["..", "GitHub.com", "a/b", "", "-x.com"])
def test_repository_host_must_be_a_dns_host(host: str) -> None:
    from sediment.facts import RepositoryIdentity

    with pytest.raises(ValidationError):
        RepositoryIdentity(provider="github", host=host, repository_id="1")
