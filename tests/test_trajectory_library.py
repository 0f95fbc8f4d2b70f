"""The persistent trajectory library: shards, manifest, derived indexes, rankings and collapsing."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from sediment.trajectory import facets, rankings, synthetic
from sediment.trajectory.library import Library, LibraryError, gzip_bytes
from sediment.trajectory.record import TrajectoryError


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def gz_rows(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rb") as handle:
        return [json.loads(line) for line in handle]


def variant(base: dict[str, Any], suffix: str, **changes: Any) -> dict[str, Any]:
    """The record of ``base`` fields read from another locator (same interaction), with ``changes``."""
    return synthetic.rebuild(base, source={**base["source"], "locator": f"{base['source']['locator']} ({suffix})"},
                             **changes)


def test_shuffled_import_order_gives_identical_bytes(tmp_path: Path) -> None:
    records = synthetic.records(5, 80)
    shuffled = records[:]
    random.Random(11).shuffle(shuffled)
    Library(tmp_path / "a").import_records(records, materialize_all=True)
    Library(tmp_path / "b").import_records(shuffled, materialize_all=True)
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    # split over two imports in opposite orders: the same shard set, indexes and manifest
    Library(tmp_path / "c").import_records(records[:40])
    Library(tmp_path / "c").import_records(records[40:])
    Library(tmp_path / "d").import_records(shuffled_back := records[40:][::-1])
    Library(tmp_path / "d").import_records(records[:40][::-1])
    assert shuffled_back
    assert snapshot(tmp_path / "c") == snapshot(tmp_path / "d")


def test_manifest_pins_every_shard_and_shards_are_deterministic_gzip(tmp_path: Path) -> None:
    library = Library(tmp_path)
    library.import_records(synthetic.records(1, 30))
    manifest = library.manifest()
    assert manifest["record_count"] == 30
    assert sum(s["records"] for s in manifest["shards"]) == 30
    for shard in manifest["shards"]:
        data = (tmp_path / shard["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard["sha256"]
        assert data[4:8] == b"\0\0\0\0"  # mtime 0
        assert data[3] & 0x08 == 0  # no file name
        assert gzip_bytes(gzip.decompress(data)) == data
    for derived in manifest["derived"]:
        assert hashlib.sha256((tmp_path / derived["path"]).read_bytes()).hexdigest() == derived["sha256"]
    assert not (tmp_path / "all.jsonl.gz").exists()


def test_records_are_stored_exactly(tmp_path: Path) -> None:
    records = synthetic.records(2, 12)
    library = Library(tmp_path)
    library.import_records(records)
    assert list(library.records()) == sorted(records, key=lambda r: r["trajectory_id"])
    for record in records:
        assert library.record(record["trajectory_id"]) == record
        assert facets.as_record(library.trajectory(record["trajectory_id"])) == record
    with pytest.raises(LibraryError, match="no trajectory"):
        library.record("trajectory:absent")


def test_reimport_changes_nothing_and_more_never_rewrites(tmp_path: Path) -> None:
    records = synthetic.records(3, 50)
    library = Library(tmp_path)
    library.import_records(records[:30])
    before = snapshot(tmp_path)
    mtimes = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    again = library.import_records(records[:30])
    assert (again.added, again.already_present) == (0, 30)
    assert snapshot(tmp_path) == before
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == mtimes
    more = library.import_records(records)
    assert (more.added, more.already_present) == (20, 30)
    after = snapshot(tmp_path)
    for path, digest in before.items():
        if path.startswith("shards/"):
            assert after[path] == digest
    assert len([p for p in after if p.startswith("shards/")]) == 2
    assert library.manifest()["record_count"] == 50


def test_materialize_all_holds_every_record_sorted(tmp_path: Path) -> None:
    records = synthetic.records(4, 25)
    library = Library(tmp_path)
    library.import_records(records[:10])
    library.import_records(records[10:], materialize_all=True)
    rows = gz_rows(tmp_path / "all.jsonl.gz")
    assert rows == sorted(records, key=lambda r: r["trajectory_id"])
    assert library.manifest()["materialized"]["records"] == 25


def _fields() -> dict[str, Any]:
    fields = synthetic.fields(9, 0)
    fields["completeness"] = "complete"
    fields["missing_fields"] = []
    fields["split"] = "train"
    fields["provenance"] = {**fields["provenance"], "demonstrator": "agent"}
    fields["outcome"] = {"success": True, "status": "resolved", "reward": 1.0, "termination_reason": "submitted"}
    fields["verification"] = {"method": "tests", "executable": True, "independently_reproduced": False,
                              "evidence": [{"kind": "test_execution", "summary": "tests ran"}]}
    fields["events"] = [{**e, "supervised": e["role"] == "assistant"} for e in fields["events"]]
    return fields


def _base() -> dict[str, Any]:
    return synthetic.rebuild(_fields())


def test_collapse_only_when_everything_agrees(tmp_path: Path) -> None:
    fields = _fields()
    base = synthetic.rebuild(fields)
    same = variant(fields, "-copy")
    conflicting = variant(fields, "-failed", outcome={**fields["outcome"], "success": False, "reward": 0.0})
    other_reward = variant(fields, "-reward", outcome={**fields["outcome"], "reward": 0.5})
    library = Library(tmp_path)
    library.import_records([base, same, conflicting, other_reward])
    rows = library.rankings()
    assert len(rows) == 3
    kept = next(r for r in rows if base["trajectory_id"] in r["duplicate_provenance"]["contributing_trajectory_ids"])
    assert kept["duplicate_provenance"]["contributing_trajectory_ids"] == sorted([base["trajectory_id"],
                                                                                  same["trajectory_id"]])
    assert {r["interaction_hash"] for r in rows} == {kept["interaction_hash"]}  # action-identical, kept apart
    duplicates = gz_rows(tmp_path / "duplicate_provenance.jsonl.gz")
    assert {d["source_locator"] for d in duplicates} == {base["source"]["locator"], same["source"]["locator"]}
    assert {d["retained_trajectory_id"] for d in duplicates} == {kept["trajectory_id"]}
    # the canonical shards still hold all four records
    assert library.manifest()["record_count"] == 4


def test_ranks_compare_only_the_same_task_and_environment(tmp_path: Path) -> None:
    fields = _fields()
    base = synthetic.rebuild(fields)
    reproduced = variant(fields, "-reproduced", verification={**fields["verification"], "independently_reproduced": True},
                         events=fields["events"][:4])  # a different interaction
    unknown = variant(fields, "-unknown", outcome={"success": None, "status": None, "reward": None,
                                                   "termination_reason": "submitted"},
                      verification={"method": "none", "executable": False, "independently_reproduced": False,
                                    "evidence": []})
    truncated = variant(fields, "-truncated", completeness="truncated",
                        missing_fields=[{"field": "events", "reason": "cost limit"}])
    elsewhere = variant(fields, "-other-env", metadata={"environment_key": "docker:other"})
    other_task = variant(fields, "-other-task", task_key="synthetic:another")
    library = Library(tmp_path)
    library.import_records([base, reproduced, unknown, truncated, elsewhere, other_task])
    by_id = {r["trajectory_id"]: r for r in library.rankings()}
    assert by_id[reproduced["trajectory_id"]]["quality_tier"] == 2
    assert by_id[base["trajectory_id"]]["quality_tier"] == 3
    assert by_id[unknown["trajectory_id"]]["quality_tier"] == 4
    assert by_id[unknown["trajectory_id"]]["outcome_category"] == "unknown"
    assert by_id[truncated["trajectory_id"]]["quality_tier"] == 5
    ranks = [by_id[r["trajectory_id"]]["within_task_rank"] for r in (reproduced, base, unknown, truncated)]
    assert ranks == [1, 2, 3, 4]
    assert by_id[elsewhere["trajectory_id"]]["within_task_rank"] == 1
    assert by_id[other_task["trajectory_id"]]["within_task_rank"] == 1
    same_environment = [r["trajectory_id"] for r in library.alternatives(base["task_key"])
                        if r["environment_key"] == by_id[base["trajectory_id"]]["environment_key"]]
    assert same_environment == [r["trajectory_id"] for r in (reproduced, base, unknown, truncated)]
    assert library.best_verified(base["task_key"]) == reproduced
    assert library.best_verified("synthetic:absent") is None
    assert {r["quality_tier"] for r in library.by_quality_tier(4, 5)} == {4, 5}
    with pytest.raises(LibraryError, match="1-5"):
        library.by_quality_tier(6)
    for row in by_id.values():
        assert row["ranking_reasons"] and row["ranking_reasons"][0].startswith(f"tier {row['quality_tier']}")


def test_efficiency_breaks_ties_only_between_successes() -> None:
    base = rankings.summarize(_base())
    longer = {**base, "assistant_count": base["assistant_count"] + 3}
    assert rankings.tie_break_score(base) > rankings.tie_break_score(longer)
    unknown = {**base, "outcome_category": "unknown"}
    assert rankings.tie_break_score(unknown) == rankings.tie_break_score({**longer, "outcome_category": "unknown"})
    weaker = {**base, "verification_strength": "source_reported"}
    fewer_turns_but_weaker = {**weaker, "assistant_count": 0}
    assert rankings.tie_break_score(base) > rankings.tie_break_score(fewer_turns_but_weaker)


def test_one_split_per_task_key_across_sources(tmp_path: Path) -> None:
    fields = _fields()
    base = synthetic.rebuild(fields)
    protected = synthetic.rebuild(fields, split="test", source={**fields["source"], "source_id": "other-source"},
                                  events=fields["events"][:4])
    library = Library(tmp_path)
    library.import_records([*synthetic.records(6, 40), base, protected])
    rows = gz_rows(tmp_path / "task_splits.jsonl.gz")
    assert len({r["task_key"] for r in rows}) == len(rows)
    row = next(r for r in rows if r["task_key"] == base["task_key"])
    assert row["split"] == "eval" and row["source_ids"] == ["other-source", "synthetic"]
    assert library.task_splits()[base["task_key"]] == "eval"
    training = set(library.partition("training_eligible"))
    assert protected["trajectory_id"] not in training and base["trajectory_id"] in training


def test_partitions_and_index_agree(tmp_path: Path) -> None:
    library = Library(tmp_path)
    library.import_records(synthetic.records(8, 60))
    rows = library.rankings()
    for name, category in (("successful", "success"), ("unsuccessful", "failure"), ("unknown", "unknown")):
        assert library.partition(name) == sorted(r["trajectory_id"] for r in rows if r["outcome_category"] == category)
    assert library.partition("training_eligible") == sorted(r["trajectory_id"] for r in rows if r["sft_eligible"])
    joined = library.query("SELECT source_id, model, scaffold, task_key, within_task_rank, outcome_category, "
                           "quality_tier FROM library ORDER BY trajectory_id")
    assert len(joined) == len(rows)
    assert {j["model"] for j in joined} == {"model-a", "model-b"}


def test_a_refused_record_leaves_the_library_unchanged(tmp_path: Path) -> None:
    library = Library(tmp_path)
    library.import_records(synthetic.records(1, 5))
    before = snapshot(tmp_path)

    def refuse(record: dict[str, Any]) -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        library.import_records(synthetic.records(2, 5), validate=refuse)
    assert snapshot(tmp_path) == before
    broken = synthetic.record(2, 1)
    broken["task_key"] = "synthetic:tampered"  # no longer the content address
    with pytest.raises(TrajectoryError, match="trajectory_id"):
        library.import_records([synthetic.record(2, 0), broken])
    assert snapshot(tmp_path) == before
