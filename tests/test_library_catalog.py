"""``library list`` (filters, ``--json``), ``library inspect`` by id prefix, ``--json`` on the
other library commands, and the gallery's paged index, tier legend and bounded pages."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from sediment.trajectory import synthetic
from sediment.trajectory.gallery import FOLD_CHARS, index_name, write_gallery
from sediment.trajectory.library import Library
from sediment.trajectory.rankings import TIERS


def sediment(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=300, check=False)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("catalog") / "lib"
    records = synthetic.records(2, 40)
    records.append({**records[0]})  # the same record again is skipped: 40 records
    Library(root).import_records(records)
    return root


def _listed(library: Path, *options: str) -> dict[str, Any]:
    result = sediment("library", "list", "--library", str(library), "--json", *options)
    assert result.returncode == 0, result.stderr
    listed: dict[str, Any] = json.loads(result.stdout)
    assert listed["count"] == len(listed["records"])
    return listed


def test_list_shows_every_record_with_its_ranking(library: Path) -> None:
    lib = Library(library)
    listed = _listed(library)
    assert [r["trajectory_id"] for r in listed["records"]] == sorted(lib.known_ids()) and listed["count"] == 40
    retained = {r["trajectory_id"]: r["retained_trajectory_id"] for r in lib.query("SELECT * FROM retained")}
    ranking = {r["trajectory_id"]: r for r in lib.rankings()}
    splits = lib.task_splits()
    for row in listed["records"]:
        kept = ranking[retained[row["trajectory_id"]]]
        assert (row["quality_tier"], row["within_task_rank"], row["sft_eligible"]) == (
            kept["quality_tier"], kept["within_task_rank"], kept["sft_eligible"])
        assert row["split"] == splits[row["task_key"]] and row["source_id"] == "synthetic"
    text = sediment("library", "list", "--library", str(library))
    lines = text.stdout.splitlines()
    assert lines[0].split("\t")[:3] == ["trajectory_id", "source_id", "task_key"]
    assert [line.split("\t")[0] for line in lines[1:]] == [r["trajectory_id"] for r in listed["records"]]
    assert "…" not in text.stdout and "40 record(s)" in text.stderr  # never truncated in a pipe


def test_list_filters(library: Path) -> None:
    every = _listed(library)["records"]
    task = every[0]["task_key"]
    assert {r["trajectory_id"] for r in _listed(library, "--task", task)["records"]} == {
        r["trajectory_id"] for r in every if r["task_key"] == task}
    for tier in sorted({r["quality_tier"] for r in every}):
        assert {r["trajectory_id"] for r in _listed(library, "--quality-tier", str(tier))["records"]} == {
            r["trajectory_id"] for r in every if r["quality_tier"] == tier}
    eligible = {r["trajectory_id"] for r in _listed(library, "--eligible")["records"]}
    ineligible = {r["trajectory_id"] for r in _listed(library, "--ineligible")["records"]}
    assert eligible and ineligible and not eligible & ineligible and len(eligible | ineligible) == 40
    assert eligible == {r["trajectory_id"] for r in every if r["sft_eligible"]}
    for split in ("train", "eval"):
        assert {r["trajectory_id"] for r in _listed(library, "--split", split)["records"]} == {
            r["trajectory_id"] for r in every if r["split"] == split}
    assert _listed(library, "--source", "synthetic")["count"] == 40
    assert _listed(library, "--source", "nope")["records"] == []
    both = _listed(library, "--task", task, "--eligible")["records"]
    assert {r["trajectory_id"] for r in both} == {r["trajectory_id"] for r in every
                                                  if r["task_key"] == task and r["sft_eligible"]}
    retained = _listed(library, "--retained")["records"]
    assert all(r["retained_trajectory_id"] == r["trajectory_id"] for r in retained)
    missing = sediment("library", "list", "--library", str(library.parent / "none"), "--json")
    assert missing.returncode == 1 and missing.stdout == "" and "not a trajectory library" in missing.stderr


def test_inspect_takes_an_unambiguous_prefix(library: Path) -> None:
    ids = sorted(Library(library).known_ids())
    target = ids[5]
    prefix = next(target[:n] for n in range(1, len(target) + 1)
                  if sum(i.startswith(target[:n]) for i in ids) == 1)
    full = sediment("library", "inspect", "--library", str(library), "--trajectory-id", target, "--json")
    short = sediment("library", "inspect", "--library", str(library), "--trajectory-id", prefix, "--json")
    assert full.returncode == short.returncode == 0, short.stderr
    assert short.stdout == full.stdout and json.loads(short.stdout)["record"]["trajectory_id"] == target
    common = ids[0][:next(n for n in range(len(ids[0]) + 1) if not all(i.startswith(ids[0][:n + 1]) for i in ids))]
    ambiguous = sediment("library", "inspect", "--library", str(library), "--trajectory-id", common)
    assert ambiguous.returncode == 2 and ambiguous.stdout == ""
    [line] = ambiguous.stderr.splitlines()
    assert f"names 40 records: {', '.join(ids[:10])} and 30 more; give more of the id" in line
    absent = sediment("library", "inspect", "--library", str(library), "--trajectory-id", common + "zz-nope")
    assert absent.returncode == 1 and "no trajectory" in absent.stderr


def test_import_views_gallery_json(tmp_path: Path) -> None:
    source = tmp_path / "records.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in synthetic.records(3, 12)) + b"not json\n")
    library = tmp_path / "lib"
    imported = sediment("library", "import", "canonical-jsonl", str(source), "--library", str(library), "--json")
    assert imported.returncode == 8  # the bad line still exits 8, the summary is still one object
    report = json.loads(imported.stdout)
    assert (report["added"], report["already_present"], report["record_count"], report["failed"]) == (12, 0, 12, 1)
    assert len(report["problems"]) == 1 and "records.jsonl:13:" in report["problems"][0]
    out = tmp_path / "views.jsonl"
    views = sediment("library", "views", "--library", str(library), "--out", str(out), "--selection", "all",
                     "--include-ineligible", "--json")
    assert views.returncode == 0, views.stderr
    summary = json.loads(views.stdout)
    assert list(summary) == ["out", "view", "format", "samples", "attempts"]
    assert (summary["out"], summary["view"], summary["format"]) == (str(out), "full", "json")
    assert summary["samples"] == summary["attempts"] == len(out.read_text().splitlines()) > 0
    assert "sample(s)" not in views.stderr
    gallery = sediment("library", "gallery", "--library", str(library), "--out", str(tmp_path / "g"),
                       "--page-size", "5", "--json")
    assert gallery.returncode == 0, gallery.stderr
    shown = json.loads(gallery.stdout)
    assert shown["records"] == 12 and shown["index_pages"] == ["index.html", "index-2.html", "index-3.html"]
    assert shown["representatives"] == len(shown["pages"]) and shown["largest_page_bytes"] > 0
    bad = sediment("library", "gallery", "--library", str(library), "--out", str(tmp_path / "h"), "--page-size", "0")
    assert bad.returncode == 2 and not (tmp_path / "h").exists()


def _index_ids(out: Path) -> list[str]:
    found: list[str] = []
    number = 1
    while (out / index_name(number)).exists():
        page = (out / index_name(number)).read_text()
        table = page[page.index("<h2>All records"):]
        found += re.findall(r"<tr><td>(?:<a href=\"[^\"]+\">|<code>)([^<]+)<", table)
        number += 1
    return found


def test_the_index_is_paged_over_every_record_with_a_tier_legend(tmp_path: Path, library: Path) -> None:
    out = tmp_path / "gallery"
    gallery = write_gallery(Library(library), out, page_size=15)
    assert gallery.index_pages == ["index.html", "index-2.html", "index-3.html"] and gallery.records == 40
    assert _index_ids(out) == sorted(Library(library).known_ids())
    for name in gallery.index_pages:
        page = (out / name).read_text()
        assert all(f"<dt>tier {tier}</dt><dd>{text}</dd>" in page for tier, text in TIERS.items())
        assert "next →" in page or name == "index-3.html"
    assert "All records: 31–40 of 40 (page 3 of 3)" in (out / "index-3.html").read_text()
    # the same library, imported in another order, gives the same bytes
    shuffled = synthetic.records(2, 40)
    random.Random(7).shuffle(shuffled)
    other = tmp_path / "lib2"
    Library(other).import_records(shuffled)
    again = write_gallery(Library(other), tmp_path / "gallery2", page_size=15)
    assert again == gallery
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {
        p.name: p.read_bytes() for p in (tmp_path / "gallery2").iterdir()}


def _huge(tmp_path: Path) -> tuple[Library, dict[str, Any]]:
    base = synthetic.fields(9, 0)
    events = [dict(event) for event in base["events"]]
    for event in events:
        if event["role"] in {"assistant", "tool"}:
            event["text"] = "<long & hostile> " + "z" * 700_000
    for n in range(200):  # a long tail of short turns: each turn sample repeats the growing context
        cid = f"call_extra_{n}"
        events.append({"event_id": f"event:{len(events)}", "role": "assistant", "text": f"step {n}",
                       "tool_calls": [{"call_id": cid, "original_call_id": cid, "name": "bash",
                                       "arguments": {"command": "x" * 5000}}], "supervised": True})
        events.append({"event_id": f"event:{len(events)}", "role": "tool", "text": "ok " * 2000,
                       "tool_result_of": cid})
    record = synthetic.rebuild(base, events=events)
    library = Library(tmp_path / "huge")
    library.import_records([record])
    return library, record


def test_a_page_stays_bounded_by_folding_long_events(tmp_path: Path) -> None:
    library, record = _huge(tmp_path)
    assert len(orjson.dumps(record)) > 5_000_000
    gallery = write_gallery(library, tmp_path / "g")
    [page] = gallery.pages
    size = gallery.sizes[page]
    assert size < 1_200_000, size  # unfolded, the record alone is over 5 MB and its turn samples far more
    text = (tmp_path / "g" / page).read_text()
    assert "characters folded" in text and "more turn sample(s) folded" in text
    assert "&lt;long &amp; hostile&gt; zzz" in text and "<long" not in text
    assert f"Interaction ({len(record['events'])} events)" in text
    assert FOLD_CHARS < 700_000


@pytest.mark.browser
def test_paged_index_legend_and_folded_page_in_headless_chromium(tmp_path: Path, library: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_library_cli import require_chromium, seen_text

    require_chromium()
    out = tmp_path / "gallery"
    write_gallery(Library(library), out, page_size=15)
    first = seen_text(out / "index.html", tmp_path)
    assert "Quality tiers" in first and TIERS[1] in first and TIERS[5] in first
    assert "All records: 1–15 of 40 (page 1 of 3)" in first and "next →" in first
    last = seen_text(out / "index-3.html", tmp_path)
    assert "All records: 31–40 of 40 (page 3 of 3)" in last and "← previous" in last
    ids = sorted(Library(library).known_ids())
    assert all(i in last for i in ids[30:]) and not any(i in last for i in ids[:30])
    huge, record = _huge(tmp_path)
    gallery = write_gallery(huge, tmp_path / "g")
    page = seen_text(tmp_path / "g" / gallery.pages[0], tmp_path)
    assert "characters folded" in page and "<long & hostile> zzz" in page
    assert f"Interaction ({len(record['events'])} events)" in page
