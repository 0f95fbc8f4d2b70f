"""One pass of the whole pipeline at a profile's size: every stage once, with ``--workers``.

    python bench/run.py --profile pilot --once --workers 2 --keep DIR [--synthesize-only]

The comparisons of the default bench (one worker against several, three alternating runs of
each) multiply its time; at the full ``pilot`` (2,400 Sessions of 100 calls, about 128 GB of
replayed input) one pass is what fits a working day. The stages are those of an operator's run,
in order, each its own ``sediment`` process on the embedded store: the three ingests, the
mirror, derive, the three RLVR targets and SFT, diff-SFT and DPO from the bundle, and Recovery
from the store. End to end is their sum; the parse floor is measured in the same run.

The synthesized input is kept under ``--keep DIR`` with a manifest (``DIR/inputs/synthesis.json``)
and reused by a later run of the same profile, so ``--synthesize-only`` can write it while the
machine does other work and the measured pass can run alone.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from synth import Profile, Synthesis, synthesize

TARGETS = ("sediment", "swe-bench", "nemo-gym")
OBJECTIVES = ("sft", "diff-sft", "dpo")


def inputs(profile: Profile, work: Path, compression: str) -> tuple[Synthesis, float | None]:
    """The profile's synthesized input under ``work/inputs``: read from its manifest when a
    run of the same profile and compression wrote it and its files are all there, else written
    (and its seconds)."""
    manifest = work / "inputs" / "synthesis.json"
    key = {"profile": asdict(profile), "compression": compression}
    if manifest.exists():
        saved = json.loads(manifest.read_text(encoding="utf-8"))
        if saved["key"] == key:
            data = Synthesis(**saved["synthesis"])
            for name in ("call_files", "webhook_files", "decision_files"):
                setattr(data, name, [Path(p) for p in getattr(data, name)])
            data.origin = Path(data.origin)
            if all(p.exists() for p in (*data.call_files, *data.webhook_files, *data.decision_files, data.origin)):
                return data, None
    shutil.rmtree(work / "inputs", ignore_errors=True)
    start = time.perf_counter()
    data = synthesize(profile, work / "inputs", compression=compression)
    seconds = time.perf_counter() - start
    manifest.write_text(json.dumps({"key": key, "synthesis": asdict(data)}, default=str), encoding="utf-8")
    return data, seconds


def _said(run_stage: Callable[..., Any]) -> Callable[..., Any]:
    """``run_stage`` that also prints each stage's figures on stderr as it ends (a long pass
    stopped half way still shows what it measured)."""
    def run(name: str, *args: Any) -> Any:
        stage = run_stage(name, *args)
        print(f"{name}: {stage.seconds:.1f} s, peak RSS {stage.peak_rss_mb:,.0f} MB", file=sys.stderr, flush=True)
        return stage
    return run


def objectives_with_workers(names: tuple[str, ...]) -> set[str]:
    """Those of ``names`` whose exports take ``--workers``: objectives that declare their Sessions
    independent (workers project runs of Sessions) or read bundles (workers check the bundle)."""
    from sediment.host.registry import load_registry

    objectives = load_registry().objectives
    return {name for name in names
            if objectives[name].info.sessions_independent or objectives[name].info.supports_from}


def run_once(profile: Profile, work: Path, workers: int, run_stage: Callable[..., Any],
             floors: Callable[[list[Path]], tuple[float, float]], env: dict[str, str],
             compression: str = "zst") -> dict[str, Any]:
    run_stage = _said(run_stage)
    data, synth_seconds = inputs(profile, work, compression)
    home = work / "home"
    for stale in (home, work / "bundle", work / "out"):
        shutil.rmtree(stale, ignore_errors=True)
    env = dict(env, SEDIMENT_HOME=str(home))
    read, parse = floors(data.call_files + data.webhook_files)
    print(f"floors: read {read:.1f} s, orjson parse {parse:.1f} s", file=sys.stderr, flush=True)
    w = ["--workers", str(workers)]
    out = work / "out"
    stages = [
        run_stage("ingest calls", ["ingest", "calls", "--format", data.call_format, *w, *map(str, data.call_files)],
                  env, data.input_bytes, data.calls),
        run_stage("ingest github", ["ingest", "github", *map(str, data.webhook_files)], env, 0, 0),
        run_stage("ingest otlp", ["ingest", "otlp", *map(str, data.decision_files)], env, 0, 0),
        run_stage("mirror add", ["mirror", "add", "bench/monorepo", str(data.origin)], env, 0, 0),
        run_stage("derive", ["derive", "--out", str(work / "bundle"), *w], env, data.input_bytes, data.calls),
    ]
    for target in TARGETS:
        stages.append(run_stage(f"export rlvr {target}", ["export", "rlvr", "--target", target, "--from",
                                                          str(work / "bundle"), "--out", str(out / target), *w],
                                env, data.input_bytes, data.calls))
    parallel = objectives_with_workers(OBJECTIVES)
    for objective in OBJECTIVES:
        stages.append(run_stage(f"export {objective}", ["export", objective, "--from", str(work / "bundle"), "--out",
                                                        str(out / objective), *(w if objective in parallel else [])],
                                env, data.input_bytes, data.calls))
    stages.append(run_stage("export recovery (store)", ["export", "recovery", "--out", str(out / "recovery")], env,
                            data.input_bytes, data.calls))
    return {"profile": profile, "workers": workers, "data": data, "synth_seconds": synth_seconds,
            "read_floor": read, "parse_floor": parse, "stages": stages}


def render(result: dict[str, Any]) -> str:
    profile: Profile = result["profile"]
    data: Synthesis = result["data"]
    parse = result["parse_floor"]
    stages = result["stages"]
    total = sum(s.seconds for s in stages)
    lines = [f"profile `{profile.name}`: {profile.sessions} Sessions × {profile.calls} calls ({data.calls:,} calls, "
             f"{data.input_bytes / 1e9:,.1f} GB of input replayed, {data.compressed_bytes / 1e9:,.2f} GB on disk), "
             f"one pass with --workers {result['workers']}", "",
             "| stage | wall s | peak RSS MB | × parse floor |", "| --- | ---: | ---: | ---: |",
             f"| floor: read input (inflating) | {result['read_floor']:.1f} | | {result['read_floor'] / parse:.2f} |",
             f"| floor: orjson parse | {parse:.1f} | | 1.00 |"]
    lines += [f"| {s.name} | {s.seconds:.1f} | {s.peak_rss_mb:,.0f} | {s.seconds / parse:.2f} |" for s in stages]
    lines += [f"| **end to end** | {total:.1f} ({total / 60:.1f} min) | {max(s.peak_rss_mb for s in stages):,.0f} | "
              f"{total / parse:.2f} |", ""]
    synth = result["synth_seconds"]
    lines.append("End to end is the sum of the stages; synthesis of the input "
                 + (f"took {synth:.0f} s and is not included." if synth is not None
                    else "was read from an earlier run's manifest."))
    return "\n".join(lines)
