"""SFT views: shapes of the seed, and the causal-context invariant over generated records."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.trajectory import synthetic
from sediment.trajectory.adapter import CanonicalDatasetAdapter, Filters
from sediment.trajectory.library import Library
from sediment.trajectory.views import assistant_turns, full_trajectory, turn_chat_messages

ROLES = st.sampled_from(["system", "user", "assistant", "tool"])


@st.composite
def generated_records(draw: st.DrawFn) -> dict[str, Any]:
    """Arbitrary event sequences: any roles, any supervision flags, calls and links anywhere."""
    count = draw(st.integers(min_value=0, max_value=14))
    events: list[dict[str, Any]] = []
    calls: list[str] = []
    for index in range(count):
        role = draw(ROLES)
        event: dict[str, Any] = {"event_id": f"event:{index}", "role": role,
                                 "text": draw(st.text(max_size=20)), "tool_calls": [],
                                 "supervised": draw(st.booleans()), "source_metadata": {}, "missing_fields": []}
        if role == "assistant" and draw(st.booleans()):
            call = f"call-{index}"
            calls.append(call)
            event["tool_calls"] = [{"call_id": call, "name": "run", "arguments": {"n": index}}]
        if role == "tool" and calls:
            event["tool_result_of"] = draw(st.sampled_from(calls))
        events.append(event)
    record = synthetic.record(0, draw(st.integers(min_value=0, max_value=1000)))
    record["events"] = events
    record["outcome"]["source_metadata"] = {"result_explanation": "evaluator text that no model input may contain"}
    return record


def check_views(record: dict[str, Any]) -> None:
    original = copy.deepcopy(record)
    events = record["events"]
    full = full_trajectory(record)
    assert full["view"] == "full-trajectory"
    assert full["sample_id"].startswith("full:") and full["trajectory_id"] == record["trajectory_id"]
    assert full["events"] == events and full["model_input"]["events"] == events
    assert full["model_input"]["tool_definitions"] == record["tools"]
    assert len(full["loss_mask"]) == len(events)
    expected = [e["role"] == "assistant" and e["supervised"] is True for e in events]
    assert full["loss_mask"] == expected
    assert full["supervised_targets"] == [e for e, m in zip(events, expected, strict=True) if m]
    assert full["target_event_ids"] == [e["event_id"] for e in full["supervised_targets"]]
    assert set(full["model_input"]) == {"events", "tool_definitions"}
    turns = list(assistant_turns(record))
    assert [t["target_index"] for t in turns] == [i for i, m in enumerate(expected) if m]
    for turn in turns:
        i = turn["target_index"]
        assert turn["context"] == events[:i]
        assert turn["model_input"] == {"events": events[:i], "tool_definitions": record["tools"]}
        assert turn["target"] == events[i] == turn["supervised_target"]
        assert turn["target_event_id"] == events[i]["event_id"]
        assert "result_explanation" not in json.dumps(turn["model_input"])
        assert turn["sample_id"] == f"turn:{record['trajectory_id'].split(':', 1)[1]}:{i}"
    assert len(turns) == len(full["target_event_ids"])
    assert record == original  # projections never mutate the canonical record


@settings(max_examples=200, deadline=None)
@given(generated_records())
def test_views_over_generated_records(record: dict[str, Any]) -> None:
    check_views(record)


def test_views_over_synthetic_records() -> None:
    for record in synthetic.records(3, 50):
        check_views(record)


def test_turn_samples_as_chat_messages() -> None:
    record = synthetic.record(1, 2)
    samples = list(assistant_turns(record))
    assert len(samples) == 3
    for sample in samples:
        chat = turn_chat_messages(sample)
        assert [m["role"] for m in chat["prompt"]][:2] == ["system", "user"]
        assert chat["completion"][0]["role"] == "assistant"
        assert json.loads(chat["completion"][0]["tool_calls"][0]["function"]["arguments"]) == \
            sample["target"]["tool_calls"][0]["arguments"]
        assert len(chat["prompt"]) == sample["target_index"]


def test_adapter_selection_filters_and_deterministic_sampling(tmp_path: Path) -> None:
    library = Library(tmp_path)
    library.import_records(synthetic.records(7, 120, tasks=15))
    adapter = CanonicalDatasetAdapter(library)
    best = adapter.select("best")
    assert all(r["within_task_rank"] == 1 and r["sft_eligible"] for r in best)
    assert len({(r["task_key"], r["environment_key"]) for r in best}) == len(best)
    successful = adapter.select("successful", Filters(include_ineligible=True))
    assert successful and all(r["outcome_category"] == "success" for r in successful)
    everything = adapter.select("all", Filters(include_ineligible=True))
    assert len(everything) == len(library.rankings())
    model_a = adapter.select("all", Filters(model=["model-a"], include_ineligible=True))
    assert model_a and {r["model"] for r in model_a} == {"model-a"}
    assert adapter.select("all", Filters(split=["eval"])) == [r for r in adapter.select("all") if r["split"] == "eval"]
    tiers = adapter.select("all", Filters(quality_tier=[4], max_rank=2, include_ineligible=True))
    assert all(r["quality_tier"] == 4 and r["within_task_rank"] <= 2 for r in tiers)
    for strategy in ("random", "task", "source-balanced"):
        one = adapter.sample(everything, 10, strategy, seed=3)
        shuffled = list(reversed(everything))
        assert adapter.sample(shuffled, 10, strategy, seed=3) == one
        assert one != adapter.sample(everything, 10, strategy, seed=4) or strategy == "source-balanced"
    tasks = adapter.sample(everything, 3, "task", seed=1)
    assert len({r["task_key"] for r in tasks}) == 3
    assert tasks == [r for r in everything if r["task_key"] in {t["task_key"] for t in tasks}]
    samples = list(adapter.project(best[:3], "turns"))
    assert samples and all(s["metadata"]["ranking"]["within_task_rank"] == 1 for s in samples)
    for sample in samples:
        check_views(library.record(sample["trajectory_id"]))
