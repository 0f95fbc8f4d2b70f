"""The evidence the training objectives read (docs/evidence.md): DeveloperDecision,
EditObservation, RejectedEdit and RetryLinkage, their natural keys, and store schema 6, on SQLite
and on a real PostgreSQL server."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import inspect, select, update

from sediment.ingest.facts_jsonl import translate_fact
from sediment.model.facts import DeveloperDecision, EditObservation, FactModel, RejectedEdit, RetryLinkage, known_user
from sediment.records import canonical_json, decode_record, encode_record
from sediment.store import FactStore, schema
from sediment.store.ids import fact_id
from sediment.store.keys import decision_key, table_and_key

ORG = "acme"
T0 = datetime(2026, 7, 7, 19, 57, 35, 424000, tzinfo=UTC)
SESSION = "11111111-1111-1111-1111-111111111111"

DECISION_FIELDS = ["decision_id", "org_id", "session_id", "user_id", "agent_harness", "file_path", "accepted",
                   "explicit", "interaction_mode", "commit_sha", "call_id", "edit_retention_score",
                   "observation_delay_ms", "occurred_at", "captured_at", "raw"]
OBSERVATION_FIELDS = ["observation_id", "org_id", "session_id", "user_id", "agent_harness", "file_path", "call_id",
                      "applied_text", "observed_file_text", "external_lines_added", "external_lines_removed",
                      "occurred_at", "captured_at", "raw"]
REJECTION_FIELDS = ["rejection_id", "org_id", "session_id", "user_id", "agent_harness", "file_path", "call_id",
                    "proposed", "occurred_at", "captured_at", "raw"]
RETRY_FIELDS = ["retry_linkage_id", "org_id", "session_id", "user_id", "agent_harness", "file_path", "tool_name",
                "rejected_call_id", "accepted_call_id", "occurred_at", "captured_at", "raw"]


def decision(**overrides: Any) -> DeveloperDecision:
    return DeveloperDecision(**{"decision_id": "d-1", "org_id": ORG, "session_id": SESSION,
                                "agent_harness": "claude-code", "file_path": "/checkout/project/approved.txt",
                                "accepted": True, "explicit": True, "interaction_mode": "agent",
                                "call_id": "toolu_0000000000000001", "occurred_at": T0,
                                "captured_at": T0 + timedelta(minutes=1)} | overrides)


def edit(**overrides: Any) -> EditObservation:
    return EditObservation(**{"observation_id": "e-1", "org_id": ORG, "session_id": SESSION,
                              "agent_harness": "claude-code", "file_path": "/checkout/project/calc.py",
                              "call_id": "toolu_0000000000000001", "applied_text": "    return a * b\n",
                              "observed_file_text": "def multiply(a, b):\n    return a * b\n",
                              "occurred_at": T0, "captured_at": T0 + timedelta(minutes=1),
                              "raw": {"tool_name": "Edit"}} | overrides)


def rejection(**overrides: Any) -> RejectedEdit:
    return RejectedEdit(**{"rejection_id": "r-1", "org_id": ORG, "session_id": SESSION, "agent_harness": "claude-code",
                           "file_path": "/checkout/project/calc.py", "call_id": "toolu_0000000000000002",
                           "proposed": "    return a - b\n", "occurred_at": T0,
                           "captured_at": T0 + timedelta(minutes=1), "raw": {"tool_name": "Edit"}} | overrides)


def retry(**overrides: Any) -> RetryLinkage:
    return RetryLinkage(**{"retry_linkage_id": "l-1", "org_id": ORG, "session_id": SESSION,
                           "agent_harness": "claude-code", "file_path": "/checkout/project/calc.py",
                           "tool_name": "Edit", "rejected_call_id": "toolu_0000000000000002",
                           "accepted_call_id": "toolu_0000000000000003", "occurred_at": T0,
                           "captured_at": T0 + timedelta(minutes=1)} | overrides)


# --- the models -----------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "fields"), [(DeveloperDecision, DECISION_FIELDS),
                                               (EditObservation, OBSERVATION_FIELDS),
                                               (RejectedEdit, REJECTION_FIELDS), (RetryLinkage, RETRY_FIELDS)])
def test_field_order_is_the_contracts(model: type[FactModel], fields: list[str]) -> None:
    assert list(model.model_fields) == fields


def test_schema_ids_are_the_contracts_and_records_carry_no_version() -> None:
    """The bundle's facts/<slug> v3 each; the records themselves have no version field (the contract's fields)."""
    base = "https://sediment.so/schemas/facts"
    assert DeveloperDecision.schema_id == f"{base}/developer-decision/v3.json"
    assert EditObservation.schema_id == f"{base}/edit-observation/v3.json"
    assert RejectedEdit.schema_id == f"{base}/rejected-edit/v3.json"
    assert RetryLinkage.schema_id == f"{base}/retry-linkage/v3.json"
    for fact in (decision(), edit(), rejection(), retry()):
        assert "schema_id" not in decode_record(encode_record(fact))


@pytest.mark.parametrize(
    ("build", "field", "message"),
    [
        (lambda: retry(accepted_call_id="toolu_0000000000000002"), None, "rejected_call_id and accepted_call_id must differ"),
        (lambda: retry(tool_name="MultiEdit"), "tool_name", "Input should be 'Edit' or 'Write'"),
        (lambda: retry(file_path="  "), "file_path", "identifier must not be empty"),
        (lambda: retry(rejected_call_id=""), "rejected_call_id", "identifier must not be empty"),
        (lambda: edit(call_id=None), "call_id", "Input should be a valid string"),
        (lambda: edit(applied_text=None), "applied_text", "Input should be a valid string"),
        (lambda: edit(observed_file_text=3), "observed_file_text", "Input should be a valid string"),
        (lambda: edit(external_lines_added=-1), "external_lines_added", "greater than or equal to 0"),
        (lambda: edit(external_lines_added=2**63), "external_lines_added", "less than or equal to 9223372036854775807"),
        (lambda: edit(external_lines_removed=True), "external_lines_removed", "Input should be a valid integer"),
        (lambda: edit(external_lines_removed=1.0), "external_lines_removed", "Input should be a valid integer"),
        (lambda: edit(agent_harness="gemini"), "agent_harness", "Input should be 'claude-code'"),
        (lambda: rejection(proposed=["x"]), "proposed", "Input should be a valid string"),
        (lambda: rejection(session_id=" "), "session_id", "identifier must not be empty"),
        (lambda: rejection(occurred_at=1783454255), "occurred_at", "expected an RFC 3339 timestamp string, got number"),
        (lambda: decision(observation_delay_ms=2**63), "observation_delay_ms", "less than or equal to 9223372036854775807"),
        (lambda: decision(edit_retention_score=math.nan), "edit_retention_score", "less than or equal to 1"),
        (lambda: decision(edit_retention_score=math.inf), "edit_retention_score", "less than or equal to 1"),
        (lambda: decision(commit_sha="abc1234"), "commit_sha", "commit SHA must be 40 or 64 hex characters"),
    ],
)
def test_validation_rules(build: Any, field: str | None, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    [error] = caught.value.errors()
    assert message in error["msg"]
    assert (".".join(str(p) for p in error["loc"]) or None) == field


def test_boundaries_are_accepted() -> None:
    assert edit(external_lines_added=0, external_lines_removed=2**63 - 1).external_lines_removed == 2**63 - 1
    assert decision(observation_delay_ms=2**63 - 1, edit_retention_score=0.0).observation_delay_ms == 2**63 - 1
    assert edit(applied_text="", observed_file_text="").applied_text == ""  # an empty Write; a deleted file
    assert rejection(proposed="").proposed == ""
    assert retry(tool_name="Write").tool_name == "Write"


def test_the_legacy_unknown_user_is_stored_as_sent_and_read_as_none() -> None:
    fact = decision(user_id="unknown")
    assert fact.user_id == "unknown"
    assert decode_record(encode_record(fact))["user_id"] == "unknown"
    assert known_user(fact.user_id) is None
    assert known_user("dev-1") == "dev-1" and known_user(None) is None


# --- natural keys ---------------------------------------------------------------------------


def test_a_claude_code_decision_with_a_call_is_keyed_without_its_path() -> None:
    """(org, harness, session, accepted, explicit, interaction_mode, occurred_at, call_id)."""
    base = decision()
    assert decision_key(base) == decision_key(decision(file_path="", decision_id="d-2"))
    assert decision_key(base) == decision_key(decision(observation_delay_ms=5000))
    assert decision_key(base) == decision_key(decision(occurred_at="2026-07-07T21:57:35.424+02:00"))
    for other in (decision(accepted=False), decision(explicit=False), decision(interaction_mode="inline"),
                  decision(occurred_at=T0 + timedelta(microseconds=1)), decision(call_id="toolu_2"),
                  decision(session_id="s-2"), decision(org_id="other")):
        assert decision_key(other) != decision_key(base)


def test_other_decisions_are_keyed_by_path_and_delay_too() -> None:
    """(org, harness, session, file_path, accepted, explicit, interaction_mode, occurred_at,
    call_id or "", observation_delay_ms or -1)."""
    survival = decision(agent_harness="copilot", file_path="example.md", explicit=False, observation_delay_ms=0,
                        call_id="11111111-1111-1111-1111-111111111111", edit_retention_score=1.0)
    assert decision_key(survival) == decision_key(survival.model_copy(update={"edit_retention_score": 0.5}))
    for other in (survival.model_copy(update={"observation_delay_ms": 5000}),
                  survival.model_copy(update={"observation_delay_ms": None}),
                  survival.model_copy(update={"file_path": "other.md"}),
                  survival.model_copy(update={"call_id": None})):
        assert decision_key(other) != decision_key(survival)
    # a Claude Code decision without a call is keyed this way too
    claude = decision(call_id=None)
    assert decision_key(claude) != decision_key(decision(call_id=None, file_path="other.txt"))
    # the empty call and delay are the contract's coalesced values
    assert json.loads(decision_key(claude))[-2:] == ["", -1]


def test_decision_ids_derive_from_the_key_and_keep_the_pre_schema_6_form() -> None:
    """An agent decision's derived id is the one version 5 derived; an inline one adds its mode."""
    line = {"fact_type": "developer_decision", "session_id": SESSION, "agent_harness": "copilot",
            "file_path": "example.md", "accepted": True, "explicit": True, "interaction_mode": "agent",
            "call_id": "req-1", "occurred_at": "2026-07-07T19:57:35.424Z", "captured_at": "2026-07-07T19:58:00Z"}
    agent = translate_fact(line, org_id=ORG).facts[0]
    assert isinstance(agent, DeveloperDecision)
    assert agent.decision_id == fact_id("decision", ORG, "copilot", SESSION, "req-1", "example.md", -1, True, True,
                                        "2026-07-07T19:57:35.424000Z")
    inline = translate_fact(line | {"interaction_mode": "inline"}, org_id=ORG).facts[0]
    assert inline.decision_id == fact_id("decision", ORG, "copilot", SESSION, "req-1", "example.md", -1, True, True,
                                         "2026-07-07T19:57:35.424000Z", "inline")


def test_edit_observations_and_rejected_edits_are_one_per_tool_call() -> None:
    assert table_and_key(edit())[2] == table_and_key(edit(observation_id="e-2", applied_text="other"))[2]
    assert table_and_key(edit())[2] != table_and_key(edit(agent_harness="pi"))[2]
    assert table_and_key(rejection())[2] == table_and_key(rejection(rejection_id="r-2", file_path="x"))[2]
    assert json.loads(table_and_key(edit())[2]) == [ORG, "claude-code", SESSION, "toolu_0000000000000001"]


def test_a_retry_linkage_is_keyed_by_every_id() -> None:
    key = json.loads(table_and_key(retry())[2])
    assert key == [ORG, "claude-code", SESSION, "Edit", "/checkout/project/calc.py", "toolu_0000000000000002",
                   "toolu_0000000000000003"]
    assert table_and_key(retry())[2] == table_and_key(retry(retry_linkage_id="l-2", occurred_at=T0 + timedelta(1)))[2]


# --- the store ------------------------------------------------------------------------------

HOSTILE = "nul \x00, lone \ud800, astral 🙂, RTL \u202e, " + "x" * 70_000


def hostile_facts() -> list[FactModel]:
    return [
        decision(raw={"nan": math.nan, "inf": -math.inf, "text": HOSTILE, "big": 2**80}),
        decision(decision_id="d-2", agent_harness="copilot", call_id="req-1", file_path="a\x00b.md",
                 interaction_mode="inline", edit_retention_score=0.25, observation_delay_ms=2**63 - 1,
                 user_id="unknown", commit_sha="0" * 40),
        edit(applied_text=HOSTILE, observed_file_text="before\n" + HOSTILE + "\nafter", external_lines_added=3,
             external_lines_removed=0),
        edit(observation_id="e-2", call_id="toolu_9", applied_text="", observed_file_text=""),
        rejection(proposed=HOSTILE, user_id="dev-1"),
        retry(raw={"note": HOSTILE}),
    ]


def test_every_fact_reads_back_exactly(store_url: str) -> None:
    store = FactStore(store_url)
    facts = hostile_facts()
    result = store.append(facts)
    assert result.stored == {"developer_decisions": 2, "edit_observations": 2, "rejected_edits": 1,
                             "retry_linkages": 1}
    for table in ("developer_decisions", "edit_observations", "rejected_edits", "retry_linkages"):
        wanted = sorted((f for f in facts if table_and_key(f)[0] == table), key=lambda f: table_and_key(f)[1])
        back = list(store.facts(table, ORG))
        assert [encode_record(f) for f in back] == [encode_record(f) for f in wanted]
        assert back == wanted or table == "developer_decisions"  # NaN in raw is not == itself
    assert store.session_facts("rejected_edits", ORG, SESSION) == [facts[4]]
    assert store.session_facts("retry_linkages", ORG, SESSION) == [facts[5]]
    assert store.session_facts("retry_linkages", ORG, "another") == []
    assert store.edit_observations_for_session(ORG, SESSION) == [facts[2], facts[3]]
    store.close()


def test_redeliveries_collapse_on_the_natural_key(store_url: str) -> None:
    store = FactStore(store_url)
    first = [decision(), edit(), rejection(), retry()]
    assert sum(store.append(first).stored.values()) == 4
    again = [decision(decision_id="d-9", file_path=""), edit(observation_id="e-9", applied_text="changed"),
             rejection(rejection_id="r-9", proposed="changed"), retry(retry_linkage_id="l-9", raw={"x": 1})]
    result = store.append(again)
    assert result.stored == {} and sum(result.duplicates.values()) == 4
    assert store.append(first).duplicates == {"developer_decisions": 1, "edit_observations": 1, "rejected_edits": 1,
                                              "retry_linkages": 1}
    assert list(store.facts("edit_observations", ORG)) == [first[1]]  # the first write wins
    # what the contract keys apart is stored apart
    apart = [decision(decision_id="d-3", occurred_at=T0 + timedelta(seconds=1)),
             decision(decision_id="d-4", interaction_mode="inline"),
             retry(retry_linkage_id="l-3", tool_name="Write")]
    assert store.append(apart).stored == {"developer_decisions": 2, "retry_linkages": 1}
    store.close()


def test_a_cursor_write_receipt_collapses_on_its_deterministic_id(store_url: str) -> None:
    """Two hook receipts of one Cursor Write at different times: different natural keys, one id
    (docs/evidence.md): the first receipt is kept."""
    store = FactStore(store_url)
    receipt = decision(decision_id="cursor-write-v1:" + "ab" * 32, agent_harness="cursor", explicit=False,
                       call_id="call-1", file_path="src/a.py")
    later = receipt.model_copy(update={"occurred_at": T0 + timedelta(seconds=30)})
    assert decision_key(receipt) != decision_key(later)
    assert store.append([receipt]).stored == {"developer_decisions": 1}
    assert store.append([later]).duplicates == {"developer_decisions": 1}
    assert list(store.facts("developer_decisions", ORG)) == [receipt]
    store.close()


@pytest.mark.parametrize("table", ["edit_observations", "rejected_edits", "retry_linkages", "developer_decisions"])
def test_quarantine_and_release(store_url: str, table: str) -> None:
    store = FactStore(store_url)
    facts = [decision(), decision(decision_id="d-2", call_id="toolu_2"), edit(), edit(observation_id="e-2",
             call_id="toolu_2"), rejection(), rejection(rejection_id="r-2", call_id="toolu_3"), retry(),
             retry(retry_linkage_id="l-2", tool_name="Write")]
    store.append(facts)
    mine = [f for f in facts if table_and_key(f)[0] == table]
    hidden = table_and_key(mine[0])[1]
    revision = store.quarantine(ORG, table, hidden, "a shim sent the wrong session")
    assert store.counts(ORG)[table] == {"stored": 2, "quarantined": 1}
    assert list(store.facts(table, ORG)) == [mine[1]]
    assert [table_and_key(f)[1] for f in store.session_facts(table, ORG, SESSION)] == [table_and_key(mine[1])[1]]
    assert store.release(ORG, table, hidden, "it was right") > revision
    assert sorted(store.facts(table, ORG), key=lambda f: table_and_key(f)[1]) == sorted(
        mine, key=lambda f: table_and_key(f)[1])
    store.close()


def test_facts_of_another_org_are_not_read(store_url: str) -> None:
    store = FactStore(store_url)
    store.append([edit(), edit(observation_id="e-o", org_id="other")])
    assert store.edit_observations_for_session(ORG, SESSION) == [edit()]
    assert store.counts("other")["edit_observations"] == {"stored": 1, "quarantined": 0}
    store.close()


# --- migration 5 → 6 ------------------------------------------------------------------------


def v5_decision_key(fact: DeveloperDecision) -> str:
    """The natural key store schema 5 gave a decision (no interaction mode, no time)."""
    if fact.agent_harness == "claude-code" and fact.call_id is not None:
        return canonical_json(["keyed", fact.org_id, fact.agent_harness, fact.session_id, fact.call_id,
                               fact.accepted, fact.explicit])
    delay = fact.observation_delay_ms if fact.observation_delay_ms is not None else -1
    return canonical_json(["natural", fact.org_id, fact.agent_harness, fact.session_id, fact.call_id or "",
                           fact.file_path, delay, fact.accepted, fact.explicit])


def make_version_5(url: str, decisions: list[DeveloperDecision], *, quarantined: str | None = None) -> list[str]:
    """A store as schema 5 left it: no edit tables, decisions keyed the version 5 way. Returns the
    decision rows' records as stored."""
    store = FactStore(url)
    store.append(decisions)
    if quarantined is not None:
        store.quarantine(ORG, "developer_decisions", quarantined, "checking the migration keeps it")
    table = schema.developer_decisions
    with store.engine.begin() as conn:
        for fact in decisions:
            conn.execute(update(table).where(table.c.fact_id == fact.decision_id)
                         .values(natural_key=v5_decision_key(fact)))
        for name in ("retry_linkages", "rejected_edits", "edit_observations"):
            schema.FACT_TABLES[name].drop(conn)
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="5"))
        records = [r for (r,) in conn.execute(select(table.c.record).order_by(table.c.fact_id))]
    store.close()
    return records


def test_version_5_store_migrates_to_version_6(store_url: str) -> None:
    """The three tables appear with their indexes; every decision gets the contract's key from its
    record (ids, records and the quarantine log unchanged); what version 5 collapsed (one call's
    verdict given again later) is stored now; re-ingesting stores nothing new."""
    claude = decision()
    copilot = decision(decision_id="d-2", agent_harness="copilot", call_id="req-1", file_path="example.md",
                       interaction_mode="inline", observation_delay_ms=0, edit_retention_score=1.0, explicit=False)
    codex = decision(decision_id="d-3", agent_harness="codex", call_id="call_7", file_path="calc.py")
    records = make_version_5(store_url, [claude, copilot, codex], quarantined="d-3")

    migrated = FactStore(store_url)
    assert migrated.schema_version() == schema.SCHEMA_VERSION == 8  # through version 6, and on
    table = schema.developer_decisions
    with migrated.engine.connect() as conn:
        keys = {row.fact_id: row.natural_key for row in conn.execute(select(table.c.fact_id, table.c.natural_key))}
        assert [r for (r,) in conn.execute(select(table.c.record).order_by(table.c.fact_id))] == records
        for name in ("edit_observations", "rejected_edits", "retry_linkages"):
            indexes = {index["name"] for index in inspect(conn).get_indexes(name)}
            assert f"ix_{name}_org_id_session_id" in indexes
    assert keys == {f.decision_id: decision_key(f) for f in (claude, copilot, codex)}
    assert migrated.counts(ORG)["developer_decisions"] == {"stored": 3, "quarantined": 1}
    assert list(migrated.facts("developer_decisions", ORG)) == [claude, copilot]
    # version 5 would have collapsed this one onto `claude` (same call and verdict, another time)
    later = decision(decision_id="d-4", occurred_at=T0 + timedelta(seconds=5))
    assert v5_decision_key(later) == v5_decision_key(claude)
    assert migrated.append([later]).stored == {"developer_decisions": 1}
    assert migrated.append([claude, copilot, codex]).duplicates == {"developer_decisions": 3}
    assert migrated.append([edit(), rejection(), retry()]).stored == {"edit_observations": 1, "rejected_edits": 1,
                                                                       "retry_linkages": 1}
    migrated.close()
    reopened = FactStore(store_url)  # nothing is migrated twice
    assert reopened.schema_version() == schema.SCHEMA_VERSION
    assert reopened.edit_observations_for_session(ORG, SESSION) == [edit()]
    reopened.close()


def test_an_older_store_migrates_through_version_6(store_url: str) -> None:
    """A version 3 store (no test results, no edit tables) opens as the current version, through 6."""
    store = FactStore(store_url)
    store.append([decision()])
    table = schema.developer_decisions
    with store.engine.begin() as conn:
        conn.execute(update(table).values(natural_key=v5_decision_key(decision())))
        for name in ("retry_linkages", "rejected_edits", "edit_observations", "test_case_results"):
            schema.FACT_TABLES[name].drop(conn)
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="3"))
    store.close()
    migrated = FactStore(store_url)
    assert migrated.schema_version() == schema.SCHEMA_VERSION
    with migrated.engine.connect() as conn:
        assert conn.execute(select(table.c.natural_key)).scalar_one() == decision_key(decision())
    assert migrated.append([edit()]).stored == {"edit_observations": 1}
    migrated.close()
