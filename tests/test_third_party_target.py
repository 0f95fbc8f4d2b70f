"""The example third-party target in examples/, registered through the real entry-point path."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from sediment.export.pipeline import export_rlvr_from_rollouts
from sediment.export.registry import load_registry
from sediment.export.verifier_commands import VerifierCommands
from sediment.testing import outcome, rollout

EXAMPLE = Path(__file__).parents[1] / "examples" / "third_party_target"


@pytest.fixture
def installed_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_example_target_is_listed_and_exports(installed_example: None, tmp_path: Path) -> None:
    registry = load_registry()
    assert set(registry.targets) == {"sediment", "swe-bench", "nemo-gym", "verdicts"}
    listed = registry.targets["verdicts"].as_json()
    assert listed["origin"]["distribution"] == "sediment-verdicts"
    assert listed["skip_reasons"]["rollouts"][-1] == "no_verdict"
    sha = "a" * 40
    rollouts = [
        rollout("s1", commits=[sha], outcomes=[outcome("o1", sha, "failed", attempt=1),
                                               outcome("o2", sha, "passed", attempt=2)]),
        rollout("s2"),
    ]
    summary = export_rlvr_from_rollouts(rollouts, None, tmp_path / "out", target="verdicts",
                                        split_enabled=False, registry=registry,
                                        verifier_commands=VerifierCommands.empty())
    assert summary["rollout_rows"] == 1 and summary["rollout_skipped"] == {"no_verdict": 1}
    [row] = [json.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_text().splitlines()]
    assert row == {
        "session_id": "s1", "commit_sha": sha, "verdict": "passed", "reward_source": "resolved_ci_pass",
        "reliability": 0.0, "source_outcome_ids": ["o1", "o2"],
        "schema_id": "https://example.com/schemas/sediment-verdict-row/v1.json",
    }
    assert (tmp_path / "out" / ".sediment-rlvr-target").read_text() == "verdicts\n"
