"""The example third-party target in examples/, registered through the real entry-point path."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sediment.testing import load_registry, outcome, rollout, run_export

EXAMPLE = Path(__file__).parents[1] / "examples" / "third_party_target"


@pytest.fixture
def installed_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the example discoverable exactly as an installed distribution is: a dist-info
    with its own entry_points.txt on sys.path, and its source importable."""
    site = tmp_path / "site"
    dist = site / "sediment_verdicts-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sediment-verdicts\nVersion: 0.1.0\n")
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    entries = "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["sediment"].items())
    (dist / "entry_points.txt").write_text(f"[sediment]\n{entries}")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(EXAMPLE / "src"))
    monkeypatch.setenv("PYTHONPATH", f"{site}:{EXAMPLE / 'src'}")
    return site


@pytest.mark.sediment_installed_plugins
def test_example_target_is_listed_and_exports(installed_example: Path, tmp_path: Path) -> None:
    registry = load_registry()
    assert {"sediment", "swe-bench", "nemo-gym", "verdicts"} <= set(registry.targets)
    listed = registry.targets["verdicts"].as_json()
    assert listed["origin"]["distribution"] == "sediment-verdicts"
    # it declares only its own reason; the registry composes the core's in front
    assert listed["skip_reasons"]["rollouts"][-3:] == ["non_finite_number", "unrepresentable_unicode", "no_verdict"]
    assert listed["skip_reasons"]["rollouts"][0] == "conflicting_run_identity"
    sha = "a" * 40
    rollouts = [
        rollout("s1", commits=[sha], outcomes=[outcome("o1", sha, "failed", attempt=1),
                                               outcome("o2", sha, "passed", attempt=2)]),
        rollout("s2"),
    ]
    result = run_export(rollouts, tmp_path / "out", target="verdicts", registry=registry)  # rows schema-checked
    assert result.summary["rollout_rows"] == 1 and result.summary["rollout_skipped"] == {"no_verdict": 1}
    assert result.rows["rollouts.jsonl"] == [{
        "session_id": "s1", "commit_sha": sha, "verdict": "passed", "reward_source": "resolved_ci_pass",
        "reliability": 0.0, "source_outcome_ids": ["o1", "o2"],
        "schema_id": "https://example.com/schemas/sediment-verdict-row/v1.json",
    }]
    assert (tmp_path / "out" / ".sediment-rlvr-target").read_text() == "verdicts\n"


@pytest.mark.sediment_installed_plugins
def test_schema_validate_checks_the_example_rows(installed_example: Path, tmp_path: Path) -> None:
    """`sediment schema validate` knows the third party's row schema, and refuses a bad row."""
    good = {"session_id": "s1", "commit_sha": "a" * 40, "verdict": "passed", "reward_source": "resolved_ci_pass",
            "reliability": 1.0, "source_outcome_ids": ["o1"],
            "schema_id": "https://example.com/schemas/sediment-verdict-row/v1.json"}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "verdict": "maybe"}) + "\n")
    result = subprocess.run([sys.executable, "-m", "sediment", "schema", "validate", str(path)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 6, result.stderr
    assert "rows.jsonl:2: verdict: 'maybe' is not one of ['passed', 'failed']" in result.stderr
    assert "rows.jsonl:1" not in result.stderr
