"""Profiles of objectives without targets (``sediment export sft|dpo --profile P``) through the
real CLI and the registry: selection and its one-line errors (unknown, wrong objective, retired
with what to do), the listing, the byte budget, the output-directory discipline, and bundle
exports equal to in-process ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.bundle.write import write_bundle
from sediment.errors import CapacityError, UnknownProfileError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export import objective_adaptation
from sediment.export.pipeline import Evidence, export_objective
from sediment.host.registry import load_registry
from sediment.model.facts import DeveloperDecision
from sediment.model.rollout import FileAttribution, Rollout
from sediment.split import assign_split
from sediment.testing import ORG, POLICY, REPO, T0, call, message, outcome, rollout, snapshot


def sediment(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=120, check=False)


def session(name: str, answer: str, accepted: bool, prompt: str = "name a prime") -> Rollout:
    commit = f"{abs(hash(name)) % 16**40:040x}"
    decision = DeveloperDecision(
        decision_id=f"d-{name}", org_id=ORG, session_id=name, agent_harness="claude-code", file_path="a.py",
        accepted=accepted, explicit=True, interaction_mode="agent", call_id=f"resp-{name}",
        occurred_at=T0, captured_at=T0 + timedelta(days=1))
    calls = [call(name, 0, [message("user", prompt)], [message("assistant", answer)], model="gpt-x",
                  model_call_id=f"resp-{name}")]
    return rollout(name, calls=calls, commits=[commit], outcomes=[outcome(f"o-{name}", commit, "passed",
                                                                          run_id=f"r-{name}")],
                   session_decisions=(decision,), split="train",
                   file_attributions=(FileAttribution(inference_call_id=f"{name}-c0", repo=REPO, commit_sha=commit,
                                                      file_path="a.py", similarity_score=0.9),))


TRAIN = [s for s in (f"s{i}" for i in range(200)) if assign_split(s, 0.1) == "train"]


def sessions() -> list[Rollout]:
    a, b, c, d = TRAIN[:4]
    return [session(a, "7", True), session(b, "9", False), session(c, "11", True),
            session(d, "4", False, prompt="name an even number")]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_bundle(sessions(), tmp_path / "bundle", org_id=ORG, policy=POLICY, quarantine_revision=0)


@pytest.mark.parametrize(("objective", "profile", "rows"), [
    ("sft", "hf-trl-sft-v3", 2), ("dpo", "hf-trl-dpo-v4", 2), ("sft", "fireworks-sft-v2", 2),
    ("dpo", "fireworks-dpo-v3", 2)])
def test_cli_profile_exports_from_a_bundle_equal_the_in_process_export(tmp_path: Path, bundle: Path, objective: str,
                                                                       profile: str, rows: int) -> None:
    out = tmp_path / "out"
    result = sediment("export", objective, "--profile", profile, "--from", str(bundle), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    units = load_registry().objectives[objective].info.units
    assert list(summary)[:4] == ["objective", "profile", "target", units]
    assert (summary["objective"], summary["profile"], summary["rows"], summary["skipped"]) == (
        objective, profile, rows, {})
    assert summary["compatibility"] == str(out / "compatibility.json")
    assert (out / f".sediment-{objective}-target").read_text(encoding="ascii").strip() == f"profile:{profile}"
    direct = tmp_path / "direct"
    export_objective(Evidence(sessions(), True), direct, objective=objective, profile=profile,
                     verifier_commands=VerifierCommands.empty())
    assert snapshot(out) == snapshot(direct)
    assert not (out / "data.eval.jsonl").exists()
    validated = sediment("schema", "validate", str(out / "evidence.train.jsonl"))
    assert validated.returncode == 0, validated.stderr
    table = sediment("export", objective, "--profile", profile, "--from", str(bundle), "--out", str(tmp_path / "t"))
    assert table.returncode == 0, table.stderr
    assert f"Profile export · {profile} (objective {objective})" in table.stderr
    assert f"wrote {tmp_path / 't' / 'data.train.jsonl'} ({rows} rows)" in table.stderr


DPO_REEXPORT = ("and re-export canonical evidence with DPO recipe v2/schema v5 (the pairs keep the recorded tool "
                "definitions)")


@pytest.mark.parametrize(("args", "message"), [
    (("sft", "--profile", "trl-v9"), "unsupported profile: trl-v9; installed profiles: fireworks-dpo-v3, "),
    (("sft", "--profile", "hf-trl-dpo-v4"), "profile hf-trl-dpo-v4 does not support objective sft; it adapts dpo rows"),
    (("dpo", "--profile", "fireworks-sft-v2"),
     "profile fireworks-sft-v2 does not support objective dpo; it adapts sft rows"),
    (("recovery", "--profile", "hf-trl-sft-v3"), "No such option: --profile"),  # no profile adapts Recovery rows
    (("rlvr", "--target", "sediment", "--profile", "hf-trl-sft-v3"),
     "profile hf-trl-sft-v3 does not support objective rlvr; it adapts sft rows"),
    (("sft", "--profile", "nemo-gym-rollouts-v2"),
     "profile nemo-gym-rollouts-v2 does not support objective sft; it adapts rlvr rows"),
    (("dpo", "--profile", "hf-trl-dpo-v1"), f"profile hf-trl-dpo-v1 is retired; use hf-trl-dpo-v4 {DPO_REEXPORT}"),
    (("dpo", "--profile", "fireworks-dpo-v1"), f"profile fireworks-dpo-v1 is retired; use fireworks-dpo-v3 {DPO_REEXPORT}"),
    (("dpo", "--profile", "hf-trl-dpo-v2"), f"profile hf-trl-dpo-v2 is retired; use hf-trl-dpo-v4 {DPO_REEXPORT}"),
    # the profiles of dpo-pair v4 rows, whose tools were always []
    (("dpo", "--profile", "hf-trl-dpo-v3"), f"profile hf-trl-dpo-v3 is retired; use hf-trl-dpo-v4 {DPO_REEXPORT}"),
    (("dpo", "--profile", "fireworks-dpo-v2"), f"profile fireworks-dpo-v2 is retired; use fireworks-dpo-v3 {DPO_REEXPORT}"),
    (("sft", "--profile", "hf-trl-sft-v1"), "profile hf-trl-sft-v1 is retired; use hf-trl-sft-v3 and re-export "
                                            "canonical evidence with SFT schema v4"),
    (("sft", "--profile", "hf-trl-sft-v2"), "profile hf-trl-sft-v2 is retired; use hf-trl-sft-v3 and re-export "
                                            "canonical evidence with SFT schema v4 (the rows keep the recorded tool "
                                            "definitions)"),
    # the Fireworks SFT profile whose rows dropped the tools the calls declared
    (("sft", "--profile", "fireworks-sft-v1"), "profile fireworks-sft-v1 is retired; use fireworks-sft-v2 and re-export "
                                               "(its rows carry the tool definitions the calls declared, which "
                                               "fireworks-sft-v1 dropped)"),
])
def test_unknown_mismatched_and_retired_profiles_are_one_line_usage_errors(tmp_path: Path, bundle: Path,
                                                                          args: tuple[str, ...], message: str) -> None:
    objective, *rest = args
    source = () if objective == "recovery" else ("--from", str(bundle))
    result = sediment("export", objective, *rest, *source, "--out", str(tmp_path / "o"))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    if objective != "recovery":  # click adds a usage line to an unknown option
        assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_profiles_are_listed_with_what_they_adapt_and_export_help_names_them() -> None:
    result = sediment("profiles", "--json")
    assert result.returncode == 0, result.stderr
    listed = {p["id"]: p for p in json.loads(result.stdout)["profiles"]}
    wanted = {"hf-trl-sft-v3": ("hf-trl", "sft", 3), "hf-trl-dpo-v4": ("hf-trl", "dpo", 4),
              "fireworks-sft-v2": ("fireworks", "sft", 2), "fireworks-dpo-v3": ("fireworks", "dpo", 3)}
    for name, (consumer, objective, version) in wanted.items():
        record = listed[name]
        assert (record["consumer"], record["objective"], record["target"], record["population"], record["version"]) == (
            consumer, objective, objective, objective, version)
    assert listed["hf-trl-sft-v3"]["validated_with"] == [["datasets", "5.2.0"], ["trl", "1.16.0"],
                                                         ["transformers", "5.24.0"]]
    assert listed["hf-trl-dpo-v4"]["retires"] == ["hf-trl-dpo-v1", "hf-trl-dpo-v2", "hf-trl-dpo-v3"]
    assert listed["fireworks-dpo-v3"]["retires"] == ["fireworks-dpo-v1", "fireworks-dpo-v2"]
    assert listed["fireworks-sft-v2"]["retires"] == ["fireworks-sft-v1"]
    assert listed["hf-trl-dpo-v4"]["skip_reasons"] == ["non_finite_number", "unrepresentable_unicode",
                                                       "non_function_tool"]
    assert listed["fireworks-dpo-v3"]["skip_reasons"] == ["non_finite_number", "unrepresentable_unicode"]
    table = sediment("profiles")
    assert table.returncode == 0 and "hf-trl-sft-v3" in table.stdout + table.stderr
    sft_help = sediment("export", "sft", "--help")
    assert "--profile" in sft_help.stdout and "fireworks-sft-v2, hf-trl-sft-v3" in sft_help.stdout
    assert "--profile" not in sediment("export", "recovery", "--help").stdout


def test_a_profile_export_beyond_the_byte_budget_publishes_nothing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objective_adaptation, "PROFILE_MATERIALIZATION_BUDGET", 900)
    with pytest.raises(CapacityError, match=r"^consumer profile materialization exceeds byte budget \(900 bytes\); "
                                            "nothing was published$"):
        export_objective(Evidence(sessions(), False), tmp_path / "out", objective="sft", profile="hf-trl-sft-v3",
                         verifier_commands=VerifierCommands.empty())
    assert not [p for p in (tmp_path / "out").iterdir() if not p.name.startswith(".sediment-")]


def test_the_directory_belongs_to_one_export(tmp_path: Path) -> None:
    out = tmp_path / "out"

    def run(profile: str | None, objective: str = "sft") -> Any:
        return export_objective(Evidence(sessions(), False), out, objective=objective, profile=profile,
                                verifier_commands=VerifierCommands.empty())

    run("hf-trl-sft-v3")
    from sediment.errors import OutputDirectoryError

    with pytest.raises(OutputDirectoryError):
        run("hf-trl-sft-v3")  # a second generation into a directory holding artifacts
    with pytest.raises(OutputDirectoryError):
        run(None)  # the canonical export of the same objective
    with pytest.raises(OutputDirectoryError):
        run("hf-trl-dpo-v4", "dpo")


def test_the_registry_resolves_a_profile_against_the_objective_it_adapts() -> None:
    registry = load_registry()
    assert registry.profile("hf-trl-sft-v3", objective="sft").name == "hf-trl-sft-v3"
    with pytest.raises(UnknownProfileError, match="^profile hf-trl-sft-v3 does not support objective dpo"):
        registry.profile("hf-trl-sft-v3", objective="dpo")
    with pytest.raises(UnknownProfileError, match="^profile hf-trl-sft-v3 does not support objective rlvr"):
        registry.profile("hf-trl-sft-v3")  # no objective named: the default (RLVR)
