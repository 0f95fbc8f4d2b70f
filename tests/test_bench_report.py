"""The bench's report (bench/run.py): each speed-up compares a stage with its own parallel run
(docs/performance.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from run import Stage, render
from synth import Profile


def test_the_parallel_ingest_speed_up_compares_the_calls_ingest_with_itself() -> None:
    """Regression: the speed-up of `ingest calls (workers 2)` divided the *github* ingest's time
    by it, and printed 0.02× for a stage that went from 49.8 s to 32.4 s."""
    stages = [Stage("ingest calls", 49.8, 100, 10**9, 1000), Stage("ingest github", 0.8, 50, 10**6, 0),
              Stage("ingest otlp", 0.5, 50, 10**6, 0)]
    result = {
        "profile": Profile("tiny", 1, 2), "workers": 2, "synth_seconds": 1.0, "read_floor": 1.0, "parse_floor": 10.0,
        "data": SimpleNamespace(calls=1000, input_bytes=10**9, uncommitted=[], replayed_message_bytes=10**9,
                                unique_message_bytes=10**7, compressed_bytes=10**7, compression="zst"),
        "stages": stages, "single": [], "parallel": None, "rows": {}, "identical": True, "same_store": True,
        "cpu_scaling": 1.9, "repeat": 3, "stored_bytes": {"total": 10**7},
        "parallel_ingest": Stage("ingest calls (workers 2)", 32.4, 100, 10**9, 1000),
    }
    row = next(line for line in render(result).splitlines() if line.startswith("| ingest calls (workers 2)"))
    assert "(speed-up 1.54×)" in row


def test_the_stricter_floor_has_its_row_and_the_calls_ingest_its_ratio_to_it() -> None:
    """The parse floor reads a buffered reader's lines; the stricter floor (orjson over the lines as
    ingest cuts them) gets its own row, and each calls ingest its ratio to it, under the table."""
    stages = [Stage("ingest calls", 40.0, 100, 10**9, 1000)]
    result = {
        "profile": Profile("tiny", 1, 2), "workers": 2, "synth_seconds": 1.0, "read_floor": 1.0, "parse_floor": 10.0,
        "cut_floor": 8.0,
        "data": SimpleNamespace(calls=1000, input_bytes=10**9, uncommitted=[], replayed_message_bytes=10**9,
                                unique_message_bytes=10**7, compressed_bytes=10**7, compression="zst"),
        "stages": stages, "single": [], "parallel": None, "rows": {}, "identical": True, "same_store": True,
        "cpu_scaling": 1.9, "repeat": 3, "stored_bytes": {"total": 10**7},
        "parallel_ingest": Stage("ingest calls (workers 2)", 10.0, 100, 10**9, 1000),
    }
    text = render(result)
    row = next(line for line in text.splitlines() if line.startswith("| floor: orjson parse, lines cut"))
    assert row.split("|")[2].strip() == "8.00" and row.rstrip(" |").endswith("0.80")
    assert ("(orjson over the lines as ingest cuts them, 8.00 s, 2.00 s below the parse floor): "
            "ingest calls 5.00×; ingest calls (workers 2) 1.25×.") in text
    del result["cut_floor"]
    assert "lines cut" not in render(result) and "stricter" not in render(result)


def test_the_stricter_floor_parses_every_line_the_parse_floor_parses(tmp_path: Path) -> None:
    """cut_floor parses the same lines as the parse floor (a compressed file inflated), so a file
    with a line orjson cannot parse fails both alike."""
    import zstandard
    from run import cut_floor, floors

    good = tmp_path / "calls.jsonl.zst"
    good.write_bytes(zstandard.ZstdCompressor().compress(b'{"a": 1}\n{"b": [2]}\n'))
    assert cut_floor([good]) > 0 and floors([good])[1] > 0
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"a": 1}\n{"b": \n')
    with pytest.raises(ValueError):
        cut_floor([bad])
    with pytest.raises(ValueError):
        floors([bad])


def test_the_cost_curve_reports_each_axis_growth_from_its_own_first_point() -> None:
    """bench/curve.py: a stage's growth is read against the replayed and the unique bytes of the
    same axis, so the second axis is not divided by the first axis' figures."""
    from curve import Point
    from curve import render as render_curve

    def point(axis: str, sessions: int, calls: int, replayed: float, unique: float, ingest: float) -> Point:
        return Point(axis, sessions, calls, sessions * calls, replayed, unique, unique * 0.9, replayed / 50,
                     replayed / 500, ingest, ingest / 2, ingest / 4, 80, 90, 70)

    points = [point("calls per Session", 3, 100, 100.0, 10.0, 4.0),
              point("calls per Session", 3, 400, 1600.0, 40.0, 16.0),
              point("Sessions", 10, 100, 500.0, 50.0, 20.0),
              point("Sessions", 40, 100, 2000.0, 200.0, 80.0)]
    growth = render_curve(points).split("Growth from each axis' first point:")[1]
    rows = [line for line in growth.splitlines() if line.startswith("| calls") or line.startswith("| Sessions")]
    assert rows[1] == "| calls per Session | 3 × 400 | 16.0× | 4.0× | 4.0× | 4.0× | 4.0× | 1.00× |"
    assert rows[3] == "| Sessions | 40 × 100 | 4.0× | 4.0× | 4.0× | 4.0× | 4.0× | 1.00× |"


def test_the_cost_curve_axes_take_positive_counts_only() -> None:
    import argparse

    import pytest
    from run import _counts

    assert _counts("100,400,1600") == [100, 400, 1600]
    for bad in ("", "10,x", "0,4", "-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="positive integers"):
            _counts(bad)


def test_a_one_pass_run_reuses_the_input_a_run_of_the_same_profile_kept(tmp_path: Path) -> None:
    """bench/once.py: ``--synthesize-only`` writes the input and its manifest; the measured pass
    of the same profile and compression reads it back (the same files and figures) instead of
    writing it again, and another profile writes its own."""
    import once

    profile = Profile("tiny", 3, 3)
    written, seconds = once.inputs(profile, tmp_path, "zst")
    assert seconds is not None and written.call_files and all(p.exists() for p in written.call_files)
    stamp = written.call_files[0].stat().st_mtime_ns
    found, again = once.inputs(profile, tmp_path, "zst")
    assert again is None and found == written and found.call_files[0].stat().st_mtime_ns == stamp
    other, rewritten = once.inputs(Profile("tiny", 4, 3), tmp_path, "zst")
    assert rewritten is not None and other.calls > written.calls
    other.call_files[-1].unlink()  # a kept input that lost a file is written again, not read half
    whole, again = once.inputs(Profile("tiny", 4, 3), tmp_path, "zst")
    assert again is not None and whole == other and whole.call_files[-1].exists()


def test_the_ingest_phase_table_times_each_phase_of_a_real_ingest(tmp_path: Path) -> None:
    """bench/ingest_phases.py runs the real ingest of a synthesized input and gives every phase
    a positive time; the table's rows are the phases, then what no timer covers; a last line
    times reading alone three ways."""
    import subprocess

    import once

    written, _ = once.inputs(Profile("tiny", 3, 6), tmp_path, "zst")
    script = Path(__file__).resolve().parents[1] / "bench" / "ingest_phases.py"
    done = subprocess.run([sys.executable, str(script), *map(str, written.call_files)], capture_output=True,
                          text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:3] for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    names = [name.strip().replace("&nbsp;", "") for name, _ in rows[1:]]
    assert names == ["parse (span reader)", "translate", "redact content", "store: prepare rows",
                     "encode, hash, compress blobs", "store: write (SQLite)", "reading and the rest"]
    assert all(float(seconds) > 0 for _, seconds in rows[1:-1])
    assert "x the parse floor" in done.stdout.splitlines()[0]
    last = done.stdout.splitlines()[-1]
    assert last.startswith("reading alone: inflating ")
    assert len([float(word) for word in last.replace(";", " ").split() if word[:1].isdigit()]) == 4


def test_a_profile_with_tools_declares_one_agents_tool_list_with_every_call(tmp_path: Path) -> None:
    """``--tool-list-bytes N``: every call declares the same tools, about N bytes of them, and
    each call's tools read back from the store as declared."""
    import json

    import synth

    from sediment.ingest.calls import ReplayMemo, translate_call
    from sediment.ingest.calls.spans import SpanReader
    from sediment.ingest.reading.files import ingest_files
    from sediment.store import FactStore

    written = synth.synthesize(Profile("tiny", 2, 4, tool_bytes=8_000), tmp_path, compression="none")
    records = [json.loads(line) for path in written.call_files for line in path.read_text().splitlines()]
    declared = [record["request"]["tools"] for record in records]
    assert len(declared) == written.calls and all(tools == declared[0] for tools in declared)
    assert 8_000 <= len(json.dumps(declared[0])) < 8_000 + 2_500
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    memo = ReplayMemo()
    report = ingest_files([str(p) for p in written.call_files], lambda record: translate_call(
        record, format="openai-chat", org_id="bench", captured_at=synth.T0, memo=memo), store, reader=SpanReader)
    assert report.stored["inference_calls"] == written.calls
    read_back = [call.raw["request"]["tools"] for session in store.session_ids("bench")  # type: ignore[index]
                 for call in store.calls_for_session("bench", session)]
    assert read_back == declared


@pytest.mark.parametrize("call_format", ["openai-responses", "anthropic", "litellm"])
def test_each_call_format_logs_the_same_turns(tmp_path: Path, call_format: str) -> None:
    """``--call-format F``: the bench's calls logged as another API's pairs or as a LiteLLM
    gateway's payloads. Every call is stored, and each holds the same text, tool calls, tool
    results and tools as the Chat log's call (its roles are the format's own: an Anthropic tool
    result is the user's)."""
    import synth

    from sediment.ingest.calls import ReplayMemo, translate_call
    from sediment.ingest.calls.spans import SpanReader
    from sediment.ingest.reading.files import ingest_files
    from sediment.model.facts import InferenceCall
    from sediment.store import FactStore

    def content(call: InferenceCall) -> tuple[Any, ...]:
        return (call.session_id, call.model_call_id,
                [part.model_dump() for message in call.input_messages for part in message.parts],
                [part.model_dump() for message in call.output_messages for part in message.parts],
                [(tool.name, tool.description, tool.parameters) for tool in call.tools or ()])

    stored = {}
    for chosen in ("openai-chat", call_format):
        written = synth.synthesize(Profile("tiny", 3, 4, tool_bytes=3_000, call_format=chosen), tmp_path / chosen,
                                   compression="none")
        store = FactStore(f"sqlite:///{tmp_path / chosen / 'facts.db'}")
        memo = ReplayMemo()
        report = ingest_files([str(p) for p in written.call_files], lambda record, f=chosen, m=memo: translate_call(
            record, format=f, org_id="bench", captured_at=synth.T0, memo=m), store, reader=SpanReader)
        assert report.stored["inference_calls"] == written.calls and not report.problems
        stored[chosen] = [content(call) for session in store.session_ids("bench")
                          for call in store.calls_for_session("bench", session)]
        store.close()
    assert len(stored[call_format]) == 2 + 2 + 4  # the DPO pair's two Sessions make two calls each
    assert stored[call_format] == stored["openai-chat"]
