"""Exported rows loaded by the real consumer packages (pinned in tests/consumers/requirements.txt,
installed into .venv-consumers by ./run test)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sediment.demo import run_demo
from sediment.testing import require_path

ROOT = Path(__file__).parents[1]
CONSUMER_PYTHON = ROOT / ".venv-consumers" / "swebench" / "bin" / "python"


@pytest.fixture(scope="module")
def consumer_python() -> Path:
    return require_path(CONSUMER_PYTHON, "the consumer venv .venv-consumers/swebench",
                        hint="scripts/consumer-venv swebench builds it")


def test_swe_bench_rows_load_in_swebench_and_datasets(consumer_python: Path, tmp_path: Path) -> None:
    result = run_demo(tmp_path / "demo")
    files = sorted(result["exports"]["swe-bench"]["written"])
    assert files
    environment = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    process = subprocess.run([str(consumer_python), str(ROOT / "tests" / "consumers" / "swebench" / "check_swebench.py"), *files],
                             capture_output=True, text=True, env=environment, timeout=300, check=False)
    assert process.returncode == 0, process.stderr[-3000:]
    reports = [json.loads(line) for line in process.stdout.splitlines()]
    for path, report in zip(files, reports, strict=True):
        rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
        assert report["instance_ids"] == [r["instance_id"] for r in rows]
        assert report["typed_keys"] == ["base_commit", "instance_id", "patch", "problem_statement", "repo"]
        assert report["wrong_types"] == []
        assert report["arrow_columns"] == ["instance_id", "repo", "base_commit", "problem_statement", "patch", "metadata"]
        assert report["arrow_patch_equal"] and report["arrow_problem_equal"] and report["arrow_metadata_equal"]
