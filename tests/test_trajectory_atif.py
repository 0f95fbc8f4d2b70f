"""ATIF export (v1.7 and v1.8) from every imported fixture record, validated by the pinned
``atif`` package's own models (``.venv-consumers/atif``), and the round trip through the
ATIF importer with the losses declared."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sediment.importing.run import import_records, import_results
from sediment.testing import require_path
from sediment.trajectory import Trajectory
from sediment.trajectory.atif import ATIF_VERSIONS, export_atif, sidecar_path, write_atif
from sediment.trajectory.sources import ImportRefusal

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "trajectories"
SOURCES = [("swe-agent-traj", "sweagent"), ("swe-gym-sampled", "swe-gym"), ("nebius-swe-agent", "nebius"),
           ("openhands", "openhands")]


@pytest.fixture(scope="module")
def records() -> list[Trajectory]:
    require_path(FIXTURES, "the shared trajectory fixtures")
    found: list[Trajectory] = []
    for fmt, folder in SOURCES:
        found.extend(import_records(fmt, [FIXTURES / folder]))
    assert len(found) == 20
    return found


def _events(record: Trajectory) -> list[tuple[object, ...]]:
    return [(e.role, e.text, e.reasoning, [(c.call_id, c.original_call_id, c.name, c.arguments) for c in e.tool_calls],
             e.tool_result_of, e.supervised) for e in record.events]


@pytest.mark.parametrize("version", ATIF_VERSIONS)
def test_exports_validate_against_the_atif_models(records: list[Trajectory], version: str, tmp_path: Path,
                                                  consumer_python: Callable[[str], Path]) -> None:
    python = consumer_python("atif")  # skipped when .venv-consumers/atif is absent, failed under CI
    paths = []
    for index, record in enumerate(records):
        path = tmp_path / f"t{index:02d}.json"
        write_atif(record, path, version)  # type: ignore[arg-type]
        paths.append(path)
    process = subprocess.run([str(python), str(ROOT / "tests" / "consumers" / "atif" / "check_atif.py"),
                              *map(str, paths)], capture_output=True, text=True, timeout=300, check=False)
    assert process.returncode == 0, process.stderr[-3000:]
    reports = [json.loads(line) for line in process.stdout.splitlines()]
    assert len(reports) == len(records)
    for record, report in zip(records, reports, strict=True):
        assert report["valid"], report
        assert report["schema_version"] == version
        assert report["round_trip"]
        calls = sum(len(e.tool_calls) for e in record.events)
        assert report["tool_calls"] == calls
        assert report["results"] == sum(1 for e in record.events if e.role == "tool")
        assert report["copied_context"] == sum(1 for e in record.events if e.role == "assistant" and not e.supervised)


def test_the_round_trip_keeps_the_interaction_and_the_sidecar_keeps_the_rest(records: list[Trajectory],
                                                                             tmp_path: Path) -> None:
    for index, record in enumerate(records):
        write_atif(record, tmp_path / f"t{index:02d}.json")
    back = {r.metadata["trajectory_id"]: r for r in import_records("atif-v1", [tmp_path])}
    assert len(back) == len(records)
    for record in records:
        again = back[record.trajectory_id]
        assert _events(again) == _events(record)
        for field in ("task_id", "task_key", "task_family", "domain", "split", "outcome", "verification",
                      "completeness", "provenance", "tools"):
            assert getattr(again, field) == getattr(record, field), field
        declared = {m.field for m in again.missing_fields}
        assert {"outcome", "verification", "completeness", "raw_record"} <= declared
        assert "join-atif-sidecar" in [t.name for t in again.transformations]


def test_without_the_sidecar_the_outcome_is_unknown_and_declared(records: list[Trajectory], tmp_path: Path) -> None:
    gym = next(r for r in records if r.outcome.success is True)
    path = tmp_path / "gym.json"
    write_atif(gym, path, "ATIF-v1.7")
    sidecar_path(path).unlink()
    (again,) = import_records("atif-v1", [path])
    assert again.outcome.success is None
    assert "outcome" in {m.field for m in again.missing_fields}
    assert again.task_key == gym.task_key  # kept in the document's extra
    assert _events(again) == _events(gym)



def test_losses_of_text_actions_are_declared(records: list[Trajectory]) -> None:
    text_mode = next(r for r in records if any(t.name == "text-action-calls" for t in r.transformations))
    exported = export_atif(text_mode)
    fields = [m.field for m in exported.losses]
    assert any(f.endswith(".arguments") for f in fields)
    assert exported.sidecar["missing_fields"][-len(exported.losses):] == [
        {"field": m.field, "reason": m.reason} for m in exported.losses]
    step = next(s for s in exported.document["steps"] if s.get("tool_calls"))
    assert step["tool_calls"][0]["arguments"] == {} and step["tool_calls"][0]["extra"]["arguments_text"]


def test_export_is_byte_deterministic(records: list[Trajectory], tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_atif(records[0], first)
    write_atif(records[0], second)
    assert first.read_bytes() == second.read_bytes()
    assert sidecar_path(first).read_bytes() == sidecar_path(second).read_bytes()


def test_hostile_atif_is_refused_in_one_line(tmp_path: Path) -> None:
    good = {"schema_version": "ATIF-v1.8", "agent": {"name": "a", "version": "1"},
            "steps": [{"step_id": 1, "source": "user", "message": "hi"},
                      {"step_id": 2, "source": "agent", "message": "ok",
                       "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": {}}],
                       "observation": {"results": [{"source_call_id": "c", "content": "done"}]}}]}
    bad_source = dict(good, steps=[{"step_id": 1, "source": "robot", "message": "x"}])
    bad_args = json.loads(json.dumps(good))
    bad_args["steps"][1]["tool_calls"][0]["arguments"] = "[1]"
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in (good, bad_source, bad_args, {"schema_version": "v2"}, good))
                    + "\n", encoding="utf-8")
    results = list(import_results("atif-v1", [path]))
    refusals = [str(r) for r in results if isinstance(r, ImportRefusal)]
    kept = [r for r in results if isinstance(r, Trajectory)]
    assert len(kept) == 2 and _events(kept[0]) == _events(kept[1]) and kept[0].trajectory_id != kept[1].trajectory_id
    assert refusals == [f"{path}:2: steps.0.source: unknown step source 'robot'",
                        f"{path}:3: steps.1.tool_calls.0.arguments: expected an object",
                        f"{path}:4: schema_version: 'v2' is not an ATIF v1 version"]
    record = kept[0]
    assert [e.role for e in record.events] == ["user", "assistant", "tool"]
    assert record.events[2].tool_result_of == "c" and record.outcome.success is None


def test_a_json_array_of_atif_documents_imports_element_by_element(tmp_path: Path) -> None:
    """agent-data-protocol publishes a dataset's ATIF as one JSON array of documents (this
    fixture is written in that shape, its second element broken): each good element is one
    record whose raw record is the element's bytes, the bad one is refused alone."""
    path = ROOT / "tests" / "fixtures" / "atif" / "adp-array.json"
    documents = json.loads(path.read_text(encoding="utf-8"))
    results = list(import_results("atif-v1", [path]))
    refusals = [str(r) for r in results if isinstance(r, ImportRefusal)]
    kept = [r for r in results if isinstance(r, Trajectory)]
    assert refusals == [f"{path}:63: steps.1.source: unknown step source 'robot'"]
    assert [(r.task_key, r.source.locator) for r in kept] == [("atif:calc_1", "adp-array.json#0"),
                                                              ("atif:calc_3", "adp-array.json#2")]
    for record, index in zip(kept, (0, 2), strict=True):
        assert json.loads(record.raw_record.data()) == documents[index]
        alone = tmp_path / f"alone{index}.json"
        alone.write_text(json.dumps(documents[index]), encoding="utf-8")
        (single,) = import_records("atif-v1", [alone])
        assert _events(single) == _events(record) and single.outcome == record.outcome
    again = [r for r in import_results("atif-v1", [path]) if isinstance(r, Trajectory)]
    assert [r.model_dump() for r in again] == [r.model_dump() for r in kept]
