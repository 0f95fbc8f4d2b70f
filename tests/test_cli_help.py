"""Help and human output that read well: bare groups, summaries without Python reprs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def sediment(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": "acme"}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=120, check=False)


@pytest.mark.parametrize("group", [[], ["mirror"], ["ingest"], ["schema"], ["library"], ["trajectory"]])
def test_a_bare_group_prints_its_help_and_no_empty_error_line(tmp_path: Path, group: list[str]) -> None:
    result = sediment(tmp_path, *group)
    assert result.returncode == 2  # click's no_args_is_help: the help, as a usage error
    assert "Usage:" in result.stdout and "Commands" in result.stdout
    assert "error:" not in result.stderr and result.stderr.strip() == ""


def test_ingest_summary_prints_counts_not_python_reprs(tmp_path: Path) -> None:
    fact = {"fact_type": "nope"}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(fact) + "\n")
    github = tmp_path / "gh.json"
    github.write_text(json.dumps({"zen": "hi", "hook_id": 1}) + "\n")
    result = sediment(tmp_path / "home", "ingest", "github", "--event", "ping", str(github))
    assert "skipped on purpose: unsupported_event:ping: 1" in result.stderr, result.stderr
    assert "{'" not in result.stderr
