"""``sediment ingest otlp``: OTLP/JSON log exports of agent clients → DeveloperDecision,
EditObservation, RejectedEdit and RetryLinkage Facts (docs/evidence.md, docs/transcripts.md), on the
payloads in ``fixtures/otlp``: two real Claude Code 2.1.200 captures, and batches hand-built in
each client's record shape (see their SOURCES.md)."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.identifiers import utc_timestamp
from sediment.ingest import Translation, TranslationError
from sediment.ingest.otlp import translate_otlp
from sediment.ingest.otlp.provenance import provenance
from sediment.ingest.reading.files import ingest_files
from sediment.ingest.reading.json_text import JsonReader, RecordProblem
from sediment.ingest.redaction.credentials import marker
from sediment.model.facts import DeveloperDecision, EditObservation, FactModel, RejectedEdit, RetryLinkage
from sediment.records import encode_record
from sediment.store import FactStore
from sediment.store.ids import fact_id
from sediment.store.keys import table_and_key

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"
ORG = "acme"
NOW = datetime(2026, 7, 9, tzinfo=UTC)
TABLES = ("developer_decisions", "edit_observations", "rejected_edits", "retry_linkages")


def load(name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return payload


def translate(batch: Any) -> Translation:
    return translate_otlp(batch, org_id=ORG, captured_at=NOW)


def records_of(batch: dict[str, Any], resource: int = 0) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = batch["resourceLogs"][resource]["scopeLogs"][0]["logRecords"]
    return found


def without(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A record without the attributes ``keys`` (what raw keeps of a record with account attributes)."""
    return {**record, "attributes": [a for a in record["attributes"] if a["key"] not in keys]}


def event_timestamp(record: dict[str, Any]) -> datetime:
    """The client's own ISO rendering of the event time (milliseconds), an independent check."""
    [stamp] = [a["value"]["stringValue"] for a in record["attributes"] if a["key"] == "event.timestamp"]
    return utc_timestamp(stamp)


def by_call(facts: tuple[FactModel, ...]) -> dict[str, list[DeveloperDecision]]:
    found: dict[str, list[DeveloperDecision]] = {}
    for fact in facts:
        assert isinstance(fact, DeveloperDecision)
        found.setdefault(fact.call_id or "", []).append(fact)
    return found


def summary(fact: DeveloperDecision) -> tuple[Any, ...]:
    return (fact.agent_harness, fact.file_path, fact.accepted, fact.explicit, fact.interaction_mode)


# --- Claude Code ------------------------------------------------------------------------------


def test_claude_code_decisions_join_their_results() -> None:
    batch = load("claude_code.json")
    records = records_of(batch)
    translation = translate(batch)
    assert translation.problems == () and translation.warnings == ()
    assert translation.elements == 11
    assert sorted(translation.skips) == ["not_an_edit_tool:Read", "tool_result_joined", "tool_result_joined",
                                         "tool_result_joined", "tool_result_unjoined", "unknown_event:api_request",
                                         "unknown_event:user_prompt"]
    decisions = by_call(translation.facts)
    assert {call: [summary(d) for d in found] for call, found in decisions.items()} == {
        "toolu_02EditCalc": [("claude-code", "/checkout/project/calc.py", True, False, "agent")],
        "toolu_03WriteNotes": [("claude-code", "/checkout/project/docs/NOTES.md", True, True, "agent")],
        "toolu_04WriteSecrets": [("claude-code", "", False, True, "agent")],  # a refused call has no result
        "toolu_05Notebook": [("claude-code", "/checkout/project/explore.ipynb", True, True, "agent")],
    }
    [edit] = decisions["toolu_02EditCalc"]
    assert edit.session_id == "6f2c1e0a-4b7d-4c1e-9a55-0d3f7b2e8c11"
    assert edit.user_id == "4f1a9c2e7b3d8a6f0e5c1b9d2a7e4f3c8b6d0a1e9f2c5b7d3a8e6f4c1b9d2a7e"  # the record's hash
    assert edit.occurred_at == datetime(2026, 7, 7, 19, 55, 0, 5000, tzinfo=UTC) == event_timestamp(records[4])
    assert edit.captured_at == NOW and edit.org_id == ORG
    assert edit.commit_sha is None and edit.edit_retention_score is None and edit.observation_delay_ms is None
    assert edit.raw == {"decision": records[4], "result": records[5]}
    [reject] = decisions["toolu_04WriteSecrets"]
    assert reject.raw == {"decision": records[8], "result": None}
    for found in decisions.values():
        assert found[0].occurred_at == event_timestamp(found[0].raw["decision"])


def test_claude_code_sources_outside_the_vocabulary_are_implicit_and_warned() -> None:
    batch = load("claude_code.json")
    for record in records_of(batch):
        for attribute in record["attributes"]:
            if attribute["key"] == "source" and attribute["value"]["stringValue"] == "user_temporary":
                attribute["value"] = {"stringValue": "classifier_auto"}  # a future auto-mode verdict
    records_of(batch)[10]["attributes"] = [a for a in records_of(batch)[10]["attributes"] if a["key"] != "tool_input"]
    translation = translate(batch)
    assert translation.warnings == ("claude_code_unknown_source:classifier_auto", "claude_code_tool_input_absent")
    decisions = by_call(translation.facts)
    assert [d.explicit for d in decisions["toolu_03WriteNotes"]] == [False]
    assert [d.file_path for d in decisions["toolu_05Notebook"]] == [""]


def test_a_claude_code_result_in_the_next_batch_leaves_the_path_empty() -> None:
    """The decision and its result straddle two batches: the decision is stored path-less; its
    redelivery with the path, keyed without the path, is the same decision."""
    first, second, _ = (json.loads(line) for line in (FIXTURES / "collector.jsonl").read_text().splitlines())
    alone = by_call(translate(first).facts)["toolu_03WriteNotes"]
    assert [d.file_path for d in alone] == [""]
    assert "tool_result_unjoined" in translate(second).skips
    whole = by_call(translate(load("claude_code.json")).facts)["toolu_03WriteNotes"]
    assert table_and_key(alone[0])[2] == table_and_key(whole[0])[2]
    assert alone[0].decision_id != whole[0].decision_id  # the first one stored is kept (see the store test)


def batches(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()]


def test_real_claude_code_auto_accepted_edits() -> None:
    """Claude Code 2.1.200 with ``acceptEdits``: implicit accepts; the Edit's result fell into the next batch."""
    first, second = (translate(batch) for batch in batches("claude-code-2.1.200-accept-edits.jsonl"))
    assert first.problems == second.problems == () and first.warnings == second.warnings == ()
    assert sorted(first.skips) == ["tool_result_joined", "unknown_event:api_request", "unknown_event:api_request",
                                   "unknown_event:user_prompt"]
    assert sorted(second.skips) == ["not_an_edit_tool:Read", "tool_result_unjoined", "tool_result_unjoined",
                                    "unknown_event:api_request", "unknown_event:api_request",
                                    "unknown_event:assistant_response"]
    assert second.facts == ()
    write, edit = first.facts
    assert isinstance(write, DeveloperDecision) and isinstance(edit, DeveloperDecision)
    assert [(summary(d), d.call_id) for d in (write, edit)] == [
        (("claude-code", "/checkout/project/calc.py", True, False, "agent"), "toolu_01WriteCalc"),
        (("claude-code", "", True, False, "agent"), "toolu_02EditCalc"),
    ]
    assert write.session_id == edit.session_id == "02ee8ff9-94e8-4fcb-9ea7-9e4bf946f96b"
    assert write.user_id == "95b73162e4b0" + write.user_id[12:] and len(write.user_id) == 64  # the install hash
    assert write.occurred_at == event_timestamp(write.raw["decision"]) == datetime(2026, 12, 1, 12, 44, 37, 442000,
                                                                                     tzinfo=UTC)
    assert write.raw["result"]["body"] == {"stringValue": "claude_code.tool_result"}
    assert edit.raw["result"] is None


def test_real_claude_code_permission_prompt_answers() -> None:
    """Claude Code 2.1.200 asking a permission-prompt tool: an explicit accept and an explicit reject."""
    first, second = (translate(batch) for batch in batches("claude-code-2.1.200-permission-prompt.jsonl"))
    assert first.problems == second.problems == ()
    decisions = [*first.facts, *second.facts]
    assert [(summary(d), d.call_id, d.user_id) for d in decisions if isinstance(d, DeveloperDecision)] == [
        (("claude-code", "/checkout/project/NOTES.md", True, True, "agent"), "toolu_01WriteNotes", "developer-1"),
        (("claude-code", "", False, True, "agent"), "toolu_02EditNotes", "developer-1"),  # a refusal has no result
    ]
    assert "unknown_event:mcp_server_connection" in first.skips + second.skips


# --- Codex --------------------------------------------------------------------------------


def test_codex_decisions_are_one_per_patched_file() -> None:
    batch = load("codex.json")
    records = records_of(batch)
    translation = translate(batch)
    assert translation.problems == () and translation.warnings == ()
    assert sorted(translation.skips) == ["not_a_decision:timed_out", "not_an_edit_tool:exec_command",
                                         "tool_result_joined", "tool_result_joined", "tool_result_unjoined",
                                         "unknown_event:codex.api_request"]
    decisions = by_call(translation.facts)
    assert {call: [summary(d) for d in found] for call, found in decisions.items()} == {
        "call_7JXjTXnBT4R8YHM3bpvaOSSc": [("codex", "calc.py", True, False, "agent"),
                                         ("codex", "tests/test_calc.py", True, False, "agent")],
        "call_9QshellPatchDelete00001": [("codex", "old_calc.py", True, True, "agent")],  # source "User"
        "call_DeniedByReviewer00000001": [("codex", "", False, False, "agent")],
    }
    first = decisions["call_7JXjTXnBT4R8YHM3bpvaOSSc"][0]
    assert first.session_id == "0198a2c4-5e6f-7a10-8b2c-3d4e5f6a7b80" and first.user_id == "developer-1"
    # timeUnixNano is "0": the time is observedTimeUnixNano's, to the microsecond
    assert first.occurred_at == datetime(2026, 7, 8, 20, 35, 25, 478460, tzinfo=UTC)
    assert first.occurred_at - event_timestamp(records[1]) < timedelta(milliseconds=1)
    account = ("user.email", "user.account_id")
    assert first.raw == {"decision": without(records[1], *account), "result": without(records[2], *account)}
    assert "dev@example.com" not in encode_record(translation.facts)


def test_codex_decisions_of_one_call_are_distinct_facts() -> None:
    calc, test = by_call(translate(load("codex.json")).facts)["call_7JXjTXnBT4R8YHM3bpvaOSSc"]
    assert table_and_key(calc)[2] != table_and_key(test)[2] and calc.decision_id != test.decision_id


# --- Copilot --------------------------------------------------------------------------------


def test_copilot_decisions_and_the_vendors_graded_retention() -> None:
    batch = load("copilot.json")
    translation = translate(batch)
    assert translation.problems == () and translation.warnings == ()
    assert sorted(translation.skips) == ["not_a_decision:saved", "survival_not_apply_patch",
                                         "unknown_event:gen_ai.client.inference.operation.details"]
    facts = [f for f in translation.facts if isinstance(f, DeveloperDecision)]
    assert [(summary(f), f.edit_retention_score, f.observation_delay_ms) for f in facts] == [
        (("copilot", "src/report.py", False, True, "agent"), None, None),  # feedback: rejected
        (("copilot", "src/report.py", True, True, "inline"), None, None),  # feedback accepted in inline chat
        (("copilot", "README.md", True, True, "inline"), None, None),  # inline.done
        (("copilot", "src/report.py", True, False, "agent"), 1.0, 0),  # survival: intValue rates
        (("copilot", "src/report.py", True, False, "agent"), 0.8125, 30000),  # doubleValue rates
        (("copilot", "src/report.py", False, False, "agent"), 0.0, 300000),  # nothing survived: implicit reject
    ]
    first = facts[0]
    assert first.session_id == "c0p1l0t5-e551-4a2b-9c3d-7e8f9a0b1c2d"  # the resource's
    assert first.user_id == "octocat"
    assert first.call_id == "2d9f4b1a-6c3e-4f8a-9b7d-1e5c3a0f8b64"
    assert first.commit_sha == "3484a3fb816e0859fd6e1cea078d76385ff50625"  # sent in capitals
    assert first.occurred_at == datetime(2026, 6, 27, 16, 41, 50, 649000, tzinfo=UTC)
    assert first.raw == records_of(batch)[1]
    assert type(facts[3].edit_retention_score) is float
    assert len({table_and_key(f)[2] for f in facts[3:]}) == 3  # one per delay bucket


# --- shims and the transcript extractor ----------------------------------------------------


def test_shim_decisions_and_transcript_facts() -> None:
    batch = load("sediment.json")
    translation = translate(batch)
    assert translation.problems == () and translation.skips == ("unknown_agent:gemini-cli",)
    decisions = [f for f in translation.facts if isinstance(f, DeveloperDecision)]
    assert [(summary(d), d.session_id, d.call_id, d.user_id) for d in decisions] == [
        (("pi", "/repo/app/main.py", True, False, "agent"), "pi-sess-1", "call-write-1", "developer-1"),
        (("pi", "", False, True, "agent"), "pi-sess-1", "call-edit-2", "developer-1"),
        (("cursor", "src/components/Button.tsx", True, False, "agent"), "cur-sess-7", "tool_5f3a", None),
        (("cursor", "src/components/Button.tsx", True, False, "agent"), "cur-sess-7", "tool_5f3a", None),
    ]
    assert decisions[0].raw == {"decision": records_of(batch, 0)[0]}
    # Cursor's Write receipts: one deterministic id from the validated Fact, whatever the receipt time
    cursor = decisions[2]
    identity = [ORG, "cursor", "cur-sess-7", "tool_5f3a", "src/components/Button.tsx", True, False, "agent", "Write"]
    import hashlib

    expected = "cursor-write-v1:" + hashlib.sha256(json.dumps(identity, separators=(",", ":")).encode()).hexdigest()
    assert cursor.decision_id == decisions[3].decision_id == expected
    assert cursor.occurred_at != decisions[3].occurred_at
    # the pi decisions get ids derived from their natural keys
    assert decisions[0].decision_id.startswith("decision_")

    edits = [f for f in translation.facts if isinstance(f, EditObservation)]
    assert [(e.agent_harness, e.call_id, e.file_path, e.external_lines_added, e.raw) for e in edits] == [
        ("claude-code", "toolu_02EditCalc", "/checkout/project/calc.py", 0, {"tool_name": "Edit"}),
        ("claude-code", "toolu_03WriteNotes", "/checkout/project/docs/NOTES.md", None, {"tool_name": "Write"}),
        ("codex", "call_7JXjTXnBT4R8YHM3bpvaOSSc", "calc.py", None, {"tool_name": "apply_patch"}),
    ]
    assert edits[1].observed_file_text == "" and edits[0].user_id == "developer-1"
    assert edits[0].observation_id == fact_id("edit", ORG, "claude-code", "6f2c1e0a-4b7d-4c1e-9a55-0d3f7b2e8c11",
                                              "toolu_02EditCalc")
    [rejected] = [f for f in translation.facts if isinstance(f, RejectedEdit)]
    assert (rejected.call_id, rejected.proposed, rejected.file_path) == ("toolu_04WriteSecrets",
                                                                         "API_TOKEN=changeme\n", "/checkout/project/.env")
    [retry] = [f for f in translation.facts if isinstance(f, RetryLinkage)]
    assert (retry.tool_name, retry.rejected_call_id, retry.accepted_call_id, retry.raw) == (
        "Write", "toolu_04WriteSecrets", "toolu_06WriteSecretsAgain", {})


# --- raw: account data left out, credentials redacted --------------------------------------


def test_raw_redacts_credential_attributes_and_urls() -> None:
    batch = load("copilot.json")
    record = records_of(batch)[1]
    record["attributes"] += [
        {"key": "authorization", "value": {"stringValue": "Bearer sk-live-123"}},
        {"key": "user.account_uuid", "value": {"stringValue": "6b1e-…"}},
        {"key": "headers", "value": {"kvlistValue": {"values": [
            {"key": "x-api-key", "value": {"stringValue": "key-456"}},
            {"key": "accept", "value": {"stringValue": "application/json"}}]}}},
        {"key": "endpoint", "value": {"stringValue": "https://example.com/v1?key=AIzaSecret&alt=json"}},
    ]
    [decision, *_] = translate(batch).facts
    assert isinstance(decision, DeveloperDecision)
    kept = {a["key"]: a["value"] for a in decision.raw["attributes"]}
    assert kept["authorization"] == {"stringValue": marker("Bearer sk-live-123")}
    assert "user.account_uuid" not in kept
    assert kept["headers"]["kvlistValue"]["values"] == [
        {"key": "x-api-key", "value": {"stringValue": marker("key-456")}},
        {"key": "accept", "value": {"stringValue": "application/json"}}]
    assert kept["endpoint"] == {"stringValue": f"https://example.com/v1?key={marker('AIzaSecret')}&alt=json"}
    assert kept["outcome"] == {"stringValue": "rejected"}
    assert provenance(decision.raw) == decision.raw  # redacting twice changes nothing


def test_raw_redacts_opentelemetry_header_attributes_and_credential_shaped_names() -> None:
    """OpenTelemetry's HTTP semantic conventions name a request header's attribute
    ``http.request.header.<name>`` (its value a string array); a bearer token there, or under
    any ``*_token`` / ``*secret*`` / ``*password*`` name, is a credential like ``authorization``."""
    batch = load("copilot.json")
    record = records_of(batch)[1]
    record["attributes"] += [
        {"key": "http.request.header.authorization",
         "value": {"arrayValue": {"values": [{"stringValue": "Bearer eyJhbGciOi.secret"}]}}},
        {"key": "http.request.header.x-api-key", "value": {"stringValue": "key-789"}},
        {"key": "http.request.header.content-type", "value": {"stringValue": "application/json"}},
        {"key": "auth.refresh_token", "value": {"stringValue": "rt-1"}},
        {"key": "client.secret", "value": {"stringValue": "cs-1"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
    ]
    [decision, *_] = translate(batch).facts
    assert isinstance(decision, DeveloperDecision)
    kept = {a["key"]: a["value"] for a in decision.raw["attributes"]}
    assert kept["http.request.header.authorization"] == {
        "arrayValue": {"values": [{"stringValue": marker("Bearer eyJhbGciOi.secret")}]}}
    assert kept["http.request.header.x-api-key"] == {"stringValue": marker("key-789")}
    assert kept["http.request.header.content-type"] == {"stringValue": "application/json"}
    assert kept["auth.refresh_token"] == {"stringValue": marker("rt-1")}
    assert kept["client.secret"] == {"stringValue": marker("cs-1")}
    assert kept["gen_ai.usage.input_tokens"] == {"intValue": "12"}
    assert "eyJhbGciOi.secret" not in json.dumps(decision.raw)


# --- refusals: one line per bad record, the others kept -------------------------------------


def mutated(name: str, index: int, change: Any, *, resource: int = 0) -> dict[str, Any]:
    batch = copy.deepcopy(load(name))
    records = records_of(batch, resource)
    records[index] = change(records[index])
    return batch


def set_attribute(key: str, value: Any) -> Any:
    def change(record: dict[str, Any]) -> dict[str, Any]:
        attributes = [a for a in record["attributes"] if a["key"] != key]
        if value is not None:
            attributes.append({"key": key, "value": value})
        return {**record, "attributes": attributes}
    return change


def set_field(key: str, value: Any) -> Any:
    return lambda record: {**{k: v for k, v in record.items() if k != key}, **({} if value is None else {key: value})}


REFUSALS = [
    ("claude_code.json", 4, set_attribute("session.id", None), "attributes[session.id]: missing (nor in resource.attributes)"),
    ("claude_code.json", 4, set_attribute("session.id", {"intValue": "7"}),
     "attributes[session.id]: expected a stringValue, got intValue"),
    ("claude_code.json", 4, set_attribute("session.id", {"stringValue": "  "}),
     "attributes[session.id]: missing (nor in resource.attributes)"),
    ("claude_code.json", 4, set_field("timeUnixNano", "0"), "timeUnixNano: missing or 0 (unset); the event time is required"),
    ("claude_code.json", 4, set_field("timeUnixNano", "1.7e18"),
     "timeUnixNano: expected unsigned nanoseconds since the epoch (a decimal string), got '1.7e18'"),
    ("claude_code.json", 4, set_field("timeUnixNano", -5), "timeUnixNano: -5 is outside the unsigned 64-bit range"),
    ("claude_code.json", 4, set_field("timeUnixNano", str(2**64)), "is outside the unsigned 64-bit range"),
    ("claude_code.json", 4, set_field("timeUnixNano", True), "timeUnixNano: expected unsigned nanoseconds since the "
     "epoch (a decimal string), got boolean"),
    ("claude_code.json", 4, set_attribute("decision", {"boolValue": True}),
     "attributes[decision]: expected a stringValue, got boolValue"),
    ("claude_code.json", 4, set_attribute("tool_name", None), "attributes[tool_name]: missing"),
    ("claude_code.json", 4, set_attribute("source", {"stringValue": "config", "intValue": "1"}),
     "attributes[source]: holds more than one value (stringValue, intValue)"),
    # The AnyValue that names the event holds that one string (issue 20: a body with an intValue
    # beside its stringValue was stored).
    ("claude_code.json", 4, set_field("body", {"stringValue": "claude_code.tool_decision", "intValue": "1"}),
     "body: holds more than one value (stringValue, intValue)"),
    ("codex.json", 1, set_attribute("event.name", {"stringValue": "codex.tool_decision", "intValue": 1}),
     "attributes[event.name]: holds more than one value (stringValue, intValue)"),
    ("copilot.json", 4, set_attribute("event.name", {"stringValue": "copilot_chat.inline.done", "boolValue": True}),
     "attributes[event.name]: holds more than one value (stringValue, boolValue)"),
    ("codex.json", 1, lambda r: {**r, "attributes": [*r["attributes"], {"key": "event.name", "value": {
        "stringValue": "codex.tool_decision"}}]}, "attributes[event.name]: the key is given twice"),
    ("claude_code.json", 4, set_field("attributes", {"decision": "accept"}), "attributes: expected an array, got object"),
    ("claude_code.json", 4, lambda r: {**r, "attributes": [*r["attributes"], ["decision", "accept"]]},
     "attributes[11]: expected {key, value}, got array"),
    ("claude_code.json", 4, lambda r: {**r, "attributes": [*r["attributes"], {"key": "decision", "value": {
        "stringValue": "reject"}}]}, "attributes[decision]: the key is given twice"),
    ("claude_code.json", 4, lambda r: ["not", "a", "record"], "expected an object, got array"),
    ("codex.json", 1, set_field("observedTimeUnixNano", "0"),
     "timeUnixNano: missing or 0, and so is observedTimeUnixNano"),
    ("codex.json", 1, set_attribute("conversation.id", None),
     "attributes[conversation.id]: missing (nor in resource.attributes)"),
    ("codex.json", 1, set_attribute("source", {"intValue": 1}), "attributes[source]: expected a stringValue, got intValue"),
    ("copilot.json", 4, set_attribute("accepted", {"stringValue": "true"}),
     "attributes[accepted]: expected a boolValue, got stringValue"),
    ("copilot.json", 1, set_attribute("copilot_chat.file.relative_path", None),
     "attributes[copilot_chat.file.relative_path]: missing"),
    ("copilot.json", 1, set_attribute("github.copilot.git.commit_sha", {"stringValue": "3484a3f"}),
     "attributes[github.copilot.git.commit_sha]: commit SHA must be 40 or 64 hex characters"),
    ("copilot.json", 7, set_attribute("survival_rate_four_gram", {"doubleValue": 1.5}),
     "attributes[survival_rate_four_gram]: Input should be less than or equal to 1"),
    ("copilot.json", 7, set_attribute("survival_rate_four_gram", {"doubleValue": "NaN"}),
     "attributes[survival_rate_four_gram]: must be a finite number, got nan"),
    ("copilot.json", 7, set_attribute("survival_rate_no_revert", {"stringValue": "1"}),
     "attributes[survival_rate_no_revert]: expected an intValue or a doubleValue, got stringValue"),
    ("copilot.json", 7, set_attribute("time_delay_ms", {"intValue": "-1"}),
     "attributes[time_delay_ms]: must be in [0, 2^63), got -1"),
    ("copilot.json", 7, set_attribute("time_delay_ms", {"intValue": "12x"}),
     "attributes[time_delay_ms]: intValue must be a signed 64-bit integer (a decimal string or an integer), got '12x'"),
    ("copilot.json", 7, set_attribute("time_delay_ms", {"intValue": str(2**63)}),
     "attributes[time_delay_ms]: intValue must be a signed 64-bit integer"),
]


@pytest.mark.parametrize(("name", "index", "change", "message"), REFUSALS)
def test_a_bad_record_is_refused_alone(name: str, index: int, change: Any, message: str) -> None:
    good = translate(load(name))
    translation = translate(mutated(name, index, change))
    [problem] = translation.problems
    locator = f"resourceLogs[0].scopeLogs[0].logRecords[{index}]: "
    assert problem.startswith(locator) and message in problem, problem
    assert "\n" not in problem
    lost = {table_and_key(f)[2] for f in good.facts} - {table_and_key(f)[2] for f in translation.facts}
    kept = {table_and_key(f)[2] for f in translation.facts} - {table_and_key(f)[2] for f in good.facts}
    source = [f for f in good.facts if _source(f) == index]
    assert not kept and lost == {table_and_key(f)[2] for f in source}, "only the bad record's Facts are missing"


def _source(fact: FactModel) -> int | None:
    """The position of the record a Fact came from, found by its raw decision record in the fixture."""
    raw = getattr(fact, "raw", None)
    decision = raw.get("decision") if isinstance(raw, dict) and "decision" in raw else raw
    for name in ("claude_code.json", "codex.json", "copilot.json", "sediment.json"):
        for index, record in enumerate(records_of(load(name))):
            if isinstance(decision, dict) and decision.get("timeUnixNano") == record.get("timeUnixNano") and \
                    decision.get("observedTimeUnixNano") == record.get("observedTimeUnixNano"):
                return index
    return None


@pytest.mark.parametrize(("name", "index", "change", "message"), [
    ("claude_code.json", 5, set_field("body", {"stringValue": "claude_code.tool_result", "intValue": "1"}),
     "body: holds more than one value (stringValue, intValue)"),
    ("codex.json", 2, set_attribute("event.name", {"stringValue": "codex.tool_result", "doubleValue": 1.5}),
     "attributes[event.name]: holds more than one value (stringValue, doubleValue)"),
])
def test_a_tool_result_named_by_an_anyvalue_of_two_kinds_is_refused_and_joins_nothing(
        name: str, index: int, change: Any, message: str) -> None:
    good = translate(load(name))
    translation = translate(mutated(name, index, change))
    assert list(translation.problems) == [f"resourceLogs[0].scopeLogs[0].logRecords[{index}]: {message}"]
    joined = [f for f in good.facts if isinstance(f, DeveloperDecision) and isinstance(f.raw, dict)
              and (f.raw.get("result") or {}).get("timeUnixNano") == records_of(load(name))[index]["timeUnixNano"]]
    assert joined, "the fixture's decision joins this result"
    call = joined[0].call_id

    def others(facts: tuple[Any, ...]) -> set[bytes]:
        return {encode_record(f) for f in facts if getattr(f, "call_id", None) != call}
    assert others(translation.facts) == others(good.facts), "another record's Facts changed"
    mine = [f for f in translation.facts if getattr(f, "call_id", None) == call]
    assert mine and all(isinstance(f, DeveloperDecision) and f.raw["result"] is None for f in mine), \
        "the decision is still stored, joined to no result"


SEDIMENT_REFUSALS = [
    (0, 0, set_attribute("explicit", None), "attributes[explicit]: missing"),
    (0, 0, set_attribute("explicit", {"stringValue": "false"}), "attributes[explicit]: expected a boolValue"),
    (0, 0, set_attribute("tool_use_id", None), "attributes[tool_use_id]: missing"),
    (0, 0, set_attribute("agent", None), "attributes[agent]: missing"),
    (2, 0, set_attribute("applied_text", {"stringValue": "é" * (128 * 1024 + 1)}),
     "attributes[applied_text]: 262146 bytes of UTF-8, more than 262144 (256 KiB)"),
    (2, 0, set_attribute("observed_file_text", None), "attributes[observed_file_text]: missing"),
    (2, 0, set_attribute("external_lines_added", {"intValue": "-3"}),
     "attributes[external_lines_added]: Input should be greater than or equal to 0"),
    (2, 0, set_attribute("external_lines_removed", {"doubleValue": 1.0}),
     "attributes[external_lines_removed]: expected a intValue, got doubleValue"),
    (2, 0, set_attribute("file_path", {"stringValue": ""}), "attributes[file_path]: empty"),
    (2, 2, set_attribute("proposed", {"intValue": 1}), "attributes[proposed]: expected a stringValue, got intValue"),
    (2, 3, set_attribute("accepted_call_id", {"stringValue": "toolu_04WriteSecrets"}),
     ": rejected_call_id and accepted_call_id must differ"),
    (2, 3, set_attribute("rejected_call_id", None), "attributes[rejected_call_id]: missing"),
]


@pytest.mark.parametrize(("resource", "index", "change", "message"), SEDIMENT_REFUSALS)
def test_a_bad_sediment_record_is_refused_alone(resource: int, index: int, change: Any, message: str) -> None:
    good = translate(load("sediment.json"))
    translation = translate(mutated("sediment.json", index, change, resource=resource))
    [problem] = translation.problems
    assert problem.startswith(f"resourceLogs[{resource}].scopeLogs[0].logRecords[{index}]: ") and message in problem, \
        problem
    assert len(translation.facts) == len(good.facts) - 1


def test_a_not_a_retry_tool_is_a_named_skip() -> None:
    translation = translate(mutated("sediment.json", 3, set_attribute("tool_name", {"stringValue": "MultiEdit"}),
                                    resource=2))
    assert translation.problems == () and "not_a_retry_tool:MultiEdit" in translation.skips


def test_broken_containers_fail_alone() -> None:
    batch = load("claude_code.json")
    broken = {"resourceLogs": [
        batch["resourceLogs"][0],
        "not a resource",
        {"resource": {"attributes": []}, "scopeLogs": {"logRecords": []}},
        {"resource": {"attributes": []}, "scopeLogs": [{"logRecords": "none"}, None]},
        {"resource": [], "scopeLogs": []},
    ]}
    translation = translate(broken)
    assert translation.problems == (
        "resourceLogs[1]: expected an object, got string",
        "resourceLogs[2].scopeLogs: expected an array, got object",
        "resourceLogs[3].scopeLogs[0].logRecords: expected an array, got string",
        "resourceLogs[3].scopeLogs[1]: expected an object, got null",
        "resourceLogs[4].resource: expected an object, got array",
    )
    assert len(translation.facts) == len(translate(batch).facts) == 4


@pytest.mark.parametrize(("batch", "message"), [
    ({"resource_logs": []}, "resourceLogs: missing: not an OTLP/JSON logs export"),
    ({"resourceSpans": []}, "resourceLogs: missing: not an OTLP/JSON logs export"),
    ({"resourceLogs": {"resource": {}}}, "resourceLogs: expected an array, got object"),
])
def test_a_batch_that_is_not_a_logs_export_is_refused_whole(batch: dict[str, Any], message: str) -> None:
    with pytest.raises(TranslationError, match=f"^{message}$".replace("[", r"\[")):
        translate(batch)


def test_empty_parts_are_empty() -> None:
    """Absent and null repeated fields are empty (the OTLP/JSON encoding omits defaults)."""
    for batch in ({"resourceLogs": []}, {"resourceLogs": None}, {"resourceLogs": [{}]},
                  {"resourceLogs": [{"scopeLogs": [{}]}]}, {"resourceLogs": [{"scopeLogs": [{"logRecords": None}]}]}):
        translation = translate(batch)
        assert (translation.facts, translation.problems, translation.elements) == ((), (), 0)


def test_unknown_events_are_counted_and_named() -> None:
    def record(body: Any, name: str | None) -> dict[str, Any]:
        attributes = [{"key": "event.name", "value": {"stringValue": name}}] if name else []
        return {"timeUnixNano": "1", "body": body, "attributes": attributes}
    batch = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        record({"stringValue": "GenAI inference: gpt-5"}, None),  # prose, not a name
        record({"stringValue": "claude_code.hook_run"}, None),
        record(None, "codex.sse_event"),
        record({"stringValue": "x"}, "gen_ai.client.inference.operation.details"),
        record({"kvlistValue": {"values": []}}, None),
        {"timeUnixNano": "1"},
    ]}]}]}
    translation = translate(batch)
    assert translation.skips == ("unknown_event:(unnamed)", "unknown_event:claude_code.hook_run",
                                 "unknown_event:codex.sse_event",
                                 "unknown_event:gen_ai.client.inference.operation.details",
                                 "unknown_event:(unnamed)", "unknown_event:(unnamed)")
    assert translation.problems == () and translation.elements == 6


def test_an_event_is_only_read_where_its_client_names_it() -> None:
    """``claude_code.tool_decision`` in ``event.name`` (not the body) is no Claude Code decision."""
    batch = load("claude_code.json")
    record = records_of(batch)[4]
    record["body"] = {"stringValue": "something else"}
    for attribute in record["attributes"]:
        if attribute["key"] == "event.name":
            attribute["value"] = {"stringValue": "claude_code.tool_decision"}
    translation = translate(batch)
    assert "unknown_event:claude_code.tool_decision" in translation.skips
    assert "toolu_02EditCalc" not in by_call(translation.facts)


# --- flaws in the JSON text refuse only their record -----------------------------------------


def test_a_duplicate_key_or_an_unreadable_number_refuses_only_its_record(tmp_path: Path) -> None:
    text = (FIXTURES / "claude_code.json").read_text(encoding="utf-8")
    first = text.index('"timeUnixNano": "1783454100005000000"')  # the Edit decision
    text = text[:first] + '"timeUnixNano": "1", ' + text[first:]
    second = text.index('"timeUnixNano": "1783454100009000000"')  # the Write decision
    text = text[:second] + '"flags": 1e400, ' + text[second:]
    path = tmp_path / "flawed.json"
    path.write_text(text, encoding="utf-8")
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    report = ingest_files([str(path)], translate, store, keep_flaws=True)
    assert [str(p) for p in report.problems] == [
        f"{path}:1: resourceLogs[0].scopeLogs[0].logRecords[4]: duplicate key 'timeUnixNano'",
        f"{path}:1: resourceLogs[0].scopeLogs[0].logRecords[6]: number out of range: 1e400",
    ]
    assert {d.call_id for d in store.facts("developer_decisions", ORG)} == {"toolu_04WriteSecrets", "toolu_05Notebook"}
    with pytest.raises(RecordProblem):
        JsonReader().parse(text)  # every other ingest path still refuses the whole record
    store.close()


# --- the store: exact, idempotent, deterministic ---------------------------------------------


def ingest(store: FactStore, *paths: Path) -> Any:
    return ingest_files([str(p) for p in paths], translate, store, keep_flaws=True)


def stored(store: FactStore) -> dict[str, list[str]]:
    return {table: sorted(encode_record(f) for f in store.facts(table, ORG)) for table in TABLES}


def every_fixture() -> list[Path]:
    return [*sorted(FIXTURES.glob("*.json")), FIXTURES / "collector.jsonl"]


def test_facts_are_stored_exactly_and_reingesting_stores_nothing(store_url: str) -> None:
    store = FactStore(store_url)
    report = ingest(store, *every_fixture())
    assert report.problems == []
    assert report.stored == {"developer_decisions": 17, "edit_observations": 3, "rejected_edits": 1,
                             "retry_linkages": 1}
    # the Cursor receipt again, and the collector's batches are redeliveries of the two files
    assert report.duplicates == {"developer_decisions": 9}
    assert report.records == 7 and report.elements == 59
    expected: dict[str, FactModel] = {}
    for path in every_fixture():
        for line in path.read_text(encoding="utf-8").splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            for fact in translate(json.loads(line)).facts:
                table, fact_id, key = table_and_key(fact)
                if key not in {table_and_key(f)[2] for f in expected.values() if table_and_key(f)[0] == table} \
                        and fact_id not in expected:
                    expected[fact_id] = fact
    assert stored(store) == {table: sorted(encode_record(f) for f in expected.values()
                                           if table_and_key(f)[0] == table) for table in TABLES}
    again = ingest(store, *every_fixture())
    assert again.stored == {} and sum(again.duplicates.values()) == 17 + 3 + 1 + 1 + 9
    store.close()


def test_the_store_is_the_same_whatever_the_order(tmp_path: Path) -> None:
    """Files in any order, the records of every batch shuffled: the same Facts. The one exception
    is a redelivery across batches: the collector's first batch holds the Write decision without
    its result; stored before the whole file's, the path-less one is kept."""
    reference = FactStore(f"sqlite:///{tmp_path / 'reference.db'}")
    ingest(reference, *every_fixture())
    expected = stored(reference)
    reference.close()
    rng = random.Random(3)
    for attempt in range(4):
        files = sorted(FIXTURES.glob("*.json"))
        rng.shuffle(files)
        collector_first = attempt % 2 == 1
        paths = [FIXTURES / "collector.jsonl", *files] if collector_first else [*files, FIXTURES / "collector.jsonl"]
        shuffled = tmp_path / f"shuffled-{attempt}"
        shuffled.mkdir()
        for path in files:
            batch = load(path.name)
            for resource in batch["resourceLogs"]:
                rng.shuffle(resource["scopeLogs"][0]["logRecords"])
            rng.shuffle(batch["resourceLogs"])
            (shuffled / path.name).write_text(json.dumps(batch))
        store = FactStore(f"sqlite:///{shuffled / 'facts.db'}")
        ingest(store, *[shuffled / p.name if p.suffix == ".json" else p for p in paths])
        found = stored(store)
        store.close()
        if not collector_first:
            assert found == expected
            continue
        assert {t: v for t, v in found.items() if t != "developer_decisions"} == \
               {t: v for t, v in expected.items() if t != "developer_decisions"}
        differ = set(found["developer_decisions"]) ^ set(expected["developer_decisions"])
        assert {(json.loads(r)["call_id"], json.loads(r)["file_path"]) for r in differ} == {
            ("toolu_03WriteNotes", ""), ("toolu_03WriteNotes", "/checkout/project/docs/NOTES.md")}


# --- the command ------------------------------------------------------------------------------


def sediment(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": ORG,
           "SEDIMENT_CAPTURE_TIME": "2026-07-09T00:00:00Z"}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                          input=stdin, timeout=120)


def test_the_command_reports_and_exits_8_on_a_bad_record(tmp_path: Path) -> None:
    good = sediment("ingest", "otlp", str(FIXTURES / "copilot.json"), "--json", home=tmp_path / "home")
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout) == {
        "records": 1, "stored": {"developer_decisions": 6}, "duplicates": {}, "failed": 0, "log_records": 9,
        "skipped": {"not_a_decision:saved": 1, "survival_not_apply_patch": 1,
                    "unknown_event:gen_ai.client.inference.operation.details": 1}, "warnings": {},
        "redacted": {}}
    bad = mutated("claude_code.json", 4, set_attribute("session.id", None))
    result = sediment("ingest", "otlp", "-", home=tmp_path / "home", stdin=json.dumps(bad))
    assert result.returncode == 8
    lines = result.stderr.splitlines()
    assert "error: -:1: resourceLogs[0].scopeLogs[0].logRecords[4]: attributes[session.id]: missing (nor in " \
           "resource.attributes)" in lines
    assert "1 record(s) read holding 11 log records; stored developer_decisions: 3" in lines
    assert lines[-1].startswith("error: 1 problem(s)") and "Traceback" not in result.stderr
    listed = sediment("facts", "--json", home=tmp_path / "home")
    tables = json.loads(listed.stdout)["tables"]
    assert tables["developer_decisions"] == {"stored": 9, "quarantined": 0}
    assert {"edit_observations", "rejected_edits", "retry_linkages"} <= set(tables)


def test_the_help_teaches_the_command(tmp_path: Path) -> None:
    result = sediment("ingest", "otlp", "--help", home=tmp_path / "home")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for phrase in ("ExportLogsServiceRequest", "copilot_chat.edit.feedback", "claude_code.tool_decision",
                   "OTEL_LOG_TOOL_DETAILS=1", "codex.tool_decision", "sediment.tool_decision",
                   "sediment.edit_observation", "unknown_event:NAME", "exits 8", "log_records"):
        assert phrase in text, phrase


def test_nesting_past_the_limit_refuses_the_line_even_under_a_duplicate_key(tmp_path: Path) -> None:
    """The depth limit holds inside a flawed object too: the whole line is one problem."""
    deep = "[" * 300 + "]" * 300
    line = ('{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "x"}, "body": ' + deep +
            '}]}]}]}')
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(load("copilot.json")) + "\n" + line + "\n")
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    report = ingest_files([str(path)], translate, store, keep_flaws=True)
    assert [str(p) for p in report.problems] == [f"{path}:2: nested deeper than 256 levels"]
    assert report.stored == {"developer_decisions": 6}
    store.close()


def test_workers_store_the_same_facts(tmp_path: Path) -> None:
    files = [str(p) for p in every_fixture()]
    one = sediment("ingest", "otlp", *files, "--json", home=tmp_path / "one")
    two = sediment("ingest", "otlp", *files, "--json", "--workers", "2", home=tmp_path / "two")
    assert one.returncode == two.returncode == 0, two.stderr
    assert json.loads(one.stdout) == json.loads(two.stdout)
    stores = [FactStore(f"sqlite:///{tmp_path / name / 'facts.db'}") for name in ("one", "two")]
    assert stored(stores[0]) == stored(stores[1])
    for store in stores:
        store.close()
