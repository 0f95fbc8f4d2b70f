"""Canonical Fact JSONL (ARCHITECTURE.md "Canonical Fact JSONL"): one line per Fact."""

from __future__ import annotations

import copy
import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest

from sediment.ingest import TranslationError
from sediment.ingest.facts_jsonl import FACT_TYPE_NAMES, FACT_TYPES, translate_fact
from sediment.model.facts import (
    CIOutcome,
    DeveloperDecision,
    EditObservation,
    FactModel,
    InferenceCall,
    PullRequestMerge,
    Push,
    RejectedEdit,
    RepositoryRename,
    RetryLinkage,
    SessionCommitObservation,
    TestCaseResult,
    TextPart,
    ToolCallPart,
)
from sediment.records import canonical_json
from sediment.store.ids import fact_id

ORG = "acme"
SHA_A = "3484a3fb816e0859fd6e1cea078d76385ff50625"
SHA_B = "acb5820ced9479c074f688cc328bf03f341a511d"
SHA_C = "c4295bd74fb0f4fda03689c3df3f2803b658fd85"
SESSION = "4d6297b8-9b0f-403f-8196-c564a24d1982"

# One canonical line per fact_type, written as the JSON text a file would hold.
LINES: dict[str, str] = {
    "inference_call": json.dumps({
        "fact_type": "inference_call", "session_id": SESSION, "gateway_provider": "litellm",
        "model_provider": "anthropic", "model": "claude-sonnet-4-5",
        "input_messages": [{"role": "user", "parts": [{"type": "text", "content": "Fix the failing test."}]}],
        "output_messages": [{"role": "assistant", "finish_reason": "tool_calls", "parts": [
            {"type": "reasoning", "content": "Run the tests first."},
            {"type": "tool_call", "id": "toolu_01", "name": "Bash", "arguments": {"command": "pytest -q"}},
        ]}],
        "input_tokens": 1200, "output_tokens": 85, "duration_ms": 2150,
        "model_call_id": "chatcmpl-7f1c2d", "observed_at": "2024-05-01T12:00:00Z", "raw": {"id": "chatcmpl-7f1c2d"},
    }),
    "ci_outcome": json.dumps({
        "fact_type": "ci_outcome", "provider": "github_actions", "run_id": "30433642", "run_attempt": 2,
        "repo": "octo-org/octo-repo", "commit_sha": SHA_B, "branch": "cache-node-modules", "result": "passed",
        "workflow_name": "Build", "captured_at": "2024-05-01T12:05:00Z",
    }),
    "session_commit_observation": json.dumps({
        "fact_type": "session_commit_observation", "repo": "octo-org/octo-repo", "commit_sha": SHA_A,
        "session_id": SESSION, "captured_at": "2024-05-01T12:10:00Z",
    }),
    "developer_decision": json.dumps({
        "fact_type": "developer_decision", "session_id": SESSION, "agent_harness": "claude-code",
        "file_path": "src/app.py", "accepted": True, "explicit": True, "interaction_mode": "agent",
        "call_id": "toolu_01", "observation_delay_ms": 420, "occurred_at": "2024-05-01T14:00:01+02:00",
        "captured_at": "2024-05-01T12:00:02Z",
    }),
    "pull_request_merge": json.dumps({
        "fact_type": "pull_request_merge", "repo": "Codertocat/Hello-World", "pr_number": 2,
        "head_repo": "Octocoders/Hello-World", "head_ref": "changes", "head_sha": SHA_B, "base_ref": "master",
        "base_sha": SHA_A, "merge_commit_sha": SHA_C, "merged_at": "2019-05-15T15:21:18Z",
        "captured_at": "2024-05-01T12:00:00Z",
    }),
    "repository_rename": json.dumps({
        "fact_type": "repository_rename", "repository_host": "github.com", "repository_id": "186853261",
        "old_repo": "Octocoders/Hello-World", "new_repo": "Octocoders/Hello-Universe",
        "renamed_at": "2024-05-01T12:00:00Z", "source_event_id": "e0f1a2b3-7728-11e9-8c4d-5e6f7a8b9c0d",
        "captured_at": "2024-05-01T12:00:00Z",
    }),
    "push": json.dumps({
        "fact_type": "push", "repo": "Codertocat/Hello-World", "ref": "refs/heads/master", "before_sha": SHA_A,
        "after_sha": SHA_B, "commit_shas": [SHA_B], "pusher": "Codertocat", "captured_at": "2024-05-01T12:00:00Z",
    }),
    "test_case_result": json.dumps({
        "fact_type": "test_case_result", "provider": "github_actions", "run_id": "30433642", "run_attempt": 2,
        "repo": "octo-org/octo-repo", "commit_sha": SHA_A, "runner": "pytest",
        "test_id": "tests/test_calc.py::TestCalc::test_add", "outcome": "failed", "classname": "tests.test_calc.TestCalc",
        "name": "test_add", "suite": "pytest", "duration_ms": 3, "report_sha256": "a" * 64,
        "locator": "testsuites/testsuite[0]/testcase[2]", "captured_at": "2024-05-01T12:00:00Z",
        "raw": {"tag": "testcase", "attributes": {"name": "test_add"}},
    }),
    "edit_observation": json.dumps({
        "fact_type": "edit_observation", "session_id": SESSION, "agent_harness": "claude-code",
        "file_path": "/checkout/project/src/app.py", "call_id": "toolu_01", "applied_text": "return a + b\n",
        "observed_file_text": "def add(a, b):\n    return a + b\n", "external_lines_added": 0,
        "external_lines_removed": None, "occurred_at": "2024-05-01T12:00:03Z", "captured_at": "2024-05-01T12:30:00Z",
        "raw": {"tool_name": "Edit"},
    }),
    "rejected_edit": json.dumps({
        "fact_type": "rejected_edit", "session_id": SESSION, "agent_harness": "claude-code",
        "file_path": "/checkout/project/src/app.py", "call_id": "toolu_02", "proposed": "return a - b\n",
        "occurred_at": "2024-05-01T12:00:04Z", "captured_at": "2024-05-01T12:30:00Z", "raw": {"tool_name": "Edit"},
    }),
    "retry_linkage": json.dumps({
        "fact_type": "retry_linkage", "session_id": SESSION, "agent_harness": "claude-code",
        "file_path": "/checkout/project/src/app.py", "tool_name": "Edit", "rejected_call_id": "toolu_02",
        "accepted_call_id": "toolu_03", "occurred_at": "2024-05-01T12:00:09Z", "captured_at": "2024-05-01T12:30:00Z",
    }),
}

MODELS: dict[str, type[FactModel]] = {
    "inference_call": InferenceCall,
    "ci_outcome": CIOutcome,
    "session_commit_observation": SessionCommitObservation,
    "developer_decision": DeveloperDecision,
    "pull_request_merge": PullRequestMerge,
    "repository_rename": RepositoryRename,
    "push": Push,
    "test_case_result": TestCaseResult,
    "edit_observation": EditObservation,
    "rejected_edit": RejectedEdit,
    "retry_linkage": RetryLinkage,
}
ID_FIELDS = {
    "inference_call": "inference_call_id",
    "ci_outcome": "outcome_id",
    "session_commit_observation": "observation_id",
    "developer_decision": "decision_id",
    "pull_request_merge": "merge_id",
    "repository_rename": "rename_id",
    "push": "push_id",
    "test_case_result": "test_result_id",
    "edit_observation": "observation_id",
    "rejected_edit": "rejection_id",
    "retry_linkage": "retry_linkage_id",
}
T = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
EXPECTED_IDS = {
    # (org, gateway, session, response id): a response id is unique only within a Session
    "inference_call": fact_id("call", ORG, "litellm", SESSION, "chatcmpl-7f1c2d"),
    "ci_outcome": fact_id("ci", ORG, "github_actions", "30433642", 2),
    "session_commit_observation": fact_id("obs", ORG, "octo-org/octo-repo", SHA_A, SESSION),
    "developer_decision": fact_id("decision", ORG, "claude-code", SESSION, "toolu_01", "src/app.py", 420,
                                  True, True, "2024-05-01T12:00:01Z"),
    "pull_request_merge": fact_id("merge", ORG, "github", "codertocat/hello-world", 2),
    "repository_rename": fact_id("rename", ORG, "github", "github.com", "e0f1a2b3-7728-11e9-8c4d-5e6f7a8b9c0d"),
    "push": fact_id("push", ORG, "codertocat/hello-world", "master", SHA_A, SHA_B),
    "test_case_result": fact_id("test", ORG, "github_actions", "octo-org/octo-repo", "30433642", 2, "a" * 64,
                                "testsuites/testsuite[0]/testcase[2]"),
    # one per tool call: (org, harness, session, call id)
    "edit_observation": fact_id("edit", ORG, "claude-code", SESSION, "toolu_01"),
    "rejected_edit": fact_id("rejection", ORG, "claude-code", SESSION, "toolu_02"),
    "retry_linkage": fact_id("retry", ORG, "claude-code", SESSION, "Edit", "/checkout/project/src/app.py", "toolu_02",
                             "toolu_03"),
}


def record(name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(LINES[name])
    data.update(changes)
    return data


def fact_of(data: dict[str, Any], *, org_id: str = ORG) -> Any:
    translation = translate_fact(data, org_id=org_id)
    assert translation.skipped is None and translation.warnings == ()
    (fact,) = translation.facts
    return fact


def test_the_vocabulary_is_the_documented_one() -> None:
    assert tuple(MODELS) == FACT_TYPE_NAMES
    assert {name: model for name, (model, _) in FACT_TYPES.items()} == MODELS
    assert {name: id_field for name, (_, id_field) in FACT_TYPES.items()} == ID_FIELDS


@pytest.mark.parametrize("fact_type", list(LINES))
def test_each_fact_type_becomes_its_model_with_a_derived_id(fact_type: str) -> None:
    fact = fact_of(record(fact_type))
    assert type(fact) is MODELS[fact_type]
    assert fact.model_dump()["org_id"] == ORG
    assert getattr(fact, ID_FIELDS[fact_type]) == EXPECTED_IDS[fact_type]


@pytest.mark.parametrize("fact_type", list(LINES))
def test_the_other_keys_are_the_model_fields(fact_type: str) -> None:
    data = record(fact_type)
    fact = fact_of(data)
    expected = MODELS[fact_type].model_validate(
        {**{k: v for k, v in data.items() if k != "fact_type"}, "org_id": ORG,
         ID_FIELDS[fact_type]: EXPECTED_IDS[fact_type]})
    assert fact == expected


@pytest.mark.parametrize("fact_type", list(LINES))
def test_a_given_id_is_kept(fact_type: str) -> None:
    fact = fact_of(record(fact_type, **{ID_FIELDS[fact_type]: "given-7"}))
    assert getattr(fact, ID_FIELDS[fact_type]) == "given-7"


@pytest.mark.parametrize("fact_type", list(LINES))
def test_derived_ids_are_deterministic(fact_type: str) -> None:
    data = record(fact_type)
    reordered = dict(reversed(list(copy.deepcopy(data).items())))
    explicit_org = {**data, "org_id": "ACME"}
    null_id = {**data, ID_FIELDS[fact_type]: None}
    ids = {getattr(fact_of(variant), ID_FIELDS[fact_type]) for variant in (data, reordered, explicit_org, null_id)}
    assert ids == {EXPECTED_IDS[fact_type]}


def test_inference_call_parts_are_typed() -> None:
    call = fact_of(record("inference_call"))
    assert isinstance(call, InferenceCall)
    assert call.input_messages[0].parts == (TextPart(content="Fix the failing test."),)
    tool_call = call.output_messages[0].parts[1]
    assert isinstance(tool_call, ToolCallPart)
    assert (tool_call.id, tool_call.name, tool_call.arguments) == ("toolu_01", "Bash", {"command": "pytest -q"})
    assert call.observed_at == T


def test_keyless_inference_call_is_keyed_by_session_and_content() -> None:
    data = record("inference_call", model_call_id=None)
    del data["model_call_id"]
    call = fact_of(data)
    # an unset tools list or capture (fields added later) is not part of the content: old ids stay
    body = call.model_dump(mode="json", exclude={"inference_call_id", "org_id", "tools", "capture"})
    digest = hashlib.sha256(canonical_json(body, allow_nan=True).encode("ascii")).hexdigest()
    assert call.inference_call_id == fact_id("call", ORG, SESSION, digest)
    assert fact_of({**data, "tools": []}).inference_call_id != call.inference_call_id
    # the same content spelt differently (key order, offset timestamp) is the same call
    respelt = dict(reversed(list(data.items())))
    respelt["observed_at"] = "2024-05-01T14:00:00+02:00"
    assert fact_of(respelt).inference_call_id == call.inference_call_id
    # other content is another call
    assert fact_of({**data, "output_tokens": 86}).inference_call_id != call.inference_call_id


def test_spellings_of_one_fact_share_an_id() -> None:
    plain = fact_of(record("push"))
    respelt = fact_of(record("push", repo="codertocat/hello-world", ref="master", before_sha=SHA_A.upper(),
                             after_sha=f"  {SHA_B}  "))
    assert respelt.push_id == plain.push_id
    assert respelt == plain


def test_decision_defaults_enter_the_key() -> None:
    data = record("developer_decision", agent_harness="cursor", file_path="")
    del data["call_id"], data["observation_delay_ms"]
    decision = fact_of(data)
    assert decision.decision_id == fact_id("decision", ORG, "cursor", SESSION, "", "", -1, True, True,
                                           "2024-05-01T12:00:01Z")


def test_accept_and_reject_of_one_edit_get_different_ids() -> None:
    accepted = fact_of(record("developer_decision"))
    rejected = fact_of(record("developer_decision", accepted=False))
    assert accepted.decision_id != rejected.decision_id


def test_rename_without_an_event_id_is_keyed_by_its_content() -> None:
    data = record("repository_rename")
    del data["source_event_id"]
    rename = fact_of(data)
    body = rename.model_dump(mode="json", exclude={"rename_id", "org_id"})
    digest = hashlib.sha256(canonical_json(body, allow_nan=True).encode("ascii")).hexdigest()
    assert rename.rename_id == fact_id("rename", ORG, "github", "github.com", digest)
    assert fact_of(copy.deepcopy(data)).rename_id == rename.rename_id
    assert fact_of({**data, "new_repo": "Octocoders/Hello-Moon"}).rename_id != rename.rename_id


def test_ci_without_attempt_uses_zero() -> None:
    data = record("ci_outcome")
    del data["run_attempt"]
    assert fact_of(data).outcome_id == fact_id("ci", ORG, "github_actions", "30433642", 0)


# --- org rules ---------------------------------------------------------------------------


@pytest.mark.parametrize("fact_type", list(LINES))
def test_a_different_org_is_refused(fact_type: str) -> None:
    with pytest.raises(TranslationError, match=r"^org_id: 'globex' is not the acting org 'acme'$"):
        translate_fact(record(fact_type, org_id="globex"), org_id=ORG)


def test_org_is_normalized_before_comparing() -> None:
    assert fact_of(record("push", org_id="  Acme "), org_id="ACME").org_id == ORG


def test_ids_depend_on_the_acting_org() -> None:
    other = fact_of(record("push"), org_id="globex")
    assert other.org_id == "globex"
    assert other.push_id == fact_id("push", "globex", "codertocat/hello-world", "master", SHA_A, SHA_B)


@pytest.mark.parametrize(("value", "message"), [(7, r"^org_id: expected a string"), ("Not An Org!", r"^org_id: ")])
def test_an_ill_formed_org_is_refused(value: Any, message: str) -> None:
    with pytest.raises(TranslationError, match=message):
        translate_fact(record("push", org_id=value), org_id=ORG)


# --- fact_type and validation errors ------------------------------------------------------


@pytest.mark.parametrize("fact_type", ["ci", "PullRequestRevision", None, 3])
def test_an_unknown_fact_type_lists_the_valid_ones(fact_type: Any) -> None:
    data = record("push", fact_type=fact_type)
    with pytest.raises(TranslationError) as caught:
        translate_fact(data, org_id=ORG)
    message = str(caught.value)
    assert message.startswith("fact_type: ")
    assert message.endswith(", ".join(FACT_TYPE_NAMES))
    for name in MODELS:
        assert name in message


def test_a_missing_fact_type_is_named() -> None:
    data = record("push")
    del data["fact_type"]
    with pytest.raises(TranslationError, match=r"^fact_type: missing is not one of inference_call, ci_outcome"):
        translate_fact(data, org_id=ORG)


@pytest.mark.parametrize(
    ("fact_type", "changes", "message"),
    [
        ("inference_call", {"input_messages": [{"role": "user", "parts": [{"type": "tool_call", "id": " ",
                                                                            "name": "Bash", "arguments": {}}]}]},
         r"^input_messages\[0\]\.parts\[0\]\.tool_call\.id: identifier must not be empty"),
        ("inference_call", {"gateway_provider": "openrouter"}, r"^gateway_provider: Input should be"),
        ("ci_outcome", {"result": "green"}, r"^result: Input should be"),
        ("session_commit_observation", {"commit_sha": "3484a3f"}, r"^commit_sha: commit SHA"),
        ("developer_decision", {"edit_retention_score": 1.5}, r"^edit_retention_score: Input should be less than"),
        ("pull_request_merge", {"pr_number": 0}, r"^pr_number: Input should be greater than or equal to 1"),
        ("repository_rename", {"renamed_at": "2024-05-01 12:00"},
         r"^renamed_at: expected an RFC 3339 timestamp, got '2024-05-01 12:00'$"),
        ("repository_rename", {"renamed_at": "2024-05-01T12:00:00"},
         r"^renamed_at: timestamp must carry a UTC offset, got '2024-05-01T12:00:00'$"),
        ("push", {"commit_shas": [SHA_A, "nope"]}, r"^commit_shas\[1\]: commit SHA"),
        ("push", {"branch": "main"}, r"^branch: Extra inputs are not permitted"),
    ],
)
def test_validation_errors_name_the_field(fact_type: str, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(TranslationError, match=message):
        translate_fact(record(fact_type, **changes), org_id=ORG)


def test_a_record_must_be_an_object() -> None:
    with pytest.raises(TranslationError, match=r"^record: expected a JSON object"):
        translate_fact("{}", org_id=ORG)  # type: ignore[arg-type]


# --- no coercion: the wire format's types, exactly ----------------------------------------


@pytest.mark.parametrize(
    ("fact_type", "changes", "message"),
    [
        # times: RFC 3339 strings with an offset, never numbers (unix seconds) or other strings
        ("ci_outcome", {"captured_at": "2"}, r"^captured_at: expected an RFC 3339 timestamp, got '2'$"),
        ("ci_outcome", {"captured_at": 2}, r"^captured_at: expected an RFC 3339 timestamp string, got number$"),
        ("ci_outcome", {"captured_at": 1714564800.5}, r"^captured_at: expected an RFC 3339 timestamp string, got number$"),
        ("ci_outcome", {"captured_at": True}, r"^captured_at: expected an RFC 3339 timestamp string, got boolean$"),
        ("ci_outcome", {"captured_at": "2024-05-01"}, r"^captured_at: expected an RFC 3339 timestamp, got '2024-05-01'$"),
        ("ci_outcome", {"captured_at": "20240501T120000Z"}, r"^captured_at: expected an RFC 3339 timestamp, got "),
        ("ci_outcome", {"captured_at": "2024-05-01T12:00:00.1234567Z"},
         r"^captured_at: timestamp has more than microsecond precision, got "),
        ("ci_outcome", {"captured_at": "2024-02-30T12:00:00Z"},
         r"^captured_at: expected an RFC 3339 timestamp: day is out of range for month, got "),
        ("ci_outcome", {"captured_at": "0001-01-01T00:00:00+14:00"}, r"^captured_at: timestamp out of range$"),
        ("push", {"pushed_at": "9999-12-31T23:59:59-10:00"}, r"^pushed_at: timestamp out of range$"),
        ("inference_call", {"observed_at": 0}, r"^observed_at: expected an RFC 3339 timestamp string, got number$"),
        # integers: never bools, floats or strings
        ("ci_outcome", {"run_attempt": True}, r"^run_attempt: Input should be a valid integer"),
        ("ci_outcome", {"run_attempt": "3"}, r"^run_attempt: Input should be a valid integer"),
        ("ci_outcome", {"run_attempt": 2.0}, r"^run_attempt: Input should be a valid integer"),
        ("ci_outcome", {"pr_number": "7"}, r"^pr_number: Input should be a valid integer"),
        ("ci_outcome", {"schema_version": True}, r"^schema_version: Input should be a valid integer, got boolean$"),
        ("ci_outcome", {"schema_version": 2.0}, r"^schema_version: Input should be a valid integer, got number$"),
        ("inference_call", {"schema_version": True}, r"^schema_version: Input should be a valid integer, got boolean$"),
        ("inference_call", {"input_tokens": "12"}, r"^input_tokens: Input should be a valid integer"),
        ("inference_call", {"duration_ms": 1.5}, r"^duration_ms: Input should be a valid integer"),
        ("developer_decision", {"observation_delay_ms": True}, r"^observation_delay_ms: Input should be a valid integer"),
        ("pull_request_merge", {"pr_number": "2"}, r"^pr_number: Input should be a valid integer"),
        ("test_case_result", {"run_attempt": "2"}, r"^run_attempt: Input should be a valid integer"),
        ("test_case_result", {"flaky_reruns": False}, r"^flaky_reruns: Input should be a valid integer"),
        ("test_case_result", {"run_attempt": 2**31}, r"^run_attempt: Input should be less than or equal to 2147483647"),
        # floats: never bools or strings
        ("developer_decision", {"edit_retention_score": False}, r"^edit_retention_score: Input should be a valid number"),
        ("developer_decision", {"edit_retention_score": "0.5"}, r"^edit_retention_score: Input should be a valid number"),
        ("developer_decision", {"edit_retention_score": float("nan")}, r"^edit_retention_score: Input should be"),
        # bools: never 0 / 1 or strings
        ("developer_decision", {"accepted": 1}, r"^accepted: Input should be a valid boolean"),
        ("developer_decision", {"explicit": "true"}, r"^explicit: Input should be a valid boolean"),
        ("inference_call", {"tools": [{"name": "Bash", "strict": 0}]}, r"^tools\[0\]\.strict: Input should be a valid boolean"),
        # ids fit the store's key column
        ("push", {"push_id": "p" * 201}, r"^push_id: String should have at most 200 characters"),
    ],
)
def test_values_are_never_coerced(fact_type: str, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(TranslationError, match=message):
        translate_fact(record(fact_type, **changes), org_id=ORG)


@pytest.mark.parametrize(
    ("fact_type", "changes", "expected"),
    [
        ("ci_outcome", {"captured_at": "2024-05-01t14:05:00.5+02:00"}, {"captured_at": datetime(2024, 5, 1, 12, 5, 0,
                                                                                                  500000, tzinfo=UTC)}),
        ("ci_outcome", {"captured_at": "2024-05-01 12:05:00z"}, {"captured_at": datetime(2024, 5, 1, 12, 5, tzinfo=UTC)}),
        ("ci_outcome", {"captured_at": "0001-01-01T00:00:00-14:00"}, {"captured_at": datetime(1, 1, 1, 14, tzinfo=UTC)}),
        ("ci_outcome", {"run_attempt": 2**64}, {"run_attempt": 2**64}),
        ("developer_decision", {"edit_retention_score": 1}, {"edit_retention_score": 1.0}),
        ("developer_decision", {"accepted": False}, {"accepted": False}),
        ("test_case_result", {"run_attempt": 2**31 - 1}, {"run_attempt": 2**31 - 1}),
    ],
)
def test_values_of_the_right_type_are_kept(fact_type: str, changes: dict[str, Any], expected: dict[str, Any]) -> None:
    fact = fact_of(record(fact_type, **changes))
    assert {name: getattr(fact, name) for name in expected} == expected


# --- lossless raw ------------------------------------------------------------------------

LOSSY_LINE = (
    '{"fact_type": "inference_call", "session_id": "s-1", "observed_at": "2024-05-01T12:00:00Z",'
    ' "raw": {"temperature": NaN, "top_p": Infinity, "bias": -Infinity, "text": "half \\ud83d pair",'
    ' "nul": "a\\u0000b", "nested": [{"score": NaN}]}}'
)


def test_nan_infinity_lone_surrogates_and_nul_survive_in_raw() -> None:
    call = fact_of(json.loads(LOSSY_LINE))
    raw = call.raw
    assert math.isnan(raw["temperature"]) and math.isnan(raw["nested"][0]["score"])
    assert (raw["top_p"], raw["bias"]) == (math.inf, -math.inf)
    assert raw["text"] == "half \ud83d pair"
    assert raw["nul"] == "a\x00b"
    # and the derived (content-hashed) id is stable for them
    assert fact_of(json.loads(LOSSY_LINE)).inference_call_id == call.inference_call_id
    assert call.inference_call_id.startswith("call_")


def test_lossless_raw_in_every_fact_with_raw() -> None:
    special = json.loads('{"v": NaN, "s": "\\udc80"}')
    for fact_type in ("ci_outcome", "developer_decision", "push"):
        raw = fact_of(record(fact_type, raw=special)).raw
        assert math.isnan(raw["v"]) and raw["s"] == "\udc80"
