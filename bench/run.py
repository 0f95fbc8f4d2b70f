"""Benchmark harness: synthesize an organisation, run the real CLI stages, print one table.

    python bench/run.py --profile smoke|pilot-tenth|pilot [--sessions N] [--workers N] [--compress zst|gz|none]
                        [--uncommitted-every N] [--tool-list-bytes N] [--call-format F] [--scaling N] [--leakage N]
                        [--report docs/performance.md]
                        [--keep DIR]
                        [--engine ray [--database-url postgresql://…]]
    python bench/run.py --curve [--curve-calls 100,400,1600] [--curve-sessions 10,40,160]
    python bench/run.py --profile pilot --once --workers 2 --keep DIR [--synthesize-only]

With ``--engine ray`` (the ``sediment[ray]`` extra and a PostgreSQL server: ``scripts/test-postgres
./run bench …`` starts one) the stages run on one process, on ``--workers`` local processes and on
a local Ray cluster of ``--workers`` nodes, into PostgreSQL (bench/engines.py).

The input is synthesized compressed, as a gateway's rotated logs are (--compress, default zst),
and ingested as it is; the report gives its size on disk and the replayed (inflated) size.

Every stage runs as its own ``sediment`` process on the embedded SQLite store; wall time
and that process's peak RSS are measured. Two floors are measured in the same run: reading
the input files, and parsing them with orjson (a profile's, the fastest of three runs each;
``--once`` and ``--curve`` run them once, as their stages). Stages are reported as ratios to the
parse floor. Both floors read the input as ingest does, inflating it (sediment.ingest.reading.compressed).
A profile's table also gives a stricter parse floor, orjson over the lines as ingest cuts them
(a buffered reader's lines, which the parse floor reads, cost more), and the calls ingest's ratio to it.
The calls ingest, with one process and with ``--workers``, and every stage compared across worker
counts, are likewise the fastest of three alternating runs; each calls ingest writes a new store,
and every such store must hold the same content.
``--leakage N`` also times ``report leakage`` over every export at N, 2N and 4N Sessions
(bench/leakage.py). ``--curve`` measures the cost curve instead of a profile: ingest, derive and
export as calls per Session and Sessions grow, against the replayed and the unique bytes
(bench/curve.py). ``--once`` runs every stage once with ``--workers`` (bench/once.py): the full
``pilot`` end to end, its input kept and reused under ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from once import objectives_with_workers
from synth import CALL_FORMATS, COMPRESSIONS, PROFILES, Profile, Synthesis, synthesize

from sediment.ingest.reading.compressed import open_input

ROOT = Path(__file__).resolve().parents[1]
SEDIMENT = [sys.executable, "-m", "sediment"]
#: The objectives without targets that export from a bundle (Recovery reads the store directly).
OBJECTIVES_FROM_BUNDLE = ("sft", "diff-sft", "dpo")


@dataclass
class Stage:
    name: str
    seconds: float
    peak_rss_mb: float
    input_bytes: int
    calls: int


def run_stage(name: str, args: list[str], env: dict[str, str], input_bytes: int, calls: int) -> Stage:
    with tempfile.NamedTemporaryFile(suffix=".json") as rss_file:
        start = time.perf_counter()
        process = subprocess.run([sys.executable, str(Path(__file__).parent / "measure.py"), rss_file.name, *args],
                                 env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        if process.returncode != 0:
            raise SystemExit(f"stage {name} failed ({process.returncode}):\n{process.stderr[-4000:]}")
        rss = json.loads(Path(rss_file.name).read_text())
    return Stage(name, seconds, max(rss["self_mb"], rss["children_mb"]), input_bytes, calls)


def floors(files: list[Path], repeat: int = 1) -> tuple[float, float]:
    """Seconds to read every input byte (inflated), and to parse every line with orjson: the
    fastest of ``repeat`` runs of each (a floor measured once moves with the machine's mood)."""
    import orjson

    read = parse = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for path in files:
            with open_input(path) as handle:
                while handle.read(1 << 24):
                    pass
        read = min(read, time.perf_counter() - start)
        start = time.perf_counter()
        for path in files:
            with open_input(path) as handle:
                for line in handle:
                    orjson.loads(line)
        parse = min(parse, time.perf_counter() - start)
    return read, parse


def ingest_lines(path: Path) -> Iterator[bytes | None]:
    """``path``'s lines cut as ingest cuts them: from its own buffer, which the input is inflated
    into (:func:`sediment.ingest.reading.files._lines`), not by a buffered reader."""
    from sediment.ingest.reading.compressed import open_filling
    from sediment.ingest.reading.files import MAX_LINE_BYTES, _lines

    with open_filling(path) as fill:
        for _, line in _lines(fill, MAX_LINE_BYTES):
            yield line


def cut_floor(files: list[Path], repeat: int = 1) -> float:
    """Seconds to parse every line with orjson when the lines are cut as ingest cuts them
    (:func:`ingest_lines`) rather than by a buffered reader: the fastest of ``repeat`` runs."""
    import orjson

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for path in files:
            for line in ingest_lines(path):
                orjson.loads(line)  # every line, as the parse floor parses them
        best = min(best, time.perf_counter() - start)
    return best


def cpu_scaling(workers: int, repeat: int = 3) -> float:
    """The speed-up this machine gives a pure-Python CPU job on ``workers`` processes (the ceiling).

    Each side is timed ``repeat`` times, alternating, and the fastest of each is compared.
    """
    if workers <= 1:
        return 1.0
    from concurrent.futures import ProcessPoolExecutor

    rounds = 150_000
    one, many = float("inf"), float("inf")
    with ProcessPoolExecutor(workers) as pool:
        for _ in range(repeat):
            start = time.perf_counter()
            _spin(rounds * workers)
            one = min(one, time.perf_counter() - start)
            start = time.perf_counter()
            list(pool.map(_spin, [rounds] * workers))
            many = min(many, time.perf_counter() - start)
    return one / many


def _spin(rounds: int) -> int:
    value = {"text": "x" * 1000, "numbers": list(range(100))}
    return sum(len(json.dumps(value)) for _ in range(rounds))


def run_profile(profile: Profile, work: Path, workers: int, repeat: int = 3, compression: str = "zst"
                ) -> dict[str, Any]:
    synth_start = time.perf_counter()
    data: Synthesis = synthesize(profile, work / "inputs", compression=compression)
    synth_seconds = time.perf_counter() - synth_start
    inputs = data.call_files + data.webhook_files
    read_floor, parse_floor = floors(inputs, repeat)
    strict_floor = cut_floor(inputs, repeat)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(work / "home"), "SEDIMENT_ORG_ID": "bench",
            "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
    call_bytes = data.input_bytes - sum(_inflated_size(p) for p in data.webhook_files)
    ingests, same_store = _calls_ingests(data, work, env, workers, repeat, call_bytes)
    stages = [
        ingests[1],
        run_stage("ingest github", ["ingest", "github", *map(str, data.webhook_files)], env,
                  sum(_inflated_size(p) for p in data.webhook_files), 0),
        run_stage("ingest otlp", ["ingest", "otlp", *map(str, data.decision_files)], env,
                  sum(_inflated_size(p) for p in data.decision_files), 0),
        # after the webhooks, which name the repository's GitHub id: the mirror is keyed by it
        run_stage("mirror add", ["mirror", "add", "bench/monorepo", str(data.origin)], env, 0, 0),
    ]
    parallel_ingest = ingests.get(workers) if workers > 1 else None
    by_workers: dict[int, list[Stage]] = {}
    # Worker counts alternate and each stage runs `repeat` times (the fastest counts), so a
    # noisy neighbour on a shared machine skews both sides alike.
    parallel_objectives = objectives_with_workers(OBJECTIVES_FROM_BUNDLE)
    for attempt in range(repeat):
        for count in sorted({1, workers}):
            bundle = work / f"bundle-w{count}-{attempt}"
            w = ["--workers", str(count)]
            runs = [run_stage(f"derive (workers {count})", ["derive", "--out", str(bundle), *w], env, call_bytes,
                              data.calls)]
            for target in ("sediment", "swe-bench", "nemo-gym"):
                runs.append(run_stage(f"export {target} (workers {count})",
                                      ["export", "rlvr", "--target", target, "--from", str(bundle), "--out",
                                       str(work / f"out-w{count}-{attempt}" / target), *w], env, call_bytes,
                                      data.calls))
            # an objective without targets takes --workers when it reads bundles or its Sessions are independent
            for objective in OBJECTIVES_FROM_BUNDLE:
                runs.append(run_stage(f"export {objective} (workers {count})",
                                      ["export", objective, "--from", str(bundle), "--out",
                                       str(work / f"out-w{count}-{attempt}" / objective),
                                       *(w if objective in parallel_objectives else [])], env, call_bytes,
                                      data.calls))
            best = by_workers.get(count)
            by_workers[count] = runs if best is None else [min(a, b, key=lambda s: s.seconds)
                                                           for a, b in zip(best, runs, strict=True)]
    # Recovery reads the store and the mirrors (it has no --from): once, directly
    recovery = min((run_stage("export recovery (direct)", ["export", "recovery", "--out",
                                                           str(work / f"recovery-{attempt}")], env, call_bytes,
                              data.calls) for attempt in range(repeat)), key=lambda s: s.seconds)
    rows = {objective: _rows(work / "out-w1-0" / objective) for objective in OBJECTIVES_FROM_BUNDLE}
    rows["recovery"] = _rows(work / "recovery-0")
    identical = all(_tree(work / "out-w1-0") == _tree(work / f"out-w{c}-{a}") for c in by_workers
                    for a in range(repeat)) and all(
        (work / "bundle-w1-0" / "rollouts.jsonl").read_bytes()
        == (work / f"bundle-w{c}-{a}" / "rollouts.jsonl").read_bytes() for c in by_workers for a in range(repeat))
    facts = json.loads(subprocess.run([*SEDIMENT, "facts", "--json"], env=env, capture_output=True, text=True,
                                      check=True).stdout)
    return {
        "profile": profile, "workers": workers, "synth_seconds": synth_seconds, "data": data,
        "read_floor": read_floor, "parse_floor": parse_floor, "cut_floor": strict_floor, "stages": [*stages, *by_workers[1], recovery],
        "single": by_workers[1], "rows": rows,
        "parallel": by_workers.get(workers) if workers > 1 else None, "identical": identical,
        "cpu_scaling": cpu_scaling(workers, repeat), "repeat": repeat, "parallel_ingest": parallel_ingest, "same_store": same_store,
        "stored_bytes": facts["stored_bytes"], "facts": facts["tables"],
    }


def _calls_ingests(data: Synthesis, work: Path, env: dict[str, str], workers: int, repeat: int,
                   call_bytes: int) -> tuple[dict[int, Stage], bool]:
    """The call logs ingested ``repeat`` times with one process and with ``workers``, alternating,
    each into a new store: the fastest run of each count (measured as the floors are), and whether
    every store holds the same content. The first one-process store is ``env``'s, which the later
    stages read; the others are removed once compared."""
    fastest: dict[int, Stage] = {}
    first: list[tuple[Any, ...]] | None = None
    same = True
    for attempt in range(repeat):
        for count in sorted({1, workers}):
            home = Path(env["SEDIMENT_HOME"]) if (attempt, count) == (0, 1) else work / f"home-ingest-w{count}-{attempt}"
            name = "ingest calls" if count == 1 else f"ingest calls (workers {count})"
            stage = run_stage(name, ["ingest", "calls", "--format", data.call_format,
                                     *(["--workers", str(count)] if count > 1 else []), *map(str, data.call_files)],
                              dict(env, SEDIMENT_HOME=str(home)), call_bytes, data.calls)
            content = _store_content({"SEDIMENT_HOME": str(home)})
            if first is None:
                first = content
            same = same and content == first
            if home != Path(env["SEDIMENT_HOME"]):
                shutil.rmtree(home, ignore_errors=True)
            fastest[count] = min(fastest.get(count, stage), stage, key=lambda s: s.seconds)
    return fastest, same


def _inflated_size(path: Path) -> int:
    """A (small) input file's size once inflated."""
    size = 0
    with open_input(path) as handle:
        while chunk := handle.read(1 << 24):
            size += len(chunk)
    return size


def _rows(directory: Path) -> int:
    """How many rows an export wrote (every ``.jsonl`` file under ``directory``)."""
    return sum(len(p.read_bytes().splitlines()) for p in directory.rglob("*.jsonl"))


def _store_content(env: dict[str, str]) -> list[tuple[Any, ...]]:
    """Every stored call and content blob (a store's content, independent of insertion order)."""
    import sqlite3

    with sqlite3.connect(Path(env["SEDIMENT_HOME"]) / "facts.db") as db:
        calls = db.execute("SELECT fact_id, natural_key, record, output_hashes FROM inference_calls "
                           "ORDER BY fact_id").fetchall()
        blobs = db.execute("SELECT blob_hash, length(content) FROM blobs ORDER BY blob_hash").fetchall()
    return [*calls, *blobs]


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def memory_scaling(work: Path, sessions: int, calls: int, compression: str = "zst"
                   ) -> list[tuple[int, float, float, float]]:
    """Peak RSS of derive, of an RLVR export and of the other objectives' exports (the largest)
    at 1× and 4× the sessions (same calls per session)."""
    rows = []
    for factor in (1, 4):
        profile = Profile(f"scaling-{factor}", sessions * factor, calls)
        base = work / f"scaling-{factor}"
        data = synthesize(profile, base / "inputs", compression=compression)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
        env |= {"SEDIMENT_HOME": str(base / "home"), "SEDIMENT_ORG_ID": "bench",
                "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
        run_stage("ingest", ["ingest", "calls", "--format", data.call_format, *map(str, data.call_files)], env, 0, 0)
        run_stage("ingest", ["ingest", "github", *map(str, data.webhook_files)], env, 0, 0)
        run_stage("ingest", ["ingest", "otlp", *map(str, data.decision_files)], env, 0, 0)
        run_stage("mirror", ["mirror", "add", "bench/monorepo", str(data.origin)], env, 0, 0)
        derive = run_stage("derive", ["derive", "--out", str(base / "bundle")], env, 0, 0)
        export = run_stage("export", ["export", "rlvr", "--target", "sediment", "--from", str(base / "bundle"),
                                      "--out", str(base / "out")], env, 0, 0)
        direct = run_stage("direct", ["export", "rlvr", "--target", "nemo-gym", "--out", str(base / "direct")],
                           env, 0, 0)
        objectives = [run_stage(objective, ["export", objective, "--from", str(base / "bundle"), "--out",
                                            str(base / objective)], env, 0, 0) for objective in OBJECTIVES_FROM_BUNDLE]
        objectives.append(run_stage("recovery", ["export", "recovery", "--out", str(base / "recovery")], env, 0, 0))
        rows.append((profile.sessions, derive.peak_rss_mb, max(export.peak_rss_mb, direct.peak_rss_mb),
                     max(o.peak_rss_mb for o in objectives)))
        shutil.rmtree(base, ignore_errors=True)
    return rows


def _against_cut(result: dict[str, Any], cut: float) -> str:
    """The calls ingest's ratio to the stricter parse floor (orjson over the lines as ingest cuts them)."""
    ingests = [_stage(result["stages"], "ingest calls")]
    if result.get("parallel_ingest"):
        ingests.append(result["parallel_ingest"])
    ratios = "; ".join(f"{stage.name} {stage.seconds / cut:.2f}×" for stage in ingests)
    return (f"Against the stricter parse floor (orjson over the lines as ingest cuts them, {cut:.2f} s, "
            f"{result['parse_floor'] - cut:.2f} s below the parse floor): {ratios}.")


def render(result: dict[str, Any]) -> str:
    profile: Profile = result["profile"]
    data: Synthesis = result["data"]
    parse = result["parse_floor"]
    lines = [
        f"profile `{profile.name}`: {profile.sessions} sessions × {profile.calls} calls (2 for a DPO pair's Sessions) "
        f"({data.calls} calls, {data.input_bytes / 1e6:,.0f} MB of input replayed, "
        f"{data.compressed_bytes / 1e6:,.1f} MB on disk as {_compression_name(data.compression)}), "
        f"workers {result['workers']}"
        + (f"; Sessions that commit nothing: {len(data.uncommitted)}" if data.uncommitted else ""),
        "",
        "| stage | wall s | calls/s | MB/s | peak RSS MB | × parse floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| floor: read input{' (inflating)' if data.compression != 'none' else ''} | {result['read_floor']:.2f} | | "
        f"{data.input_bytes / 1e6 / result['read_floor']:,.0f} | | {result['read_floor'] / parse:.2f} |",
        f"| floor: orjson parse | {parse:.2f} | | {data.input_bytes / 1e6 / parse:,.0f} | | 1.00 |",
    ]
    cut = result.get("cut_floor")
    if cut:
        lines.append(f"| floor: orjson parse, lines cut as ingest cuts them | {cut:.2f} | | "
                     f"{data.input_bytes / 1e6 / cut:,.0f} | | {cut / parse:.2f} |")
    for s in result["stages"]:
        rate = f"{s.calls / s.seconds:,.0f}" if s.calls else ""
        mbs = f"{s.input_bytes / 1e6 / s.seconds:,.0f}" if s.input_bytes else ""
        lines.append(f"| {s.name} | {s.seconds:.2f} | {rate} | {mbs} | {s.peak_rss_mb:,.0f} | {s.seconds / parse:.2f} |")
    if result.get("parallel_ingest"):
        one, many = _stage(result["stages"], "ingest calls"), result["parallel_ingest"]
        lines.append(f"| {many.name} | {many.seconds:.2f} | {many.calls / many.seconds:,.0f} | "
                     f"{many.input_bytes / 1e6 / many.seconds:,.0f} | {many.peak_rss_mb:,.0f} | "
                     f"{many.seconds / parse:.2f} (speed-up {one.seconds / many.seconds:.2f}×) |")
    if result["parallel"]:
        for one, many in zip(result["single"], result["parallel"], strict=True):
            lines.append(f"| {many.name} | {many.seconds:.2f} | {many.calls / many.seconds:,.0f} | "
                         f"{many.input_bytes / 1e6 / many.seconds:,.0f} | {many.peak_rss_mb:,.0f} | "
                         f"{many.seconds / parse:.2f} (speed-up {one.seconds / many.seconds:.2f}×) |")
    total = sum(s.seconds for s in result["stages"])
    stored = result["stored_bytes"]
    lines += [
        f"| **end to end** | {total:.2f} | | | {max(s.peak_rss_mb for s in result['stages']):,.0f} | "
        f"{total / parse:.2f} |",
        "",
        f"Bytes: replayed message input {data.replayed_message_bytes / 1e6:,.1f} MB; unique message content "
        f"{data.unique_message_bytes / 1e6:,.1f} MB; stored {stored['total'] / 1e6:,.1f} MB "
        f"({stored['total'] / data.unique_message_bytes:.2f}× unique, "
        f"{stored['total'] / data.replayed_message_bytes:.3f}× replayed).",
        f"Outputs with {result['workers']} workers byte-identical to 1 worker: {result['identical']}; "
        f"store content after every calls ingest identical: {result['same_store']}. "
        f"Ceiling measured in the same run: a pure-Python CPU job runs {result['cpu_scaling']:.2f}× faster on "
        f"{result['workers']} processes than on one. The calls ingest, worker comparisons (and the ceiling) "
        f"take the fastest of {result['repeat']} alternating runs of each side (each ingest into a new store); "
        f"the floors, the fastest of "
        f"{result['repeat']} runs each.",
        *([_against_cut(result, cut)] if cut else []),
        "Rows written by the objectives (single worker): " + ", ".join(
            f"{objective} {count}" for objective, count in result["rows"].items()) + ".",
        f"End to end is the sum of the single-worker stages (synthesis of the inputs, {result['synth_seconds']:.0f} s, "
        "not included).",
    ]
    if result.get("scaling"):
        (s1, d1, e1, o1), (s4, d4, e4, o4) = result["scaling"]
        lines += ["", "| peak RSS MB | derive | RLVR export | sft, diff-sft, dpo, recovery (largest) |",
                  "| --- | ---: | ---: | ---: |",
                  f"| {s1} sessions | {d1:,.0f} | {e1:,.0f} | {o1:,.0f} |",
                  f"| {s4} sessions | {d4:,.0f} | {e4:,.0f} | {o4:,.0f} |",
                  f"| ratio 4× / 1× | {d4 / d1:.3f} | {e4 / e1:.3f} | {o4 / o1:.3f} |"]
    if result.get("leakage"):
        import leakage

        lines += ["", leakage.render(result["leakage"])]
    return "\n".join(lines)


def publish(args: argparse.Namespace, title: str, text: str) -> None:
    """Print ``text`` under the machine's description, and write it to ``--report`` with the
    command that generated it."""
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"{machine}\n\n{text}")
    if args.report:
        command = "python bench/run.py " + " ".join(sys.argv[1:])
        args.report.write_text(f"# {title}\n\nGenerated by `{command}` on {machine}.\n\n{text}\n", encoding="utf-8")


def _compression_name(compression: str) -> str:
    return {"zst": "Zstandard", "gz": "gzip", "none": "plain JSON Lines"}[compression]


def _stage(stages: list[Stage], name: str) -> Stage:
    """The stage called ``name`` (a speed-up compares a stage with its own parallel run)."""
    return next(stage for stage in stages if stage.name == name)


def run_library_profile(args: argparse.Namespace) -> None:
    import library

    work = args.keep or Path(tempfile.mkdtemp(prefix="sediment-bench-library-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    try:
        text = library.render(library.run_library(work, run_stage, env))
        publish(args, "Library performance", text)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def run_engine_profile(args: argparse.Namespace, profile: Profile) -> None:
    import engines

    if not args.database_url:
        raise SystemExit("--engine ray needs a PostgreSQL server: --database-url, or run under scripts/test-postgres")
    if args.workers < 2:
        raise SystemExit("--engine ray compares N workers with one process: give --workers 2 or more")
    work = args.keep or Path(tempfile.mkdtemp(prefix="sediment-bench-ray-"))
    try:
        text = engines.render(engines.run_engines(profile, work, args.workers, args.database_url, run_stage,
                                                  compression=args.compress))
        publish(args, "Ray engine", text)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return counts


def run_once(args: argparse.Namespace, profile: Profile) -> None:
    import once

    work = args.keep or Path(tempfile.mkdtemp(prefix="sediment-bench-once-"))
    try:
        if args.synthesize_only:
            data, seconds = once.inputs(profile, work, args.compress)
            print(f"{data.calls:,} calls, {data.input_bytes / 1e9:,.1f} GB replayed, "
                  f"{data.compressed_bytes / 1e9:,.2f} GB on disk under {work / 'inputs'}"
                  + (f", written in {seconds:.0f} s" if seconds is not None else ", found from an earlier run"))
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
        env |= {"SEDIMENT_ORG_ID": "bench", "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
        text = once.render(once.run_once(profile, work, args.workers, run_stage, floors, env, args.compress))
        publish(args, "One pass", text)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def run_curve(args: argparse.Namespace) -> None:
    import curve

    work = args.keep or Path(tempfile.mkdtemp(prefix="sediment-bench-curve-"))
    try:
        text = curve.render(curve.cost_curve(work, run_stage, floors, calls_axis=args.curve_calls,
                                             calls_sessions=args.curve_calls_sessions,
                                             sessions_axis=args.curve_sessions,
                                             sessions_calls=args.curve_sessions_calls, compression=args.compress))
        publish(args, "Cost curve", text)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=[*sorted(PROFILES), "library"], default="smoke",
                        help="library: import generated trajectories at 10x and 100x the fixtures' volume")
    parser.add_argument("--sessions", type=int, help="override the profile's session count")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--uncommitted-every", type=int, default=0, metavar="N",
                        help="every Nth Session makes the next Session's edits but commits nothing and has no "
                             "note (default 0: every Session commits)")
    parser.add_argument("--compress", choices=COMPRESSIONS, default="zst",
                        help="how the synthesized input is written, as a gateway's rotated logs are: zst "
                             "(Zstandard, the default), gz or none (plain); ingest reads it as it is")
    parser.add_argument("--keep", type=Path, help="work directory to keep (default: a temp dir, removed)")
    parser.add_argument("--report", type=Path, help="also write the markdown report here")
    parser.add_argument("--tool-list-bytes", type=int, default=0, metavar="N",
                        help="every call declares about N bytes of tool definitions, as a coding agent "
                             "does (default 0: none)")
    parser.add_argument("--call-format", choices=CALL_FORMATS, default="openai-chat",
                        help="how the synthesized calls are logged, the same turns in each: a request/response "
                             "pair of OpenAI Chat (the default), OpenAI Responses or Anthropic Messages, or a "
                             "LiteLLM gateway's payload")
    parser.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="ray: compare one process, local workers and a local Ray cluster (bench/engines.py)")
    parser.add_argument("--database-url", default=os.environ.get("SEDIMENT_TEST_DATABASE_URL"),
                        help="PostgreSQL server for --engine ray (default: SEDIMENT_TEST_DATABASE_URL, which "
                             "scripts/test-postgres sets)")
    parser.add_argument("--scaling", type=int, metavar="SESSIONS",
                        help="also measure peak RSS of derive/export at SESSIONS and 4×SESSIONS sessions")
    parser.add_argument("--leakage", type=int, metavar="SESSIONS",
                        help="also time `report leakage` over every export at SESSIONS, 2× and 4×SESSIONS "
                             "sessions (time per row as the rows grow)")
    parser.add_argument("--curve", action="store_true",
                        help="measure the cost curve instead of a profile (bench/curve.py)")
    parser.add_argument("--curve-calls", type=_counts, default=[100, 400, 1600], metavar="N,N,…",
                        help="calls per Session along the first axis (default 100,400,1600)")
    parser.add_argument("--curve-calls-sessions", type=int, default=3, metavar="N",
                        help="Sessions at every point of the calls axis (default 3: one pair of two-call "
                             "Sessions and one Session of the point's calls)")
    parser.add_argument("--curve-sessions", type=_counts, default=[10, 40, 160], metavar="N,N,…",
                        help="Sessions along the second axis (default 10,40,160)")
    parser.add_argument("--curve-sessions-calls", type=int, default=100, metavar="N",
                        help="calls per Session at every point of the Sessions axis (default 100)")
    parser.add_argument("--once", action="store_true",
                        help="every stage once with --workers, end to end (bench/once.py); with --keep the "
                             "synthesized input is kept and reused by the next run of the same profile")
    parser.add_argument("--synthesize-only", action="store_true",
                        help="with --once --keep: write (or find) the input and stop")
    args = parser.parse_args()
    if args.synthesize_only and not (args.once and args.keep):
        parser.error("--synthesize-only goes with --once and --keep DIR")
    if args.curve:
        run_curve(args)
        return
    if args.profile == "library":
        run_library_profile(args)
        return
    profile = PROFILES[args.profile]
    if args.sessions:
        profile = replace(profile, name=f"{profile.name} ({args.sessions} sessions)", sessions=args.sessions)
    if args.tool_list_bytes < 0:
        parser.error("--tool-list-bytes: expected 0 or a positive integer")
    if args.tool_list_bytes:
        profile = replace(profile, name=f"{profile.name} (tools {args.tool_list_bytes:,} bytes)",
                          tool_bytes=args.tool_list_bytes)
    if args.call_format != "openai-chat":
        profile = replace(profile, name=f"{profile.name} ({args.call_format})", call_format=args.call_format)
    if args.uncommitted_every < 0:
        parser.error("--uncommitted-every: expected 0 or a positive integer")
    if args.uncommitted_every:
        profile = replace(profile, name=f"{profile.name} (uncommitted every {args.uncommitted_every})",
                          uncommitted_every=args.uncommitted_every)
    if args.engine == "ray":
        run_engine_profile(args, profile)
        return
    if args.once:
        run_once(args, profile)
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="sediment-bench-"))
    try:
        result = run_profile(profile, work, args.workers, compression=args.compress)
        if args.scaling:
            result["scaling"] = memory_scaling(work, args.scaling, profile.calls, args.compress)
        if args.leakage:
            import leakage

            env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
            env |= {"SEDIMENT_ORG_ID": "bench", "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
            result["leakage"] = leakage.leakage_scaling(work, args.leakage, profile.calls, run_stage, env)
        text = render(result)
        publish(args, "Performance", text)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
