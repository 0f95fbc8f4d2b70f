"""The LiteLLM ``StandardLoggingPayload`` as a proxy logger writes it (docs/operate.md, LiteLLM): timestamps
without a UTC offset are UTC, and the Session is found in ``metadata`` (docs/evidence.md).

``fixtures/litellm/standard_logging_payload.json`` was written for these tests from the field
names of LiteLLM's StandardLoggingPayload specification; values are invented.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest import Translation, TranslationError
from sediment.ingest.calls import translate_call
from sediment.ingest.ci.webhooks import translate
from sediment.ingest.reading.files import ingest_files
from sediment.model.facts import InferenceCall, ToolCallPart
from sediment.store import FactStore

FIXTURE = Path(__file__).parent / "fixtures" / "litellm" / "standard_logging_payload.json"
ORG = "acme"
T0 = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
SESSION = "4d6297b8-9b0f-403f-8196-c564a24d1982"


def payload() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def call_of(record: dict[str, Any]) -> InferenceCall:
    translation = translate_call(record, format="litellm", org_id=ORG, captured_at=T0)
    assert translation.skipped is None, translation.skipped
    (call,) = translation.facts
    assert isinstance(call, InferenceCall)
    return call


def test_a_realistic_standard_logging_payload_ingests() -> None:
    call = call_of(payload())
    assert call.session_id == SESSION  # metadata.spend_logs_metadata.session_id
    assert call.observed_at == datetime(2025, 6, 2, 14, 3, 12, 730118, tzinfo=UTC)  # endTime, read as UTC
    assert call.duration_ms == 1247  # endTime - startTime
    assert (call.gateway_provider, call.model_provider, call.model) == ("litellm", "openai", "gpt-4.1-mini-2025-04-14")
    assert (call.input_tokens, call.output_tokens) == (402, 31)
    assert [m.role for m in call.input_messages] == ["system", "user"]
    (output,) = call.output_messages
    (part,) = output.parts
    assert isinstance(part, ToolCallPart)
    assert (part.id, part.name, part.arguments) == ("call_5ZpTq1bWv8Yx2Kc3Rd4Lm6Nh", "run_shell",
                                                    {"command": "pytest tests/test_parser.py -q"})
    assert call.tools is not None and [t.name for t in call.tools] == ["run_shell"]


@pytest.mark.parametrize("spelling", ["2025-06-02T14:03:12.730118Z", "2025-06-02T14:03:12.730118+00:00",
                                      "2025-06-02 14:03:12.730118"])
def test_a_time_without_an_offset_is_the_same_instant_as_utc(spelling: str) -> None:
    record = payload()
    record["endTime"] = spelling
    assert call_of(record).observed_at == call_of(payload()).observed_at


def test_a_time_with_an_offset_keeps_it() -> None:
    record = payload()
    record["startTime"] = "2025-06-02T16:03:11.482913+02:00"
    record["endTime"] = "2025-06-02T16:03:12.730118+02:00"
    call = call_of(record)
    assert call.observed_at == datetime(2025, 6, 2, 16, 3, 12, 730118, tzinfo=timezone(timedelta(hours=2)))
    assert call.duration_ms == 1247


@pytest.mark.parametrize(("value", "message"), [
    ("2025-06-02T25:03:12", "endTime:"),
    ("yesterday", "endTime:"),
    ("2025-06-02T14:03:12.1234567", "endTime:"),
])
def test_an_unreadable_time_is_refused_naming_the_field(value: str, message: str) -> None:
    record = payload()
    record["endTime"] = value
    with pytest.raises(TranslationError, match=message):
        translate_call(record, format="litellm", org_id=ORG, captured_at=T0)


def test_session_precedence() -> None:
    record = payload()
    record["metadata"]["requester_custom_headers"]["x-sediment-session"] = "from-header"
    assert call_of(record).session_id == SESSION  # spend-log metadata before the header
    record["metadata"]["requester_metadata"]["session_id"] = "from-requester"
    assert call_of(record).session_id == "from-requester"
    record["metadata"]["session_id"] = "from-metadata"
    assert call_of(record).session_id == "from-metadata"
    del record["metadata"]["session_id"], record["metadata"]["requester_metadata"]["session_id"]
    del record["metadata"]["spend_logs_metadata"]["session_id"]
    assert call_of(record).session_id == "from-header"


def test_no_session_is_skipped_with_its_reason_not_invented_from_trace_or_key() -> None:
    record = payload()
    del record["metadata"]["spend_logs_metadata"]["session_id"]
    assert record["trace_id"] and record["metadata"]["user_api_key_user_id"]  # present, and not a Session
    assert translate_call(record, format="litellm", org_id=ORG, captured_at=T0) == Translation.skip("no_session")


def test_spend_logs_metadata_must_be_an_object() -> None:
    record = payload()
    record["metadata"]["spend_logs_metadata"] = ["session"]
    with pytest.raises(TranslationError, match="metadata.spend_logs_metadata"):
        translate_call(record, format="litellm", org_id=ORG, captured_at=T0)


def test_stored_exactly_and_once_whatever_the_order(tmp_path: Path) -> None:
    second = payload()
    second["response"]["id"] = "chatcmpl-second"
    second["endTime"] = "2025-06-02T14:05:00"
    lines = tmp_path / "calls.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in (payload(), second)) + "\n", encoding="utf-8")
    reordered = tmp_path / "reordered.jsonl"
    reordered.write_text("\n".join(json.dumps(r) for r in (second, payload(), second)) + "\n", encoding="utf-8")
    stored = []
    for name in ("a", "b"):
        store = FactStore(f"sqlite:///{tmp_path / f'{name}.db'}")
        try:
            for path in ([lines, lines] if name == "a" else [reordered]):
                ingest_files([str(path)], lambda r: translate_call(r, format="litellm", org_id=ORG, captured_at=T0),
                             store)
            stored.append(sorted((f.model_dump(mode="json") for f in store.facts("inference_calls", ORG)),
                                 key=lambda d: d["inference_call_id"]))
        finally:
            store.close()
    assert stored[0] == stored[1] and len(stored[0]) == 2
    original = call_of(payload())
    assert any(d == original.model_dump(mode="json") for d in stored[0])


def test_the_live_receiver_entry_point_reads_the_same_call() -> None:
    body = FIXTURE.read_bytes()
    assert translate("litellm", None, body, org_id=ORG, captured_at=T0) == translate_call(
        payload(), format="litellm", org_id=ORG, captured_at=T0)


def test_the_fixture_is_not_mutated_by_translation() -> None:
    record = payload()
    before = copy.deepcopy(record)
    call_of(record)
    assert record == before


@pytest.mark.parametrize("memo", [False, True], ids=["alone", "with-memo"])
def test_a_session_field_it_cannot_read_is_refused_as_it_always_was(memo: bool) -> None:
    """The Session is read before the messages (the replay memo is the Session's), but a field it
    cannot read is refused where it always was: after the messages, so a payload whose messages
    are malformed too is refused for its messages."""
    from sediment.ingest.calls import ReplayMemo

    def refusal(record: dict[str, Any]) -> str:
        with pytest.raises(TranslationError) as caught:
            translate_call(record, format="litellm", org_id=ORG, captured_at=T0, memo=ReplayMemo() if memo else None)
        return str(caught.value)

    record = payload()
    record["metadata"]["spend_logs_metadata"]["session_id"] = 7
    assert refusal(record) == "metadata.spend_logs_metadata.session_id: expected a string"
    record["messages"] = 7
    assert refusal(record) == "messages: expected a list or a string"


@pytest.mark.parametrize("order", ["chat-then-items", "items-then-chat"])
def test_a_session_whose_messages_are_read_as_chat_then_as_items_reads_as_without_the_memo(order: str,
                                                                                            tmp_path: Path) -> None:
    """A Responses client's first call may send only untyped messages (read as Chat messages),
    its next one typed items after them (read as Responses items). The replay memo keeps what
    each reader read apart: the same Facts and warnings as without it, and nothing refused."""
    from sediment.ingest.calls import ReplayMemo

    user = {"role": "user", "content": "list the files"}
    result = {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
    response = {"id": "resp", "object": "response", "model": "m", "status": "completed",
                "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}]}
    lists = [[user], [user, result]] if order == "chat-then-items" else [[user, result], [user]]
    records = [{"metadata": {"session_id": SESSION}, "call_type": "aresponses", "model": "m", "messages": messages,
                "response": {**response, "id": f"resp-{n}"}} for n, messages in enumerate(lists)]
    memo = ReplayMemo()
    for record in records:
        alone = translate_call(copy.deepcopy(record), format="litellm", org_id=ORG, captured_at=T0)
        remembered = translate_call(copy.deepcopy(record), format="litellm", org_id=ORG, captured_at=T0, memo=memo)
        assert remembered == alone and remembered.skipped is None
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    try:
        shared = ReplayMemo()
        report = ingest_files([str(path)], lambda r: translate_call(r, format="litellm", org_id=ORG, captured_at=T0,
                                                                  memo=shared), store)
        assert report.stored["inference_calls"] == 2 and not report.problems
    finally:
        store.close()
