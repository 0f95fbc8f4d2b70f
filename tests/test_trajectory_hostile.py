"""Hostile input: every importer, fed fixture records with values swapped for values of other
types, yields only validated records or one-line refusals — never a traceback."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from sediment.host.registry import load_registry
from sediment.importing.inputs import records_for
from sediment.importing.run import import_records, import_results
from sediment.testing import require_path
from sediment.trajectory import Trajectory, content_id, from_json, from_plain, synthetic, to_json
from sediment.trajectory.atif import write_atif
from sediment.trajectory.library import Library
from sediment.trajectory.sources import ImportRefusal, parse_json, read_units

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "trajectories"
HOSTILE_VALUES: list[Any] = [None, True, 0, -1.5, "", "x", [], [None], {}, {"role": "robot"}, "\ud800", "\x00"]
CASES = [("swe-agent-traj", "sweagent/pydicom__pydicom-1458.traj", ".traj"),
         ("swe-agent-traj", "sweagent/marshmallow-code__marshmallow-1867.function_calling_replace.traj", ".traj"),
         ("swe-gym-sampled", "swe-gym/openhands_sampled_trajectories.sample_raw.json", ".jsonl"),
         ("nebius-swe-agent", "nebius/SWE-agent-trajectories.sample_raw.json", ".jsonl"),
         ("openhands", "openhands/multi_swe_bench_output.jsonl", ".jsonl"),
         ("openhands", "openhands/resolver_mock_output.jsonl", ".jsonl"),
         ("openhands", "openhands/runtime_trajs_basic.json", ".json")]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value[:6]):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize(("fmt", "name", "suffix"), CASES)
def test_mutated_records_are_kept_or_refused_in_one_line(fmt: str, name: str, suffix: str, tmp_path: Path) -> None:
    source = require_path(FIXTURES / name, "the shared trajectory fixture")
    registry = load_registry()
    if suffix == ".jsonl" and not name.endswith(".jsonl"):
        base = parse_json(source.read_bytes())[0]
    else:
        base = parse_json(next(iter(read_units(source))).data)
    chooser = random.Random(f"{fmt}:{name}")
    paths = _paths(base)
    mutants = [_replace(base, chooser.choice(paths), chooser.choice(HOSTILE_VALUES)) for _ in range(60)]
    for index, mutant in enumerate(mutants):
        path = tmp_path / f"m{index}{suffix}"
        text = json.dumps(mutant, ensure_ascii=True)
        if suffix == ".traj":
            path = tmp_path / f"{name.split('/')[-1].split('.')[0]}.{index}.traj"
        path.write_text(text + "\n", encoding="ascii")
        results = list(import_results(fmt, [path], registry=registry))
        assert results, mutant
        for result in results:
            if isinstance(result, ImportRefusal):
                assert "\n" not in str(result) and str(result).startswith(f"{path}:")
            else:
                assert isinstance(result, Trajectory)
                assert from_json(to_json(result)) == result
                write_atif(result, tmp_path / f"out{index}.json")  # any record exports


def test_mutated_atif_documents_are_kept_or_refused(tmp_path: Path) -> None:
    source = require_path(FIXTURES / "nebius" / "SWE-agent-trajectories.sample_raw.json", "the shared trajectory fixture")
    (record,) = list(import_records("nebius-swe-agent", [source]))[:1]
    exported = tmp_path / "base.json"
    write_atif(record, exported)
    base = json.loads(exported.read_text(encoding="utf-8"))
    chooser = random.Random(7)
    paths = _paths(base)
    registry = load_registry()
    lines = [json.dumps(_replace(base, chooser.choice(paths), chooser.choice(HOSTILE_VALUES))) for _ in range(80)]
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    results = list(import_results("atif-v1", [path], registry=registry))
    assert len(results) == len(lines)
    assert all(isinstance(r, Trajectory) or "\n" not in str(r) for r in results)


# --- defects the mutation property test (test_fuzz_trajectories) found -------------------------


def _nebius_rows() -> list[dict[str, Any]]:
    source = require_path(FIXTURES / "nebius" / "SWE-agent-trajectories.sample_raw.json", "the shared trajectory fixture")
    rows: list[dict[str, Any]] = parse_json(source.read_bytes())
    return rows


def test_a_row_nested_past_the_limit_is_one_refusal_between_good_rows(tmp_path: Path) -> None:
    """A row of 100,000 nested arrays escaped the parser as a RecursionError (a traceback that
    lost every later row); one nested 300 deep passed the parser to whatever walked it next."""
    first, second = _nebius_rows()[:2]
    path = tmp_path / "rows.jsonl"
    path.write_bytes(json.dumps(first).encode() + b"\n" + b"[" * 100_000 + b"\n"
                     + b"[" * 300 + b"]" * 300 + b"\n" + json.dumps(second).encode() + b"\n")
    results = list(import_results("nebius-swe-agent", [path], registry=load_registry()))
    assert [str(r) for r in results if isinstance(r, ImportRefusal)] == [
        f"{path}:2: (record): nested deeper than 256 levels", f"{path}:3: (record): nested deeper than 256 levels"]
    assert [r.task_id for r in results if isinstance(r, Trajectory)] == [
        first["instance_id"].rsplit("_", 1)[0], second["instance_id"].rsplit("_", 1)[0]]


@pytest.mark.parametrize(("value", "message"), [
    (float("nan"), "metadata.model_stats.tokens_sent: nan is not a finite number (JSON has no NaN or Infinity)"),
    (float("-inf"), "metadata.model_stats.tokens_sent: -inf is not a finite number (JSON has no NaN or Infinity)"),
    (2**64, "metadata.model_stats.tokens_sent: the integer 18446744073709551616 does not fit in 64 bits"),
])
def test_a_number_the_library_cannot_read_back_is_refused_naming_its_field(
        tmp_path: Path, value: float, message: str) -> None:
    """A .traj whose ``model_stats`` held ``NaN`` imported, and ``sediment library import``
    then died on it (orjson reads no NaN); an integer beyond 64 bits was read back from the
    library as a float. Both are now one refusal naming the field; the other file imports."""
    source = require_path(FIXTURES / "sweagent" / "pydicom__pydicom-1458.traj", "the shared trajectory fixture")
    doc = parse_json(source.read_bytes())
    doc["info"]["model_stats"]["tokens_sent"] = value
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a__b-1.traj").write_text(json.dumps(doc), encoding="ascii")
    shutil.copy(source, folder / "z__z-2.traj")
    results = list(import_results("swe-agent-traj", [folder], registry=load_registry()))
    assert [str(r) for r in results if isinstance(r, ImportRefusal)] == [f"{folder / 'a__b-1.traj'}:1: {message}"]
    assert [r.task_id for r in results if isinstance(r, Trajectory)] == ["z__z-2"]
    library = tmp_path / "library"
    problems: list[str] = []
    records = list(records_for("swe-agent-traj", [folder], problems))
    Library(library).import_records(records, prevalidated=True)
    assert [r["task_id"] for r in Library(library).records()] == ["z__z-2"] and len(problems) == 1


def _with_nan() -> bytes:
    record = {**synthetic.record(3, 2), "metadata": {"x": float("nan")}}
    return json.dumps({**record, "trajectory_id": content_id(record)}).encode()


@pytest.mark.parametrize("line", [_with_nan(), b"[" * 100_000, b"\xff{}"])
def test_canonical_lines_that_broke_the_library_import(tmp_path: Path, line: bytes) -> None:
    """A canonical line nested 100,000 deep raised RecursionError out of ``library import``,
    one holding NaN was imported and then broke the library's own reader; every refusal of a
    canonical line names a field (``(record)`` for the whole line)."""
    record = synthetic.record(3, 1)
    path = tmp_path / "records.jsonl"
    path.write_bytes(line + b"\n" + to_json(from_plain(record)).encode() + b"\n")
    problems: list[str] = []
    imported = list(records_for("canonical-jsonl", [path], problems))
    assert [r.trajectory_id for r in imported] == [record["trajectory_id"]]
    [problem] = problems
    assert problem.startswith(f"{path}:1: ") and "\n" not in problem
    field, _, message = problem.removeprefix(f"{path}:1: ").partition(": ")
    assert field in ("(record)", "metadata.x") and message, problem


@pytest.mark.parametrize("choices", [[{"message": ["not", "an", "object"]}], 7, [{"message": {"tool_calls": 3}}]])
def test_an_openhands_model_response_of_another_shape_is_not_a_traceback(tmp_path: Path, choices: Any) -> None:
    """A ``model_response`` whose choice's ``message`` was a list raised AttributeError (and
    ``choices: 7`` TypeError) out of the importer; the recorded response is optional evidence
    of the exact arguments text, so the action's own ``args`` stand in and the row imports."""
    source = require_path(FIXTURES / "openhands" / "multi_swe_bench_output.jsonl", "the shared trajectory fixture")
    row = parse_json(next(iter(read_units(source))).data)
    index, item = next((i, h) for i, h in enumerate(row["history"])
                       if isinstance(h.get("tool_call_metadata"), dict) and "model_response" in h["tool_call_metadata"])
    item = {**item, "tool_call_metadata": {**item["tool_call_metadata"],
                                           "model_response": {"choices": choices}}}
    row = {**row, "history": [*row["history"][:index], item, *row["history"][index + 1:]]}
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="ascii")
    [record] = list(import_results("openhands", [path], registry=load_registry()))
    assert isinstance(record, Trajectory)
    [call] = record.events[index].tool_calls
    assert call.arguments == {k: v for k, v in item["args"].items() if k != "thought"}


def test_an_empty_array_traj_is_refused_not_silently_empty(tmp_path: Path) -> None:
    """A ``.traj`` holding ``[]`` gave no record and no refusal: the file vanished silently."""
    source = require_path(FIXTURES / "sweagent" / "pydicom__pydicom-1458.traj", "the shared trajectory fixture")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a__b-1.traj").write_text(" [ ]\n", encoding="ascii")
    shutil.copy(source, folder / "z__z-2.traj")
    results = list(import_results("swe-agent-traj", [folder], registry=load_registry()))
    assert [str(r) for r in results if isinstance(r, ImportRefusal)] == [
        f"{folder / 'a__b-1.traj'}:1: (file): holds no trajectory (an empty JSON array)"]
    assert [r.task_id for r in results if isinstance(r, Trajectory)] == ["z__z-2"]
