"""``schema validate`` over a whole export tree: canonical rows by their own schema_id,
evidence sidecars by theirs, a profile's data files by the profile's native row schema (named
through the directory's compatibility.json); ``--json`` lists problems with file, line and path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sediment.demo import run_demo
from sediment.host.registry import load_registry
from sediment.validation import row_schema_id

TRAINING_ROWS = "https://sediment.so/schemas/training-rows/"
#: Every built-in profile and the schema of its data rows (docs/profiles.md).
NATIVE_SCHEMAS = {
    "swe-bench-tasks-v2": "swe-bench-instance/v2",
    "harbor-tasks-v1": "harbor-task-index/v1",
    "nemo-gym-swebench-tasks-v1": "nemo-gym-swebench-task/v1",
    "hf-chat-messages-v1": "hf-chat-messages-row/v1",
    "hf-chat-prompts-v1": "hf-chat-prompt-row/v1",
    "hf-trl-sft-v3": "hf-trl-sft-row/v3",
    "hf-trl-dpo-v4": "hf-trl-dpo-row/v4",
    "fireworks-sft-v2": "fireworks-sft-row/v2",
    "fireworks-dpo-v3": "fireworks-dpo-row/v3",
    "verifiers-tasks-v1": "verifiers-task/v1",
    "nemo-gym-rollouts-v2": "nemo-gym-rollout-row/v2",
}


def sediment(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=120, check=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tree") / "demo"
    run_demo(out)
    return out


def _tree(demo: Path) -> list[str]:
    return sorted(str(p) for p in demo.rglob("*.jsonl") if p.parts[len(demo.parts)] in {"exports", "profiles"})


def test_the_whole_demo_export_tree_validates(demo: Path) -> None:
    files = _tree(demo)
    assert len(files) > 40
    result = sediment("schema", "validate", "--json", *files)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["problem_count"] == 0 and report["problems"] == []
    assert report["files"] == len(files) and report["rows"] > 0
    swe = {path: native for path, native in report["native"].items() if "/swe-bench-tasks-v2/" in path}
    assert sorted(Path(p).name for p in swe) == ["data.train.jsonl"]
    assert {n["schema_id"] for n in swe.values()} == {
        "https://sediment.so/schemas/training-rows/swe-bench-instance/v2.json"}
    # profiles that declare no native schema are listed, not failed
    assert all(u["reason"].endswith("declares no schema for its data rows") for u in report["unchecked"])
    # and every profile of the demo declares one: no data file goes unchecked
    assert report["unchecked"] == []
    profiles = {p.name for p in (demo / "profiles").iterdir() if any(p.glob("data*.jsonl"))}
    assert profiles == set(NATIVE_SCHEMAS) - {"fireworks-dpo-v3"}  # the demo's DPO pairs call tools: refused
    data_files = [f for f in files if "/profiles/" in f and Path(f).name.startswith("data")]
    assert sorted(report["native"]) == data_files
    for path in data_files:
        profile = Path(path).parent.name
        assert report["native"][path] == {"profile": profile, "schema_id": f"{TRAINING_ROWS}{NATIVE_SCHEMAS[profile]}.json"}
    assert not any("/swe-bench-tasks-v2/" in u["file"] or "/harbor-tasks-v1/" in u["file"] for u in report["unchecked"])
    for profile, schema in (("harbor-tasks-v1", "harbor-task-index/v1"),
                            ("nemo-gym-swebench-tasks-v1", "nemo-gym-swebench-task/v1")):
        declared = [native for path, native in report["native"].items() if f"/{profile}/" in path]
        assert declared and {n["schema_id"] for n in declared} == {
            f"https://sediment.so/schemas/training-rows/{schema}.json"}, profile
        assert not any(f"/{profile}/" in u["file"] for u in report["unchecked"])
    human = sediment("schema", "validate", *files)
    assert human.returncode == 0 and f"all rows valid ({len(files)} file(s))" in human.stderr


def test_no_data_row_carries_a_schema_id_it_violates(demo: Path) -> None:
    schemas = load_registry().schemas
    for path in (demo / "profiles").glob("*/data*.jsonl"):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            row = json.loads(line)
            if row_schema_id(row) is not None:
                assert schemas.errors(row) == [], f"{path}:{number}"
            # a native row names no canonical schema_id anywhere it keeps evidence, either
            for holder in (row, row.get("metadata"), row.get("sediment")):
                assert not (isinstance(holder, dict) and "schema_id" in holder), f"{path}:{number}"
    rows = [json.loads(line) for line in (demo / "profiles" / "swe-bench-tasks-v2" / "data.train.jsonl").open()]
    assert rows and all("schema_id" not in row["metadata"] and "test_transitions" in row["metadata"] for row in rows)
    compatibility = json.loads((demo / "profiles" / "swe-bench-tasks-v2" / "compatibility.json").read_text())
    assert compatibility["profile"]["native_schema"].endswith("/training-rows/swe-bench-instance/v2.json")


def test_a_broken_native_row_is_one_problem_with_file_line_and_path(demo: Path, tmp_path: Path) -> None:
    profile = tmp_path / "swe-bench-tasks-v2"
    profile.mkdir()
    source = demo / "profiles" / "swe-bench-tasks-v2"
    (profile / "compatibility.json").write_bytes((source / "compatibility.json").read_bytes())
    rows = [json.loads(line) for line in (source / "data.train.jsonl").open()]
    rows[1]["metadata"]["schema_id"] = "https://sediment.so/schemas/training-rows/swe-bench-task/v3.json"
    del rows[1]["FAIL_TO_PASS"]
    data = profile / "data.train.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = sediment("schema", "validate", "--json", str(data))
    assert result.returncode == 6
    report = json.loads(result.stdout)
    assert report["problem_count"] == 3
    assert {(p["file"], p["line"], p["path"]) for p in report["problems"]} == {
        (str(data), 2, ""), (str(data), 2, "metadata")}
    assert any(p["message"] == "'FAIL_TO_PASS' is a required property" for p in report["problems"])
    assert any("names schema_id" in p["message"] for p in report["problems"])
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: 3 schema problem(s)")


def test_a_file_without_compatibility_json_is_judged_by_its_own_schema_id(tmp_path: Path) -> None:
    bad = tmp_path / "data.train.jsonl"
    bad.write_text("{}\nnot json\n")
    result = sediment("schema", "validate", "--json", str(bad))
    assert result.returncode == 6
    problems = json.loads(result.stdout)["problems"]
    assert [(p["line"], p["path"]) for p in problems] == [(1, None), (2, None)]
    assert problems[0]["message"] == "row names no schema_id" and problems[1]["message"].startswith("not JSON")


@pytest.mark.parametrize("compatibility", [b"", b"not json", b"[]", b'{"profile": {"id": 3}, "files": {}}',
                                           b'{"profile": {"id": "x"}, "files": []}', b"\xff\xfe"])
def test_a_broken_compatibility_json_leaves_rows_to_their_own_schema_id(tmp_path: Path, compatibility: bytes) -> None:
    (tmp_path / "compatibility.json").write_bytes(compatibility)
    data = tmp_path / "data.train.jsonl"
    data.write_text("{}\n")
    result = sediment("schema", "validate", "--json", str(data))
    assert result.returncode == 6 and "Traceback" not in result.stderr
    assert [p["message"] for p in json.loads(result.stdout)["problems"]] == ["row names no schema_id"]


def test_a_profile_without_a_native_schema_is_listed_not_failed(demo: Path, tmp_path: Path) -> None:
    # every built-in profile declares one: a third-party profile that does not (here one not installed)
    source = demo / "profiles" / "hf-trl-sft-v3"
    compatibility = json.loads((source / "compatibility.json").read_text())
    compatibility["profile"] = {key: value for key, value in compatibility["profile"].items() if key != "native_schema"}
    compatibility["profile"]["id"] = "acme-chat-v1"
    (tmp_path / "compatibility.json").write_text(json.dumps(compatibility))
    data = tmp_path / "data.train.jsonl"
    data.write_bytes((source / "data.train.jsonl").read_bytes())
    result = sediment("schema", "validate", "--json", str(data))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["unchecked"] == [{"file": str(data), "profile": "acme-chat-v1",
                                    "reason": "profile acme-chat-v1 declares no schema for its data rows"}]
    assert report["problems"] == [] and report["native"] == {}
    unknown = json.loads((demo / "profiles" / "swe-bench-tasks-v2" / "compatibility.json").read_text())
    unknown["profile"]["native_schema"] = "https://example.com/gone.json"
    copy = demo.parent / "copy"
    copy.mkdir(exist_ok=True)
    (copy / "compatibility.json").write_text(json.dumps(unknown))
    (copy / "data.train.jsonl").write_bytes((demo / "profiles" / "swe-bench-tasks-v2" / "data.train.jsonl").read_bytes())
    gone = sediment("schema", "validate", str(copy / "data.train.jsonl"))
    assert gone.returncode == 6 and "unknown schema_id https://example.com/gone.json" in gone.stderr


#: One wrong value planted in the last row of each profile's data.train.jsonl: the JSON pointer
#: of the one problem it must be reported as, and the change.
PLANTED: dict[str, tuple[str, Callable[[dict[str, Any]], object]]] = {
    "swe-bench-tasks-v2": ("", lambda r: r.pop("FAIL_TO_PASS")),
    "harbor-tasks-v1": ("repo", lambda r: r.update(repo="not a repository")),
    "nemo-gym-swebench-tasks-v1": ("agent_ref", lambda r: r.update(agent_ref={})),
    "hf-chat-messages-v1": ("messages/0/role", lambda r: r["messages"][0].update(role="robot")),
    "hf-chat-prompts-v1": ("prompt/0/content", lambda r: r["prompt"][0].update(content=" \n")),
    "hf-trl-sft-v3": ("completion/0", lambda r: r["completion"][0].update(thinking="not renamed")),
    "hf-trl-dpo-v4": ("chosen", lambda r: r.update(chosen=[])),
    "fireworks-sft-v2": ("messages/1", lambda r: r["messages"][1].update(weight=1)),
    "verifiers-tasks-v1": ("sediment", lambda r: r["sediment"].update(
        schema_id="https://sediment.so/schemas/training-rows/nemo-gym-rollout/v4.json")),
    "nemo-gym-rollouts-v2": ("reward", lambda r: r.update(reward=0.5)),
}


def test_every_profile_with_demo_rows_has_a_planted_problem() -> None:
    assert set(PLANTED) == set(NATIVE_SCHEMAS) - {"fireworks-dpo-v3"}  # that one: sediment_fireworks' tests


@pytest.mark.parametrize("profile", sorted(PLANTED))
def test_a_planted_wrong_row_is_one_problem_naming_file_line_and_path(demo: Path, tmp_path: Path,
                                                                       profile: str) -> None:
    source = demo / "profiles" / profile
    pointer, change = PLANTED[profile]
    (tmp_path / "compatibility.json").write_bytes((source / "compatibility.json").read_bytes())
    rows = [json.loads(line) for line in (source / "data.train.jsonl").open()]
    assert rows
    data = tmp_path / "data.train.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    clean = sediment("schema", "validate", "--json", str(data))
    assert clean.returncode == 0 and json.loads(clean.stdout)["problem_count"] == 0, clean.stdout
    change(rows[-1])
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = sediment("schema", "validate", "--json", str(data))
    assert result.returncode == 6, result.stderr
    report = json.loads(result.stdout)
    assert [(p["file"], p["line"], p["path"]) for p in report["problems"]] == [(str(data), len(rows), pointer)], \
        report["problems"]
    assert report["native"] == {str(data): {"profile": profile,
                                            "schema_id": f"{TRAINING_ROWS}{NATIVE_SCHEMAS[profile]}.json"}}
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: 1 schema problem(s)")
