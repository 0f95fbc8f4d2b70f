"""The cost of ``sediment report leakage`` over the exports of a synthesized org, as its rows grow.

    python bench/run.py --profile smoke --leakage SESSIONS

At SESSIONS, 2× and 4× SESSIONS Sessions (the profile's calls per Session) the org is synthesized,
ingested, derived and exported once by every RLVR target and every objective, then
``report leakage`` reads every export directory and writes its ``--out`` files (tags, JSON and
HTML page): the fastest of ``repeat`` runs counts. The report's start-up (the same command over an
empty directory, measured in the same run) is taken off before dividing by the rows read: a
near-linear report keeps that time per row flat as the rows grow, a quadratic one doubles it at
every doubling.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synth import Profile, synthesize

#: RLVR targets and the objectives that export from a bundle (Recovery reads the store).
TARGETS = ("sediment", "swe-bench", "nemo-gym")
OBJECTIVES = ("sft", "diff-sft", "dpo")


def _exports(profile: Profile, base: Path, run_stage: Callable[..., Any], env: dict[str, str]) -> list[Path]:
    """Every export of the org ``profile`` synthesizes under ``base``: their directories."""
    data = synthesize(profile, base / "inputs")
    env = dict(env, SEDIMENT_HOME=str(base / "home"))
    run_stage("ingest", ["ingest", "calls", "--format", data.call_format, *map(str, data.call_files)], env, 0, 0)
    run_stage("ingest", ["ingest", "github", *map(str, data.webhook_files)], env, 0, 0)
    run_stage("ingest", ["ingest", "otlp", *map(str, data.decision_files)], env, 0, 0)
    run_stage("mirror", ["mirror", "add", "bench/monorepo", str(data.origin)], env, 0, 0)
    run_stage("derive", ["derive", "--out", str(base / "bundle")], env, 0, 0)
    out = base / "exports"
    for target in TARGETS:
        run_stage("export", ["export", "rlvr", "--target", target, "--from", str(base / "bundle"), "--out",
                             str(out / target)], env, 0, 0)
    for objective in OBJECTIVES:
        run_stage("export", ["export", objective, "--from", str(base / "bundle"), "--out", str(out / objective)],
                  env, 0, 0)
    run_stage("export", ["export", "recovery", "--out", str(out / "recovery")], env, 0, 0)
    return sorted(p for p in out.iterdir() if p.is_dir())


def _report(name: str, dirs: list[Path], out: Path, run_stage: Callable[..., Any], env: dict[str, str],
            repeat: int) -> tuple[Any, dict[str, Any]]:
    """The fastest of ``repeat`` reports over ``dirs``, and the leakage.json it wrote."""
    runs = [run_stage(name, ["report", "leakage", *map(str, dirs), "--out", str(out)], env, 0, 0)
            for _ in range(repeat)]
    return min(runs, key=lambda s: s.seconds), json.loads((out / "leakage.json").read_text(encoding="utf-8"))


def leakage_scaling(work: Path, sessions: int, calls: int, run_stage: Callable[..., Any], env: dict[str, str],
                    repeat: int = 3) -> dict[str, Any]:
    """Per size (SESSIONS, 2×, 4×): the rows the report read, its findings, its seconds and peak RSS."""
    empty = work / "leakage-empty"
    empty.mkdir(parents=True, exist_ok=True)
    startup, _ = _report("report leakage (empty)", [empty], work / "leakage-empty-out", run_stage, env, repeat)
    sizes = []
    for factor in (1, 2, 4):
        base = work / f"leakage-{factor}"
        dirs = _exports(Profile(f"leakage-{factor}", sessions * factor, calls), base, run_stage, env)
        stage, report = _report("report leakage", dirs, base / "leakage", run_stage, env, repeat)
        sizes.append({"sessions": sessions * factor, "rows": report["rows"], "splits": report["splits"],
                      "findings": len(report["findings"]), "seconds": stage.seconds,
                      "peak_rss_mb": stage.peak_rss_mb,
                      "html_bytes": (base / "leakage" / "leakage.html").stat().st_size})
    return {"startup": startup.seconds, "repeat": repeat, "calls": calls, "sizes": sizes}


def render(result: dict[str, Any]) -> str:
    startup = result["startup"]
    lines = [f"`report leakage` over every export ({result['calls']} calls a Session), fastest of "
             f"{result['repeat']} runs; start-up (an empty directory) {startup:.2f} s, taken off before dividing "
             "by the rows.", "",
             "| sessions | rows read (eval, train) | findings | wall s | ms per row above start-up | peak RSS MB "
             "| leakage.html KB |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    per_row = []
    for size in result["sizes"]:
        ms = max(size["seconds"] - startup, 0.0) * 1000 / max(size["rows"], 1)
        per_row.append(ms)
        splits = ", ".join(str(size["splits"].get(s, 0)) for s in ("eval", "train"))
        lines.append(f"| {size['sessions']} | {size['rows']:,} ({splits}) | {size['findings']:,} | "
                     f"{size['seconds']:.2f} | {ms:.3f} | {size['peak_rss_mb']:,.0f} | "
                     f"{size['html_bytes'] / 1024:,.0f} |")
    first, last = result["sizes"][0], result["sizes"][-1]
    lines += ["", f"Rows ×{last['rows'] / max(first['rows'], 1):.2f}: time above start-up "
                  f"×{max(last['seconds'] - startup, 1e-9) / max(first['seconds'] - startup, 1e-9):.2f}, "
                  f"time per row ×{per_row[-1] / max(per_row[0], 1e-9):.2f} (1.00 is linear; a quadratic "
                  f"report would give ×{last['rows'] / max(first['rows'], 1):.2f})."]
    return "\n".join(lines)
