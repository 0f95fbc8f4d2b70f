"""The operator's path through real commands: mirror, ingest, facts, derive, export, quarantine."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.demo import ORG, REPO, write_inputs
from sediment.testing import snapshot


def run(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                            timeout=180, check=False)
    if ok:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def operator(tmp_path: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG,
            "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z"}
    inputs = write_inputs(tmp_path / "inputs")
    return {"env": env, "inputs": inputs, "tmp": tmp_path}


def load(operator: dict[str, Any], *, shuffle: int | None = None,
         mirror_first: bool = False) -> subprocess.CompletedProcess[str]:
    """Ingest the webhooks, calls and JUnit reports, then add the mirror (which the webhooks'
    repository id keys); with ``mirror_first``, the mirror before anything else."""
    env, inputs = operator["env"], operator["inputs"]
    if mirror_first:
        run(env, "mirror", "add", REPO, str(inputs.origin))
    hooks = [str(p) for p in inputs.webhooks]
    calls = inputs.calls
    if shuffle is not None:
        random.Random(shuffle).shuffle(hooks)
        lines = calls.read_text().splitlines(keepends=True)
        random.Random(shuffle).shuffle(lines)
        calls = operator["tmp"] / f"calls-{shuffle}.jsonl"
        calls.write_text("".join(lines))
    ingested = run(env, "ingest", "github", *hooks)
    run(env, "ingest", "calls", "--format", "openai-chat", str(calls))
    uploads = list(inputs.junit)
    if shuffle is not None:
        random.Random(shuffle).shuffle(uploads)
    for upload in uploads:
        run(env, "ingest", "junit", str(upload.path), "--provider", "github_actions", "--run-id", str(upload.run_id),
            "--run-attempt", str(upload.attempt), "--repo", REPO, "--commit", upload.commit)
    if not mirror_first:
        run(env, "mirror", "add", REPO, str(inputs.origin))
    return ingested


@pytest.mark.slow
def test_whole_path_traces_rewards_to_webhooks(operator: dict[str, Any]) -> None:
    env, tmp = operator["env"], operator["tmp"]
    load(operator)
    counts = json.loads(run(env, "facts", "--json").stdout)["tables"]
    assert counts["ci_outcomes"]["stored"] == 17 and counts["session_commit_observations"]["stored"] == 12
    assert counts["inference_calls"]["stored"] == 37 and counts["test_case_results"]["stored"] == 54

    again = json.loads(run(env, "ingest", "github", "--json", *map(str, operator["inputs"].webhooks)).stdout)
    assert again["stored"] == {} and again["duplicates"] == {"ci_outcomes": 17}

    run(env, "derive", "--out", str(tmp / "bundle"))
    summary = json.loads(run(env, "export", "rlvr", "--target", "sediment", "--from", str(tmp / "bundle"),
                             "--out", str(tmp / "out"), "--json").stdout)
    assert summary["task_rows"] == 11
    deliveries = {}
    for path in operator["inputs"].webhooks:
        payload = json.loads(path.read_text())
        run_obj = payload["payload"]["workflow_run"]
        deliveries[(str(run_obj["id"]), run_obj["run_attempt"])] = (payload["headers"]["X-GitHub-Delivery"], run_obj)
    tasks = [json.loads(line) for name in summary["written"] if "tasks" in name
             for line in Path(name).read_text().splitlines()]
    for task in tasks:
        for result in task["verifier_results"]:
            delivery_id, run_obj = deliveries[(result["run_id"], result["run_attempt"])]
            assert result["source_event_id"] == delivery_id
            assert result["commit_sha"] == run_obj["head_sha"] and result["raw"] == run_obj
            assert result["provider_result"] == run_obj["conclusion"]
        assert task["ci_resolution"]["source_outcome_ids"] == sorted(r["outcome_id"] for r in task["verifier_results"])
    flaky = [t for t in tasks if t["ci_resolution"]["suspected_flake"]]
    assert len(flaky) == 2 and {f["ci_resolution"]["reliability"] for f in flaky} == {0.0}
    assert {t["attribution_source"] for t in tasks} == {"git_notes", "jaccard"}
    assert run(env, "schema", "validate", *summary["written"]).returncode == 0


@pytest.mark.slow
def test_a_mirror_added_before_the_webhooks_gives_the_same_bundle(operator: dict[str, Any]) -> None:
    """Added before any webhook named the repository's id, the mirror is legacy. The ingest that
    first names the id keys it by that identity (the rule `mirror add` applies after the
    webhooks) and observes its notes again under it: the bundle is byte-identical to the one
    of the webhooks-first order, and the superseded legacy edges are neither evidence nor a skip."""
    from sediment.git.mirror_root import MirrorRoot

    env, tmp = operator["env"], operator["tmp"]
    hooks = load(operator, mirror_first=True)
    identified = MirrorRoot(tmp / "home" / "mirrors").mirror_path(ORG, REPO, _identity("424242"))
    assert (f"keyed the mirror of {REPO} by github.com repository 424242 (the stored Facts name it now): "
            "0 new session-commit observation(s), 0 already seen, 12 restated under the repository's identity"
            ) in hooks.stderr  # the 12 edges the legacy mirror gave, restated: none is new
    assert run(env, "mirror", "list").stdout == f"{REPO}\t{identified}\n"
    run(env, "derive", "--out", str(tmp / "mirror-first"))
    manifest = json.loads((tmp / "mirror-first" / "manifest.json").read_text())
    assert "attribution.repository_identity_absent" not in manifest["skipped"]
    summary = json.loads(run(env, "export", "rlvr", "--target", "sediment", "--from", str(tmp / "mirror-first"),
                             "--out", str(tmp / "out"), "--json").stdout)
    assert summary["task_rows"] == 11  # what the webhooks-first order gives

    other = {**env, "SEDIMENT_HOME": str(tmp / "home-2")}
    load({**operator, "env": other})
    run(other, "derive", "--out", str(tmp / "webhooks-first"))
    assert snapshot(tmp / "mirror-first") == snapshot(tmp / "webhooks-first")
    again = run(env, "mirror", "fetch")  # nothing left to key: the fetch observes nothing new
    assert f"{REPO}: 0 new session-commit observation(s), 12 already seen" in again.stderr


def _identity(repository_id: str) -> Any:
    from sediment.model.facts import RepositoryIdentity

    return RepositoryIdentity(provider="github", host="github.com", repository_id=repository_id)


@pytest.mark.slow
def test_gradable_swe_bench_tasks_through_the_cli(operator: dict[str, Any]) -> None:
    """The swe-bench profile reads the JUnit results the operator ingested, from a bundle."""
    env, tmp = operator["env"], operator["tmp"]
    load(operator)
    run(env, "derive", "--out", str(tmp / "bundle"))
    summary = json.loads(run(env, "export", "rlvr", "--target", "swe-bench", "--profile", "swe-bench-tasks-v2",
                             "--from", str(tmp / "bundle"), "--out", str(tmp / "swe"), "--config",
                             str(operator["inputs"].settings), "--json").stdout)
    assert summary["skipped"] == {"verified_test_results_absent": 3, "base_test_results_absent": 1,
                                  "no_fail_to_pass": 1, "no_source_change": 1}
    [path] = [p for p in summary["written"] if "/data" in p]
    row, pow_fix = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert json.loads(row["FAIL_TO_PASS"]) == ["tests/test_ops.py::test_div_exact", "tests/test_ops.py::test_div_quarter"]
    assert row["metadata"]["test_transitions"]["excluded"] == {"flaky_on_verified": 1}
    assert json.loads(pow_fix["FAIL_TO_PASS"]) == ["tests/test_pow.py::test_pow"]


@pytest.mark.slow
def test_direct_export_equals_bundle_export(operator: dict[str, Any]) -> None:
    env, tmp = operator["env"], operator["tmp"]
    load(operator)
    run(env, "derive", "--out", str(tmp / "bundle"))
    for target in ("sediment", "swe-bench", "nemo-gym"):
        a = json.loads(run(env, "export", "rlvr", "--target", target, "--from", str(tmp / "bundle"),
                           "--out", str(tmp / f"a-{target}"), "--json").stdout)
        b = json.loads(run(env, "export", "rlvr", "--target", target, "--out", str(tmp / f"b-{target}"),
                           "--json").stdout)
        assert {k: v for k, v in a.items() if k not in ("written", "manifests")} == \
               {k: v for k, v in b.items() if k not in ("written", "manifests")}
        assert a["written"] and sorted(Path(p).name for p in a["written"]) == sorted(Path(p).name for p in b["written"])
        for path in a["written"]:
            other = Path(path.replace(f"a-{target}", f"b-{target}"))
            parse = lambda p: [json.loads(line) for line in Path(p).read_text().splitlines()]  # noqa: E731
            assert parse(path) == parse(other)


@pytest.mark.slow
def test_shuffled_ingest_gives_identical_exports(operator: dict[str, Any], tmp_path: Path) -> None:
    outputs = []
    for seed in (None, 5):
        env = dict(operator["env"], SEDIMENT_HOME=str(tmp_path / f"home-{seed}"))
        load({**operator, "env": env}, shuffle=seed)
        run(env, "derive", "--out", str(tmp_path / f"bundle-{seed}"))
        out = tmp_path / f"out-{seed}"
        run(env, "export", "rlvr", "--target", "sediment", "--from", str(tmp_path / f"bundle-{seed}"), "--out", str(out))
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outputs[0] == outputs[1]


@pytest.mark.slow
def test_quarantine_release_and_errors(operator: dict[str, Any]) -> None:
    env, tmp = operator["env"], operator["tmp"]
    load(operator)
    outcome_id = json.loads(run(env, "facts", "--json").stdout)["tables"]["ci_outcomes"]
    assert outcome_id["quarantined"] == 0
    bundle = tmp / "b1"
    run(env, "derive", "--out", str(bundle))
    first = json.loads(next(iter(json.loads(line)["record_json"] for line in (bundle / "rollouts.jsonl").open())))
    target = first["terminal_outcomes"][0]["outcome_id"] if first["terminal_outcomes"] else None
    assert target is not None
    result = run(env, "quarantine", "ci_outcomes", target, "--reason", "sender replayed a stale run")
    assert "revision 1" in result.stderr
    run(env, "derive", "--out", str(tmp / "b2"))
    manifest = json.loads((tmp / "b2" / "manifest.json").read_text())
    assert manifest["quarantine_revision"] == 1
    assert target not in (tmp / "b2" / "rollouts.jsonl").read_text()
    run(env, "release", "ci_outcomes", target, "--reason", "checked")
    missing = run(env, "quarantine", "ci_outcomes", "nope", "--reason", "x", ok=False)
    assert missing.returncode == 1 and "no ci_outcomes Fact 'nope'" in missing.stderr
    exists = run(env, "derive", "--out", str(tmp / "b2"), ok=False)
    assert exists.returncode == 4 and "already exists" in exists.stderr


def test_bad_lines_are_reported_and_the_rest_ingests(operator: dict[str, Any]) -> None:
    env, tmp = operator["env"], operator["tmp"]
    lines = operator["inputs"].calls.read_text().splitlines()
    broken = tmp / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "{not json", json.dumps({"request": 1, "session_id": "x"}), lines[1]]) + "\n")
    result = run(env, "ingest", "calls", "--format", "openai-chat", "--json", str(broken), ok=False)
    assert result.returncode == 8
    assert f"{broken}:2: not JSON" in result.stderr and f"{broken}:3: request" in result.stderr
    report = json.loads(result.stdout)
    assert report["stored"] == {"inference_calls": 2} and report["failed"] == 2


def test_org_is_required(operator: dict[str, Any]) -> None:
    env = {k: v for k, v in operator["env"].items() if k != "SEDIMENT_ORG_ID"}
    result = run(env, "facts", ok=False)
    assert result.returncode == 1 and "SEDIMENT_ORG_ID is not set" in result.stderr


def test_mirror_fetch_records_new_notes(operator: dict[str, Any]) -> None:
    from sediment.git.mirror_writer import MirrorWriter

    env, inputs = operator["env"], operator["inputs"]
    run(env, "mirror", "add", REPO, str(inputs.origin))
    writer = MirrorWriter(inputs.origin)
    sha = writer.commit({"new.py": "x = 1\n"}, "new", when=1_800_000_000)
    writer.add_note(sha, [{"tool": "codex", "session_id": "sess-late", "stamped_at": "t"}])
    result = run(env, "mirror", "fetch")
    assert "1 new session-commit observation(s), 12 already seen" in result.stderr
    listed = run(env, "mirror", "list").stdout
    assert listed.startswith(f"{REPO}\t")
    escape = run(env, "mirror", "add", "../evil", str(inputs.origin), ok=False)
    assert escape.returncode == 2


def test_ingest_workers_store_the_same_facts(operator: dict[str, Any], tmp_path: Path) -> None:
    """Two processes parsing the call log in parallel store exactly what one process stores."""
    from sediment.ingest.calls import ReplayMemo, translate_call
    from sediment.ingest.reading.files import ingest_files
    from sediment.store import FactStore

    lines = operator["inputs"].calls.read_text().splitlines(keepends=True)
    parts = []
    for index in range(4):
        part = tmp_path / f"part-{index}.jsonl"
        part.write_text("".join(lines[index::4]))
        parts.append(str(part))
    parts.append(parts[0])  # a redelivered file: every record a duplicate
    dumps = []
    for workers in (1, 2):
        store = FactStore(f"sqlite:///{tmp_path / f'w{workers}.db'}")
        memo = ReplayMemo()
        report = ingest_files(parts, lambda r, memo=memo: translate_call(  # type: ignore[misc]
            r, format="openai-chat", org_id=ORG, captured_at=datetime(2026, 3, 3, tzinfo=UTC), memo=memo),
            store, workers=workers)
        assert report.as_json()["stored"] == {"inference_calls": 37}
        assert report.as_json()["duplicates"] == {"inference_calls": len(lines[0::4])}
        dumps.append({s: store.calls_for_session(ORG, s) for s in store.session_ids(ORG)})
    assert dumps[0] == dumps[1]


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59-10:00", "0001-01-01T00:00:00+14:00"])
def test_capture_time_out_of_range_is_one_line(operator: dict[str, Any], moment: str) -> None:
    env = dict(operator["env"], SEDIMENT_CAPTURE_TIME=moment)
    result = run(env, "ingest", "github", *map(str, operator["inputs"].webhooks[:1]), ok=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: SEDIMENT_CAPTURE_TIME is out of range once converted to UTC: '{moment}'"
