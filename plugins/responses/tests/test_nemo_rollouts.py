"""Profile nemo-gym-rollouts-v2 through real exports: rows, declines, indices, evidence, determinism."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from sediment.plugin import ToolDefinition
from sediment.testing import message, rollout, run_export, snapshot

from .scenarios import PROMPT, SYSTEM, TOOLS, compacted, tool_loop

PROFILE = "nemo-gym-rollouts-v2"


def export(rollouts: list[Any], out: Path, **kwargs: Any) -> Any:
    return run_export(rollouts, out, target="nemo-gym", profile=PROFILE, **kwargs)


def test_tool_loop_becomes_one_native_row(tmp_path: Path) -> None:
    result = export([tool_loop("s1")], tmp_path / "out")
    assert result.summary["rows"] == 1 and result.summary["skipped"] == {}
    [row] = result.rows["data.jsonl"]
    assert list(row) == ["responses_create_params", "response", "reward", "agent_ref", "_ng_task_index",
                         "_ng_rollout_index", "instance_id", "sediment"]
    params = row["responses_create_params"]
    assert list(params) == ["input", "model", "tools", "tool_choice", "parallel_tool_calls"]
    assert params["input"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    assert params["tools"] == [
        {"type": "function", "name": "read_file", "description": "Read a file",
         "parameters": TOOLS[0].parameters, "strict": None},
        {"type": "function", "name": "write_file", "parameters": TOOLS[1].parameters, "strict": True},
        {"type": "function", "name": "run_tests", "parameters": None, "strict": None},
    ]
    response = row["response"]
    assert response["id"] == "resp-acme-s1-seg0" and response["object"] == "response"
    assert response["model"] == params["model"] == "claude-sonnet-4-5"
    assert response["created_at"] == 1767614400.0  # the first call's observed_at
    assert response["tools"] == params["tools"]
    assert [item.get("type", "message") for item in response["output"]] == [
        "reasoning", "message", "function_call",      # call 0
        "function_call_output",                        # the Anthropic-style result sent to call 1
        "function_call", "function_call",              # call 1: two parallel calls
        "function_call_output", "function_call_output",  # the tool-role results sent to call 2
        "message",                                     # call 2's answer
    ]
    output = response["output"]
    assert output[0]["summary"] == [{"type": "summary_text", "text": "The test expects 3; add() subtracts."}]
    assert output[2]["arguments"] == '{"path":"calc.py"}' and output[2]["call_id"] == "s1-t0"
    assert output[3]["output"] == [{"type": "input_text", "text": "def add(a, b):\n    return a - b\n"}]
    assert output[7]["output"] == '{"passed":3,"failed":0}'  # a JSON result becomes its JSON text
    assert output[8]["content"] == [{"type": "output_text", "text": "Fixed add(); the test passes.",
                                     "annotations": []}]
    assert row["reward"] == 1.0 and row["agent_ref"] == {"name": "sediment_agent"}
    assert (row["_ng_task_index"], row["_ng_rollout_index"]) == (0, 0)
    assert row["sediment"]["reward_source"] == "resolved_ci_pass"
    # the canonical metadata without its schema_id: the native row obeys its own schema, not that one
    assert "schema_id" not in row["sediment"] and row["sediment"]["schema_version"] == 4
    [evidence] = result.rows["evidence.jsonl"]
    assert evidence["evidence"]["inference_call_ids"] == ["s1-c0", "s1-c1", "s1-c2"]
    assert evidence["evidence"]["json_encoded_tool_results"] == 1
    assert evidence["evidence"]["token_ids"] == "absent"


def test_settings_reach_the_rows(tmp_path: Path) -> None:
    settings = {PROFILE: {"agent_name": "calc_agent", "tool_choice": "required", "parallel_tool_calls": False}}
    [row] = export([tool_loop("s1")], tmp_path / "out", settings=settings).rows["data.jsonl"]
    assert row["agent_ref"] == {"name": "calc_agent"}
    for part in (row["responses_create_params"], row["response"]):
        assert (part["tool_choice"], part["parallel_tool_calls"]) == ("required", False)
    compatibility = json.loads((tmp_path / "out" / "compatibility.json").read_text())
    assert compatibility["settings"] == settings[PROFILE]


def test_a_compacted_history_starts_with_assistant_and_developer_items(tmp_path: Path) -> None:
    result = export([compacted("s2")], tmp_path / "out")
    assert result.summary["canonical_rows"] == 2 and result.summary["rows"] == 2
    second = result.rows["data.jsonl"][1]["responses_create_params"]["input"]
    assert second == [
        {"role": "developer", "content": "Summary of earlier work follows."},
        {"type": "message", "id": "msg-s2-c1-input-1-0", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "I read calc.py: add() and sub().", "annotations": []},
                     {"type": "output_text", "text": "Next: the README.", "annotations": []}]},
        {"role": "user", "content": [{"type": "input_text", "text": "Go on."},
                                     {"type": "input_text", "text": "Keep it short."}]},
    ]
    assert [r["reward"] for r in result.rows["data.jsonl"]] == [0.0, 0.0]


@pytest.mark.parametrize(("rollout_factory", "reason"), [
    (lambda: rollout("no-ci"), "missing_reward"),
    (lambda: tool_loop("s", models=("a", "b", "a")), "model_conflict"),
    (lambda: tool_loop("s", models=("a", None, "a")), "model_absent"),
    (lambda: tool_loop("s", tools_1=TOOLS[:2]), "tool_definitions_vary"),
    (lambda: tool_loop("s", tools=(ToolDefinition(type="web_search_20250305", name="web_search"),)),
     "unsupported_tool_definition"),
    (lambda: tool_loop("s", extra_input=[message("user", "Also update the README.")]), "user_turn_inside_segment"),
    # a recorded schema holding Infinity derives (the digest is lossless) and is declined here
    (lambda: tool_loop("s", tools=(ToolDefinition(name="x", parameters={"maximum": math.inf}),)), "non_finite_number"),
])
def test_rows_that_cannot_be_native_are_declined_and_counted(tmp_path: Path, rollout_factory: Any,
                                                            reason: str) -> None:
    result = export([rollout_factory(), tool_loop("good")], tmp_path / "out")
    assert result.summary["skipped"] == {reason: 1}
    assert [r["instance_id"] for r in result.rows["data.jsonl"]] == ["acme-good-seg0"]


def test_indices_count_per_file_and_rows_align_with_evidence(tmp_path: Path) -> None:
    rollouts = [tool_loop(f"s{i}", split="eval" if i % 3 == 0 else "train", prompt=f"{PROMPT} ({i})")
                for i in range(7)]
    result = export(rollouts, tmp_path / "out", split_enabled=True)
    for side in ("train", "eval"):
        data, evidence = result.rows[f"data.{side}.jsonl"], result.rows[f"evidence.{side}.jsonl"]
        assert [r["_ng_task_index"] for r in data] == list(range(len(data)))
        assert [r["instance_id"] for r in data] == [e["instance_id"] for e in evidence]
        assert all(e["split"] == side for e in evidence)
    assert result.summary["diagnostics"]["rows_by_split"] == {"train": 4, "eval": 3}


def test_an_exact_prompt_on_both_sides_of_the_split_stops_the_export(tmp_path: Path) -> None:
    from sediment.testing import ProfileError

    with pytest.raises(ProfileError, match="consumer export has 1 exact prompts in both train and eval; nothing"):
        export([tool_loop("s1", split="train"), tool_loop("s2", split="eval")], tmp_path / "out", split_enabled=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".sediment-rlvr-target"]


def test_deterministic_over_repeats_and_shuffles(tmp_path: Path) -> None:
    rollouts = [tool_loop(f"s{i}") for i in range(6)] + [compacted("c1")]
    export(rollouts, tmp_path / "a")
    export(rollouts, tmp_path / "b")
    shuffled = list(rollouts)
    random.Random(7).shuffle(shuffled)
    export(shuffled, tmp_path / "c")
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b") == snapshot(tmp_path / "c")
