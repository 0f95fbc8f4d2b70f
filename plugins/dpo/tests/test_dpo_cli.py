"""``sediment export dpo`` end to end through the real CLI: from a bundle (parsed values and
bytes equal to the in-process export), the ladder's knobs from the environment and --config,
--set, usage errors, and the output directory failing closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sediment.plugin import Rollout
from sediment.testing import ORG, POLICY, run_objective, snapshot, write_bundle

from .test_dpo_objective import ACCEPT, EVAL, REJECT, TRAIN, member


def sediment(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=120, check=False)


def evidence() -> list[Rollout]:
    """Two buckets: an accept and a reject on one prompt across the split (eval wins); two
    accepts and one reject on another, within train."""
    a, b, c, d, e = TRAIN[0], EVAL[0], TRAIN[1], TRAIN[2], TRAIN[3]
    return [member(a, decisions=ACCEPT, ci="passed"), member(b, decisions=REJECT, ci="failed"),
            member(c, decisions=ACCEPT, prompt="p2"), member(d, decisions=ACCEPT, prompt="p2", ci="failed"),
            member(e, decisions=REJECT, prompt="p2", ci="passed")]


def bundle(tmp_path: Path, rollouts: list[Rollout], name: str = "bundle") -> Path:
    return write_bundle(rollouts, tmp_path / name, org_id=ORG, policy=POLICY, quarantine_revision=0)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


def test_exports_pairs_from_a_bundle_equal_to_the_in_process_export(tmp_path: Path) -> None:
    source = bundle(tmp_path, evidence())
    out = tmp_path / "out"
    result = sediment("export", "dpo", "--from", str(source), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert list(summary) == ["objective", "completions", "pair_rows", "pair_skipped", "fragmented", "written",
                             "manifests"]
    assert (summary["objective"], summary["completions"], summary["pair_rows"], summary["pair_skipped"]) == (
        "dpo", 5, 3, {})
    assert summary["written"] == {str(out / "dpo.train.jsonl"): 2, str(out / "dpo.eval.jsonl"): 1}
    assert sorted(p.name for p in out.iterdir()) == [".sediment-dpo-target", "dpo.eval.jsonl", "dpo.train.jsonl"]
    direct = run_objective(evidence(), tmp_path / "direct", objective="dpo", split_enabled=True)
    assert rows(out / "dpo.train.jsonl") == direct.rows["dpo.train.jsonl"]
    assert rows(out / "dpo.eval.jsonl") == direct.rows["dpo.eval.jsonl"]
    assert snapshot(out) == snapshot(tmp_path / "direct")
    [eval_row] = rows(out / "dpo.eval.jsonl")
    assert eval_row["metadata"]["split"] == "eval" and eval_row["metadata"]["chosen_completion_id"] == f"{TRAIN[0]}-c0"
    validated = sediment("schema", "validate", *summary["written"])
    assert validated.returncode == 0, validated.stderr

    outcome = sediment("export", "dpo", "--recipe", "dpo_outcome", "--from", str(source), "--out",
                       str(tmp_path / "outcome"), "--json")
    assert outcome.returncode == 0, outcome.stderr
    counted = json.loads(outcome.stdout)
    assert (counted["pair_rows"], counted["pair_skipped"]) == (2, {"no_label_source": 1})

    table = sediment("export", "dpo", "--from", str(source), "--out", str(tmp_path / "table"))
    assert table.returncode == 0, table.stderr
    assert "pair rows" in table.stderr
    assert f"wrote {tmp_path / 'table' / 'dpo.train.jsonl'} (2 rows)" in table.stderr


def test_ladder_knobs_and_settings_reach_the_cli_export(tmp_path: Path) -> None:
    source = str(bundle(tmp_path, evidence()))
    env = {"SEDIMENT_LABEL_CONFIDENCE_EXPLICIT_ACCEPT_CONFIDENCE": "0.8"}
    tuned = sediment("export", "dpo", "--from", source, "--out", str(tmp_path / "tuned"), "--json", env=env)
    assert tuned.returncode == 0, tuned.stderr
    [pair] = rows(tmp_path / "tuned" / "dpo.eval.jsonl")
    # accept (0.8) + pass (1.1) = 0.88 vs reject + fail 0.0
    assert (pair["metadata"]["label_confidence"], pair["metadata"]["confidence_margin"]) == (
        pytest.approx(0.88), pytest.approx(0.88))
    config = tmp_path / "settings.toml"
    config.write_text("[label-confidence]\nexplicit_accept_confidence = 0.5\n\n[plugins.dpo]\nmax_pairs_per_bucket = 1\n")
    filed = sediment("export", "dpo", "--from", source, "--config", str(config), "--out", str(tmp_path / "filed"),
                     "--json")
    assert filed.returncode == 0, filed.stderr
    summary = json.loads(filed.stdout)
    assert (summary["pair_rows"], summary["pair_skipped"]) == (2, {"bucket_capped": 1})
    [pair] = rows(tmp_path / "filed" / "dpo.eval.jsonl")
    assert pair["metadata"]["label_confidence"] == pytest.approx(0.55)
    assert pair["metadata"]["provenance"]["max_pairs_per_bucket"] == 1
    bad = sediment("export", "dpo", "--from", source, "--out", str(tmp_path / "bad"),
                   env={"SEDIMENT_LABEL_CONFIDENCE_CI_PASS_MULTIPLIER": "-1"})
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "SEDIMENT_LABEL_CONFIDENCE_CI_PASS_MULTIPLIER" in bad.stderr and "Traceback" not in bad.stderr
    assert not any((tmp_path / "bad").glob("dpo*.jsonl"))
    capped = sediment("export", "dpo", "--from", source, "--set", "dpo.max_pairs_per_bucket=0",
                      "--out", str(tmp_path / "zero"))
    assert capped.returncode == 1 and "max_pairs_per_bucket" in capped.stderr, capped.stderr


def test_usage_errors(tmp_path: Path) -> None:
    source = str(bundle(tmp_path, []))
    for args, said in ((("--recipe", "dpo_kto"), "Invalid value for '--recipe'"),
                       (("--target", "sediment"), "No such option: --target")):
        result = sediment("export", "dpo", "--from", source, "--out", str(tmp_path / "o"), *args)
        assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_the_output_directory_fails_closed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = sediment("export", "dpo", "--from", str(bundle(tmp_path, evidence())), "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    train_only = [r for r in evidence() if r.split == "train"]
    again = sediment("export", "dpo", "--from", str(bundle(tmp_path, train_only, "b2")), "--out", str(out))
    assert again.returncode == 3
    assert again.stderr.strip() == ("error: output directory already contains dpo artifacts (dpo.eval.jsonl, "
                                    "dpo.train.jsonl); use a new directory for each export")
    assert snapshot(out) == before  # no stale eval partition beside a new train file
    rlvr = sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(bundle(tmp_path, [], "b3")),
                    "--out", str(out))
    assert rlvr.returncode == 3 and "output directory already belongs to DPO objective dpo" in rlvr.stderr
    nemo = tmp_path / "nemo"
    assert sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(bundle(tmp_path, [], "b4")),
                    "--out", str(nemo)).returncode == 0
    refused = sediment("export", "dpo", "--from", str(bundle(tmp_path, evidence(), "b5")), "--out", str(nemo))
    assert refused.returncode == 3 and "already belongs to RLVR target nemo-gym" in refused.stderr
    assert sorted(p.name for p in nemo.iterdir()) == [".sediment-rlvr-target"]
    unclaimed = tmp_path / "unclaimed"
    unclaimed.mkdir()
    (unclaimed / "dpo.eval.jsonl").write_text("stale\n")
    stale = sediment("export", "dpo", "--from", str(bundle(tmp_path, evidence(), "b6")), "--out", str(unclaimed))
    assert stale.returncode == 3 and "without a target claim (dpo.eval.jsonl)" in stale.stderr
    assert (unclaimed / "dpo.eval.jsonl").read_text() == "stale\n"
    empty = tmp_path / "empty"
    nothing = sediment("export", "dpo", "--from", str(bundle(tmp_path, train_only[:1], "b7")), "--out", str(empty))
    assert nothing.returncode == 0 and "nothing written" in nothing.stderr + nothing.stdout


def test_a_direct_export_reads_the_fact_store_without_mirrors(tmp_path: Path) -> None:
    facts = tmp_path / "facts.jsonl"
    facts.write_text(json.dumps({
        "fact_type": "inference_call", "session_id": "sess-1", "model": "claude-sonnet-4-5",
        "input_messages": [{"role": "user", "parts": [{"type": "text", "content": "Fix the failing test."}]}],
        "output_messages": [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}],
        "observed_at": "2024-05-01T12:00:00Z",
    }) + "\n")
    env = {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG}
    assert sediment("ingest", "facts", str(facts), env=env).returncode == 0
    result = sediment("export", "dpo", "--out", str(tmp_path / "out"), "--json", env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    # the Session reached no commit: it has no attributed completion, so nothing to pair
    assert (summary["completions"], summary["pair_rows"], summary["pair_skipped"], summary["written"]) == (0, 0, {}, {})
