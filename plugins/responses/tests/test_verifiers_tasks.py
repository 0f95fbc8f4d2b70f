"""Profile verifiers-tasks-v1: the first request of each verified segment, as a task row."""

from __future__ import annotations

from pathlib import Path

from sediment.testing import rollout, run_export

from .scenarios import PROMPT, SYSTEM, compacted, tool_loop


def test_task_rows_hold_the_first_request_and_the_verdict(tmp_path: Path) -> None:
    result = run_export([tool_loop("s1"), compacted("s2"), rollout("no-ci")], tmp_path / "out", target="nemo-gym",
                        profile="verifiers-tasks-v1")
    assert result.summary["skipped"] == {"missing_reward": 1}
    assert result.summary["canonical_rows"] == 4 and result.summary["rows"] == 3
    first = result.rows["data.jsonl"][0]
    assert list(first) == ["responses_create_params", "agent_ref", "instance_id", "sediment"]
    params = first["responses_create_params"]
    assert list(params) == ["input", "tools", "tool_choice", "parallel_tool_calls"]  # no model: the policy answers
    assert params["input"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    assert [t["name"] for t in params["tools"]] == ["read_file", "write_file", "run_tests"]
    assert first["sediment"]["reward_source"] == "resolved_ci_pass"
    # the canonical metadata without its schema_id: the native row obeys its own schema, not that one
    assert "schema_id" not in first["sediment"] and first["sediment"]["schema_version"] == 4
    assert [e["evidence"]["inference_call_id"] for e in result.rows["evidence.jsonl"]] == ["s1-c0", "s2-c0", "s2-c1"]
