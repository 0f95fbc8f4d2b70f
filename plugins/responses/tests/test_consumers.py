"""The profiles' rows in the consumers' own code: nemo-gym 0.7.0 and verifiers 0.4.0, each in its
pinned venv (tests/consumers/<name>/), on the demo's exports and on recorded Sessions that use
every item kind (reasoning, parallel tool calls, Anthropic-style and tool-role results, a
compacted history with assistant and developer messages)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import run_consumer, run_demo, run_export

from .scenarios import compacted, tool_loop

ROOT = Path(__file__).parents[3]
CHECKS = ROOT / "tests" / "consumers"
ITEM_CLASSES = {
    "message": "NeMoGymResponseOutputMessage",
    "function_call": "NeMoGymResponseFunctionToolCall",
    "function_call_output": "NeMoGymFunctionCallOutput",
    "reasoning": "NeMoGymResponseReasoningItem",
}


def intended_class(item: dict[str, Any]) -> str:
    """The nemo-gym class each of our item shapes is meant to become."""
    return ITEM_CLASSES[item["type"]] if "type" in item else "NeMoGymEasyInputMessage"


def item_texts(items: list[dict[str, Any]]) -> list[str]:
    texts = []
    for item in items:
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(part["text"] for part in content)
    return texts


def data_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("data*.jsonl"))


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """The demo's profile exports and a scenario export, per profile id."""
    base = tmp_path_factory.mktemp("exports")
    demo = run_demo(base / "demo")
    rich = [tool_loop("loop-a", prompt="Fix add()."), tool_loop("loop-b", result="failed", prompt="Fix sub()."),
            compacted("compact")]
    found: dict[str, list[Path]] = {}
    for profile in ("nemo-gym-rollouts-v2", "verifiers-tasks-v1"):
        assert demo["profiles"][profile]["rows"] > 0
        run_export(rich, base / f"rich-{profile}", target="nemo-gym", profile=profile)
        found[profile] = data_files(base / "demo" / "profiles" / profile) + data_files(base / f"rich-{profile}")
    return found


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


def test_nemo_gym_validates_converts_and_aggregates_every_row(
        exports: dict[str, list[Path]], consumer_python: Callable[[str], Path], tmp_path: Path) -> None:
    files = exports["nemo-gym-rollouts-v2"]
    reports = run_consumer(consumer_python("nemo-gym"), CHECKS / "nemo-gym" / "check_nemo.py", *files, home=tmp_path)
    assert len(reports) == len(files)
    kinds = set()
    for path, report in zip(files, reports, strict=True):
        rows = rows_of(path)
        assert len(report["rows"]) == len(rows)
        for row, seen in zip(rows, report["rows"], strict=True):
            inputs, outputs = row["responses_create_params"]["input"], row["response"]["output"]
            assert seen["input_classes"] == [intended_class(i) for i in inputs]
            assert seen["output_classes"] == [intended_class(i) for i in outputs]
            assert "NeMoGymResponseMcpListTools" not in seen["input_classes"] + seen["output_classes"]
            kinds.update(seen["input_classes"] + seen["output_classes"])
            # ResponsesConverter turns the request into chat params with every prompt text intact, in
            # order (it joins an assistant message's text parts with no separator)
            assert "".join(seen["chat_texts"]) == "".join(item_texts(inputs))
            assert len(seen["chat_roles"]) == len(inputs)
            tool_names = [t["name"] for t in row["responses_create_params"]["tools"]]
            assert seen["tool_names"] == seen["response_tool_names"] == seen["chat_tool_names"] == tool_names
            assert seen["reward"] == row["reward"] and seen["reward_type"] == "float"
            assert seen["model"] == row["response"]["model"] and seen["created_at"] == row["response"]["created_at"]
            assert seen["nulls"] == []
            assert seen["task_line_offending"] is False
        assert report["preprocessed_indices"] == [[i, 0] for i in range(len(rows))]
        assert report["preprocessed_agents"] == ["sediment_agent"]
        assert report["key_metrics"]["mean/reward"] == pytest.approx(sum(r["reward"] for r in rows) / len(rows))
    assert kinds == {"NeMoGymEasyInputMessage", *ITEM_CLASSES.values()}


def test_verifiers_reads_the_task_rows_with_prompt_text_and_tools(
        exports: dict[str, list[Path]], consumer_python: Callable[[str], Path], tmp_path: Path) -> None:
    files = exports["verifiers-tasks-v1"]
    reports = run_consumer(consumer_python("verifiers"), CHECKS / "verifiers" / "check_verifiers.py", *files,
                           home=tmp_path)
    for path, report in zip(files, reports, strict=True):
        rows = rows_of(path)
        assert report["verifiers"] == "0.4.0"
        assert [t["row_instance_id"] for t in report["tasks"]] == [r["instance_id"] for r in rows]
        assert [t["idx"] for t in report["tasks"]] == list(range(len(rows)))
        for row, task in zip(rows, report["tasks"], strict=True):
            inputs = row["responses_create_params"]["input"]
            assert "".join(task["prompt_texts"]) == "".join(item_texts(inputs))  # verifiers folds adjacent items
            assert task["request_texts"] == task["prompt_texts"]
            assert task["prompt_roles"][0] == "system"
            declared = row["responses_create_params"]["tools"]
            assert [t["name"] for t in task["tools"]] == [t["name"] for t in declared]
            assert [t["parameters"] for t in task["tools"]] == [t["parameters"] or {} for t in declared]
            assert [t["strict"] for t in task["tools"]] == [t["strict"] for t in declared]
