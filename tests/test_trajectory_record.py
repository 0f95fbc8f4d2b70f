"""The canonical trajectory record: its rules, its text, its content address, its schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sediment.trajectory import (
    RawRecord,
    TrajectoryError,
    build,
    from_json,
    outcome_category,
    problems,
    to_json,
    verification_strength,
)
from sediment.trajectory.schema import json_schema, schema_text
from sediment.validation import SchemaSet, core_schemas

ROOT = Path(__file__).parents[1]
RAW = b'{"instance_id": "demo__repo-1_0", "messages": []}\r\n'


def fields(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "task_id": "demo__repo-1",
        "task_key": "swe:demo__repo-1",
        "source": {"source_id": "demo", "locator": "rows.jsonl:1"},
        "events": [
            {"event_id": "event:0", "role": "user", "text": "fix it"},
            {"event_id": "event:1", "role": "assistant", "text": "looking",
             "tool_calls": [{"call_id": "c1", "original_call_id": "c1", "name": "bash", "arguments": '{"cmd":"ls"}'}],
             "supervised": True},
            {"event_id": "event:2", "role": "tool", "text": "a.py\r\n", "tool_result_of": "c1"},
            {"event_id": "event:3", "role": "assistant", "text": "done",
             "tool_calls": [{"call_id": "c2", "name": "submit", "arguments": {}}], "supervised": True},
        ],
        "tools": [{"name": "bash", "description": "run", "parameters": {"type": "object"}}],
        "provenance": {"demonstrator": "agent", "model": "m"},
        "outcome": {"success": None, "status": "submitted"},
        "verification": {"method": "none"},
        "completeness": "complete",
        "raw_record": RawRecord.of(RAW),
    }
    base.update(changes)
    return base


def test_build_addresses_the_content_and_round_trips_byte_for_byte() -> None:
    record = build(**fields())
    assert record.trajectory_id.startswith("trajectory:") and len(record.trajectory_id) == 11 + 24
    text = to_json(record)
    again = from_json(text)
    assert again == record and to_json(again) == text
    assert build(**fields()).trajectory_id == record.trajectory_id
    other = build(**fields(split="train"))
    assert other.trajectory_id != record.trajectory_id
    assert record.raw_record.data() == RAW
    assert json.loads(text)["schema_version"] == "1.0"


def test_unknown_is_never_failure() -> None:
    record = build(**fields())
    assert outcome_category(record) == "unknown"
    assert verification_strength(record) == "unverified"
    failed = build(**fields(outcome={"success": False, "status": "failed"}))
    assert outcome_category(failed) == "failure"


def test_non_utf8_raw_bytes_are_base64_tagged() -> None:
    raw = RawRecord.of(b"\xff\xfe{}")
    assert raw.encoding == "base64" and raw.data() == b"\xff\xfe{}"
    record = build(**fields(raw_record=raw))
    assert from_json(to_json(record)).raw_record.data() == b"\xff\xfe{}"


def _events(*changes: tuple[int, dict[str, Any]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [dict(e) for e in fields()["events"]]
    for index, change in changes:
        events[index] = {**events[index], **change}
    return events


@pytest.mark.parametrize(("changes", "message"), [
    ({"events": _events((1, {"event_id": "event:0"}))}, "events.1.event_id: 'event:0' is not unique"),
    ({"events": _events((0, {"event_id": " "}))}, "events.0.event_id: is blank"),
    ({"events": _events((0, {"supervised": True}))}, "events.0.supervised: only assistant events"),
    ({"events": _events((2, {"tool_result_of": "c9"}))}, "events.2.tool_result_of: 'c9' answers no earlier call"),
    ({"events": _events((2, {"tool_result_of": "c2"}))}, "events.2.tool_result_of: 'c2' answers no earlier call"),
    ({"events": _events((3, {"tool_calls": [{"call_id": "c1", "name": "x", "arguments": {}}]}))},
     "events.3.tool_calls.0.call_id: 'c1' is not unique"),
    ({"events": _events((2, {"role": "user", "tool_result_of": None}))},
     "events.1.tool_calls.0: call 'c1' has no result and the omission is not declared"),
    ({"completeness": "truncated"}, "missing_fields: a truncated record declares what is missing"),
    ({"tools": None}, "tools: unpublished tool definitions are declared in missing_fields"),
    ({"task_key": " "}, "task_key: is blank"),
    ({"events": []}, "events: List should have at least 1 item"),
    ({"outcome": {"success": "no"}}, "outcome.success: Input should be a valid boolean"),
])
def test_every_rule_is_enforced_in_one_line(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(TrajectoryError) as caught:
        build(**fields(**changes))
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_declared_omissions_are_accepted() -> None:
    """The records the rules above refuse, with the omission declared: built, and the
    declaration kept through the text."""
    events = _events((2, {"role": "user", "tool_result_of": None}),
                     (1, {"missing_fields": [{"field": "tool_calls.0.result", "reason": "not recorded"}]}))
    unanswered = build(**fields(events=events))
    assert [(m.field, m.reason) for m in unanswered.events[1].missing_fields] == [("tool_calls.0.result",
                                                                                 "not recorded")]
    assert unanswered.events[2].role == "user" and unanswered.events[2].tool_result_of is None
    assert from_json(to_json(unanswered)) == unanswered
    untooled = build(**fields(tools=None, completeness="truncated",
                              missing_fields=[{"field": "tools", "reason": "unpublished"}]))
    assert untooled.tools is None and untooled.completeness == "truncated"
    assert [(m.field, m.reason) for m in untooled.missing_fields] == [("tools", "unpublished")]
    assert from_json(to_json(untooled)) == untooled


def test_tampering_is_found() -> None:
    record = build(**fields())
    body = json.loads(to_json(record))
    body["events"][0]["text"] = "other"
    with pytest.raises(TrajectoryError, match="trajectory_id: .* is not the content address"):
        from_json(json.dumps(body))
    body = json.loads(to_json(record))
    body["raw_record"]["content"] = "{}"
    body["trajectory_id"] = "x"
    from sediment.trajectory import content_id
    body["trajectory_id"] = content_id(body)
    with pytest.raises(TrajectoryError, match="raw_record: its content does not hash"):
        from_json(json.dumps(body))
    with pytest.raises(TrajectoryError, match="duplicate key"):
        from_json('{"a":1,"a":2}')
    assert list(problems(record)) == []


def test_published_schema_is_the_models_and_validates_records() -> None:
    shipped = ROOT / "schemas" / "trajectories" / "trajectory.v1.json"
    assert shipped.read_text(encoding="utf-8") == schema_text(), "run scripts/trajectory-schema"
    schema_id = json_schema()["$id"]
    assert schema_id in core_schemas()
    schemas = SchemaSet(core_schemas())
    record = json.loads(to_json(build(**fields())))
    assert schemas.errors(record, schema_id) == []
    record["completeness"] = "partial"
    assert schemas.errors(record, schema_id)
    record = json.loads(to_json(build(**fields())))
    record["events"][0]["colour"] = "red"
    assert schemas.errors(record, schema_id)


def test_renamed_record_models_keep_their_published_names_and_old_kit_names() -> None:
    """The record's ToolCall, ToolDefinition, Provenance and Evidence are Trajectory* in Python
    (the Facts and the export have classes of those names), yet the published schema, the
    validation errors and the importer kit's old names are unchanged."""
    from pydantic import ValidationError

    from sediment.importing import kit
    from sediment.trajectory.record import (
        TrajectoryEvidence,
        TrajectoryProvenance,
        TrajectoryToolCall,
        TrajectoryToolDefinition,
    )

    renamed = {"ToolCall": TrajectoryToolCall, "ToolDefinition": TrajectoryToolDefinition,
               "Provenance": TrajectoryProvenance, "Evidence": TrajectoryEvidence}
    definitions = json_schema()["$defs"]
    assert list(definitions) == sorted(definitions)
    for old, model in renamed.items():
        assert getattr(kit, old) is model and old in kit.__all__ and model.__name__ in kit.__all__
        assert old in definitions and model.__name__ not in definitions
    assert "Trajectory" not in json.dumps(definitions).replace('"title": "Trajectory"', "")
    with pytest.raises(ValidationError, match="validation error for Provenance"):
        TrajectoryProvenance.model_validate({"demonstrator": "nobody"})
