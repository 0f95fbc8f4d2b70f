"""hf-chat-messages-v1 through real exports of the sediment target: message mapping, tools,
every decline reason, identical columns, determinism and the prompt the split check guards."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from sediment_hf_chat.chat import MESSAGE_KEYS
from sediment_hf_chat.messages import FEATURES, SKIP_REASONS

from sediment.plugin import (
    CallCapture,
    InferenceMessage,
    ReasoningPart,
    Rollout,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
    canonical_digest,
)
from sediment.testing import (
    ExportResult,
    InferenceCall,
    MirrorRoot,
    ProfileError,
    call,
    conversation,
    message,
    outcome,
    rollout,
    run_export,
    snapshot,
)

PROFILE = "hf-chat-messages-v1"
SHA = "a" * 40
READ = ToolDefinition(name="read", description="Read a file",
                      parameters={"type": "object", "properties": {"path": {"type": "string"}}})
WRITE = ToolDefinition(name="write", parameters={"type": "object"}, strict=True)
READ_CHAT = {"type": "function", "function": {"name": "read", "description": "Read a file",
                                              "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
WRITE_CHAT = {"type": "function", "function": {"name": "write", "parameters": {"type": "object"}, "strict": True}}


def chat(role: str, content: str = "", *, tool_calls: list[dict[str, Any]] | None = None,
         tool_call_id: str | None = None, name: str | None = None, reasoning: str | None = None) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": tool_calls or [], "tool_call_id": tool_call_id,
            "name": name, "reasoning_content": reasoning}


def chat_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def loop(session: str, inputs: list[InferenceMessage], steps: list[tuple[list[InferenceMessage], list[InferenceMessage]]],
         **fields: Any) -> list[InferenceCall]:
    """A replaying loop: call 0 sees ``inputs``; each step is (its outputs, what follows them)."""
    calls, history = [], list(inputs)
    for index, (outputs, follow) in enumerate(steps):
        calls.append(call(session, index, history, outputs, **fields))
        history = [*history, *outputs, *follow]
    return calls


def export(rollouts: list[Rollout], out: Path, mirrors: MirrorRoot, *, split: bool = False) -> ExportResult:
    return run_export(rollouts, out, target="sediment", profile=PROFILE, mirrors=mirrors, split_enabled=split)


def data(result: ExportResult) -> list[dict[str, Any]]:
    return [row for name in sorted(result.rows) if name.startswith("data") for row in result.rows[name]]


def sidecar(result: ExportResult) -> list[dict[str, Any]]:
    return [row for name in sorted(result.rows) if name.startswith("evidence") for row in result.rows[name]]


def tool_session(session: str = "s1", task: str = "fix a.py", **fields: Any) -> list[InferenceCall]:
    """Two calls: reasoning + text + a tool call, its result in a tool message, then an answer."""
    first = message("assistant", ReasoningPart(content="look first"), "Let me look.", "Then fix.",
                    ToolCallPart(id="t1", name="read", arguments={"path": "a.py", "n": [1, 2.5, None]}))
    return loop(session, [message("system", "You are careful."), message("user", task, "please")],
                [([first], [message("tool", ToolCallResponsePart(id="t1", result="print(1)\n"))]),
                 ([message("assistant", "Fixed.")], [])], tools=(READ, WRITE), **fields)


# --- mapping ----------------------------------------------------------------------------


def test_tool_calls_results_reasoning_and_multi_part_text(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    result = export([rollout("s1", calls=tool_session())], tmp_path / "out", mirror_root)
    [row] = data(result)
    assert row == {
        "messages": [
            chat("system", "You are careful."),
            chat("user", "fix a.py\nplease"),
            chat("assistant", "Let me look.\nThen fix.", reasoning="look first",
                 tool_calls=[chat_call("t1", "read", '{"path":"a.py","n":[1,2.5,null]}')]),
            chat("tool", "print(1)\n", tool_call_id="t1", name="read"),
            chat("assistant", "Fixed."),
        ],
        "tools": [READ_CHAT, WRITE_CHAT],
        "instance_id": "acme-s1-seg0",
        "session_id": "s1",
        "segment_index": 0,
        "split": "train",
        "reward_source": None,
        "sediment": {"recipe_id": "rlvr_ci", "recipe_version": 1, "attribution_source": "git_notes",
                     "ci_resolution": None},
    }
    [line] = sidecar(result)
    assert line["evidence"] == {"inference_call_ids": ["s1-c0", "s1-c1"], "prompt_messages": 4,
                                "answer_messages": 1, "tool_results": {"string": 1, "text_blocks": 0, "json": 0}}
    assert line["prompt_sha256"] == canonical_digest({"prompt": row["messages"][:4]})
    assert result.summary["skipped"] == {} and result.summary["rows"] == 1


def test_tool_results_inside_a_user_message_become_tool_messages(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    calls_out = message("assistant", *(ToolCallPart(id=f"t{i}", name="read", arguments={}) for i in range(5)))
    results = message("user",
                      ToolCallResponsePart(id="t0", result=[{"type": "text", "text": "a"},
                                                            {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]),
                      ToolCallResponsePart(id="t1", result={"exit": 0, "out": "é"}),
                      "now continue",
                      ToolCallResponsePart(id="t2", result=None),
                      ToolCallResponsePart(id="t3", result=[]),
                      ToolCallResponsePart(id="t4", result=[{"type": "image", "source": "x"}]))
    calls = loop("s1", [message("user", "go")], [([calls_out], [results]), ([message("assistant", "done")], [])])
    result = export([rollout("s1", calls=calls)], tmp_path / "out", mirror_root)
    [row] = data(result)
    assert row["messages"][2:] == [
        chat("tool", "a\nb", tool_call_id="t0", name="read"),
        chat("tool", '{"exit":0,"out":"é"}', tool_call_id="t1", name="read"),
        chat("user", "now continue"),
        chat("tool", "null", tool_call_id="t2", name="read"),
        chat("tool", "[]", tool_call_id="t3", name="read"),
        chat("tool", '[{"type":"image","source":"x"}]', tool_call_id="t4", name="read"),
        chat("assistant", "done"),
    ]
    assert row["tools"] == []
    assert sidecar(result)[0]["evidence"]["tool_results"] == {"string": 0, "text_blocks": 1, "json": 4}


def test_messages_without_parts_and_the_default_loop(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    calls = loop("s2", [message("developer", "rules"), message("user")], [([message("assistant", "ok")], [])])
    result = export([rollout("s1"), rollout("s2", calls=calls)], tmp_path / "out", mirror_root)
    first, second = data(result)
    assert first["messages"] == [
        chat("user", "fix the bug"),
        chat("assistant", tool_calls=[chat_call("s1-t0", "edit", '{"path":"a.py","text":"step 0"}')]),
        chat("assistant", tool_calls=[chat_call("s1-t1", "edit", '{"path":"a.py","text":"step 1"}')]),
    ]
    assert second["messages"] == [chat("developer", "rules"), chat("user"), chat("assistant", "ok")]


def test_every_row_and_message_has_the_same_keys(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    rollouts = [rollout("s1", calls=tool_session(), commits=[SHA], outcomes=[outcome("o1", SHA)]),
                rollout("s2"), rollout("s3", commits=[SHA], outcomes=[outcome("o3", SHA, "failed")])]
    rows = data(export(rollouts, tmp_path / "out", mirror_root))
    assert len(rows) == 3
    assert {tuple(r) for r in rows} == {tuple(f["name"] for f in FEATURES)}
    assert {tuple(m) for r in rows for m in r["messages"]} == {MESSAGE_KEYS}
    assert [r["reward_source"] for r in rows] == ["resolved_ci_pass", None, "resolved_ci_fail"]
    assert rows[0]["sediment"]["ci_resolution"]["commit_sha"] == SHA


def test_compacted_session_rows_hold_each_segment(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    first = loop("s1", [message("user", "task")], [([message("assistant", ToolCallPart(id="t1", name="read", arguments={}))],
                                                    [message("tool", ToolCallResponsePart(id="t1", result="x"))])])
    second = call("s1", 5, [message("user", "[summary] task")], [message("assistant", "done")])
    rows = data(export([rollout("s1", calls=[*first, second])], tmp_path / "out", mirror_root))
    assert [(r["segment_index"], [m["role"] for m in r["messages"]]) for r in rows] == [
        (0, ["user", "assistant"]), (1, ["user", "assistant"])]


# --- declines ---------------------------------------------------------------------------


def single(inputs: list[InferenceMessage], outputs: list[InferenceMessage] | None = None,
           **fields: Any) -> list[InferenceCall]:
    return [call("s1", 0, inputs, [message("assistant", "ok")] if outputs is None else outputs, **fields)]


CALL_T1 = message("assistant", ToolCallPart(id="t1", name="read", arguments={}))
DECLINES: dict[str, list[InferenceCall]] = {
    "unsupported_role": single([message("function", "x")]),
    "tool_call_outside_assistant": single([message("user", ToolCallPart(id="t1", name="read", arguments={}))]),
    "tool_call_without_name": single([message("user", "go")], [message("assistant", ToolCallPart(id="t1", name="", arguments={}))]),
    "reasoning_outside_assistant": single([message("user", ReasoningPart(content="hm"))]),
    "tool_result_misplaced": single([message("user", "go"), CALL_T1,
                                     message("assistant", ToolCallResponsePart(id="t1", result="x"))]),
    "tool_message_without_result": single([message("user", "go"), CALL_T1, message("tool")]),
    "tool_result_without_call": single([message("user", "go"), message("tool", ToolCallResponsePart(id="t9", result="x"))]),
    "duplicate_tool_call_id": single([message("user", "go"), CALL_T1,
                                      message("tool", ToolCallResponsePart(id="t1", result="x")), CALL_T1]),
    "non_function_tool": single([message("user", "go")], tools=(READ, ToolDefinition(type="web_search", name="web_search"))),
    "final_output_missing": single([message("user", "go")], []),
    "final_output_not_assistant": single([message("user", "go")], [message("user", "again")]),
    "transcript_capture": single([message("user", "go")], capture=CallCapture(
        source="transcript:claude-code@2.0.69", lacks=("exact_request", "system_prompt", "tool_definitions"))),
    "tools_differ_within_segment": [
        call("s1", 0, [message("user", "go")], [CALL_T1], tools=(READ,)),
        call("s1", 1, [message("user", "go"), CALL_T1, message("tool", ToolCallResponsePart(id="t1", result="x"))],
             [message("assistant", "ok")], tools=(READ, WRITE)),
    ],
}


@pytest.mark.parametrize("reason", sorted(DECLINES))
def test_each_decline_reason(tmp_path: Path, mirror_root: MirrorRoot, reason: str) -> None:
    result = export([rollout("s1", calls=DECLINES[reason]), rollout("s2")], tmp_path / "out", mirror_root)
    assert result.summary["skipped"] == {reason: 1}
    assert result.summary["canonical_rows"] == 2 and [r["session_id"] for r in data(result)] == ["s2"]


def test_a_tool_message_with_other_parts_is_misplaced(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    calls = single([message("user", "go"), CALL_T1, message("tool", ToolCallResponsePart(id="t1", result="x"), "note")])
    assert export([rollout("s1", calls=calls)], tmp_path / "out", mirror_root).summary["skipped"] == {
        "tool_result_misplaced": 1}


def test_the_vocabulary_is_exactly_the_declared_reasons(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    result = export([rollout("s1")], tmp_path / "out", mirror_root)
    assert set(DECLINES) | {"timestamp_like_text"} == set(SKIP_REASONS)
    assert json.loads((tmp_path / "out" / "compatibility.json").read_text())["profile"]["id"] == PROFILE
    assert result.summary["rows"] == 1


def test_timestamp_like_text_is_declined_where_datasets_would_retype_it(tmp_path: Path,
                                                                        mirror_root: MirrorRoot) -> None:
    stamped = rollout("2026-03-02T09:00:00Z", calls=single([message("user", "go")]))
    mixed = rollout("s2", calls=single([message("user", "2026-03-02")], [message("assistant", "2026-03-03 10:00")]),)
    mixed_ok = rollout("s3", calls=single([message("system", "2026-03-02"), message("user", "when?")]))
    result = export([stamped, mixed, mixed_ok], tmp_path / "out", mirror_root)
    assert result.summary["skipped"] == {"timestamp_like_text": 2}
    assert [r["session_id"] for r in data(result)] == ["s3"]


def test_lone_surrogates_in_call_context_are_core_declines(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    """Tool definitions and the answer's reasoning are not in the canonical row; the core's
    representation check declines the adapted row instead."""
    bad_tool = ToolDefinition(name="read", description="\udc80", parameters={"type": "object"})
    rollouts = [rollout("s1", calls=single([message("user", "go")], tools=(bad_tool,))),
                rollout("s2", calls=single([message("user", "go")],
                                           [message("assistant", ReasoningPart(content="\udc80"), "ok")]))]
    result = export(rollouts, tmp_path / "out", mirror_root)
    assert result.summary["canonical_rows"] == 2
    assert result.summary["skipped"] == {"unrepresentable_unicode": 2}
    assert result.summary["compatibility"] is None and not (tmp_path / "out" / "README.md").exists()


# --- determinism and the split ------------------------------------------------------------


def mixed_rollouts() -> list[Rollout]:
    return [rollout("s1", calls=tool_session(), commits=[SHA], outcomes=[outcome("o1", SHA)]),
            rollout("s2", calls=conversation("s2", "another bug"), split="eval"),
            rollout("s3", calls=tool_session("s3", "fix b.py"), split="eval"),
            rollout("s4")]


def test_repeat_and_shuffled_exports_are_byte_identical(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    rollouts = mixed_rollouts()
    export(rollouts, tmp_path / "a", mirror_root, split=True)
    export(rollouts, tmp_path / "b", mirror_root, split=True)
    shuffled = list(rollouts)
    random.Random(7).shuffle(shuffled)
    export(shuffled, tmp_path / "c", mirror_root, split=True)
    first = snapshot(tmp_path / "a")
    assert "README.md" in first and "data.eval.jsonl" in first
    assert first == snapshot(tmp_path / "b") == snapshot(tmp_path / "c")


def test_the_sidecar_is_aligned_line_by_line_with_the_canonical_rows(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    rollouts = mixed_rollouts()
    result = export(rollouts, tmp_path / "out", mirror_root, split=True)
    canonical = run_export(rollouts, tmp_path / "target", target="sediment", mirrors=mirror_root, split_enabled=True)
    for side in ("train", "eval"):
        rows, lines = result.rows[f"data.{side}.jsonl"], result.rows[f"evidence.{side}.jsonl"]
        sources = canonical.rows[f"rollouts.{side}.jsonl"]
        assert len(rows) == len(lines) == len(sources) == 2
        for row, line, source in zip(rows, lines, sources, strict=True):
            assert line["row_sha256"] == canonical_digest(row)
            assert line["source_row_sha256"] == canonical_digest(source)
            assert line["instance_id"] == row["instance_id"] == source["instance_id"]
            assert line["split"] == row["split"] == side
            assert line["evidence"]["inference_call_ids"] == [t["inference_call_id"] for t in source["turns"]]


def test_the_guarded_prompt_is_the_conversation_before_the_answer(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    train = rollout("s1", calls=single([message("user", "same task")], [message("assistant", "answer one")]))
    held_out = rollout("s2", calls=single([message("user", "same task")], [message("assistant", "answer two")]),
                       split="eval")
    with pytest.raises(ProfileError, match="1 exact prompts in both train and eval"):
        export([train, held_out], tmp_path / "out", mirror_root, split=True)
    assert not (tmp_path / "out" / "data.train.jsonl").exists()
    assert not (tmp_path / "out" / "README.md").exists()
