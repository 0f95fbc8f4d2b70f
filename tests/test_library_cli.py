"""``sediment library`` as users run it: real processes, exit codes, files written."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sediment.testing import unavailable
from sediment.trajectory import synthetic
from sediment.trajectory.library import Library


def sediment(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=300, check=False)


@pytest.fixture
def canonical(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in synthetic.records(2, 40)))
    return path


def test_import_views_and_partial_failure(tmp_path: Path, canonical: Path) -> None:
    library = tmp_path / "lib"
    result = sediment("library", "import", "canonical-jsonl", str(canonical), "--library", str(library),
                      "--materialize-all")
    assert result.returncode == 0, result.stderr
    assert "40 record(s) added" in result.stderr
    assert (library / "all.jsonl.gz").exists()
    again = sediment("library", "import", "canonical-jsonl", str(canonical), "--library", str(library))
    assert again.returncode == 0 and "0 record(s) added, 40 already present" in again.stderr
    bad = tmp_path / "bad.jsonl"
    good = synthetic.record(3, 1)
    tampered = {**synthetic.record(3, 2), "task_key": "synthetic:tampered"}
    bad.write_bytes(b'{"trajectory_id": ""}\nnot json\n' + orjson.dumps(good) + b"\n[1]\n" + orjson.dumps(tampered)
                    + b"\n")
    partial = sediment("library", "import", "canonical-jsonl", str(bad), "--library", str(library))
    assert partial.returncode == 8, partial.stderr
    lines = partial.stderr.splitlines()
    assert any(re.search(r"bad\.jsonl:1: ", line) for line in lines)
    assert any("bad.jsonl:2: (record): not JSON" in line for line in lines)
    assert any("bad.jsonl:4: (record): not a JSON object" in line for line in lines)
    assert any("bad.jsonl:5: trajectory_id:" in line and "content address" in line for line in lines)
    assert "1 record(s) added" in partial.stderr
    assert Library(library).record(good["trajectory_id"]) == good
    unknown = sediment("library", "import", "no-such-format", str(bad), "--library", str(tmp_path / "x"))
    assert unknown.returncode == 2 and "unknown trajectory format 'no-such-format'" in unknown.stderr
    assert not (tmp_path / "x").exists()

    out = tmp_path / "turns.jsonl"
    views = sediment("library", "views", "--library", str(library), "--view", "turns", "--selection", "all",
                     "--model", "model-a", "--out", str(out))
    assert views.returncode == 0, views.stderr
    samples = [json.loads(line) for line in out.read_text().splitlines()]
    assert samples and {s["metadata"]["provenance"]["model"] for s in samples} == {"model-a"}
    assert all(s["view"] == "assistant-turn" for s in samples)
    for sample in samples:
        record = Library(library).record(sample["trajectory_id"])
        assert sample["context"] == record["events"][:sample["target_index"]]
    chat = tmp_path / "chat.jsonl"
    assert sediment("library", "views", "--library", str(library), "--view", "turns", "--format", "chat", "--sample", "3",
                    "--sampling", "source-balanced", "--out", str(chat)).returncode == 0
    assert all(set(json.loads(line)) == {"prompt", "completion"} for line in chat.read_text().splitlines())
    wrong = sediment("library", "views", "--library", str(library), "--selection", "nope", "--out", str(out))
    assert wrong.returncode == 2 and "unknown --selection 'nope'" in wrong.stderr  # a usage error
    missing = sediment("library", "views", "--library", str(tmp_path / "none"), "--out", str(out))
    assert missing.returncode == 1 and "not a trajectory library" in missing.stderr


def test_inspect_shows_every_part(tmp_path: Path, canonical: Path) -> None:
    library = tmp_path / "lib"
    Library(library).import_records(orjson.loads(line) for line in canonical.read_bytes().splitlines())
    record = max(Library(library).records(), key=lambda r: len(r["events"]))
    result = sediment("library", "inspect", "--library", str(library), "--trajectory-id", record["trajectory_id"])
    assert result.returncode == 0, result.stderr
    text = result.stdout
    for heading in ("interaction", "assistant-turn samples", "verification evidence", "missing fields",
                    "alternatives for", "model_input.events = events[:2]", "supervised target"):
        assert heading in text
    turns = sum(1 for e in record["events"] if e["role"] == "assistant" and e["supervised"])
    assert f"assistant-turn samples ({turns})" in text or turns == 0
    as_json = sediment("library", "inspect", "--library", str(library), "--trajectory-id", record["trajectory_id"],
                       "--json")
    assert as_json.returncode == 0, as_json.stderr
    shown = json.loads(as_json.stdout)
    assert shown["record"] == record and shown["ranking"]["trajectory_id"] == record["trajectory_id"]
    for turn in shown["assistant_turns"]:
        assert turn["model_input"]["events"] == record["events"][:turn["target_index"]]
    assert len(shown["assistant_turns"]) == turns
    absent = sediment("library", "inspect", "--library", str(library), "--trajectory-id", "trajectory:nope")
    assert absent.returncode == 1 and "no trajectory 'trajectory:nope'" in absent.stderr


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def seen_text(page: Path, tmp_path: Path, *, without: str = "") -> str:
    """What a person sees: the page rendered by headless Chromium, its body's innerText (a probe
    script in a copy of the page writes innerText into the DOM that --dump-dom prints). ``without``
    is left out of the copy (a page's Content-Security-Policy, which would block the probe)."""
    probe = tmp_path / f"probe-{page.name}"
    text = page.read_text(encoding="utf-8")
    probe.write_text((text.replace(without, "") if without else text).replace(
        "</body>", "<script>document.documentElement.setAttribute('data-seen', "
                   "JSON.stringify(document.body.innerText))</script></body>"), encoding="utf-8")
    result = subprocess.run([CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
                             "--user-data-dir=" + str(tmp_path / "chromium-profile"), "--dump-dom", probe.as_uri()],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    match = re.search(r'data-seen="([^"]*)"', result.stdout)
    assert match, result.stdout[:2000]
    import html
    return str(json.loads(html.unescape(match.group(1))))


def require_chromium() -> str:
    if CHROMIUM is None:
        unavailable("chromium is not installed (Debian package chromium; .ci/run installs it under CI)")
    return CHROMIUM


@pytest.mark.browser
def test_gallery_renders_in_headless_chromium(tmp_path: Path) -> None:
    require_chromium()
    library = tmp_path / "lib"
    records = synthetic.records(4, 60)
    hostile_fields = synthetic.fields(4, 0)
    hostile_fields["events"][1]["text"] = "<script>alert(1)</script> & <b>not bold</b>"
    records[0] = synthetic.rebuild(hostile_fields)
    Library(library).import_records(records)
    out = tmp_path / "gallery"
    result = sediment("library", "gallery", "--library", str(library), "--out", str(out))
    assert result.returncode == 0, result.stderr
    first = sorted(p.name for p in out.iterdir())
    again = tmp_path / "gallery2"
    assert sediment("library", "gallery", "--library", str(library), "--out", str(again)).returncode == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {p.name: p.read_bytes() for p in again.iterdir()}
    combos = {(r["outcome_category"], r["quality_tier"]) for r in Library(library).rankings()}
    index = seen_text(out / "index.html", tmp_path)
    assert f"{len(combos)} representative(s)" in index
    for outcome, tier in combos:
        assert re.search(rf"synthetic\t{outcome}\t{tier}\t", index), (outcome, tier)
    assert len(first) == len(combos) + 1
    page = next(p for p in out.iterdir() if p.name != "index.html" and
                (record := Library(library).record(p.name[:-5].replace("_", ":", 1)))["events"])
    text = seen_text(page, tmp_path)
    for heading in ("Interaction", "Assistant-turn samples", "Verification evidence", "Missing fields", "Alternatives"):
        assert heading in text
    assert record["events"][0]["text"] in text
    hostile = tmp_path / "hostile"
    Library(hostile).import_records([records[0]])
    sediment("library", "gallery", "--library", str(hostile), "--out", str(tmp_path / "hg"))
    page = next(p for p in (tmp_path / "hg").iterdir() if p.name != "index.html")
    shown = seen_text(page, tmp_path)
    assert "<script>alert(1)</script> & <b>not bold</b>" in shown  # shown as text, never run or parsed
    with gzip.open(library / "rankings.jsonl.gz") as handle:
        assert handle.read()


@pytest.mark.browser
def test_gallery_of_the_fixtures_in_headless_chromium(tmp_path: Path) -> None:
    """Every source × outcome × tier of the held-out public files has a page a person can read."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_library_fixtures import fixture_records, fixtures

    records = fixture_records()
    if not records:
        fixtures()  # skips, or fails under CI, with the reason
    require_chromium()
    library = Library(tmp_path / "lib")
    library.import_records(records)
    out = tmp_path / "gallery"
    assert sediment("library", "gallery", "--library", str(library.root), "--out", str(out)).returncode == 0
    index = seen_text(out / "index.html", tmp_path)
    from sediment.trajectory.gallery import page_name, representatives

    chosen = representatives(library)
    assert {r["source_id"] for r in chosen} == {r["source"]["source_id"] for r in records}
    for row in chosen:
        assert f"{row['source_id']}\t{row['outcome_category']}\t{row['quality_tier']}\t" in index
        text = seen_text(out / page_name(row["trajectory_id"]), tmp_path)
        record = library.record(row["trajectory_id"])
        assert f"Interaction ({len(record['events'])} events)" in text
        turns = sum(1 for e in record["events"] if e["role"] == "assistant" and e["supervised"])
        assert f"Assistant-turn samples ({turns})" in text
        for item in record["missing_fields"]:
            assert item["reason"] in text


def test_sediment_rollouts_rank_by_their_ci_evidence(tmp_path: Path) -> None:
    """Sediment's own Rollouts (the demo's bundle) mixed with public data: CI-verified attempts
    are ranked by their independent evidence, and the bundle's eval split holds the task out."""
    from sediment.demo import run_demo
    from sediment.importing.run import import_records

    run_demo(tmp_path / "demo")
    bundle = tmp_path / "demo" / "bundle"
    library = tmp_path / "lib"
    result = sediment("library", "import", "sediment-rollouts", str(bundle), "--library", str(library))
    assert result.returncode == 0, result.stderr
    records = {r.trajectory_id: r for r in import_records("sediment-rollouts", [bundle])}
    lib = Library(library)
    rows = lib.rankings()
    assert sum(len(r["duplicate_provenance"]["contributing_trajectory_ids"]) for r in rows) == len(records)
    splits = lib.task_splits()
    for row in rows:
        record = records[row["trajectory_id"]]
        if row["outcome_category"] == "success":  # resolved CI of the attempt's commit: executable evidence
            assert (row["verification_strength"], row["quality_tier"]) == ("source_evaluator", 3)
        if row["outcome_category"] == "unknown":
            assert row["quality_tier"] == 4
        if row["outcome_category"] == "failure":
            assert row["quality_tier"] == 5
        if record.split == "eval":
            assert splits[record.task_key] == "eval" and not row["sft_eligible"]
    assert {r["outcome_category"] for r in rows} == {"success", "failure", "unknown"}
    assert any(records[r["trajectory_id"]].split == "eval" for r in rows)
