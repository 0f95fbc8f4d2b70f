"""The bundle format: lossless round trip, validation before export, atomic writing."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from sediment import export_rlvr_from_bundle
from sediment.bundle.read import open_bundle
from sediment.bundle.write import write_bundle
from sediment.errors import BundleError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.model.policy import DerivationPolicy, SplitPolicy
from sediment.split import assign_split
from sediment.testing import ORG, POLICY, outcome, read_rows, rollout, snapshot


def write(rollouts: list, path: Path, policy: DerivationPolicy = POLICY) -> Path:
    return write_bundle(rollouts, path, org_id=ORG, policy=policy, quarantine_revision=0,
                        fragmented={"input_history_changed": 2})


def rewrite(path: Path, lines: list[str]) -> None:
    """Replace rollouts.jsonl and keep the manifest's size and sha256 consistent with it."""
    import hashlib

    body = "\n".join(lines) + "\n"
    (path / "rollouts.jsonl").write_text(body)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"]["rollouts.jsonl"] |= {"bytes": len(body), "sha256": hashlib.sha256(body.encode()).hexdigest()}
    (path / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    sha = "b" * 40
    weird = outcome("o1", sha, raw={"nan": float("nan"), "inf": float("-inf"), "\udc80": "x\ud800", "nul": "a\x00b"})
    original = [rollout(f"s{i}", commits=[sha], outcomes=[weird], split=assign_split(f"s{i}", 0.1))
                for i in range(5)]
    bundle = open_bundle(write(list(reversed(original)), tmp_path / "b"))
    assert len(bundle) == 5 and bundle.manifest.fragmented["input_history_changed"] == 2
    restored = list(bundle)
    assert [r.session_id for r in restored] == sorted(r.session_id for r in original)
    raw = restored[0].terminal_outcomes[0].raw
    assert math.isnan(raw["nan"]) and raw["inf"] == float("-inf") and raw["\udc80"] == "x\ud800"
    assert raw["nul"] == "a\x00b"
    assert restored[2] == bundle[2]
    for line in (tmp_path / "b" / "rollouts.jsonl").read_text(encoding="ascii").splitlines():
        assert list(json.loads(line)) == ["record_json"]


def test_a_record_read_back_by_index_is_the_one_the_strict_parser_reads(tmp_path: Path) -> None:
    """``bundle[i]`` parses and validates the record text in one pass (pydantic's JSON mode);
    it gives what the strict parser gives (``iter``), non-finite numbers, astral characters,
    NUL and escapes included, and a record the one pass cannot read (a lone surrogate) takes the
    strict parser's path."""
    from sediment.bundle.format import parse_line
    from sediment.bundle.lines import fast_record_json

    sha = "c" * 40
    raws = [{"nan": float("nan"), "inf": float("inf"), "big": 10 ** 30, "tiny": 5e-324},
            {"astral": "\U0001f600 \u00e9", "nul": "a\x00b", "quote": '"\\/\n\t', "nested": [[{}], {"k": []}]},
            {"lone": "x\ud800"}]
    original = [rollout(f"s{i}", commits=[sha], outcomes=[outcome(f"o{i}", sha, raw=raw)],
                        split=assign_split(f"s{i}", 0.1)) for i, raw in enumerate(raws)]
    path = write(original, tmp_path / "b")
    bundle = open_bundle(path)
    strict = list(bundle)
    lines = (path / "rollouts.jsonl").read_bytes().splitlines(keepends=True)
    for index, line in enumerate(lines):
        fast = bundle[index]
        assert json.dumps(fast.model_dump(mode="json"), sort_keys=True) == \
            json.dumps(strict[index].model_dump(mode="json"), sort_keys=True)
        assert fast.terminal_outcomes[0].raw.keys() == strict[index].terminal_outcomes[0].raw.keys()
        assert fast_record_json(line) is not None
    nan_raw = bundle[[r.terminal_outcomes[0].raw.get("nan") is not None for r in strict].index(True)]
    assert math.isnan(nan_raw.terminal_outcomes[0].raw["nan"])
    assert nan_raw.terminal_outcomes[0].raw["big"] == 10 ** 30 and nan_raw.terminal_outcomes[0].raw["tiny"] == 5e-324
    lone = [r for r in (bundle[i] for i in range(len(bundle))) if "lone" in r.terminal_outcomes[0].raw]
    assert lone[0].terminal_outcomes[0].raw["lone"] == "x\ud800"  # the strict parser's reading
    assert parse_line(lines[1], 2, fast=True).model_dump_json() == bundle[1].model_dump_json()

def test_destination_rules(tmp_path: Path) -> None:
    write([], tmp_path / "b")
    with pytest.raises(BundleError, match="already exists"):
        write([], tmp_path / "b")
    with pytest.raises(BundleError, match="parent does not exist"):
        write([], tmp_path / "missing" / "b")
    assert [p.name for p in tmp_path.iterdir()] == ["b"]


@pytest.mark.parametrize("damage, message", [
    (lambda p: (p / "rollouts.jsonl").write_text(""), "sha256"),
    (lambda p: (p / "manifest.json").unlink(), "manifest.json is missing"),
    (lambda p: (p / "manifest.json").write_text('{"bundle_format": "sediment-rollout-bundle", "bundle_schema_version": 9}'),
     "unsupported bundle_schema_version 9"),
    (lambda p: (p / "manifest.json").write_text("{nope"), "cannot read bundle manifest"),
])
def test_damaged_bundles_are_refused(tmp_path: Path, damage, message: str) -> None:  # type: ignore[no-untyped-def]
    path = write([rollout("s1")], tmp_path / "b")
    damage(path)
    with pytest.raises(BundleError, match=message):
        open_bundle(path)


def _edit_manifest(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")


@pytest.mark.parametrize("change, message", [
    (lambda m: m.update(bundle_schema_version=2),
     r"^unsupported bundle_schema_version 2 \(this Sediment reads versions 3 and 4; derive the bundle again\)$"),
    (lambda m: m.update(implementation_versions={"rollout": "4"}), r"^unsupported implementation_versions"),
    (lambda m: m["files"].pop("repository_renames.jsonl"), r"^bundle manifest must list exactly"),
    (lambda m: m["counts"].update(repository_identities=7), r"^bundle manifest counts must be the rows"),
])
def test_a_bundle_without_its_repository_population_is_refused(tmp_path: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    """Version 2 bundles (written before repository identity) hold no population: derive again."""
    path = write([rollout("s1")], tmp_path / "b")
    _edit_manifest(path, change)
    with pytest.raises(BundleError, match=message):
        open_bundle(path)


def test_repository_records_are_validated_and_name_their_line(tmp_path: Path) -> None:
    import hashlib

    sha = "b" * 40
    identified = outcome("o1", sha, repository_provider="github", repository_host="github.com", repository_id="7")
    path = write([rollout("s1", outcomes=[outcome("o0", sha), identified])], tmp_path / "b")
    lines = (path / "repository_identities.jsonl").read_text().splitlines()
    assert len(lines) == 2
    record = json.loads(json.loads(lines[1])["record_json"])
    assert (record["source_fact_id"], record["repository_id"]) == ("o1", "7")
    record["repository_host"] = None  # a partial identity triple
    lines[1] = json.dumps({"record_json": json.dumps(record, sort_keys=True)})
    body = "\n".join(lines) + "\n"
    (path / "repository_identities.jsonl").write_text(body)
    _edit_manifest(path, lambda m: m["files"]["repository_identities.jsonl"].update(
        bytes=len(body), sha256=hashlib.sha256(body.encode()).hexdigest()))
    with pytest.raises(BundleError, match=r"^invalid bundle record at repository_identities\.jsonl line 2: .*"
                                          r"all present or all absent"):
        open_bundle(path)


def test_record_errors_name_the_line(tmp_path: Path) -> None:
    path = write([rollout("s1"), rollout("s2")], tmp_path / "b")
    lines = (path / "rollouts.jsonl").read_text().splitlines()
    record = json.loads(json.loads(lines[1])["record_json"])
    record["session_id"] = ""
    lines[1] = json.dumps({"record_json": json.dumps(record)})
    rewrite(path, lines)
    with pytest.raises(BundleError, match="rollouts.jsonl line 2: session_id"):
        open_bundle(path)


def test_split_must_match_policy(tmp_path: Path) -> None:
    wrong = "eval" if assign_split("s1", 0.1) == "train" else "train"
    with pytest.raises(BundleError, match="split does not match"):
        open_bundle(write([rollout("s1", split=wrong)], tmp_path / "b"))


def test_bundle_export_uses_policy_split(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    no_split = DerivationPolicy(split=SplitPolicy(eval_fraction=0.0))
    rollouts = [rollout(f"s{i}", split="train",
                        provenance=rollout("x").provenance.model_copy(update={"policy_digest": no_split.digest}))
                for i in range(3)]
    path = write(rollouts, tmp_path / "b", no_split)
    summary = export_rlvr_from_bundle(path, mirror_root, tmp_path / "out", target="nemo-gym",
                                      verifier_commands=VerifierCommands.empty())
    assert list(summary["written"]) == [str(tmp_path / "out" / "rollouts.jsonl")]
    assert summary["fragmented"]["input_history_changed"] == 2
    assert len(read_rows(tmp_path / "out" / "rollouts.jsonl")) == 3


def test_bundle_export_is_deterministic_over_write_order(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    rollouts = [rollout(f"s{i}", split=assign_split(f"s{i}", 0.1)) for i in range(12)]
    outputs = []
    for seed in range(3):
        shuffled = rollouts[:]
        random.Random(seed).shuffle(shuffled)
        path = write(shuffled, tmp_path / f"b{seed}")
        export_rlvr_from_bundle(path, mirror_root, tmp_path / f"o{seed}", target="sediment",
                                verifier_commands=VerifierCommands.empty())
        outputs.append(snapshot(tmp_path / f"o{seed}"))
    assert outputs[0] == outputs[1] == outputs[2]


def test_parallel_validation_reports_the_same_errors(tmp_path: Path) -> None:
    path = write([rollout(f"s{i}", split=assign_split(f"s{i}", 0.1)) for i in range(6)], tmp_path / "b")
    assert open_bundle(path, workers=3).order_keys() == open_bundle(path).order_keys()
    lines = (path / "rollouts.jsonl").read_text().splitlines()
    record = json.loads(json.loads(lines[4])["record_json"])
    record["org_id"] = "other"
    lines[4] = json.dumps({"record_json": json.dumps(record)})
    rewrite(path, lines)
    for workers in (1, 3):
        with pytest.raises(BundleError, match="line 5: org_id 'other' differs"):
            open_bundle(path, workers=workers)


def _bundle_of(tmp_path: Path, count: int) -> tuple[Path, list]:
    """A bundle whose lines differ in length (so byte ranges cut them at varied places)."""
    rollouts = [rollout(f"s{i:02d}", split=assign_split(f"s{i:02d}", 0.1),
                        outcomes=[outcome(f"o{i}-{k}", "a" * 40, "passed", run_id=f"{i}-{k}") for k in range(i % 4)])
                for i in range(count)]
    return write(rollouts, tmp_path / "b"), rollouts


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 7])
def test_byte_ranges_index_every_line_once(tmp_path: Path, workers: int) -> None:
    path, rollouts = _bundle_of(tmp_path, 11)
    bundle = open_bundle(path, workers=workers)
    assert len(bundle) == 11
    assert bundle.order_keys() == [(ORG, r.session_id) for r in rollouts]
    assert [bundle[i] for i in range(len(bundle))] == rollouts


def test_a_rollout_is_read_back_by_its_lines_length_and_a_bundle_cut_short_is_one_line(tmp_path: Path) -> None:
    path, rollouts = _bundle_of(tmp_path, 5)
    bundle = open_bundle(path)
    assert [bundle[i] for i in (4, 0, 3)] == [rollouts[4], rollouts[0], rollouts[3]]  # the last line too
    data = (path / "rollouts.jsonl").read_bytes()
    (path / "rollouts.jsonl").write_bytes(data[: len(data) - 10])  # changed after it was opened
    assert bundle[0] == rollouts[0]
    with pytest.raises(BundleError, match=r"^rollouts.jsonl line 5 cannot be read back: the file ends before it "
                                          r"does; the bundle changed after it was opened$"):
        bundle[4]


@pytest.mark.parametrize("bad", [0, 1, 5, 9, 10])
def test_first_bad_line_is_named_whatever_the_worker_count(tmp_path: Path, bad: int) -> None:
    path, _ = _bundle_of(tmp_path, 11)
    lines = (path / "rollouts.jsonl").read_text().splitlines()
    for index in (bad, 10):  # a later bad line too: the first one is the one reported
        record = json.loads(json.loads(lines[index])["record_json"])
        record["org_id"] = "other"
        lines[index] = json.dumps({"record_json": json.dumps(record)})
    rewrite(path, lines)
    for workers in (1, 2, 3, 4, 7):
        with pytest.raises(BundleError, match=rf"line {bad + 1}: org_id 'other' differs"):
            open_bundle(path, workers=workers)


def test_row_count_and_order_are_checked_whatever_the_worker_count(tmp_path: Path) -> None:
    path, _ = _bundle_of(tmp_path, 6)
    lines = (path / "rollouts.jsonl").read_text().splitlines()
    rewrite(path, [*lines[:3], lines[4], lines[3], *lines[5:]])
    for workers in (1, 2, 4):
        with pytest.raises(BundleError, match="line 5: rollouts are not in"):
            open_bundle(path, workers=workers)
    rewrite(path, lines[:5])
    for workers in (1, 2, 4):
        with pytest.raises(BundleError, match="has 5 rows; the manifest says 6"):
            open_bundle(path, workers=workers)
