"""``--format parquet``: profile data files as Parquet (sediment/export/parquet.py).

The column rules on hand-built rows (native where Arrow reads every value back exactly, JSON
text where it would align structs and insert nulls or merge types), the export path (files,
card, refusals, determinism, modes), and the round trip in the real datasets 5.2.0 of
.venv-consumers/hf: every demo profile's Parquet export reads back as exactly its JSONL rows.
"""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sediment.demo import run_demo
from sediment.errors import ConfigurationError, ProfileError, UsageError
from sediment.export.parquet import parquet_json_columns, write_parquet
from sediment.export.pipeline import export_objective
from sediment.file_modes import published_mode
from sediment.testing import run_consumer
from sediment.testing.bundles import demo_evidence

pa = pytest.importorskip("pyarrow")  # the parquet extra; ./run installs it, so CI never skips this
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "tests" / "consumers" / "hf" / "check_parquet.py"
#: Each demo profile's export: (objective, target or None, profile).
PROFILES = [("rlvr", "sediment", "hf-chat-messages-v1"), ("rlvr", "sediment", "hf-chat-prompts-v1"),
            ("rlvr", "nemo-gym", "nemo-gym-rollouts-v2"), ("rlvr", "nemo-gym", "verifiers-tasks-v1"),
            ("rlvr", "swe-bench", "nemo-gym-swebench-tasks-v1"), ("rlvr", "swe-bench", "swe-bench-tasks-v2"),
            ("sft", None, "hf-trl-sft-v3"), ("sft", None, "fireworks-sft-v2"), ("dpo", None, "hf-trl-dpo-v4")]

TRAIN = [
    {"n": 1, "mixed": 1, "flag": True, "messages": [{"role": "user", "content": "hi"}],
     "same": [{"a": 1, "b": "x"}], "when": "2026-03-02T09:00:00Z", "order": {"a": 1, "b": 2}, "later": [],
     "maybe": None},
    {"n": 2, "mixed": 2.5, "flag": False, "messages": [{"role": "assistant", "tool_calls": [{"id": "t"}]}],
     "same": [{"a": 2, "b": "y"}, {"a": 3, "b": "z"}], "when": "2026-03-03", "order": {"b": 2, "a": 1},
     "later": [], "maybe": "text"},
]
EVAL = [
    {"n": 3, "mixed": 3, "flag": True, "messages": [], "same": [], "when": "née 2026‑03‑03",
     "order": {"a": 0, "b": 0}, "later": [{"k": "v"}], "maybe": None},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="ascii")
    return path


def read_back(path: Path) -> list[dict[str, Any]]:
    """The rows of a Parquet file with its JSON text columns decoded."""
    table = pq.read_table(path)
    columns = set(parquet_json_columns(path))
    return [{k: json.loads(v) if k in columns else v for k, v in row.items()} for row in table.to_pylist()]


def exact(rows: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r, ensure_ascii=False) for r in rows]


def test_columns_are_native_when_they_read_back_exactly_and_json_text_otherwise(tmp_path: Path) -> None:
    train, evaluation = write_jsonl(tmp_path / "t.jsonl", TRAIN), write_jsonl(tmp_path / "e.jsonl", EVAL)
    json_columns = write_parquet([(train, tmp_path / "t.parquet"), (evaluation, tmp_path / "e.parquet")])
    # messages: objects with different keys (Arrow would insert null keys); mixed: 1 and 2.5 would
    # both become doubles; order: the same keys in another order
    assert json_columns == ["messages", "mixed", "order"]
    schema = pq.read_schema(tmp_path / "t.parquet")
    assert schema == pq.read_schema(tmp_path / "e.parquet")  # one schema across the splits
    types = {field.name: str(field.type) for field in schema}
    assert types["n"] == "int64" and types["flag"] == "bool" and types["maybe"] == "string"
    assert types["when"] == "string"  # timestamp-like text stays text
    assert types["same"] == "list<element: struct<a: int64, b: string>>"
    assert types["later"] == "list<element: struct<k: string>>"  # [] in train, structs in eval: one type
    assert all(str(schema.field(c).type) == "extension<arrow.json>" for c in json_columns)
    # the same values, types and key order; no null the rows did not hold
    assert exact(read_back(tmp_path / "t.parquet")) == exact(TRAIN)
    assert exact(read_back(tmp_path / "e.parquet")) == exact(EVAL)
    raw = pq.read_table(tmp_path / "t.parquet").column("messages").to_pylist()
    assert raw == [json.dumps(r["messages"], separators=(",", ":")) for r in TRAIN]  # compact JSON text


def test_rows_with_different_columns_refuse_the_file(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "d.jsonl", [{"a": 1, "b": 2}, {"a": 1}])
    with pytest.raises(ProfileError, match=r"^d\.jsonl: Parquet needs every row to have the same columns; a row "
                                           r"has a where the first had a, b; nothing was published$"):
        write_parquet([(source, tmp_path / "d.parquet")])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo"
    run_demo(out)
    return out


def parquet_export(demo: Path, out: Path, spec: tuple[str, str | None, str], shuffle: int | None = None,
                   data_format: str = "parquet") -> dict[str, Any]:
    objective, target, profile = spec
    evidence, settings = demo_evidence(demo, shuffle=shuffle)
    return export_objective(evidence, out, objective=objective, target=target, profile=profile,
                            settings=settings, data_format=data_format)


def test_a_parquet_export_writes_parquet_data_files_beside_jsonl_evidence(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft"
    summary = parquet_export(demo, out, PROFILES[6])
    assert sorted(p.name for p in out.iterdir()) == [
        ".sediment-sft-target", "README.md", "compatibility.json", "data.eval.parquet", "data.train.parquet",
        "evidence.eval.jsonl", "evidence.train.jsonl"]
    assert summary["written"] == {str(out / "data.train.parquet"): 2, str(out / "data.eval.parquet"): 2,
                                  str(out / "evidence.train.jsonl"): 2, str(out / "evidence.eval.jsonl"): 2}
    files = json.loads((out / "compatibility.json").read_text(encoding="ascii"))["files"]
    assert files["data.train.parquet"]["rows"] == 2
    assert files["data.train.parquet"]["bytes"] == (out / "data.train.parquet").stat().st_size
    # the rows are the JSONL export's, and the evidence sidecar is the same file
    jsonl = demo / "profiles" / "hf-trl-sft-v3"
    for side in ("train", "eval"):
        rows = [json.loads(line) for line in (jsonl / f"data.{side}.jsonl").read_text().splitlines()]
        assert exact(read_back(out / f"data.{side}.parquet")) == exact(rows)
        assert (out / f"evidence.{side}.jsonl").read_bytes() == (jsonl / f"evidence.{side}.jsonl").read_bytes()
    assert stat.S_IMODE((out / "data.train.parquet").stat().st_mode) == published_mode()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "dataset_info" not in card and "path: data.train.parquet" in card  # Parquet stores its schema
    assert "JSON text columns: `completion`, `prompt`." in card and "inserting nulls" in card


@pytest.mark.parametrize("spec", [PROFILES[2], PROFILES[6]], ids=lambda s: s[2])
def test_parquet_exports_are_byte_identical_repeated_and_shuffled(demo: Path, tmp_path: Path,
                                                                  spec: tuple[str, str | None, str]) -> None:
    parquet_export(demo, tmp_path / "first", spec)
    first = {p.name: p.read_bytes() for p in (tmp_path / "first").iterdir() if p.is_file()}
    for seed in (None, 3):
        again = tmp_path / f"again-{seed}"
        parquet_export(demo, again, spec, shuffle=seed)
        assert {p.name: p.read_bytes() for p in again.iterdir() if p.is_file()} == first


def test_format_parquet_refusals(demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match="^--format parquet applies to profile data files: add --profile$"):
        parquet_export(demo, tmp_path / "canonical", ("sft", None, None))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="^unknown data format 'csv'"):
        parquet_export(demo, tmp_path / "csv", PROFILES[6], data_format="csv")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # the extra not installed
    with pytest.raises(ConfigurationError, match=r"needs the parquet extra: pip install 'sediment\[parquet\]'$"):
        parquet_export(demo, tmp_path / "no-extra", PROFILES[6])
    assert not any(tmp_path.iterdir())  # refused before any directory was claimed


def test_every_demo_profile_round_trips_through_datasets(demo: Path, tmp_path: Path,
                                                         consumer_python: Callable[[str], Path]) -> None:
    python = consumer_python("hf")  # skipped when .venv-consumers/hf is absent, failed under CI
    pairs = []
    for spec in PROFILES:
        out = tmp_path / spec[2]
        parquet_export(demo, out, spec)
        pairs.append(f"{demo / 'profiles' / spec[2]}={out}")
    facts = run_consumer(python, CHECK, *pairs, home=tmp_path / "hf")
    for spec, checked in zip(PROFILES, facts, strict=True):
        assert checked["version"] == "5.2.0"
        jsonl = demo / "profiles" / spec[2]
        sides = [s for s in ("train", "eval") if (jsonl / f"data.{s}.jsonl").exists()] or ["train"]
        assert sorted(checked["equal"]) == sorted(sides)
        # the same rows, values and types as the JSONL export, no null added
        assert checked["equal"] == dict.fromkeys(sides, True), (spec, checked)
        json_columns = parquet_json_columns(next((tmp_path / spec[2]).glob("data*.parquet")))
        assert {c for c, f in checked["features"].items() if f.startswith("Json(")} == set(json_columns)
    by_profile = {spec[2]: checked for spec, checked in zip(PROFILES, facts, strict=True)}
    # the TRL SFT rows' messages differ in shape (a text message, a tool call): JSON text; swe-bench's
    # created_at is timestamp-like text and stays a string
    assert by_profile["hf-trl-sft-v3"]["features"]["prompt"] == "Json(decode=True)"
    assert by_profile["swe-bench-tasks-v2"]["features"]["created_at"] == "Value('string')"


def test_cli_format_option(demo: Path, tmp_path: Path) -> None:
    import subprocess

    def sediment(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, check=False)

    assert "--format" in sediment("export", "sft", "--help").stdout
    assert "--format" not in sediment("export", "recovery", "--help").stdout  # no profile adapts its rows
    refused = sediment("export", "sft", "--format", "parquet", "--from", str(demo / "bundle"),
                       "--out", str(tmp_path / "canonical"))
    assert refused.returncode == 2
    assert refused.stderr == "error: --format parquet applies to profile data files: add --profile\n"
    done = sediment("export", "sft", "--profile", "hf-trl-sft-v3", "--format", "parquet", "--from",
                    str(demo / "bundle"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'out' / 'data.train.parquet'} (2 rows)" in done.stderr
