"""The example third-party objective in examples/ (``kto``), installed through the real
entry-point path and exported through the real CLI: from a bundle and directly from the store,
under the same writer discipline as RLVR."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.plugin import Rollout
from sediment.testing import (
    ORG,
    POLICY,
    T0,
    DeveloperDecision,
    InferenceCall,
    assign_split,
    call,
    conversation,
    message,
    rollout,
    segment_calls,
    snapshot,
    write_bundle,
)

EXAMPLE = Path(__file__).parents[1] / "examples" / "third_party_objective"
SCHEMA_ID = "https://example.com/schemas/kto-sample/v1.json"
CORE = ("conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
        "repository_identity_conflict", "repository_identity_unresolved", "repository_mirror_identity_unresolved",
        "repository_source_absent", "non_finite_number", "unrepresentable_unicode")
#: Session ids on each side of the default eval split (fraction 0.1)
TRAIN = [s for s in (f"s{i}" for i in range(200)) if assign_split(s, 0.1) == "train"]
EVAL = [s for s in (f"s{i}" for i in range(200)) if assign_split(s, 0.1) == "eval"]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A dist-info with the example's own entry points, as `pip install` would leave it."""
    site = tmp_path / "site"
    dist = site / "sediment_kto_example-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sediment-kto-example\nVersion: 0.1.0\n")
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    entries = "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["sediment"].items())
    (dist / "entry_points.txt").write_text(f"[sediment]\n{entries}")
    return site


def sediment(site: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ["PYTHONPATH"] = os.pathsep.join([str(site), str(EXAMPLE / "src")])
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=120, check=False)


def decision(session: str, call_id: str, *, accepted: bool, explicit: bool = True, n: int = 0) -> DeveloperDecision:
    return DeveloperDecision(
        decision_id=f"d-{session}-{call_id}-{n}", org_id=ORG, session_id=session, agent_harness="claude-code",
        file_path="a.py", accepted=accepted, explicit=explicit, interaction_mode="agent", call_id=call_id,
        occurred_at=T0 + timedelta(minutes=n), captured_at=T0 + timedelta(minutes=n),
    )


def decided(session: str, decisions: dict[int, list[DeveloperDecision]], calls: list[InferenceCall] | None = None
            ) -> Rollout:
    """A Rollout whose Turns carry ``decisions`` (by call index), through real segmentation."""
    calls = calls if calls is not None else conversation(session)
    by_call = {calls[i].inference_call_id: tuple(ds) for i, ds in decisions.items()}
    segments, _ = segment_calls(calls, by_call)
    return rollout(session, calls=calls, segments=segments, split=assign_split(session, 0.1))


def population(tmp_path: Path) -> list[Rollout]:
    """An accepted Turn (train), a rejected one beside an accepted one (eval: the reject wins),
    a Session nobody decided on, an implicit accept, and a decided Turn without output."""
    a, b, c, d, e = TRAIN[0], EVAL[0], TRAIN[1], TRAIN[2], TRAIN[3]
    silent = [call(e, 0, [message("user", "go")], [])]
    return [
        decided(a, {0: [decision(a, f"{a}-t0", accepted=True)]}),
        decided(b, {1: [decision(b, f"{b}-t1", accepted=True), decision(b, f"{b}-t1", accepted=False, n=1)]}),
        decided(c, {}),
        decided(d, {0: [decision(d, f"{d}-t0", accepted=True, explicit=False)]}),
        decided(e, {0: [decision(e, f"{e}-c0", accepted=False)]}, calls=silent),
    ]


def bundle(tmp_path: Path, rollouts: list[Rollout], name: str = "bundle") -> Path:
    return write_bundle(rollouts, tmp_path / name, org_id=ORG, policy=POLICY, quarantine_revision=0)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


def test_listed_by_sediment_objectives(site: Path) -> None:
    result = sediment(site, "objectives", "--json")
    assert result.returncode == 0, result.stderr
    listed = {o["name"]: o for o in json.loads(result.stdout)["objectives"]}
    assert set(listed) == {"diff-sft", "dpo", "kto", "recovery", "rlvr", "sft"}
    kto = listed["kto"]
    assert kto["origin"]["distribution"] == "sediment-kto-example"
    assert (kto["title"], kto["unit"], kto["units"], kto["has_targets"], kto["targets"]) == (
        "KTO", "Rollout", "rollouts", False, [])
    assert [(r["name"], r["version"]) for r in kto["recipes"]] == [("kto_decisions", 1)]
    # it declares only its own reasons; the registry composes the core's in front
    assert kto["populations"] == {"kto": {
        "label": "sample", "files": ["kto.jsonl", "kto.train.jsonl", "kto.eval.jsonl"], "schema_id": SCHEMA_ID,
        "skip_reasons": [*CORE, "no_developer_decision", "no_completion"]}}
    assert kto["settings"] == {"include_implicit": {"required": False, "env": "SEDIMENT_KTO_INCLUDE_IMPLICIT",
                                                    "default": False}}
    assert (kto["direct_needs_mirrors"], kto["from_needs_mirrors"], kto["supports_from"]) == (True, False, True)
    table = sediment(site, "objectives")
    assert table.returncode == 0 and "kto  Example: unpaired KTO samples" in table.stdout


def test_export_help_is_built_from_the_declaration(site: Path) -> None:
    listing = sediment(site, "export", "--help")
    assert listing.returncode == 0, listing.stderr
    flat = " ".join(listing.stdout.split())
    assert "kto Example: unpaired KTO samples, one per Turn a developer accepted or rejected. Unit of evidence: " \
           "Rollout. Recipes: kto_decisions v1 (default)." in flat
    assert "rlvr Project Rollouts into RLVR rows" in flat and "Recipes: rlvr_ci v1 (default)." in flat
    own = sediment(site, "export", "kto", "--help")
    assert own.returncode == 0, own.stderr
    assert "--recipe [kto_decisions]" in own.stdout or "--recipe <kto_decisions>" in own.stdout
    assert "--from BUNDLE" in own.stdout and "--target" not in own.stdout and "--profile" not in own.stdout
    assert "  sediment export kto --from bundle --out exports/kto" in own.stdout  # its example, as written
    assert "Files: kto[.train|.eval].jsonl." in " ".join(own.stdout.split())


def test_exports_from_a_bundle_through_the_cli(site: Path, tmp_path: Path) -> None:
    source = bundle(tmp_path, population(tmp_path))
    out = tmp_path / "out"
    result = sediment(site, "export", "kto", "--from", str(source), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert list(summary) == ["objective", "rollouts", "sample_rows", "sample_skipped", "fragmented", "written",
                             "manifests"]
    assert summary["objective"] == "kto" and summary["rollouts"] == 5 and summary["sample_rows"] == 2
    # undecided Turns: one each beside the accept and the reject, two each in the silent and the implicit Sessions
    assert summary["sample_skipped"] == {"no_developer_decision": 6, "no_completion": 1}
    assert summary["written"] == {str(out / "kto.train.jsonl"): 1, str(out / "kto.eval.jsonl"): 1}
    assert summary["manifests"] == {}
    assert sorted(p.name for p in out.iterdir()) == [".sediment-kto-target", "kto.eval.jsonl", "kto.train.jsonl"]
    assert (out / ".sediment-kto-target").read_text() == "kto\n"
    [accepted] = rows(out / "kto.train.jsonl")
    [rejected] = rows(out / "kto.eval.jsonl")
    a, b = TRAIN[0], EVAL[0]
    assert accepted["label"] is True and rejected["label"] is False  # the reject wins over the accept
    assert accepted["metadata"] == {
        "org_id": ORG, "session_id": a, "completion_id": f"{a}-c0", "source_model": None,
        "recipe_id": "kto_decisions", "recipe_version": 1, "label_source": "explicit_accept", "decision_count": 1,
        "split": "train", "schema_id": SCHEMA_ID, "schema_version": 1}
    assert rejected["metadata"]["label_source"] == "explicit_reject" and rejected["metadata"]["decision_count"] == 2
    # the prompt is the call's whole input: the segment replayed up to it
    assert [m["role"] for m in rejected["prompt"]] == ["user", "assistant"]
    assert rejected["completion"][0]["parts"][0]["id"] == f"{b}-t1"
    validated = sediment(site, "schema", "validate", *summary["written"])
    assert validated.returncode == 0, validated.stderr

    table = sediment(site, "export", "kto", "--from", str(source), "--out", str(tmp_path / "table"))
    assert table.returncode == 0, table.stderr
    assert "KTO export · objective kto" in table.stderr and "sample rows" in table.stderr
    assert f"✓wrote {tmp_path / 'table' / 'kto.train.jsonl'} (1 rows)" in table.stderr.replace("✓ ", "✓")


def test_settings_reach_the_objective(site: Path, tmp_path: Path) -> None:
    source = bundle(tmp_path, population(tmp_path))
    out = tmp_path / "out"
    result = sediment(site, "export", "kto", "--from", str(source), "--out", str(out), "--json",
                      "--set", "kto.include_implicit=true")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["sample_rows"] == 3 and summary["sample_skipped"]["no_developer_decision"] == 5
    sources = sorted(r["metadata"]["label_source"] for r in rows(out / "kto.train.jsonl"))
    assert sources == ["explicit_accept", "implicit_accept"]
    bad = sediment(site, "export", "kto", "--from", str(source), "--out", str(tmp_path / "bad"),
                   "--set", "kto.include_implicit=perhaps")
    assert bad.returncode == 1 and "plugin kto setting include_implicit" in bad.stderr


def test_a_directory_holds_one_generation_of_one_export(site: Path, tmp_path: Path) -> None:
    """No stale partition survives: a second export into a directory holding rows is refused
    (upstream would replace the train file and keep the now-stale eval file)."""
    out = tmp_path / "out"
    first = sediment(site, "export", "kto", "--from", str(bundle(tmp_path, population(tmp_path))), "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    train_only = [r for r in population(tmp_path) if r.split == "train"]
    again = sediment(site, "export", "kto", "--from", str(bundle(tmp_path, train_only, "b2")), "--out", str(out))
    assert again.returncode == 3, again.stderr
    assert again.stderr.strip() == ("error: output directory already contains kto artifacts (kto.eval.jsonl, "
                                    "kto.train.jsonl); use a new directory for each export")
    assert snapshot(out) == before

    rlvr = sediment(site, "export", "rlvr", "--target", "nemo-gym", "--from", str(bundle(tmp_path, [], "b3")),
                    "--out", str(out))
    assert rlvr.returncode == 3
    assert "output directory already belongs to KTO objective kto; use a different directory for nemo-gym" \
        in rlvr.stderr
    assert snapshot(out) == before

    nemo = tmp_path / "nemo"
    assert sediment(site, "export", "rlvr", "--target", "nemo-gym", "--from", str(bundle(tmp_path, [], "b4")),
                    "--out", str(nemo)).returncode == 0
    refused = sediment(site, "export", "kto", "--from", str(bundle(tmp_path, population(tmp_path), "b5")),
                       "--out", str(nemo))
    assert refused.returncode == 3
    assert "output directory already belongs to RLVR target nemo-gym; use a different directory for kto" \
        in refused.stderr
    assert sorted(p.name for p in nemo.iterdir()) == [".sediment-rlvr-target"]

    unclaimed = tmp_path / "unclaimed"
    unclaimed.mkdir()
    (unclaimed / "kto.eval.jsonl").write_text("stale\n")
    stale = sediment(site, "export", "kto", "--from", str(bundle(tmp_path, population(tmp_path), "b6")),
                     "--out", str(unclaimed))
    assert stale.returncode == 3
    assert "output directory contains KTO artifacts without a target claim (kto.eval.jsonl)" in stale.stderr
    assert (unclaimed / "kto.eval.jsonl").read_text() == "stale\n"


def test_nothing_written_and_an_empty_export_may_reuse_its_directory(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    undecided = [decided(TRAIN[5], {}), decided(EVAL[1], {})]
    empty = sediment(site, "export", "kto", "--from", str(bundle(tmp_path, undecided)), "--out", str(out))
    assert empty.returncode == 0, empty.stderr
    assert "nothing written (empty projections leave existing files untouched)" in empty.stderr
    assert sorted(p.name for p in out.iterdir()) == [".sediment-kto-target"]
    filled = sediment(site, "export", "kto", "--from", str(bundle(tmp_path, population(tmp_path), "b2")),
                      "--out", str(out), "--json")
    assert filled.returncode == 0, filled.stderr
    assert json.loads(filled.stdout)["sample_rows"] == 2


def test_usage_errors(site: Path, tmp_path: Path) -> None:
    source = str(bundle(tmp_path, []))
    for args, said in (
        (("--recipe", "kto_human"), "Invalid value for '--recipe'"),
        (("--target", "sediment"), "No such option: --target"),
        (("--profile", "plain-chat-v1"), "No such option: --profile"),
    ):
        result = sediment(site, "export", "kto", "--from", source, "--out", str(tmp_path / "o"), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert said in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "o").exists()
    unknown = sediment(site, "export", "ppo", "--out", str(tmp_path / "o"))
    assert unknown.returncode == 2 and "No such command 'ppo'" in unknown.stderr


def test_a_direct_export_reads_the_fact_store(site: Path, tmp_path: Path) -> None:
    """The store's Facts (an inference call and the developer's explicit accept of its edit)
    derive into a Rollout one Session at a time; the objective never knows where it came from."""
    facts = tmp_path / "facts.jsonl"
    facts.write_text(json.dumps({
        "fact_type": "inference_call", "session_id": "sess-1", "model": "claude-sonnet-4-5",
        "input_messages": [{"role": "user", "parts": [{"type": "text", "content": "Fix the failing test."}]}],
        "output_messages": [{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "toolu_01", "name": "Edit", "arguments": {"path": "a.py"}}]}],
        "observed_at": "2024-05-01T12:00:00Z",
    }) + "\n" + json.dumps({
        "fact_type": "developer_decision", "session_id": "sess-1", "agent_harness": "claude-code",
        "file_path": "a.py", "accepted": True, "explicit": True, "interaction_mode": "agent", "call_id": "toolu_01",
        "occurred_at": "2024-05-01T12:00:05Z", "captured_at": "2024-05-01T12:00:06Z",
    }) + "\n")
    env = {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG}
    assert sediment(site, "ingest", "facts", str(facts), env=env).returncode == 0
    missing = sediment(site, "export", "kto", "--out", str(tmp_path / "o1"), env=env)
    assert missing.returncode == 1 and "the export needs mirrors" in missing.stderr  # a direct export reads them
    (tmp_path / "mirrors").mkdir()
    result = sediment(site, "export", "kto", "--out", str(tmp_path / "out"), "--mirrors", str(tmp_path / "mirrors"),
                      "--json", env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["rollouts"], summary["sample_rows"], summary["sample_skipped"]) == (1, 1, {})
    [path] = summary["written"]
    [row] = rows(Path(path))
    assert (row["label"], row["metadata"]["source_model"], row["metadata"]["label_source"]) == (
        True, "claude-sonnet-4-5", "explicit_accept")


@pytest.mark.sediment_installed_plugins
def test_shuffled_and_repeated_input_give_identical_bytes(site: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from sediment.testing import Evidence, export_objective, load_registry

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(EXAMPLE / "src"))
    registry = load_registry()
    assert registry.objectives["kto"].origin.distribution == "sediment-kto-example"
    rollouts = population(tmp_path)
    outputs = []
    for attempt in range(3):
        shuffled = list(rollouts)
        random.Random(attempt).shuffle(shuffled)
        out = tmp_path / f"out{attempt}"
        export_objective(Evidence(shuffled, split_enabled=True), out, objective="kto", registry=registry)
        outputs.append(snapshot(out))
    assert outputs[0] == outputs[1] == outputs[2]
    assert set(outputs[0]) == {".sediment-kto-target", "kto.train.jsonl", "kto.eval.jsonl"}


def test_the_demo_exports_every_installed_objective(site: Path, tmp_path: Path) -> None:
    result = sediment(site, "demo", "--out", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    assert "KTO export · objective kto" in result.stderr  # the Turns the demo's developer decided on
    assert sorted(p.name for p in (tmp_path / "demo" / "exports" / "kto").iterdir()) == [
        ".sediment-kto-target", "kto.eval.jsonl", "kto.train.jsonl"]
    assert "RLVR export · target nemo-gym" in result.stderr
