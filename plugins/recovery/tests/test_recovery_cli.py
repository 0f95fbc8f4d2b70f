"""`sediment export recovery` as users run it (a real process over a real store and mirror):
the summary, `--json`, the refusals and their exit codes, the output-directory discipline, and
byte-identical files whatever order the Facts were ingested in."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import ORG, FactModel, FactStore, outcome, snapshot

TABLES = ("inference_calls", "session_commit_observations", "ci_outcomes")


def sediment(world: Any, *args: str, mirrors: bool = True, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ |= {"SEDIMENT_DATABASE_URL": world.store.url, "SEDIMENT_ORG_ID": ORG,
                "SEDIMENT_HOME": str(world.tmp / "home")}
    if mirrors:
        environ["SEDIMENT_MIRROR_PATH"] = str(world.mirrors.path)
    environ |= env or {}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=180, check=False)


def recoveries(world: Any) -> dict[str, str]:
    """Two pairs on main (one on each side of the split), with a flaky run between them, and a
    lone pass on another branch."""
    c = [world.git.commit({"calc.py": f"x = {i}\n"}, f"c{i}") for i in range(5)]
    world.session("s1", c[0])
    world.session("s7", c[2])  # an eval Session
    world.facts(outcome("o1", c[0], "failed", run_id="1", minutes=1),
                outcome("o2", c[1], "passed", run_id="2", minutes=2),
                outcome("o3", c[2], "failed", run_id="3", minutes=3),
                outcome("o4", c[3], "failed", run_id="4", attempt=1, minutes=4),
                outcome("o5", c[3], "passed", run_id="4", attempt=2, minutes=5),
                outcome("o6", c[3], "passed", run_id="6", minutes=6, branch="next"),
                outcome("o9", c[4], "passed", run_id="9", minutes=9))
    # main: o1 F → o2 P (a pair); o3 F, run 4 flaky (skipped), o9 P (a pair); next: o6 P alone
    return {"c0": c[0], "c1": c[1], "c2": c[2], "c4": c[4]}


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_the_summary_table_and_files(world: Any) -> None:
    recoveries(world)
    out = world.tmp / "out"
    result = sediment(world, "export", "recovery", "--out", str(out))
    assert result.returncode == 0, result.stderr
    said = lines(result.stderr)
    assert said[0] == "Recovery export · objective recovery"
    [derived] = [line.split("│")[1:4] for line in said if "pairs derived" in line]
    assert [cell.strip() for cell in derived] == ["pairs derived", "2", "unreliable_ci_resolution: 1"]
    [rows] = [line.split("│")[1:4] for line in said if "recovery rows" in line]
    assert [cell.strip() for cell in rows] == ["recovery rows", "2", "-"]
    assert f"✓wrote {out / 'recovery.train.jsonl'} (1 rows)" in said
    assert f"✓wrote {out / 'recovery.eval.jsonl'} (1 rows)" in said
    assert result.stdout == ""
    train = [json.loads(line) for line in (out / "recovery.train.jsonl").read_text(encoding="ascii").splitlines()]
    assert [r["split"] for r in train] == ["train"]
    checked = sediment(world, "schema", "validate", str(out / "recovery.train.jsonl"), str(out / "recovery.eval.jsonl"))
    assert checked.returncode == 0, checked.stderr


def test_json_summary_shape(world: Any) -> None:
    shas = recoveries(world)
    out = world.tmp / "out"
    result = sediment(world, "export", "recovery", "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert list(summary) == ["objective", "pairs", "pairs_skipped", "recovery_rows", "recovery_skipped",
                             "fragmented", "written", "manifests"]
    assert summary["objective"] == "recovery" and summary["pairs"] == 2 and summary["recovery_rows"] == 2
    assert summary["pairs_skipped"] == {"unreliable_ci_resolution": 1}
    assert summary["recovery_skipped"] == {}
    assert summary["written"] == {str(out / "recovery.train.jsonl"): 1, str(out / "recovery.eval.jsonl"): 1}
    assert summary["manifests"] == {}
    pairs = [(r["failed_commit_sha"], r["fixed_commit_sha"]) for name in ("recovery.train.jsonl", "recovery.eval.jsonl")
             for r in map(json.loads, (out / name).read_text(encoding="ascii").splitlines())]
    assert pairs == [(shas["c0"], shas["c1"]), (shas["c2"], shas["c4"])]


def test_from_is_refused_in_one_line(world: Any) -> None:
    out = world.tmp / "out"
    result = sediment(world, "export", "recovery", "--from", str(world.tmp), "--out", str(out))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: sediment export recovery has no --from: Recovery exports read the fact store and mirrors directly "
        "(--org / SEDIMENT_ORG_ID, --mirrors), not a bundle; drop --from")
    assert not out.exists()
    helped = sediment(world, "export", "recovery", "--help")
    assert helped.returncode == 0 and "--from" not in helped.stdout.replace("no --from", "")


@pytest.mark.parametrize(("args", "code", "said"), [
    (("--recipe", "recovery_human"), 2, "Invalid value for '--recipe'"),
    (("--target", "sediment"), 2, "No such option: --target"),
    (("--profile", "hf-chat-messages-v1"), 2, "No such option: --profile"),
])
def test_usage_errors(world: Any, args: tuple[str, ...], code: int, said: str) -> None:
    result = sediment(world, "export", "recovery", "--out", str(world.tmp / "out"), *args)
    assert result.returncode == code and said in result.stderr


def test_a_direct_export_needs_mirrors_and_an_org(world: Any) -> None:
    out = world.tmp / "out"
    missing = sediment(world, "export", "recovery", "--out", str(out), mirrors=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "error: SEDIMENT_MIRROR_PATH is not set; the export needs mirrors (or pass --mirrors)"
    no_org = sediment(world, "export", "recovery", "--out", str(out), env={"SEDIMENT_ORG_ID": ""})
    assert no_org.returncode == 1 and "SEDIMENT_ORG_ID" in no_org.stderr
    assert not out.exists()


# --- the output directory ------------------------------------------------------------------------


def test_a_directory_holds_one_generation(world: Any) -> None:
    recoveries(world)
    out = world.tmp / "out"
    assert sediment(world, "export", "recovery", "--out", str(out)).returncode == 0
    before = snapshot(out)
    again = sediment(world, "export", "recovery", "--out", str(out))
    assert again.returncode == 3
    assert again.stderr.strip() == ("error: output directory already contains recovery artifacts "
                                    "(recovery.eval.jsonl, recovery.train.jsonl); use a new directory for each export")
    rlvr = sediment(world, "export", "rlvr", "--target", "nemo-gym", "--out", str(out))
    assert rlvr.returncode == 3
    assert "output directory already belongs to Recovery objective recovery; use a different directory for " \
           "nemo-gym" in rlvr.stderr
    assert snapshot(out) == before


def test_another_exports_directory_is_refused(world: Any) -> None:
    recoveries(world)
    nemo = world.tmp / "nemo"
    assert sediment(world, "export", "rlvr", "--target", "nemo-gym", "--out", str(nemo)).returncode == 0
    before = snapshot(nemo)
    refused = sediment(world, "export", "recovery", "--out", str(nemo))
    assert refused.returncode == 3
    assert "output directory already belongs to RLVR target nemo-gym; use a different directory for recovery" \
        in refused.stderr
    assert snapshot(nemo) == before

    unclaimed = world.tmp / "unclaimed"
    unclaimed.mkdir()
    (unclaimed / "recovery.train.jsonl").write_text("stale\n")
    stale = sediment(world, "export", "recovery", "--out", str(unclaimed))
    assert stale.returncode == 3
    assert "output directory contains Recovery artifacts without a target claim (recovery.train.jsonl)" in stale.stderr
    assert (unclaimed / "recovery.train.jsonl").read_text() == "stale\n"

    locked = world.tmp / "locked"
    (locked / ".sediment-recovery-export.lock").mkdir(parents=True)
    busy = sediment(world, "export", "recovery", "--out", str(locked))
    assert busy.returncode == 3 and "Recovery export already in progress for output directory" in busy.stderr
    assert sorted(p.name for p in locked.iterdir()) == [".sediment-recovery-export.lock"]


def test_an_empty_export_may_reuse_its_directory(world: Any) -> None:
    out = world.tmp / "out"
    empty = sediment(world, "export", "recovery", "--out", str(out))
    assert empty.returncode == 0, empty.stderr
    assert "nothing written (empty projections leave existing files untouched)" in empty.stderr
    assert sorted(p.name for p in out.iterdir()) == [".sediment-recovery-target"]
    recoveries(world)
    filled = sediment(world, "export", "recovery", "--out", str(out), "--json")
    assert filled.returncode == 0, filled.stderr
    assert json.loads(filled.stdout)["recovery_rows"] == 2


# --- determinism -----------------------------------------------------------------------------------


def every_fact(store: FactStore) -> list[FactModel]:
    return [fact for table in TABLES for fact in store.facts(table, ORG)]


def test_repeated_and_shuffled_ingest_give_identical_bytes(world: Any, tmp_path: Path, store_url: str) -> None:
    recoveries(world)
    facts = every_fact(world.store)
    first = world.tmp / "first"
    assert sediment(world, "export", "recovery", "--out", str(first)).returncode == 0
    expected = snapshot(first)
    assert set(expected) == {".sediment-recovery-target", "recovery.train.jsonl", "recovery.eval.jsonl"}
    for seed in range(2):
        # the first twin on the parametrized backend (a fresh store), the second on SQLite
        url = store_url if seed == 0 and not store_url.startswith("sqlite") else f"sqlite:///{tmp_path / f'{seed}.db'}"
        other = FactStore(url)
        assert other.url != world.store.url
        shuffled = list(facts)
        random.Random(seed).shuffle(shuffled)
        for start in range(0, len(shuffled), 3):  # in small batches, then all of it again
            other.append(shuffled[start:start + 3])
        other.append(list(reversed(shuffled)))
        twin = type(world)(other, world.mirrors, world.git, world.tmp)
        out = world.tmp / f"again{seed}"
        result = sediment(twin, "export", "recovery", "--out", str(out))
        assert result.returncode == 0, result.stderr
        assert snapshot(out) == expected
