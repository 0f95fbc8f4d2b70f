"""The cost curve: how ingest, derive and export grow with calls per Session and with Sessions.

    python bench/run.py --curve [--curve-calls 100,400,1600] [--curve-sessions 10,40,160]
                        [--curve-calls-sessions 3] [--curve-sessions-calls 100]

Two axes, each point a freshly synthesized org (bench/synth.py, compressed as ``--compress`` says):

- calls per Session (``--curve-calls``) at ``--curve-calls-sessions`` Sessions. A Session's
  replayed input grows with the square of its calls (call n replays every turn before it), its
  unique content only linearly; a stage that grows with the replayed bytes grows with the square.
- Sessions (``--curve-sessions``) at ``--curve-sessions-calls`` calls each: replayed and unique
  content both grow linearly.

At every point the parse floor (orjson over every inflated input line) is measured in the same
run, then ingest (calls, webhooks, decisions), derive and one RLVR export each run as their own
process (wall time, peak RSS). Each stage's growth from the axis' first point is printed beside
the growth of the replayed bytes and of the unique content: a stage that grows with unique
content keeps its growth near the unique column. The first two Sessions of every ten answer one
task in two calls (the synthesized DPO pairs), so an axis point's call count is a little under
Sessions × calls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth import Profile, synthesize

SEDIMENT = [sys.executable, "-m", "sediment"]


@dataclass(frozen=True)
class Point:
    axis: str
    sessions: int
    calls_per_session: int
    calls: int
    replayed_mb: float
    unique_mb: float
    stored_mb: float
    compressed_mb: float
    floor_s: float
    ingest_s: float
    derive_s: float
    export_s: float
    ingest_rss: float
    derive_rss: float
    export_rss: float


def measure_point(axis: str, profile: Profile, base: Path, run_stage: Callable[..., Any],
                  floors: Callable[[list[Path]], tuple[float, float]], compression: str) -> Point:
    """One org at ``profile``'s size: synthesized, floored, ingested, derived and exported once."""
    data = synthesize(profile, base / "inputs", compression=compression)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(base / "home"), "SEDIMENT_ORG_ID": "bench",
            "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
    _, parse = floors(data.call_files + data.webhook_files)
    ingest = [run_stage("ingest calls", ["ingest", "calls", "--format", data.call_format,
                                         *map(str, data.call_files)], env, 0, 0),
              run_stage("ingest github", ["ingest", "github", *map(str, data.webhook_files)], env, 0, 0),
              run_stage("ingest otlp", ["ingest", "otlp", *map(str, data.decision_files)], env, 0, 0)]
    run_stage("mirror add", ["mirror", "add", "bench/monorepo", str(data.origin)], env, 0, 0)
    derive = run_stage("derive", ["derive", "--out", str(base / "bundle")], env, 0, 0)
    export = run_stage("export", ["export", "rlvr", "--target", "sediment", "--from", str(base / "bundle"),
                                  "--out", str(base / "out")], env, 0, 0)
    facts = json.loads(subprocess.run([*SEDIMENT, "facts", "--json"], env=env, capture_output=True, text=True,
                                      check=True).stdout)
    point = Point(axis, profile.sessions, profile.calls, data.calls, data.replayed_message_bytes / 1e6,
                  data.unique_message_bytes / 1e6, facts["stored_bytes"]["total"] / 1e6,
                  data.compressed_bytes / 1e6, parse, sum(s.seconds for s in ingest), derive.seconds,
                  export.seconds, max(s.peak_rss_mb for s in ingest), derive.peak_rss_mb, export.peak_rss_mb)
    shutil.rmtree(base, ignore_errors=True)
    return point


def cost_curve(work: Path, run_stage: Callable[..., Any], floors: Callable[[list[Path]], tuple[float, float]], *,
               calls_axis: list[int], calls_sessions: int, sessions_axis: list[int], sessions_calls: int,
               compression: str = "zst") -> list[Point]:
    points = []
    for calls in calls_axis:
        profile = Profile(f"curve-calls-{calls}", calls_sessions, calls)
        points.append(measure_point("calls per Session", profile, work / profile.name, run_stage, floors,
                                    compression))
    for sessions in sessions_axis:
        profile = Profile(f"curve-sessions-{sessions}", sessions, sessions_calls)
        points.append(measure_point("Sessions", profile, work / profile.name, run_stage, floors, compression))
    return points


def render(points: list[Point]) -> str:
    lines = ["| axis | Sessions × calls | calls | replayed MB | unique MB | stored MB | parse floor s | ingest s "
             "| derive s | export s | ingest / derive / export × floor | peak RSS MB (ingest / derive / export) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in points:
        lines.append(f"| {p.axis} | {p.sessions} × {p.calls_per_session} | {p.calls:,} | {p.replayed_mb:,.1f} | "
                     f"{p.unique_mb:,.1f} | {p.stored_mb:,.1f} | {p.floor_s:.2f} | {p.ingest_s:.2f} | "
                     f"{p.derive_s:.2f} | {p.export_s:.2f} | {p.ingest_s / p.floor_s:.2f} / "
                     f"{p.derive_s / p.floor_s:.2f} / {p.export_s / p.floor_s:.2f} | "
                     f"{p.ingest_rss:,.0f} / {p.derive_rss:,.0f} / {p.export_rss:,.0f} |")
    lines += ["", "Growth from each axis' first point:", "",
              "| axis | Sessions × calls | replayed | unique | ingest | derive | export | peak RSS (largest) |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for axis in dict.fromkeys(p.axis for p in points):
        first, *_ = [p for p in points if p.axis == axis]
        for p in (q for q in points if q.axis == axis):
            rss = max(p.ingest_rss, p.derive_rss, p.export_rss) / max(first.ingest_rss, first.derive_rss,
                                                                      first.export_rss)
            lines.append(f"| {axis} | {p.sessions} × {p.calls_per_session} | {p.replayed_mb / first.replayed_mb:.1f}× "
                         f"| {p.unique_mb / first.unique_mb:.1f}× | {p.ingest_s / first.ingest_s:.1f}× | "
                         f"{p.derive_s / first.derive_s:.1f}× | {p.export_s / first.export_s:.1f}× | {rss:.2f}× |")
    return "\n".join(lines)
