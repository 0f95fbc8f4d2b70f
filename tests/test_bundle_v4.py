"""Reading the upstream derived bundle, version 4 (Sediment 0.6.1; docs/bundle.md).

No upstream bundle exists on this machine, so :func:`write_v4_bundle` below writes one exactly as
upstream's v4 layout describes (seven files, the manifest's seventeen keys, sorted canonical records with
``+00:00`` datetimes, Session-id order, a private staging directory renamed whole, modes
0700/0600) from Rollouts built with the test kit's builders: each Rollout record without the call
context and tool lists our records add, and the inference calls its Turns came from.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from sediment import export_rlvr_from_rollouts
from sediment.bundle.format import Bundle
from sediment.bundle.read import open_bundle
from sediment.bundle.upstream import V4Bundle
from sediment.bundle.upstream_manifest import FILES, POPULATION_ROW_CAP
from sediment.bundle.write import write_bundle
from sediment.errors import BundleError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.model.facts import InferenceCall, ReasoningPart, ToolCallPart, ToolCallResponsePart, ToolDefinition
from sediment.model.policy import AttributionPolicy, DerivationPolicy, SimilarityWindow, SplitPolicy
from sediment.model.repository_evidence import evidence_of_all
from sediment.model.rollout import Rollout
from sediment.records import encode_record
from sediment.split import assign_split
from sediment.testing import ORG, POLICY, PROVENANCE, call, message, outcome, rollout, snapshot

# --- a writer of v4 bundles, exactly per the v4 layout (test-only)-----------------------------------

UPSTREAM_VERSIONS = {"abandonment": "6", "attribution": "3", "attributed_completion": "5", "rollout": "4",
                     "repository_identity": "1"}
OURS_ONLY_TURN = ("output_messages", "model", "observed_at", "tools_digest", "model_call_id", "capture")
OURS_ONLY_ROLLOUT = ("tool_sets", "test_results", "session_decisions", "edit_observations", "file_attributions")


def upstream_value(value: Any) -> Any:
    """A value as upstream's canonical record holds it: every model field, datetimes as UTC
    ISO-8601 with ``+00:00``, tuples as arrays (keys are sorted when it is encoded)."""
    if isinstance(value, BaseModel):
        return {name: upstream_value(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, Mapping):
        return {key: upstream_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [upstream_value(item) for item in value]
    return value


def record_line(record: Any) -> bytes:
    """``{"record_json": "<sorted, compact, ASCII record; NaN allowed>"}`` and a newline."""
    inner = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)
    return (json.dumps({"record_json": inner}, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                       allow_nan=False) + "\n").encode("ascii")


def upstream_policy(policy: DerivationPolicy) -> dict[str, Any]:
    """The manifest's ``policy``, built field by field as upstream's ``to_dict`` builds it."""
    def window(w: SimilarityWindow) -> dict[str, Any]:
        return {"min_similarity": w.min_similarity, "lookback_window_minutes": w.lookback_window_minutes}

    a = policy.attribution
    return {"schema_version": policy.schema_version,
            "attribution": {"post_push_grace_period_minutes": a.post_push_grace_period_minutes,
                            "max_commits_per_push": a.max_commits_per_push,
                            "git_notes": window(a.git_notes), "jaccard": window(a.jaccard)},
            "split": {"eval_fraction": policy.split.eval_fraction}}


def upstream_digest(policy: dict[str, Any]) -> str:
    """Upstream's formula: SHA-256 of the resolved policy as sorted, compact, ASCII JSON, no NaN."""
    text = json.dumps(policy, ensure_ascii=True, allow_nan=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def rollout_record(r: Rollout) -> dict[str, Any]:
    record = upstream_value(r)
    for name in OURS_ONLY_ROLLOUT:
        del record[name]
    for segment in record["segments"]:
        for turn in segment:
            for name in OURS_ONLY_TURN:
                del turn[name]
    return record


def call_records(r: Rollout) -> list[dict[str, Any]]:
    """The upstream InferenceCall records (no ``tools``) the Rollout's Turns came from: a
    segment's first call was sent the Turn's messages, each later one the previous call's input
    and the Turn's messages (docs/evidence.md)."""
    records = []
    for segment in r.segments:
        inputs: list[Any] = []
        for turn in segment:
            inputs = [*inputs, *turn.new_messages]
            assert turn.observed_at is not None
            fact = InferenceCall(inference_call_id=turn.inference_call_id, org_id=r.org_id, session_id=r.session_id,
                                 model=turn.model, input_messages=tuple(inputs), output_messages=turn.output_messages,
                                 observed_at=turn.observed_at)
            record = upstream_value(fact)
            del record["tools"], record["capture"]  # ours only: upstream records neither
            records.append(record)
    return records


def identity_record(call_record: Mapping[str, Any]) -> dict[str, Any]:
    ids = {part["id"] for m in call_record["output_messages"] for part in m["parts"] if part["type"] == "tool_call"}
    if call_record["model_call_id"] is not None:
        ids.add(call_record["model_call_id"])
    return {"call_ids": sorted(ids), **{k: call_record[k] for k in ("inference_call_id", "org_id", "session_id",
                                                                      "observed_at")}}


def repository_records(rollouts: Iterable[Rollout]) -> list[dict[str, Any]]:
    """The repository identity population of ``rollouts``, as upstream records it: one record
    per repository reference of their CI outcomes and observations (every field, ``+00:00``
    times), in ``(captured_at, source_table, source_fact_id, role)`` order."""
    evidence = {e for r in rollouts for e in evidence_of_all((*r.terminal_outcomes, *r.session_commit_observations))}
    return [upstream_value(e) for e in sorted(evidence, key=lambda e: e.order_key)]


def write_v4_bundle(rollouts: Iterable[Rollout], destination: Path, *, policy: dict[str, Any] | None = None,
                    quarantine_revision: int = 0, fragmented: Mapping[str, int] | None = None,
                    skipped: Mapping[str, int] | None = None,
                    populations: Mapping[str, list[bytes]] | None = None, org_id: str | None = None) -> Path:
    """Write a v4 bundle of ``rollouts`` (its policy: ``policy``, default the default policy).
    ``populations`` gives the lines of the files not derived from the Rollouts (attributed
    completions, repository renames; empty by default; repository identities: by default the
    references the Rollouts' CI outcomes and observations make). ``as_of`` is the latest time
    among the calls and the repository population."""
    if destination.exists():
        raise FileExistsError(f"derived bundle destination already exists: {destination}")
    policy = upstream_policy(POLICY) if policy is None else policy
    ordered = sorted(rollouts, key=lambda r: r.session_id)
    org_id = org_id or (ordered[0].org_id if ordered else ORG)
    calls = sorted((c for r in ordered for c in call_records(r)),
                   key=lambda c: (datetime.fromisoformat(c["observed_at"]), c["inference_call_id"]))
    lines: dict[str, list[bytes]] = {name: [] for name in FILES}
    lines["rollouts"] = [record_line(rollout_record(r)) for r in ordered]
    lines["inference_calls"] = [record_line(c) for c in calls]
    lines["inference_call_identities"] = [record_line(identity_record(c)) for c in calls]
    repositories = repository_records(ordered)
    lines["repository_identities"] = [record_line(e) for e in repositories]
    lines.update(populations or {})
    stage = destination.parent / f".{destination.name}.{secrets.token_hex(6)}"
    stage.mkdir(mode=0o700)

    def private(name: str, data: bytes) -> None:
        descriptor = os.open(stage / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)

    files = {}
    for name, file in FILES.items():
        data = b"".join(lines[name])
        private(file, data)
        files[name] = {"path": file, "rows": len(lines[name]), "bytes": len(data),
                       "sha256": hashlib.sha256(data).hexdigest()}
    manifest = {
        "bundle_schema_version": 4, "record_encoding": "sediment-record-json-v1",
        "identity_population": "organization-through-as-of-v1",
        "repository_population": "organization-through-as-of-v1", "org_id": org_id,
        "scope": {"since": None, "until": None, "users": None}, "policy": policy,
        "policy_digest": upstream_digest(policy), "implementation_versions": UPSTREAM_VERSIONS,
        "quarantine_revision": quarantine_revision,
        "as_of": max([c["observed_at"] for c in calls] + [e["captured_at"] for e in repositories],
                     key=datetime.fromisoformat, default=None),
        "mirror_revisions": {}, "counts": {name: info["rows"] for name, info in files.items()},
        "skipped": dict(skipped or {}), "excluded": {}, "files": files,
        "fragmented": {k: v for k, v in sorted((fragmented or {}).items()) if v},  # a Counter's non-zero reasons
    }
    private("manifest.json", (json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                                         allow_nan=False) + "\n").encode("ascii"))
    os.rename(stage, destination)
    return destination


# --- editing a written bundle --------------------------------------------------------------


def edit_manifest(bundle: Path, change: Callable[[dict[str, Any]], object]) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    change(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")


def lines_of(bundle: Path, name: str) -> list[bytes]:
    return (bundle / FILES[name]).read_bytes().splitlines(keepends=True)


def rewrite(bundle: Path, name: str, lines: list[bytes]) -> None:
    """Replace one population file and keep the manifest's rows, bytes, sha256 and counts true."""
    data = b"".join(lines)
    (bundle / FILES[name]).write_bytes(data)

    def fix(manifest: dict[str, Any]) -> None:
        manifest["files"][name] |= {"rows": len(lines), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        manifest["counts"][name] = len(lines)

    edit_manifest(bundle, fix)


def edit_record(bundle: Path, name: str, index: int, change: Callable[[dict[str, Any]], object]) -> None:
    lines = lines_of(bundle, name)
    record = json.loads(json.loads(lines[index])["record_json"])
    change(record)
    lines[index] = record_line(record)
    rewrite(bundle, name, lines)


def edit_line(bundle: Path, name: str, index: int, change: Callable[[bytes], bytes]) -> None:
    lines = lines_of(bundle, name)
    lines[index] = change(lines[index])
    rewrite(bundle, name, lines)


# --- the Rollouts ------------------------------------------------------------------------

TOOLS = (ToolDefinition(name="read_file", description="Read a file",
                        parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
         ToolDefinition(name="edit", parameters={"type": "object", "properties": {"text": {"type": "string"}}}))
MODEL = "claude-sonnet-4-5"
COMMANDS = VerifierCommands({"owner/repo": "pytest -q"})


def tool_loop(session: str, sha: str | None, result: str = "passed", **fields: Any) -> Rollout:
    """A three-call tool loop (reasoning, text, tool calls, tool results), then a rewritten
    history that opens a second segment; CI ``result`` on ``sha``."""
    history = [message("system", "You are a careful coding agent."), message("user", f"fix add() ({session})")]
    out0 = message("assistant", ReasoningPart(content="add() subtracts."), "Reading calc.py.",
                   ToolCallPart(id=f"{session}-t0", name="read_file", arguments={"path": "calc.py"}))
    calls = [call(session, 0, history, [out0], tools=TOOLS, model=MODEL)]
    history = [*history, out0, message("tool", ToolCallResponsePart(id=f"{session}-t0", result="def add(a, b): a - b"))]
    out1 = message("assistant", ToolCallPart(id=f"{session}-t1", name="edit", arguments={"text": "a + b"}))
    calls.append(call(session, 1, history, [out1], tools=TOOLS, model=MODEL))
    history = [*history, out1, message("tool", ToolCallResponsePart(id=f"{session}-t1", result={"ok": True}))]
    calls.append(call(session, 2, history, [message("assistant", "Fixed add().", finish_reason="stop")],
                      tools=TOOLS, model=MODEL))
    calls.append(call(session, 3, [message("user", f"Summarize the change ({session}).")], [message("assistant", "a + b now.")],
                      tools=TOOLS, model=MODEL))
    outcomes = [] if sha is None else [outcome(f"{session}-o", sha, result, run_id=session)]
    values: dict[str, Any] = {"commits": [] if sha is None else [sha], "outcomes": outcomes,
                              "split": assign_split(session, 0.1)}
    values.update(fields)
    return rollout(session, calls=calls, **values)


@pytest.fixture
def rollouts(commit_history: dict[str, str]) -> list[Rollout]:
    """Sessions with task evidence (passed and failed), one without commits, one in eval (s7),
    and one whose CI payload holds non-finite numbers and lone surrogates."""
    weird = outcome("s5-o", commit_history["c2"], "passed", run_id="s5",
                    raw={"nan": float("nan"), "inf": float("-inf"), "\udc80": "x\ud800", "nul": "a\x00b"})
    return [tool_loop("s2", commit_history["c2"], "failed"), tool_loop("s1", commit_history["c1"]),
            tool_loop("s3", None), tool_loop("s7", commit_history["c1"]),
            tool_loop("s5", commit_history["c2"], outcomes=[weird])]


def as_v4_reads_them(r: Rollout) -> Rollout:
    """``r`` as a v4 bundle gives it back: no tool definitions, no test results, no Session
    decision or edit-observation populations."""
    segments = tuple(tuple(t.model_copy(update={"tools_digest": None}) for t in s) for s in r.segments)
    return r.model_copy(update={"segments": segments, "tool_sets": (), "test_results": (), "session_decisions": (),
                                "edit_observations": (), "file_attributions": ()})


@pytest.fixture
def bundles(tmp_path: Path, rollouts: list[Rollout]) -> tuple[Path, Path]:
    """Our own bundle and a v4 bundle of the same Rollouts."""
    ours = write_bundle(rollouts, tmp_path / "ours", org_id=ORG, policy=POLICY, quarantine_revision=0,
                        fragmented={"input_history_changed": 5})
    theirs = write_v4_bundle(rollouts, tmp_path / "v4", fragmented={"input_history_changed": 5})
    return ours, theirs


def export(bundle: Path, out: Path, target: str, mirrors: MirrorRoot | None, *, workers: int = 1,
           profile: str | None = None) -> dict[str, Any]:
    opened = open_bundle(bundle, workers=workers)
    return export_rlvr_from_rollouts(opened, mirrors, out, target=target, profile=profile,
                                     split_enabled=opened.split_enabled, fragmented=opened.manifest.fragmented,
                                     verifier_commands=COMMANDS, workers=workers)


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary without its paths."""
    value = {k: v for k, v in summary.items() if k not in ("written", "manifests", "compatibility")}
    value["written"] = {Path(p).name: rows for p, rows in summary["written"].items()}
    return value


def commands_env(tmp_path: Path) -> dict[str, str]:
    """The environment that gives the CLI the verifier commands :data:`COMMANDS` holds."""
    path = tmp_path / "verifier.toml"
    path.write_text('[repos."owner/repo"]\nverification_command = "pytest -q"\n')
    return {"SEDIMENT_VERIFIER_COMMANDS_FILE": str(path)}


def sediment_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=120, check=False)


# --- the writer is the contract's layout -----------------------------------------------------


def test_the_test_writer_writes_the_v4_layout(bundles: tuple[Path, Path]) -> None:
    _, path = bundles
    assert sorted(p.name for p in path.iterdir()) == sorted(["manifest.json", *FILES.values()])
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in path.iterdir()} == {0o600}
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".v4.")] == []  # the stage was renamed
    manifest = json.loads((path / "manifest.json").read_text())
    assert len(manifest) == 17 and "bundle_format" not in manifest and manifest["bundle_schema_version"] == 4
    assert manifest["policy_digest"] == "dd6ddc485bcd1dfcdc4e70edea79f71fc5413c984642b1188d3d9087b33fd2d0"
    sessions = [json.loads(json.loads(line)["record_json"])["session_id"] for line in lines_of(path, "rollouts")]
    assert sessions == ["s1", "s2", "s3", "s5", "s7"]
    first = json.loads(lines_of(path, "inference_calls")[0])["record_json"]
    assert '"observed_at":"2026-01-05T12:00:00+00:00"' in first and '"tools"' not in first
    assert list(json.loads(first)) == sorted(json.loads(first))


# --- hydration and exports ---------------------------------------------------------------------


def test_v4_bundle_gives_back_the_rollouts_with_their_call_context(bundles: tuple[Path, Path],
                                                                   rollouts: list[Rollout]) -> None:
    ours, theirs = bundles
    bundle = open_bundle(theirs)
    assert isinstance(bundle, V4Bundle) and type(open_bundle(ours)) is Bundle
    assert len(bundle) == 5 and bundle.split_enabled
    assert bundle.order_keys() == [(ORG, s) for s in ("s1", "s2", "s3", "s5", "s7")]
    assert bundle.manifest.fragmented == {"prior_output_absent": 0, "input_history_changed": 5,
                                          "prior_output_not_replayed": 0}
    expected = sorted((as_v4_reads_them(r) for r in rollouts), key=lambda r: r.session_id)
    assert [encode_record(r) for r in bundle] == [encode_record(r) for r in expected]
    assert encode_record(bundle[3]) == encode_record(expected[3])
    turn = bundle[0].segments[0][1]
    assert (turn.model, turn.observed_at, turn.tools_digest) == (MODEL, rollouts[1].segments[0][1].observed_at, None)
    assert turn.output_messages == rollouts[1].segments[0][1].output_messages
    raw = bundle[3].terminal_outcomes[0].raw  # s5: lossless inside the record
    assert raw["nan"] != raw["nan"] and raw["inf"] == float("-inf") and raw["\udc80"] == "x\ud800"


@pytest.mark.parametrize("target", ["sediment", "swe-bench", "nemo-gym"])
def test_v4_exports_the_same_canonical_rows_as_our_bundle(tmp_path: Path, bundles: tuple[Path, Path],
                                                          mirror_root: MirrorRoot, target: str) -> None:
    ours, theirs = bundles
    expected = export(ours, tmp_path / "from-ours", target, mirror_root)
    summary = export(theirs, tmp_path / "from-v4", target, mirror_root)
    assert comparable(summary) == comparable(expected)
    assert snapshot(tmp_path / "from-v4") == snapshot(tmp_path / "from-ours")
    written = comparable(summary)["written"]
    assert any(name.endswith(".eval.jsonl") for name in written) and all(rows > 0 for rows in written.values())
    if target != "nemo-gym":
        assert summary["task_rows"] >= 2


def test_v4_exports_through_the_cli(tmp_path: Path, bundles: tuple[Path, Path], mirror_root: MirrorRoot) -> None:
    ours, theirs = bundles
    env = commands_env(tmp_path)
    outputs = {}
    for label, bundle in (("ours", ours), ("v4", theirs)):
        out = tmp_path / f"cli-{label}"
        result = sediment_cli("export", "rlvr", "--target", "sediment", "--from", str(bundle), "--out", str(out),
                              "--mirrors", str(mirror_root.path), "--json", env=env)
        assert result.returncode == 0, result.stderr
        summary = json.loads(result.stdout)
        assert summary["task_rows"] >= 3 and summary["rollout_rows"] >= 5
        outputs[label] = (comparable(summary), snapshot(out))
    assert outputs["v4"] == outputs["ours"]


def test_profile_export_reads_the_hydrated_call_context(tmp_path: Path, bundles: tuple[Path, Path]) -> None:
    """nemo-gym-rollouts-v2 needs each Turn's model, time and outputs: from a v4 bundle they come
    from inference_calls.jsonl. Upstream records no tool definitions, so the rows declare none;
    every other byte equals the export from our own bundle of the same Rollouts."""
    ours, theirs = bundles
    profile = "nemo-gym-rollouts-v2"
    expected = export(ours, tmp_path / "from-ours", "nemo-gym", None, profile=profile)
    out = tmp_path / "from-v4"
    result = sediment_cli("export", "rlvr", "--target", "nemo-gym", "--profile", profile, "--from", str(theirs),
                          "--out", str(out), "--json", env=commands_env(tmp_path))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["rows"] == expected["rows"] > 0
    assert summary["skipped"] == expected["skipped"] == {"missing_reward": 2}  # s3's two segments: no CI verdict

    def rows(directory: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for name in ("data.train.jsonl", "data.eval.jsonl")
                for line in (directory / name).read_text().splitlines()]

    from_v4, from_ours = rows(out), rows(tmp_path / "from-ours")
    assert len(from_v4) == len(from_ours) == summary["rows"]
    for row, mine in zip(from_v4, from_ours, strict=True):
        assert row["response"]["model"] == MODEL and row["response"]["created_at"] > 0
        assert row["responses_create_params"]["tools"] == row["response"]["tools"] == []
        assert len(mine["response"]["tools"]) == 2
        for body in (row, mine):
            del body["responses_create_params"]["tools"], body["response"]["tools"]
        assert row == mine
    for name in ("evidence.train.jsonl", "evidence.eval.jsonl"):  # the same canonical rows behind the rows
        evidence, mine_evidence = ([json.loads(line) for line in (d / name).read_text().splitlines()]
                                   for d in (out, tmp_path / "from-ours"))
        for item in (*evidence, *mine_evidence):
            del item["row_sha256"]  # the hash of the data row, whose tools differ
        assert evidence == mine_evidence


def test_exports_are_byte_identical_for_any_worker_count(tmp_path: Path, bundles: tuple[Path, Path],
                                                         mirror_root: MirrorRoot) -> None:
    _, theirs = bundles
    assert open_bundle(theirs, workers=3).order_keys() == open_bundle(theirs).order_keys()
    assert [encode_record(r) for r in open_bundle(theirs, workers=3)] == [encode_record(r) for r in open_bundle(theirs)]
    export(theirs, tmp_path / "w1", "sediment", mirror_root, workers=1)
    export(theirs, tmp_path / "w2", "sediment", mirror_root, workers=2)
    assert snapshot(tmp_path / "w1") == snapshot(tmp_path / "w2")
    snapshots = []
    for workers in ("1", "2"):
        out = tmp_path / f"cli-w{workers}"
        result = sediment_cli("export", "rlvr", "--target", "nemo-gym", "--from", str(theirs), "--out", str(out),
                              "--workers", workers)
        assert result.returncode == 0, result.stderr
        snapshots.append(snapshot(out))
    assert snapshots[0] == snapshots[1] and snapshots[0]


IDENTITY = {"repository_provider": "github", "repository_host": "github.com", "repository_id": "7"}


def identified_loop(session: str, sha: str, result: str = "passed") -> Rollout:
    """A tool loop whose commit and CI are of GitHub repository 7 (``owner/repo``)."""
    from sediment.model.facts import RepositoryIdentity
    from sediment.model.rollout import CommitRef

    identity = RepositoryIdentity(provider="github", host="github.com", repository_id="7")
    ci = outcome(f"{session}-o", sha, result, run_id=session, **IDENTITY)
    return tool_loop(session, sha, commits=[CommitRef(repo="owner/repo", commit_sha=sha, repository_identity=identity)],
                     outcomes=[ci])


def rename_line(rename_id: str, old: str, new: str, *, repository_id: str = "7", delivery: str = "d1") -> bytes:
    return record_line({"schema_version": 1, "rename_id": rename_id, "org_id": ORG, "repository_provider": "github",
                        "repository_host": "github.com", "repository_id": repository_id, "old_repo": old,
                        "new_repo": new, "source_event_id": delivery, "occurred_at": None,
                        "captured_at": "2026-01-05T11:00:00+00:00"})


def nemo_rows(bundle: Path, out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    summary = export(bundle, out, "nemo-gym", None)
    rows = [json.loads(line) for path in sorted(out.glob("rollouts*.jsonl")) for line in path.read_text().splitlines()]
    return summary, rows


def test_a_v4_bundles_repository_population_resolves_its_identified_ci(tmp_path: Path) -> None:
    """Upstream Rollouts of an identified repository resolve with the bundle's population (as
    from our own bundle of them); its renames apply (the label is the smallest name); without
    the outcome in the population, or with two copies of one rename delivery that disagree, the
    outcome is declined with its reason, per source outcome."""
    sha = "e" * 40
    loops = [identified_loop("s1", sha), identified_loop("s2", sha, "failed")]
    ours_summary, ours = nemo_rows(write_bundle(loops, tmp_path / "ours", org_id=ORG, policy=POLICY,
                                                quarantine_revision=0), tmp_path / "a")
    summary, rows = nemo_rows(write_v4_bundle(loops, tmp_path / "v4"), tmp_path / "b")
    assert rows == ours and comparable(summary)["rollout_skipped"] == comparable(ours_summary)["rollout_skipped"] == {}
    assert {r["metadata"]["repository_identity"]["repository_id"] for r in rows} == {"7"}
    assert sorted(r.get("reward") for r in rows if r["metadata"]["segment_index"] == 0) == [0.0, 1.0]

    renamed = write_v4_bundle(loops, tmp_path / "renamed", populations={
        "repository_renames": [rename_line("r1", "owner/aaa", "owner/repo")]})
    _, rows = nemo_rows(renamed, tmp_path / "c")
    assert {r["metadata"]["ci_resolution"]["repo"] for r in rows} == {"owner/aaa"}  # the smallest name

    absent = write_v4_bundle(loops, tmp_path / "absent", populations={"repository_identities": []})
    summary, rows = nemo_rows(absent, tmp_path / "d")
    assert summary["rollout_skipped"] == {"repository_source_absent": 2} and all("reward" not in r for r in rows)

    conflicting = write_v4_bundle(loops, tmp_path / "conflict", populations={"repository_renames": [
        rename_line("r1", "owner/old", "owner/repo"), rename_line("r2", "owner/old", "owner/repo", repository_id="8")]})
    opened = open_bundle(conflicting)
    assert opened.repositories.rename_conflicts == 2
    summary, _ = nemo_rows(conflicting, tmp_path / "e")
    assert summary["rollout_skipped"] == {"repository_identity_conflict": 2}


def test_the_demos_rollouts_export_identically_from_a_v4_bundle(tmp_path: Path) -> None:
    """The demo's Rollouts (derived from ingested calls, webhooks and JUnit reports), written as
    a v4 bundle, export every target byte for byte as the demo exported them from its own bundle
    (which tests/test_golden_demo.py pins)."""
    from sediment.demo import run_demo
    from sediment.host.registry import load_registry
    from sediment.settings import SettingsSources

    demo = run_demo(tmp_path / "demo")
    ours = open_bundle(demo["bundle"])
    v4 = open_bundle(write_v4_bundle(list(ours), tmp_path / "demo-v4", policy=upstream_policy(ours.manifest.policy),
                                     quarantine_revision=ours.manifest.quarantine_revision,
                                     fragmented=ours.manifest.fragmented, skipped=ours.manifest.skipped))
    assert isinstance(v4, V4Bundle) and v4.manifest.fragmented == ours.manifest.fragmented and len(v4) == len(ours)
    registry = load_registry()
    loaded = SettingsSources.load(config_file=tmp_path / "demo" / "inputs" / "settings.toml", environ={})
    installed = set(registry.targets) | set(registry.profiles) | set(registry.manifests)
    settings = SettingsSources(config={k: v for k, v in loaded.config.items() if k in installed},
                               config_path=loaded.config_path)
    assert set(demo["exports"]) == {"sediment", "swe-bench", "nemo-gym", "sft", "dpo", "diff-sft", "recovery"}  # objectives without targets read no v4 bundle yet
    for target in sorted(registry.targets):
        out = tmp_path / "exports" / target
        export_rlvr_from_rollouts(v4, MirrorRoot(Path(demo["home"]) / "mirrors"), out, target=target,
                                  split_enabled=v4.split_enabled, registry=registry, settings=settings,
                                  fragmented=v4.manifest.fragmented)
        expected = snapshot(tmp_path / "demo" / "exports" / target)
        assert snapshot(out) == expected, f"{target} differs from the export of the demo's own bundle"
        assert any(name.startswith("tasks") or name.startswith("rollouts") for name in expected)


# --- the policy digest -----------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [
    POLICY,
    DerivationPolicy(split=SplitPolicy(eval_fraction=0.25)),
    DerivationPolicy(split=SplitPolicy(eval_fraction=0.0)),
    DerivationPolicy(attribution=AttributionPolicy(
        post_push_grace_period_minutes=0, max_commits_per_push=3,
        git_notes=SimilarityWindow(min_similarity=0.45, lookback_window_minutes=1),
        jaccard=SimilarityWindow(min_similarity=1.0, lookback_window_minutes=120))),
])
def test_our_policy_digest_is_upstreams_for_the_same_resolved_policy(tmp_path: Path, policy: DerivationPolicy) -> None:
    written = upstream_policy(policy)
    assert policy.digest == upstream_digest(written)
    assert DerivationPolicy.model_validate(written) == policy
    provenance = PROVENANCE.model_copy(update={"policy_digest": policy.digest})
    r = tool_loop("s1", None, split=assign_split("s1", policy.split.eval_fraction), provenance=provenance)
    bundle = open_bundle(write_v4_bundle([r], tmp_path / "b", policy=written))
    assert bundle.manifest.policy == policy and bundle.manifest.policy_digest == policy.digest


def test_an_integer_spelled_policy_keeps_the_manifests_digest(tmp_path: Path) -> None:
    """Upstream keeps a TOML integer as written (``eval_fraction = 0``) and hashes that spelling;
    our model reads it as the float 0.0, whose spelling hashes differently. The manifest's digest
    is verified against the policy as written, and it is the one the Rollouts carry."""
    written = upstream_policy(DerivationPolicy(split=SplitPolicy(eval_fraction=0.0)))
    written["split"]["eval_fraction"] = 0
    written["attribution"]["jaccard"]["min_similarity"] = 1
    digest = upstream_digest(written)
    r = tool_loop("s7", None, split="train", provenance=PROVENANCE.model_copy(update={"policy_digest": digest}))
    bundle = open_bundle(write_v4_bundle([r], tmp_path / "b", policy=written))
    assert bundle.manifest.policy_digest == digest != bundle.manifest.policy.digest
    assert bundle.manifest.policy.split.eval_fraction == 0.0 and not bundle.split_enabled
    assert bundle[0].provenance.policy_digest == digest


# --- refusals ----------------------------------------------------------------------------------


def _cap_exceeded(path: Path) -> None:
    rewrite(path, "repository_renames", [record_line({"rename_id": f"r{i}"}) for i in range(POPULATION_ROW_CAP + 1)])


def _drop_call(path: Path) -> None:
    rewrite(path, "inference_calls", [line for line in lines_of(path, "inference_calls") if b"s2-c1" not in line])


def _swap_rollouts(path: Path) -> None:
    lines = lines_of(path, "rollouts")
    rewrite(path, "rollouts", [lines[1], lines[0], *lines[2:]])


def _flip_split(record: dict[str, Any]) -> None:
    record["split"] = "eval" if record["split"] == "train" else "train"


def _duplicate_inner_key(line: bytes) -> bytes:
    inner = json.loads(line)["record_json"]
    return (json.dumps({"record_json": inner[:-1] + ',"split":"train"}'}, separators=(",", ":")) + "\n").encode()


def _other_session(record: dict[str, Any]) -> None:
    record["session_id"] = "s3"


REFUSALS: list[tuple[str, Callable[[Path], object], str]] = [
    ("wrong hash", lambda p: edit_manifest(p, lambda m: m["files"]["rollouts"].update(sha256="0" * 64)),
     r"^rollouts\.jsonl does not match the sha256 and size in the manifest$"),
    ("wrong hash of a file not read yet", lambda p: (p / "inference_call_identities.jsonl").write_bytes(
        (p / "inference_call_identities.jsonl").read_bytes().replace(b"s1-c0", b"s1-c9")),
     r"^inference_call_identities\.jsonl does not match the sha256 and size in the manifest$"),
    ("missing file", lambda p: (p / "repository_identities.jsonl").unlink(),
     r"^not a complete v4 bundle: .*repository_identities\.jsonl is missing$"),
    ("extra manifest key", lambda p: edit_manifest(p, lambda m: m.update(comment="reviewed")),
     r"^manifest\.json: keys differ from a v4 manifest: missing \[\], unknown \['comment'\]$"),
    ("missing manifest key", lambda p: edit_manifest(p, lambda m: m.pop("excluded")),
     r"^manifest\.json: keys differ from a v4 manifest: missing \['excluded'\], unknown \[\]$"),
    ("manifest value of the wrong type", lambda p: edit_manifest(p, lambda m: m.update(quarantine_revision="0")),
     r"^manifest\.json: quarantine_revision must be an integer >= 0, not '0'$"),
    ("unsupported record encoding", lambda p: edit_manifest(p, lambda m: m.update(record_encoding="v2")),
     r"^manifest\.json: record_encoding 'v2' is not supported"),
    ("unsupported population marker", lambda p: edit_manifest(p, lambda m: m.update(repository_population="x")),
     r"^manifest\.json: repository_population 'x' is not supported"),
    ("policy digest", lambda p: edit_manifest(p, lambda m: m["policy"]["split"].update(eval_fraction=0.2)),
     r"^manifest\.json: policy_digest does not match its policy$"),
    ("unknown policy key", lambda p: edit_manifest(p, lambda m: m["policy"]["split"].update(mode="hash")),
     r"^manifest\.json: policy\.split keys differ from a v4 manifest: missing \[\], unknown \['mode'\]$"),
    ("Rollout implementation version", lambda p: edit_manifest(
        p, lambda m: m["implementation_versions"].update(rollout="3")),
     r"^manifest\.json: implementation_versions\.rollout is '3'; this Sediment reads Rollout implementation "),
    ("counts disagree with files", lambda p: edit_manifest(p, lambda m: m["counts"].update(rollouts=9)),
     r"^manifest\.json: counts\.rollouts is 9; files\.rollouts\.rows is 5$"),
    ("row count", lambda p: edit_manifest(p, lambda m: (m["files"]["rollouts"].update(rows=4),
                                                        m["counts"].update(rollouts=4))),
     r"^rollouts\.jsonl has 5 rows; the manifest says 4$"),
    ("row cap exceeded", _cap_exceeded,
     rf"^repository_renames\.jsonl has {POPULATION_ROW_CAP + 1} rows, beyond the {POPULATION_ROW_CAP}-row cap"),
    ("duplicate key in a line", lambda p: edit_line(p, "rollouts", 2, lambda b: b.replace(
        b'{"record_json":', b'{"record_json":"{}","record_json":', 1)),
     r"^invalid bundle record at rollouts\.jsonl line 3: duplicate key 'record_json'$"),
    ("duplicate key in a record", lambda p: edit_line(p, "rollouts", 1, _duplicate_inner_key),
     r"^invalid bundle record at rollouts\.jsonl line 2: duplicate key 'split'$"),
    ("trailing data", lambda p: edit_line(p, "inference_calls", 4, lambda b: b[:-1] + b" {}\n"),
     r"^invalid bundle record at inference_calls\.jsonl line 5: Extra data"),
    ("non-finite token outside a record", lambda p: rewrite(p, "attributed_completions", [b'{"record_json":NaN}\n']),
     r"^invalid bundle record at attributed_completions\.jsonl line 1: non-finite number NaN outside a record$"),
    ("a line without its newline", lambda p: edit_line(p, "rollouts", 4, lambda b: b[:-1]),
     r"^invalid bundle record at rollouts\.jsonl line 5: the line does not end with a newline$"),
    ("unknown field in a Rollout record", lambda p: edit_record(p, "rollouts", 0, lambda r: r.update(tool_sets=[])),
     r"^invalid bundle record at rollouts\.jsonl line 1: unknown field 'tool_sets' \(not a field of a v4 Rollout record\)$"),
    ("missing field in a Rollout record", lambda p: edit_record(p, "rollouts", 0, lambda r: r.pop("commits")),
     r"^invalid bundle record at rollouts\.jsonl line 1: missing field 'commits' \(a v4 Rollout record has every "
     r"field\)$"),
    ("unknown field in a Turn", lambda p: edit_record(p, "rollouts", 1, lambda r: r["segments"][0][2].update(model="m")),
     r"^invalid bundle record at rollouts\.jsonl line 2: segments\.0\.2: unknown field 'model' \(not a field of a v4 Turn\)$"),
    ("unknown field deeper in a record", lambda p: edit_record(
        p, "rollouts", 0, lambda r: r["terminal_outcomes"][0].update(colour="green")),
     r"^invalid bundle record at rollouts\.jsonl line 1: terminal_outcomes\.0\.colour: Extra inputs are not permitted$"),
    ("unknown field in a call record", lambda p: edit_record(p, "inference_calls", 3, lambda r: r.update(tools=None)),
     r"^invalid bundle record at inference_calls\.jsonl line 4: unknown field 'tools' \(not a field of a v4 InferenceCall record\)$"),
    ("out-of-order Session", _swap_rollouts, r"^rollouts\.jsonl line 2: rollouts are not in Session-id order$"),
    ("wrong split", lambda p: edit_record(p, "rollouts", 3, _flip_split),
     r"^rollouts\.jsonl line 4: split does not match the policy's eval split$"),
    ("provenance", lambda p: edit_record(p, "rollouts", 0, lambda r: r["provenance"].update(policy_version="3")),
     r"^rollouts\.jsonl line 1: provenance differs from the manifest$"),
    ("referenced call absent", _drop_call,
     r"^rollouts\.jsonl line 2: segments\.0\.1 references inference call 's2-c1', which inference_calls\.jsonl "
     r"does not hold$"),
    ("duplicate call", lambda p: rewrite(p, "inference_calls", [*lines_of(p, "inference_calls"),
                                                                lines_of(p, "inference_calls")[0]]),
     r"^inference_calls\.jsonl line 21: inference_call_id 's1-c0' appears more than once$"),
    ("call of another Session", lambda p: edit_record(
        p, "inference_calls", next(i for i, b in enumerate(lines_of(p, "inference_calls")) if b"s5-c2" in b),
        _other_session), r"^rollouts\.jsonl line 4: segments\.0\.2: inference call 's5-c2' belongs to Session 's3'$"),
    ("a Turn that is not its call's", lambda p: edit_record(
        p, "rollouts", 2, lambda r: r["segments"][1][0].update(completion="something else")),
     r"^rollouts\.jsonl line 3: segments\.1\.0: completion differs from the output of inference call 's3-c3'$"),
    ("new_messages that are not its call's", lambda p: edit_record(
        p, "rollouts", 0, lambda r: r["segments"][0][1]["new_messages"][-1]["parts"][0].update(result="edited")),
     r"^rollouts\.jsonl line 1: segments\.0\.1: new_messages differ from the input of inference call 's1-c1'$"),
    ("tool_calls that are not its call's", lambda p: edit_record(
        p, "rollouts", 1, lambda r: r["segments"][0][0]["tool_calls"][0]["arguments"].update(path="other.py")),
     r"^rollouts\.jsonl line 2: segments\.0\.0: tool_calls differ from the output of inference call 's2-c0'$"),
    ("org", lambda p: edit_manifest(p, lambda m: m.update(org_id="other")),
     r"^repository_identities\.jsonl line 1: org_id 'acme' differs from the manifest$"),  # the first population read
]


@pytest.mark.parametrize("damage, message", [(d, m) for _, d, m in REFUSALS], ids=[name for name, _, _ in REFUSALS])
def test_a_damaged_v4_bundle_is_refused_before_any_export(tmp_path: Path, rollouts: list[Rollout],
                                                          damage: Callable[[Path], object], message: str) -> None:
    path = write_v4_bundle(rollouts, tmp_path / "v4")
    damage(path)
    for workers in (1, 3):
        with pytest.raises(BundleError) as raised:
            open_bundle(path, workers=workers)
        assert "\n" not in str(raised.value)
        assert re.search(message, str(raised.value)), str(raised.value)
    out = tmp_path / "out"
    result = sediment_cli("export", "rlvr", "--target", "nemo-gym", "--from", str(path), "--out", str(out))
    assert result.returncode == 4, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert re.search(message.lstrip("^"), result.stderr.strip().removeprefix("error: ")), result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_other_manifests_keep_the_existing_refusals(tmp_path: Path, rollouts: list[Rollout]) -> None:
    path = write_v4_bundle(rollouts, tmp_path / "v3")
    edit_manifest(path, lambda m: m.update(bundle_schema_version=3))
    with pytest.raises(BundleError, match="not a sediment-rollout-bundle: bundle_format is None"):
        open_bundle(path)
    ours = write_bundle(rollouts, tmp_path / "ours", org_id=ORG, policy=POLICY, quarantine_revision=0)
    edit_manifest(ours, lambda m: m.update(bundle_schema_version=5))
    with pytest.raises(BundleError, match="unsupported bundle_schema_version 5"):
        open_bundle(ours)


def test_attributed_completions_are_checked_only_as_lines(tmp_path: Path, rollouts: list[Rollout]) -> None:
    """attributed_completions (not read yet): hash, rows and strict lines, nothing more."""
    anything = [record_line({"not": "a schema this Sediment checks", "n": float("nan")})]
    path = write_v4_bundle(rollouts, tmp_path / "v4", populations={"attributed_completions": anything})
    assert len(open_bundle(path)) == 5
    rewrite(path, "attributed_completions", [b'{"record_json":"[1, 2]"}\n'])
    with pytest.raises(BundleError, match="attributed_completions.jsonl line 1: record_json must hold a JSON object"):
        open_bundle(path)


RENAME = {"schema_version": 1, "rename_id": "r1", "org_id": ORG, "repository_provider": "github",
          "repository_host": "github.com", "repository_id": "7", "old_repo": "owner/old", "new_repo": "owner/repo",
          "source_event_id": "d1", "occurred_at": None, "captured_at": "2026-01-05T12:00:00+00:00"}


@pytest.mark.parametrize("name, lines, message", [
    ("repository_identities", [record_line({"not": "evidence"})],
     r"^invalid bundle record at repository_identities\.jsonl line 1: unknown field 'not'"),
    ("repository_identities", lambda p: [record_line({**json.loads(json.loads(lines_of(p, "repository_identities")[0])
                                                                  ["record_json"]), "repository_provider": "github", "repository_host": "GitHub.com", "repository_id": "7"})],
     r"^invalid bundle record at repository_identities\.jsonl line 1: .*lowercase DNS host"),
    ("repository_identities", lambda p: list(reversed(lines_of(p, "repository_identities"))),
     r"^repository_identities\.jsonl line 2: records are not in population order$"),
    ("repository_renames", [record_line({**RENAME, "repository_id": None})],
     r"^invalid bundle record at repository_renames\.jsonl line 1: repository_id: "),
    ("repository_renames", [record_line({**RENAME, "new_repo": "owner/old"})],
     r"^invalid bundle record at repository_renames\.jsonl line 1: .*two different repositories"),
    ("repository_renames", [record_line({**RENAME, "occurred_at": "yesterday"})],
     r"^invalid bundle record at repository_renames\.jsonl line 1: occurred_at: "),
    ("repository_renames", [record_line({**RENAME, "rename_id": "r2"}), record_line(RENAME)],
     r"^repository_renames\.jsonl line 2: records are not in population order$"),
])
def test_repository_populations_are_read_strictly(tmp_path: Path, rollouts: list[Rollout], name: str,
                                                  lines: Any, message: str) -> None:
    """The two repository populations become the context exports resolve CI with: every record
    is validated (exact fields, identity triple, names, times) and their order is checked."""
    path = write_v4_bundle(rollouts, tmp_path / "v4")
    assert len(open_bundle(path).repositories.evidence) == 4  # the four CI outcomes
    rewrite(path, name, lines(path) if callable(lines) else lines)
    for workers in (1, 3):
        with pytest.raises(BundleError, match=message):
            open_bundle(path, workers=workers)


def test_first_bad_line_is_named_whatever_the_worker_count(tmp_path: Path, rollouts: list[Rollout]) -> None:
    many = [tool_loop(f"s{i:02d}", None, split=assign_split(f"s{i:02d}", 0.1)) for i in range(12)]
    path = write_v4_bundle(many, tmp_path / "v4")
    for index in (4, 10):  # a later bad line too: the first is the one reported
        edit_record(path, "rollouts", index, _flip_split)
    for workers in (1, 2, 3, 5):
        with pytest.raises(BundleError, match=r"^rollouts\.jsonl line 5: split does not match"):
            open_bundle(path, workers=workers)


def test_changed_after_opening_is_an_error_not_a_wrong_row(tmp_path: Path, rollouts: list[Rollout]) -> None:
    path = write_v4_bundle(rollouts, tmp_path / "v4")
    bundle = open_bundle(path)
    (path / "inference_calls.jsonl").write_bytes(b"")
    with pytest.raises(BundleError, match="rollouts.jsonl line 1 cannot be read back"):
        bundle[0]
