"""Fuzzing the trajectory importers and the library import with mutated real records (hypothesis).

Seeds are real records: the shared public samples (``<repository root>/../shared/fixtures/
trajectories``: SWE-agent ``.traj`` files, SWE-Gym and nebius rows, OpenHands evaluation,
resolver and runtime output), the ATIF documents of ``fixtures/atif`` and the canonical records
the importers make of the samples. Each example writes one input of several records, some
mutated as ``test_fuzz_ingest`` mutates them (values, types, keys, duplicate keys, nesting,
numbers JSON cannot hold in a double, broken bytes and lines), between intact ones, imports it
as the command does, and asserts for every record:

- nothing raises (a traceback is a bug);
- a record (a JSON Lines line, an array element, a whole document) gives exactly one result:
  a canonical record whose ``raw_record`` is the record's bytes, that survives its own text
  (``from_json(to_json(r)) == r``) and that the library can read back, or one refusal naming the
  file, the record's line and a field, in one line of text;
- a record's result is the one it gets imported alone: its neighbours change nothing (but its
  locator and the file's digest), and an intact record is always imported;
- ``sediment trajectory import`` writes exactly those records, prints exactly those refusals and
  exits 8 when there is one; ``sediment library import canonical-jsonl`` stores each accepted
  canonical line exactly and names each refused one in one line, keeping the others.

``SEDIMENT_FUZZ_EXAMPLES`` sets the examples per test (default 25, a few seconds each).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from sediment.cli.console import visible
from sediment.host.registry import PluginRegistry, load_registry
from sediment.importing.run import import_results
from sediment.testing import require_path
from sediment.trajectory import Trajectory, content_id, from_json, to_json
from sediment.trajectory.atif import write_atif
from sediment.trajectory.library import Library
from sediment.trajectory.sources import ImportRefusal, parse_json, read_units

sys.path.insert(0, str(Path(__file__).parent))
from test_fuzz_ingest import mutate, render, text_mutation  # the shared mutations

HERE = Path(__file__).parent
SHARED = HERE.parent.parent / "shared" / "fixtures" / "trajectories"
EXAMPLES = int(os.environ.get("SEDIMENT_FUZZ_EXAMPLES", "25"))
#: Shrinking a failure of big records can take many minutes: ``SEDIMENT_FUZZ_SHRINK=0`` reports it as found.
PHASES = [p for p in Phase if p is not Phase.shrink or os.environ.get("SEDIMENT_FUZZ_SHRINK", "1") != "0"]
#: Examples are the same on every run (CI), unless ``SEDIMENT_FUZZ_RANDOM=1`` explores new ones.
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=30), database=None, phases=PHASES,
                derandomize=os.environ.get("SEDIMENT_FUZZ_RANDOM") != "1",
                print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                        HealthCheck.function_scoped_fixture])


def shared(relative: str) -> Path:
    return require_path(SHARED / relative, "the shared trajectory fixture",
                        hint="the public samples beside the repository, see its SOURCES.md")


_REGISTRY: list[PluginRegistry] = []


def registry() -> PluginRegistry:
    if not _REGISTRY:
        _REGISTRY.append(load_registry())
    return _REGISTRY[0]


# --- seeds ---------------------------------------------------------------------------------

#: Formats whose files hold many records (JSON Lines, or a top-level array), and their samples.
ROW_SEEDS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "nebius-swe-agent": (["nebius/SWE-agent-trajectories.sample_raw.json"], ("jsonl", "array")),
    "swe-gym-sampled": (["swe-gym/openhands_sampled_trajectories.sample_raw.json"], ("jsonl", "array")),
    "openhands": (["openhands/multi_swe_bench_output.jsonl", "openhands/resolver_mock_output.jsonl"], ("jsonl",)),
    "atif-v1": ([], ("jsonl", "array")),
}
#: Formats whose files are one document each, and their samples.
DOCUMENT_SEEDS: dict[str, list[str]] = {
    "swe-agent-traj": ["sweagent/pydicom__pydicom-1458.traj",
                       "sweagent/marshmallow-code__marshmallow-1867.function_calling_replace.traj",
                       "sweagent/swe-agent__test-repo-i1.traj", "sweagent/ctf_misc_networking_1.traj"],
    "openhands": ["openhands/runtime_trajs_basic.json"],
}
_ROWS: dict[str, list[Any]] = {}
MAX_ROWS = 3  # per sample file: enough variety, small enough to import many times


def _values(path: Path) -> list[Any]:
    return [parse_json(unit.data) for unit in read_units(path)]


def row_seeds(fmt: str) -> list[Any]:
    if fmt not in _ROWS:
        if fmt == "atif-v1":
            rows = _values(HERE / "fixtures" / "atif" / "adp-array.json")
            with tempfile.TemporaryDirectory() as work:  # the ATIF the export writes, of real records
                for index, record in enumerate(import_results("nebius-swe-agent", [shared(ROW_SEEDS[
                        "nebius-swe-agent"][0][0])], registry=registry())):
                    if isinstance(record, Trajectory) and index < MAX_ROWS:
                        write_atif(record, Path(work) / f"{index}.json")
                        rows.append(json.loads((Path(work) / f"{index}.json").read_text(encoding="utf-8")))
        else:
            rows = [row for name in ROW_SEEDS[fmt][0] for row in _values(shared(name))[:MAX_ROWS]]
        _ROWS[fmt] = [row for row in rows if _imports(fmt, row)]  # a sample may hold a bad record on purpose
    return _ROWS[fmt]


def _imports(fmt: str, row: Any) -> bool:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "row.jsonl"
        path.write_bytes(render(row).encode("utf-8", "surrogatepass") + b"\n")
        return all(isinstance(r, Trajectory) for r in import_results(fmt, [path], registry=registry()))


# --- what one record must give ---------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One record as written: its first line, locator and exact bytes."""

    line: int
    locator: str
    data: bytes


def normal(result: Trajectory | ImportRefusal) -> Any:
    """A result without what depends on its place (locator, line, the file's digest and name)."""
    if isinstance(result, ImportRefusal):
        return ("refused", result.field, result.message.replace(result.path.name, "FILE"))
    body = json.loads(to_json(result))
    body.pop("trajectory_id")
    body["source"].pop("locator")
    body["source"].pop("file_sha256")
    return ("record", body)


def check_record(record: Trajectory, unit: Unit) -> None:
    """A record is its unit, exactly, and survives its own canonical text and the library's reader."""
    assert record.source.locator == unit.locator
    redacted = any(t.name == "redact-secrets" for t in record.transformations)
    if not redacted:
        assert record.raw_record.data() == unit.data, "raw_record is not the record as sent"
    text = to_json(record)
    assert from_json(text) == record, "the record does not survive its canonical text"
    assert orjson.loads(text) == json.loads(text), "the library cannot read the record's canonical text"
    assert text.isascii()


def check_refusal(refusal: ImportRefusal, path: Path, unit: Unit) -> None:
    line = str(refusal)
    assert refusal.path == path and refusal.line == unit.line, (line, unit.line)
    assert refusal.field.strip() and refusal.message.strip(), line
    assert "\n" not in line and "\r" not in line, line


def import_alone(fmt: str, unit: Unit, kind: str, work: Path, name: str) -> Trajectory | ImportRefusal:
    """The result of ``unit`` in a file of its own (same kind and name)."""
    directory = work / f"alone-{unit.line}-{len(unit.data)}"
    directory.mkdir()
    path = directory / name
    path.write_bytes(unit.data + b"\n" if kind == "jsonl" else b"[" + unit.data + b"]\n" if kind == "array"
                     else unit.data)
    results = list(import_results(fmt, [path], registry=registry()))
    assert len(results) == 1, [str(r) for r in results]
    return results[0]


# --- the CLI, in process -----------------------------------------------------------------------


def run_cli(*args: str) -> tuple[int, list[str]]:
    """``sediment ARGS`` in this process: its exit code and its stderr lines."""
    from sediment.cli import main

    stderr = io.StringIO()
    saved = sys.argv
    sys.argv = ["sediment", *args]
    code = 0
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = saved
    return code, stderr.getvalue().splitlines()


def check_command(fmt: str, paths: list[Path], results: list[Trajectory | ImportRefusal], work: Path) -> None:
    """``sediment trajectory import`` writes the records and prints the refusals of ``results``."""
    out = work / "out.jsonl"
    code, lines = run_cli("trajectory", "import", fmt, *map(str, paths), "--out", str(out))
    refusals = [r for r in results if isinstance(r, ImportRefusal)]
    records = [r for r in results if isinstance(r, Trajectory)]
    assert code == (8 if refusals else 0), lines
    assert [line for line in lines if line.startswith("error: ")][:len(refusals)] == \
        [f"error: {visible(str(r))}" for r in refusals], lines
    assert not any("Traceback" in line for line in lines), lines
    assert out.read_text(encoding="ascii").splitlines() == [to_json(r) for r in records]


# --- many records in one file ----------------------------------------------------------------


def build_rows(data: st.DataObject, seeds: list[Any], kind: str) -> tuple[bytes, list[Unit], set[int]]:
    """A file of seeds, some mutated, an intact first one: its bytes, units and mutated units."""
    count = data.draw(st.integers(2, 4), label="records")
    texts: list[bytes] = []
    mutated: set[int] = set()
    for index in range(count):
        record = seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]
        changes = data.draw(st.integers(0, 3), label="mutations") if index else 0
        for _ in range(changes):
            record = mutate(data, record)
        text = render(record).encode("utf-8", "surrogatepass")
        if kind == "jsonl" and index and data.draw(st.integers(0, 4), label="damage") == 0:
            text = text_mutation(data, text)
            changes += 1
        if changes:
            mutated.add(index)
        texts.append(text)
    if kind == "jsonl":
        content = b"\n".join(texts) + b"\n"
        units = [Unit(number, f"input.jsonl:{number}", line.rstrip(b"\r"))
                 for number, line in enumerate(content.split(b"\n"), start=1) if line.strip(b" \t\r")]
        return content, units, mutated
    content = b"[\n" + b",\n".join(texts) + b"\n]\n"
    units = [Unit(index + 2, f"input.json#{index}", text) for index, text in enumerate(texts)]
    return content, units, mutated


@pytest.mark.parametrize("fmt", sorted(ROW_SEEDS))
@FUZZ
@given(data=st.data())
def test_fuzz_import_rows(fmt: str, data: st.DataObject) -> None:
    """Rows of a JSON Lines file or a JSON array, some mutated: each row is one record, exactly
    as imported alone, or one refusal naming file, line and field; the CLI agrees."""
    seeds = row_seeds(fmt)
    kind = data.draw(st.sampled_from(ROW_SEEDS[fmt][1]), label="container")
    content, units, mutated = build_rows(data, seeds, kind)
    with tempfile.TemporaryDirectory(prefix="sediment-fuzz-") as tmp:
        work = Path(tmp)
        name = "input.jsonl" if kind == "jsonl" else "input.json"
        path = work / name
        path.write_bytes(content)
        results = list(import_results(fmt, [path], registry=registry()))
        if kind == "array" and any(r.field == "(file)" for r in results if isinstance(r, ImportRefusal)):
            event("array: cannot be delimited")  # a mutation broke the array's own brackets
            return
        assert len(results) == len(units), ([str(r) for r in results], [u.line for u in units])
        for index, (result, unit) in enumerate(zip(results, units, strict=True)):
            if isinstance(result, Trajectory):
                check_record(result, unit)
                event("row: imported")
            else:
                check_refusal(result, path, unit)
                event("row: refused")
            if kind == "array" and index not in mutated:
                assert isinstance(result, Trajectory), f"an intact row was refused: {result}"
            alone = import_alone(fmt, unit, kind, work, name)
            if isinstance(alone, ImportRefusal) and alone.field == "(file)" and \
                    alone.message.startswith("not JSON Lines"):
                # alone, the damaged line is a file with no JSON line at all, refused whole as another
                # format (docs/cli.md, Mistakes); among records it is refused as one of them
                assert isinstance(result, ImportRefusal), "a row refused alone was imported among others"
                event("row: refused alone as another format")
            else:
                assert normal(result) == normal(alone), "a row's result depends on its neighbours"
        check_command(fmt, [path], results, work)


def document_seeds(fmt: str) -> list[tuple[str, bytes]]:
    return [(Path(name).name, shared(name).read_bytes()) for name in DOCUMENT_SEEDS[fmt]]


@pytest.mark.parametrize("fmt", sorted(DOCUMENT_SEEDS))
@FUZZ
@given(data=st.data())
def test_fuzz_import_documents(fmt: str, data: st.DataObject) -> None:
    """A directory of one-document files, some mutated: each file gives its records (or
    refusals naming it), exactly as it does alone; the intact files are all imported."""
    seeds = document_seeds(fmt)
    count = data.draw(st.integers(2, 3), label="files")
    with tempfile.TemporaryDirectory(prefix="sediment-fuzz-") as tmp:
        work = Path(tmp)
        folder = work / "in"
        folder.mkdir()
        files: list[tuple[Path, bool]] = []
        for index in range(count):
            name, text = seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]
            mutated = bool(index) and data.draw(st.booleans(), label="mutate")
            if mutated:
                value = parse_json(text)
                for _ in range(data.draw(st.integers(1, 3), label="mutations")):
                    value = mutate(data, value)
                text = render(value).encode("utf-8", "surrogatepass")
                if data.draw(st.integers(0, 4), label="damage") == 0:
                    text = text_mutation(data, text)
            path = folder / f"{index}-{name}"
            path.write_bytes(text)
            files.append((path, mutated))
        results = list(import_results(fmt, [folder], registry=registry()))
        by_file: dict[Path, list[Trajectory | ImportRefusal]] = {}
        for result in results:
            where = result.path if isinstance(result, ImportRefusal) else folder / result.source.locator.split(
                "#")[0].split(":")[0]
            by_file.setdefault(where, []).append(result)
        assert set(by_file) <= {path for path, _ in files}
        for path, mutated in files:
            own = by_file.get(path, [])
            alone_dir = work / f"alone-{path.name}"
            alone_dir.mkdir()
            shutil.copy(path, alone_dir / path.name)
            alone = list(import_results(fmt, [alone_dir / path.name], registry=registry()))
            assert [normal(r) for r in own] == [normal(r) for r in alone], "a file's result depends on another"
            assert own, f"{path.name} gave nothing"
            if not mutated:
                assert all(isinstance(r, Trajectory) for r in own), [str(r) for r in own]
            units = {unit.locator: unit for unit in _units_or_none(path)} if fmt != "openhands" else {
                path.name: Unit(1, path.name, path.read_bytes())}  # an OpenHands .json is one document
            for result in own:
                if isinstance(result, Trajectory):
                    check_record(result, units[result.source.locator])
                    event("document: imported")
                else:
                    assert result.path == path and "\n" not in str(result) and result.field.strip()
                    event("document: refused")
        check_command(fmt, [folder], results, work)


def _units_or_none(path: Path) -> Iterator[Unit]:
    with contextlib.suppress(ValueError):
        for unit in read_units(path):
            yield Unit(unit.line, unit.locator, unit.data)


# --- the library: canonical records ----------------------------------------------------------

_CANONICAL: list[Any] = []


def canonical_seeds() -> list[Any]:
    """Canonical records of real samples, as decoded JSON objects."""
    if not _CANONICAL:
        for fmt, name in (("nebius-swe-agent", "nebius/SWE-agent-trajectories.sample_raw.json"),
                          ("openhands", "openhands/resolver_mock_output.jsonl")):
            records = [r for r in import_results(fmt, [shared(name)], registry=registry()) if isinstance(r, Trajectory)]
            _CANONICAL.extend(json.loads(to_json(r)) for r in records[:MAX_ROWS])
        _CANONICAL.extend(json.loads(to_json(r)) for r in import_results(
            "atif-v1", [HERE / "fixtures" / "atif" / "adp-array.json"], registry=registry())
            if isinstance(r, Trajectory))
    return _CANONICAL


def readdressed(value: Any) -> Any:
    """``value`` with its ``trajectory_id`` the content address of the rest (so a mutated record
    can still be valid), when it is an object whose id can be computed."""
    if not isinstance(value, dict):
        return value
    try:
        return {**value, "trajectory_id": content_id(value)}
    except (TypeError, ValueError, RecursionError):
        return value


@FUZZ
@given(data=st.data())
def test_fuzz_library_import_canonical(data: st.DataObject) -> None:
    """``sediment library import canonical-jsonl``: each line is stored exactly (the library's
    record is the line's object) or refused in one line naming file, line and field; every
    other line is imported."""
    seeds = canonical_seeds()
    count = data.draw(st.integers(2, 5), label="records")
    texts: list[bytes] = []
    for index in range(count):
        record = seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]
        if index:
            for _ in range(data.draw(st.integers(0, 3), label="mutations")):
                record = mutate(data, record)
            if data.draw(st.booleans(), label="readdress"):
                record = readdressed(record)
        text = render(record).encode("utf-8", "surrogatepass")
        if index and data.draw(st.integers(0, 5), label="damage") == 0:
            text = text_mutation(data, text)
        texts.append(text)
    content = b"\n".join(texts) + b"\n"
    with tempfile.TemporaryDirectory(prefix="sediment-fuzz-") as tmp:
        work = Path(tmp)
        path = work / "records.jsonl"
        path.write_bytes(content)
        expected: dict[str, Any] = {}
        refused: list[int] = []
        for number, line in enumerate(content.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                record = from_json(line.rstrip(b"\r"))
            except ValueError:
                refused.append(number)
                event("line: refused")
                continue
            event("line: imported")
            expected.setdefault(record.trajectory_id, json.loads(to_json(record)))
            assert json.loads(to_json(record)) == _reference(line), "a line was not stored as sent"
        library = work / "library"
        code, lines = run_cli("library", "import", "canonical-jsonl", str(path), "--library", str(library))
        assert not any("Traceback" in line for line in lines), lines
        assert code == (8 if refused else 0), lines
        problems = [line.removeprefix("warning: ") for line in lines if line.startswith("warning: ")]
        assert len(problems) == len(refused), (problems, refused)
        for problem, number in zip(problems, refused, strict=True):
            where, _, rest = problem.partition(f"{path}:{number}: ")
            assert not where and rest, problem
            field, _, message = rest.partition(": ")
            assert field and " " not in field and message, problem
        stored = {r["trajectory_id"]: r for r in Library(library).records()} if expected else {}
        assert stored == expected, "a good line was lost, or a refused one stored"


def _reference(line: bytes) -> Any:
    """The line's object as the standard parser reads it."""
    return json.loads(line.decode("utf-8"))
