"""Hostile input: every importer, fed fixture records with values swapped for values of other
types, yields only validated records or one-line refusals — never a traceback."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from sediment.host.registry import load_registry
from sediment.importing.run import import_records, import_results
from sediment.testing import require_path
from sediment.trajectory import Trajectory, from_json, to_json
from sediment.trajectory.atif import write_atif
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
