"""The library profile of the benchmark: import generated trajectories at 10× and 100× the
volume of the held-out trajectory fixtures, through the real ``sediment library import``.

For each factor it generates canonical records (``sediment.trajectory.synthetic``) as a JSONL
file of that many bytes, measures the two floors (reading the bytes; parsing every line with
orjson) and the import process's wall time and peak RSS, and reports import MB/s and the import
time as a ratio to the parse floor. A second import of the same file (nothing to add) is timed
as well.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "trajectories"
FIXTURE_BYTES = 1_962_238
"""The held-out fixtures' data bytes as SOURCES.md lists them (used when they are absent)."""


def fixture_bytes() -> int:
    if FIXTURES.is_dir():
        return sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file() and p.name != "SOURCES.md")
    return FIXTURE_BYTES


def generate(path: Path, target_bytes: int, seed: int = 1) -> int:
    """Write generated canonical records until ``target_bytes``; the record count."""
    from sediment.trajectory import synthetic

    written = count = 0
    with path.open("wb") as handle:
        while written < target_bytes:
            line = orjson.dumps(synthetic.record(seed, count, tasks=max(7, target_bytes // 200_000),
                                                 text_bytes=6000)) + b"\n"
            handle.write(line)
            written += len(line)
            count += 1
    return count


def floors(path: Path) -> tuple[float, float]:
    start = time.perf_counter()
    with path.open("rb") as handle:
        while handle.read(1 << 24):
            pass
    read = time.perf_counter() - start
    start = time.perf_counter()
    with path.open("rb") as handle:
        for line in handle:
            orjson.loads(line)
    return read, time.perf_counter() - start


def run_library(work: Path, run_stage: Any, env: dict[str, str], factors: tuple[int, ...] = (10, 100)
                ) -> list[dict[str, Any]]:
    base = fixture_bytes()
    results = []
    for factor in factors:
        source = work / f"library-{factor}x.jsonl"
        records = generate(source, base * factor)
        size = source.stat().st_size
        read, parse = floors(source)
        library = work / f"library-{factor}x"
        first = run_stage(f"library import {factor}x", ["library", "import", "canonical-jsonl", str(source),
                                                        "--library", str(library)], env, size, records)
        again = run_stage(f"library re-import {factor}x", ["library", "import", "canonical-jsonl", str(source),
                                                           "--library", str(library)], env, size, records)
        results.append({"factor": factor, "bytes": size, "records": records, "read": read, "parse": parse,
                        "import": first, "reimport": again})
        source.unlink()
    return results


def render(results: list[dict[str, Any]]) -> str:
    factors = ", ".join(f"{r['factor']}×" for r in results)
    lines = [f"library profile: generated canonical trajectories at {factors} "
             f"the held-out fixtures' {fixture_bytes() / 1e6:.2f} MB",
             "",
             "| stage | input MB | records | wall s | MB/s | peak RSS MB | × parse floor |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        mb = r["bytes"] / 1e6
        lines.append(f"| floor: orjson parse {r['factor']}× | {mb:,.1f} | {r['records']:,} | {r['parse']:.2f} | "
                     f"{mb / r['parse']:,.0f} | | 1.00 |")
        for stage in (r["import"], r["reimport"]):
            lines.append(f"| {stage.name} | {mb:,.1f} | {r['records']:,} | {stage.seconds:.2f} | "
                         f"{mb / stage.seconds:,.1f} | {stage.peak_rss_mb:,.0f} | {stage.seconds / r['parse']:.1f} |")
    if len(results) >= 2:
        lo, hi = results[0]["import"], results[-1]["import"]
        lines += ["", f"Peak RSS of the import at {results[-1]['factor']}× / {results[0]['factor']}× the input: "
                      f"{hi.peak_rss_mb / lo.peak_rss_mb:.2f} (records are staged on disk, not held in memory)."]
    return "\n".join(lines)
