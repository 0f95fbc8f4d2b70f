"""Client transcripts → InferenceCalls and DeveloperDecisions (``sediment.ingest.transcripts``).

The real transcripts are the shared fixtures beside the repository
(``<root>/../shared/fixtures/inputs/claude_code`` and ``…/codex_rollout``, or
``$SEDIMENT_INPUT_FIXTURES``); without them these tests skip, saying why, except under CI
(``CI=true``), where they fail. Variants (a sidechain, a compaction, a rejected edit, drifted
entry types, broken lines) are made from the real lines, never written from scratch.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest.transcripts import default_folder, ingest_transcripts, translate_transcript
from sediment.ingest.transcripts.common import TranscriptResult
from sediment.model.facts import (
    CallCapture,
    DeveloperDecision,
    FactModel,
    InferenceCall,
    ReasoningPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from sediment.model.rollout import segment_calls
from sediment.records import encode_record
from sediment.store import FactStore
from sediment.testing import unavailable

ROOT = Path(__file__).resolve().parent.parent
INPUTS = Path(os.environ.get("SEDIMENT_INPUT_FIXTURES") or ROOT.parent / "shared" / "fixtures" / "inputs")
CLAUDE = INPUTS / "claude_code" / "git-ai.example-claude-code.jsonl"
THINKING = INPUTS / "claude_code" / "git-ai.claude-code-with-thinking.jsonl"
CODEX = INPUTS / "codex_rollout" / "localpush.rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
CODEX_CUT = INPUTS / "codex_rollout" / "localpush.rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
CODEX_LONG = INPUTS / "codex_rollout" / "localpush.rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
ORG = "acme"
LATER = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fixtures() -> None:
    if (INPUTS / "claude_code").is_dir() and (INPUTS / "codex_rollout").is_dir():
        return
    unavailable(f"the shared transcript fixtures not found under {INPUTS} (set SEDIMENT_INPUT_FIXTURES)")


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write(path: Path, entries: list[Any]) -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    return path


def translate(path: Path, client: str = "claude-code", at: datetime = LATER) -> TranscriptResult:
    return translate_transcript(path, client, org_id=ORG, captured_at=at)  # type: ignore[arg-type]


def calls_of(result: TranscriptResult) -> list[InferenceCall]:
    return [f for f in result.facts if isinstance(f, InferenceCall)]


def decisions_of(result: TranscriptResult) -> list[DeveloperDecision]:
    return [f for f in result.facts if isinstance(f, DeveloperDecision)]


def parts(call: InferenceCall, kind: type) -> list[Any]:
    return [p for m in call.output_messages for p in m.parts if isinstance(p, kind)]


# --- Claude Code --------------------------------------------------------------------------


def test_claude_code_session_is_thirteen_calls_replaying_one_conversation() -> None:
    result = translate(CLAUDE)
    assert result.problems == [] and result.lines == 38
    calls = calls_of(result)
    entries = lines_of(CLAUDE)
    request_groups = list(dict.fromkeys(e["message"]["id"] for e in entries if e["type"] == "assistant"))
    assert [c.model_call_id for c in calls] == request_groups and len(calls) == 13
    first = calls[0]
    assert first.session_id == "cb947e5b-246e-4253-a953-631f7e464c6b"
    assert first.model == "claude-sonnet-4-20250514" and first.model_provider == "anthropic"
    assert first.capture == CallCapture(source="transcript:claude-code@1.0.111", lacks=(
        "exact_request", "system_prompt", "tool_definitions", "sampling_parameters", "token_ids"))
    assert first.capture_source == "transcript:claude-code@1.0.111"
    assert [m.role for m in first.input_messages] == ["user"]
    assert first.input_messages[0].parts[0].content == "Make the colors green and yellow"  # type: ignore[union-attr]
    usage = entries[2]["message"]["usage"]  # the last line of the first response
    assert first.input_tokens == usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage[
        "cache_read_input_tokens"] and first.output_tokens == usage["output_tokens"]
    assert first.observed_at == datetime.fromisoformat(entries[1]["timestamp"])
    for previous, call in pairwise(calls):
        # the next call is sent the previous input, the previous output, then the tool results
        replay = call.input_messages[: len(previous.input_messages) + len(previous.output_messages)]
        assert replay == previous.input_messages + previous.output_messages
        results = [p for m in call.input_messages[len(replay):] for p in m.parts]
        assert [p.id for p in results if isinstance(p, ToolCallResponsePart)] == [
            p.id for p in parts(previous, ToolCallPart)]
    segments, fragmented = segment_calls(calls)
    assert len(segments) == 1 and sum(fragmented.values()) == 0
    assert calls[-1].output_messages[0].finish_reason is None  # stop_reason null: a streaming snapshot


def test_claude_code_applied_edits_are_implicit_accepts() -> None:
    decisions = decisions_of(translate(CLAUDE))
    edits = [(b["id"], b["name"], b["input"]["file_path"]) for e in lines_of(CLAUDE) if e["type"] == "assistant"
             for b in e["message"]["content"] if b["type"] == "tool_use" and b["name"] in ("Edit", "MultiEdit")]
    assert [(d.call_id, d.file_path) for d in decisions] == [(i, p) for i, _, p in edits] and len(edits) == 3
    assert {(d.accepted, d.explicit, d.agent_harness, d.interaction_mode) for d in decisions} == {
        (True, False, "claude-code", "agent")}
    assert all(d.session_id == "cb947e5b-246e-4253-a953-631f7e464c6b" for d in decisions)


def test_claude_code_thinking_summary_and_snapshots() -> None:
    result = translate(THINKING)
    assert result.problems == [] and dict(result.skipped) == {"summary": 1, "file-history-snapshot": 2}
    calls = calls_of(result)
    assert len(calls) == 2 and calls[0].capture.source == "transcript:claude-code@2.0.69"  # type: ignore[union-attr]
    thinking = parts(calls[0], ReasoningPart)
    assert thinking and thinking[0].content.startswith("The user wants me to add another")
    assert "thinking_text" not in calls[0].capture.lacks  # type: ignore[union-attr]  # the text is there
    # the summary names another conversation's leaf: it is a title, not what the model saw
    assert all("Hello World Header" not in encode_record(c.input_messages) for c in calls)
    assert [d.accepted for d in decisions_of(result)] == [True]


def test_the_answer_still_being_written_waits_then_lands(tmp_path: Path) -> None:
    entries = lines_of(THINKING)
    last_time = datetime.fromisoformat(entries[-1]["timestamp"])
    fresh = translate(THINKING, at=last_time + timedelta(seconds=5))
    assert len(calls_of(fresh)) == 1 and fresh.skipped["call_incomplete"] == 1
    settled = translate(THINKING, at=last_time + timedelta(minutes=10))
    assert len(calls_of(settled)) == 2 and "call_incomplete" not in settled.skipped


def _sidechain(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first exchange again as a subagent's sidechain (new uuids, ``isSidechain``, ``agentId``)."""
    rename = {e["uuid"]: f"{e['uuid'][:-4]}beef" for e in entries[:4]}
    side = []
    for entry in entries[:4]:
        copy = json.loads(json.dumps(entry))
        copy["uuid"] = rename[entry["uuid"]]
        copy["parentUuid"] = rename.get(entry["parentUuid"]) if entry["parentUuid"] else None
        copy["isSidechain"] = True
        copy["agentId"] = "a1b2c3"
        if copy["type"] == "assistant":
            copy["message"]["id"] += "side"
            copy["requestId"] += "side"
        side.append(copy)
    return side


def test_a_sidechain_is_its_own_session_linked_to_its_parent(tmp_path: Path) -> None:
    entries = lines_of(CLAUDE)
    path = write(tmp_path / "s.jsonl", [*entries[:6], *_sidechain(entries), *entries[6:]])
    calls = calls_of(translate(path))
    parent = "cb947e5b-246e-4253-a953-631f7e464c6b"
    side = [c for c in calls if c.session_id != parent]
    assert len(calls) == 14 and [c.session_id for c in side] == [f"{parent}/agent-a1b2c3"]
    assert side[0].capture.parent_session_id == parent  # type: ignore[union-attr]
    main = [c for c in calls if c.session_id == parent]
    assert [c.model_call_id for c in main] == [c.model_call_id for c in calls_of(translate(CLAUDE))]
    assert all(c.capture.parent_session_id is None for c in main)  # type: ignore[union-attr]


def test_after_a_compaction_a_call_sees_the_summary_not_the_old_history(tmp_path: Path) -> None:
    entries = lines_of(CLAUDE)
    boundary = {**entries[0], "type": "system", "subtype": "compact_boundary", "uuid": "c0mpact0-0000",
                "parentUuid": None, "logicalParentUuid": entries[5]["uuid"], "content": "Conversation compacted"}
    boundary.pop("message")
    summary = {**entries[0], "uuid": "summary0-0000", "parentUuid": boundary["uuid"], "isCompactSummary": True,
               "message": {"role": "user", "content": "This session is being continued. Summary: colors."}}
    answer = [{**e, "uuid": f"{e['uuid']}-after", "parentUuid": summary["uuid"] if i == 0 else f"{e['parentUuid']}-after",
               "message": {**e["message"], "id": f"{e['message']['id']}-after"}}
              for i, e in enumerate(entries[6:8])]
    path = write(tmp_path / "c.jsonl", [*entries[:6], boundary, summary, *answer, *entries[8:9]])
    result = translate(path)
    assert result.problems == []
    after = [c for c in calls_of(result) if c.model_call_id.endswith("-after")]  # type: ignore[union-attr]
    assert len(after) == 1
    assert [m.role for m in after[0].input_messages] == ["user"]
    assert after[0].input_messages[0].parts[0].content.startswith("This session is being continued")  # type: ignore[union-attr]


def test_a_rejected_edit_is_an_explicit_reject(tmp_path: Path) -> None:
    entries = lines_of(CLAUDE)
    edit = next(i for i, e in enumerate(entries) if e["type"] == "user" and isinstance(e.get("toolUseResult"), dict)
                and "oldString" in e["toolUseResult"])
    rejected = json.loads(json.dumps(entries[edit]))
    block = rejected["message"]["content"][0]
    block["is_error"] = True
    block["content"] = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
                        "was a file edit, the new_string was NOT written to the file). STOP what you are doing.")
    rejected["toolUseResult"] = "User rejected tool use"
    path = write(tmp_path / "r.jsonl", [*entries[:edit], rejected, *entries[edit + 1:]])
    decisions = {d.call_id: d for d in decisions_of(translate(path))}
    refused = decisions[block["tool_use_id"]]
    assert (refused.accepted, refused.explicit) == (False, True)
    assert refused.file_path.endswith("src/app/globals.css")
    assert refused.raw["tool_result"]["is_error"] is True
    modified = json.loads(json.dumps(entries[edit]))
    modified["toolUseResult"]["userModified"] = True
    path = write(tmp_path / "m.jsonl", [*entries[:edit], modified, *entries[edit + 1:]])
    changed = {d.call_id: d for d in decisions_of(translate(path))}[block["tool_use_id"]]
    assert (changed.accepted, changed.explicit) == (True, True)


def test_drifted_and_broken_lines_never_sink_the_file(tmp_path: Path) -> None:
    entries = lines_of(CLAUDE)
    novel = {"type": "agent-telemetry", "sessionId": entries[0]["sessionId"], "payload": {"x": 1}}
    bad_block = json.loads(json.dumps(entries[6]))
    bad_block["message"]["content"][0]["type"] = 5
    path = write(tmp_path / "d.jsonl", [*entries[:3], novel, "{not json", *entries[3:6], bad_block, *entries[7:], "[1]"])
    result = translate(path)
    assert result.skipped["unknown_entry:agent-telemetry"] == 1
    assert [line for line, _ in result.problems] == [5, 9, 41]
    assert result.problems[0][1].startswith("not JSON")
    assert result.problems[1:] == [(9, "message.content[0].type: expected a string"), (41, "expected a JSON object")]
    calls = calls_of(result)
    assert len(calls) == 13  # the refused block is left out; its response still has its other line
    kept = next(c for c in calls if c.raw.get("unattached"))
    assert kept.raw["unattached"] == [novel] and kept.model_call_id == calls[1].model_call_id


def test_a_cut_last_line_waits_for_the_next_ingest(tmp_path: Path) -> None:
    text = CLAUDE.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(text[: text.index(b"\n", len(text) // 2) + 40])
    result = translate(cut)
    assert result.problems == [] and result.skipped["incomplete_last_line"] == 1


# --- Codex -------------------------------------------------------------------------------


def test_codex_rollout_is_six_calls_with_the_recorded_token_counts() -> None:
    result = translate(CODEX, "codex")
    assert result.problems == []
    calls = calls_of(result)
    assert [c.input_tokens for c in calls] == [42772, 44218, 48969, 49326, 49647, 63441]
    first = calls[0]
    assert first.session_id == "019c8bfe-ec25-79e0-97d7-bda6a9c575ff" and first.model == "gpt-5.3-codex"
    assert first.model_provider == "openai" and first.model_call_id is None
    assert first.capture == CallCapture(source="transcript:codex@0.104.0-alpha.1", lacks=(
        "exact_request", "tool_definitions", "sampling_parameters", "token_ids", "thinking_text"))
    assert first.input_messages[0].role == "system"  # base_instructions
    assert [m.role for m in first.input_messages[1:]] == ["developer", "developer", "user", "user", "developer",
                                                         "developer", "user"]
    for previous, call in pairwise(calls):
        assert call.input_messages[: len(previous.input_messages)] == previous.input_messages
        sent = [p.id for m in call.input_messages for p in m.parts if isinstance(p, ToolCallResponsePart)]
        assert [p.id for p in parts(previous, ToolCallPart)][-1] == sent[-1]
    assert calls[-1].output_messages[-1].parts and not parts(calls[-1], ToolCallPart)  # the final answer
    assert len(segment_calls(calls)[0]) == 1
    assert result.skipped["event_msg:agent_message"] == 6  # mirrors of the items, not counted twice


def test_codex_rollout_cut_after_a_function_call() -> None:
    calls = calls_of(translate(CODEX_CUT, "codex"))
    assert len(calls) == 1 and calls[0].input_tokens == 34469
    assert [p.name for p in parts(calls[0], ToolCallPart)] == ["exec_command"]


def test_a_codex_subagent_names_the_thread_that_spawned_it(tmp_path: Path) -> None:
    entries = lines_of(CODEX)
    entries[0]["payload"]["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": "019c8bfe-parent",
                                                                     "depth": 1}}}
    calls = calls_of(translate(write(tmp_path / "sub.jsonl", entries), "codex"))
    assert {c.capture.parent_session_id for c in calls} == {"019c8bfe-parent"}  # type: ignore[union-attr]
    assert {c.capture.parent_session_id for c in calls_of(translate(CODEX, "codex"))} == {None}  # type: ignore[union-attr]


def test_codex_compaction_replaces_the_history(tmp_path: Path) -> None:
    entries = lines_of(CODEX)
    compacted = {"timestamp": entries[18]["timestamp"], "type": "compacted", "payload": {"message": "summary so far"}}
    path = write(tmp_path / "c.jsonl", [*entries[:19], compacted, *entries[19:]])
    calls = calls_of(translate(path, "codex"))
    assert len(calls) == 6
    second = calls[1].input_messages
    assert [m.role for m in second[:2]] == ["system", "user"] and second[1].parts[0].content == "summary so far"  # type: ignore[union-attr]


# --- growing transcripts, determinism, the store ------------------------------------------


def cut_points(path: Path) -> Iterator[tuple[bytes, datetime]]:
    """Prefixes of the file, each ingested as if at the time of its last whole line."""
    data = path.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    for end in ends[2::5]:
        last = json.loads(data[:end].splitlines()[-1])
        yield data[: end + 25], datetime.fromisoformat(last["timestamp"])


def stored(store: FactStore, sessions: set[str]) -> list[str]:
    """The Sessions' calls and decisions; a decision's ``captured_at`` (when this Sediment first
    saw it, not part of its id) set to one time, so ingests at different times compare."""
    facts: list[FactModel] = []
    for session in sorted(sessions):
        facts.extend(store.calls_for_session(ORG, session))
        facts.extend(d.model_copy(update={"captured_at": LATER}) for d in store.decisions_for_session(ORG, session))
    return sorted(encode_record(f) for f in facts)


@pytest.mark.parametrize(("path", "client"), [(CLAUDE, "claude-code"), (THINKING, "claude-code"), (CODEX, "codex")])
def test_a_growing_transcript_stores_only_new_turns(tmp_path: Path, path: Path, client: str) -> None:
    whole = FactStore(f"sqlite:///{tmp_path / 'whole.db'}")
    once = ingest_transcripts([path], client, whole, org_id=ORG, captured_at=LATER)  # type: ignore[arg-type]
    grown = FactStore(f"sqlite:///{tmp_path / 'grown.db'}")
    growing = tmp_path / "growing" / path.name
    growing.parent.mkdir()
    previous = 0
    for prefix, moment in cut_points(path):
        growing.write_bytes(prefix)
        report = ingest_transcripts([growing], client, grown, org_id=ORG, captured_at=moment)  # type: ignore[arg-type]
        assert report.problems == []
        assert sum(report.duplicates.values()) == previous  # nothing stored before is stored again
        previous += sum(report.stored.values())
    growing.write_bytes(path.read_bytes())
    ingest_transcripts([growing], client, grown, org_id=ORG, captured_at=LATER)  # type: ignore[arg-type]
    sessions = set(whole.session_ids(ORG))
    assert set(grown.session_ids(ORG)) == sessions
    assert stored(grown, sessions) == stored(whole, sessions) and sum(once.stored.values()) > 0


def test_translation_is_deterministic_and_order_free(tmp_path: Path) -> None:
    first = translate(CLAUDE)
    again = translate(CLAUDE)
    assert [encode_record(f) for f in first.facts] == [encode_record(f) for f in again.facts]
    files = [CLAUDE, THINKING]
    results = []
    for seed in (1, 2, 3):
        random.Random(seed).shuffle(files)
        store = FactStore(f"sqlite:///{tmp_path / f's{seed}.db'}")
        ingest_transcripts(list(files), "claude-code", store, org_id=ORG, captured_at=LATER)
        results.append(stored(store, set(store.session_ids(ORG))))
    assert results[0] == results[1] == results[2]


def test_calls_read_back_from_the_store_exactly(tmp_path: Path) -> None:
    store = FactStore(f"sqlite:///{tmp_path / 'f.db'}")
    for path, client in ((CLAUDE, "claude-code"), (CODEX_LONG, "codex")):
        result = translate(path, client)
        store.append(result.facts)
        calls = calls_of(result)
        back = store.calls_for_session(ORG, calls[0].session_id)
        assert [encode_record(c) for c in back] == [encode_record(c) for c in sorted(
            calls, key=lambda c: (c.observed_at, c.inference_call_id))]
        assert all(c.capture is not None for c in back)


def test_a_folder_reads_every_transcript_under_it(tmp_path: Path) -> None:
    store = FactStore(f"sqlite:///{tmp_path / 'f.db'}")
    report = ingest_transcripts([INPUTS / "codex_rollout"], "codex", store, org_id=ORG, captured_at=LATER)
    assert report.problems == [] and report.stored["inference_calls"] == 28 + 1 + 6
    assert default_folder("codex", tmp_path) == tmp_path / ".codex" / "sessions"
    assert default_folder("claude-code", tmp_path) == tmp_path / ".claude" / "projects"


def test_codex_values_of_the_wrong_type_are_one_problem_each(tmp_path: Path) -> None:
    entries = lines_of(CODEX)
    entries[1]["payload"]["type"] = ["message"]  # found by the fuzz test: a list where a name belongs
    entries[20]["payload"] = "token_count"
    result = translate(write(tmp_path / "t.jsonl", entries), "codex")
    assert result.problems == [(2, "payload.type: expected a string"), (21, "payload: expected an object")]
    assert len(calls_of(result)) == 6


@pytest.mark.parametrize(("path", "client", "other"), [(CODEX, "claude-code", "codex"),
                                                       (CLAUDE, "codex", "claude-code")])
def test_another_clients_transcript_is_one_problem_not_a_silent_skip(path: Path, client: str, other: str) -> None:
    """Issue 25's README walk: a Codex rollout read as Claude Code (or the reverse) stored nothing
    and exited 0, its lines counted as skipped on purpose. No line of it is an entry of the client
    named, so the file is in the wrong format: one problem at its first line naming the other
    client, and nothing counted as skipped."""
    result = translate(path, client)
    assert result.facts == [] and result.skipped == {}
    [(line, message)] = result.problems
    assert line == 1 and message.startswith(f"type: no line is a {client} transcript entry (types: ")
    assert message.endswith(f"try `sediment ingest transcripts {other}`")


def test_a_folder_of_both_clients_stores_one_and_names_each_file_of_the_other(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "codex.jsonl").write_bytes(CODEX.read_bytes())
    (folder / "claude.jsonl").write_bytes(CLAUDE.read_bytes())
    write(folder / "only-summaries.jsonl", [e for e in lines_of(THINKING) if e["type"] == "summary"])
    store = FactStore(f"sqlite:///{tmp_path / 'f.db'}")
    report = ingest_transcripts([folder], "claude-code", store, org_id=ORG, captured_at=LATER)
    assert [(Path(p.path).name, p.line) for p in report.problems] == [("codex.jsonl", 1)]
    assert report.stored["inference_calls"] == 13  # the Claude Code session; a file of summaries is no problem
    assert not any(reason.startswith("unknown_entry:") for reason in report.skipped)
