"""``sediment trajectory``: import to JSON Lines and export to ATIF, with one-line refusals and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sediment.testing import require_path
from sediment.trajectory import from_json

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "trajectories"


def sediment(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, check=False,
                          timeout=300)


def test_import_writes_records_and_refuses_bad_lines_with_exit_8(tmp_path: Path) -> None:
    source = require_path(FIXTURES / "nebius" / "SWE-agent-trajectories.sample_raw.json", "the shared trajectory fixture")
    rows = json.loads(source.read_bytes())
    lines = tmp_path / "rows.jsonl"
    lines.write_text(json.dumps(rows[0]) + "\n{oops\n" + json.dumps(rows[1]) + "\n", encoding="utf-8")
    out = tmp_path / "records.jsonl"
    result = sediment("trajectory", "import", "nebius-swe-agent", str(lines), "--out", str(out))
    assert result.returncode == 8, result.stderr
    assert f"error: {lines}:2: (record): not JSON" in result.stderr
    records = [from_json(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [r.task_key for r in records] == ["swe:tomerfiliba__plumbum-366", "swe:tempoCollaboration__OQuPy-74"]
    again = sediment("trajectory", "import", "nebius-swe-agent", str(lines), "--out", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr
    exported = sediment("trajectory", "export-atif", str(out), "--out", str(tmp_path / "atif"))
    assert exported.returncode == 0, exported.stderr
    assert sorted(p.name for p in (tmp_path / "atif").iterdir()) == [
        "000000.json", "000000.outcome.json", "000001.json", "000001.outcome.json"]


def test_an_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    result = sediment("trajectory", "import", "nope", str(tmp_path), "--out", str(tmp_path / "o.jsonl"))
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: unknown source format 'nope'; installed formats: ")
    assert len(result.stderr.strip().splitlines()) == 1
