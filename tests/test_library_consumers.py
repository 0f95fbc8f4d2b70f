"""Library views in the real consumers (datasets 5.2.0, TRL 1.16.0, in .venv-consumers/hf)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import orjson

from sediment.testing import run_consumer
from sediment.trajectory import synthetic
from sediment.trajectory.adapter import CanonicalDatasetAdapter, Filters
from sediment.trajectory.library import Library
from sediment.trajectory.views import arrow_row, from_arrow_row, turn_chat_messages

sys.path.insert(0, str(Path(__file__).parent))
from test_library_fixtures import fixture_records

CHECK = Path(__file__).resolve().parents[1] / "tests" / "consumers" / "hf" / "check_library_views.py"


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_views_load_in_datasets_and_turns_are_conversational(tmp_path: Path, consumer_python: Any) -> None:
    python = consumer_python("hf")
    library = Library(tmp_path / "lib")
    library.import_records(synthetic.records(12, 40))
    real = fixture_records()  # every held-out public fixture too, when present
    if real:
        library.import_records(real)
    adapter = CanonicalDatasetAdapter(library)
    rows = adapter.select("all", Filters(include_ineligible=True))
    full = list(adapter.project(rows, "full"))
    turns = list(adapter.project(rows, "turns"))
    assert full and turns
    for sample in full + turns:
        assert from_arrow_row(arrow_row(sample)) == json.loads(json.dumps(sample))
    files = {"full": write(tmp_path / "full.jsonl", [arrow_row(s) for s in full]),
             "turns": write(tmp_path / "turns.jsonl", [arrow_row(s) for s in turns]),
             "chat": write(tmp_path / "chat.jsonl", [turn_chat_messages(s) for s in turns]),
             "raw": write(tmp_path / "raw.jsonl", full)}
    facts = run_consumer(python, CHECK, f"arrow={files['full']}", f"arrow={files['turns']}", f"chat={files['chat']}",
                         f"raw={files['raw']}", home=tmp_path / "hf")
    raw = facts.pop()
    if real:  # the samples as they are do not survive Arrow: why the arrow form exists
        assert raw.get("error") or raw["arrow_equal"] is False, raw
    assert [f["rows"] for f in facts] == [len(full), len(turns), len(turns)]
    assert all(f["arrow_equal"] for f in facts), facts
    assert "loss_mask" in facts[0]["columns"] and "model_input_json" in facts[1]["columns"]
    assert facts[2]["columns"] == ["completion", "prompt"] and facts[2]["conversational"] is True
    if real:
        assert {s["trajectory_id"] for s in full} >= {r["trajectory_id"] for r in real}
