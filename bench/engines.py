"""``bench/run.py --engine ray``: the same stages on one process, on local workers and on Ray.

The synthesized input is ingested into a PostgreSQL store (the shared fact store the Ray engine
needs; every side reads the same one), then derive, the RLVR target exports from the bundle and a
direct export from the store run three ways: one process, ``--workers N`` forked processes, and
``--engine ray --workers N`` on a local Ray cluster of N nodes with one CPU each, on loopback
(:func:`sediment.testing.ray_cluster.local_ray_cluster`). Multi-file call ingest runs the three
ways too, each into a fresh database, and the stores' content is compared. Every output is
compared byte for byte with the single process's.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from synth import Profile, Synthesis, synthesize

TARGETS = ("sediment", "swe-bench", "nemo-gym")


def fresh_database(base_url: str) -> str:
    """A new, uniquely named database on the server ``base_url`` names; its URL."""
    import psycopg

    name = f"sediment_bench_{secrets.token_hex(6)}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base_url.rsplit("/", 1)[0] + "/" + name


def store_content(url: str) -> list[tuple[Any, ...]]:
    """Every stored call and content blob, independent of insertion order."""
    import psycopg

    with psycopg.connect(url) as conn:
        calls = conn.execute("SELECT fact_id, natural_key, record, output_hashes FROM inference_calls "
                             "ORDER BY fact_id").fetchall()
        blobs = conn.execute("SELECT blob_hash, length(content) FROM blobs ORDER BY blob_hash").fetchall()
    return [*calls, *blobs]


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def run_engines(profile: Profile, work: Path, workers: int, database_url: str, run_stage: Any,
                compression: str = "zst", address: str | None = None) -> dict[str, Any]:
    """Every stage on the three sides; their timings and whether every output is identical. The
    Ray side runs on the cluster at ``address``, else on a local one of ``workers`` nodes."""
    from contextlib import nullcontext

    from sediment.testing.ray_cluster import local_ray_cluster

    data: Synthesis = synthesize(profile, work / "inputs", compression=compression)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(work / "home"), "SEDIMENT_ORG_ID": "bench",
            "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z", "SEDIMENT_DATABASE_URL": fresh_database(database_url)}
    calls = [str(p) for p in data.call_files]
    run_stage("ingest calls", ["ingest", "calls", "--format", data.call_format, *calls], env, 0, 0)
    run_stage("ingest github", ["ingest", "github", *map(str, data.webhook_files)], env, 0, 0)
    run_stage("ingest otlp", ["ingest", "otlp", *map(str, data.decision_files)], env, 0, 0)
    run_stage("mirror add", ["mirror", "add", "bench/monorepo", str(data.origin)], env, 0, 0)
    sides = {"1 process": [], f"local, {workers} workers": ["--workers", str(workers)],
             f"ray, {workers} workers": ["--engine", "ray", "--workers", str(workers)]}
    timings: dict[str, dict[str, float]] = {}
    stores: dict[str, list[tuple[Any, ...]]] = {}
    with nullcontext(address) if address else local_ray_cluster(nodes=workers, connect=False) as running:
        env["RAY_ADDRESS"] = running
        for side, options in sides.items():
            tag = str(len(timings))
            out = work / f"side-{tag}"
            out.mkdir()
            seconds: dict[str, float] = {}
            ingest_env = dict(env, SEDIMENT_DATABASE_URL=fresh_database(database_url))
            seconds["ingest calls"] = run_stage("ingest", ["ingest", "calls", "--format", data.call_format, *calls,
                                                           *options], ingest_env, 0, 0).seconds
            stores[side] = store_content(ingest_env["SEDIMENT_DATABASE_URL"])
            seconds["derive"] = run_stage("derive", ["derive", "--out", str(out / "bundle"), *options], env, 0,
                                          0).seconds
            for target in TARGETS:
                seconds[f"export rlvr {target} (bundle)"] = run_stage(
                    target, ["export", "rlvr", "--target", target, "--from", str(out / "bundle"), "--out",
                             str(out / "exports" / target), *options], env, 0, 0).seconds
            seconds["export rlvr nemo-gym (direct)"] = run_stage(
                "direct", ["export", "rlvr", "--target", "nemo-gym", "--out", str(out / "direct"), *options], env,
                0, 0).seconds
            timings[side] = seconds
    first = work / "side-0"
    identical = all(_tree(first) == _tree(work / f"side-{i}") for i in range(1, len(sides)))
    same_store = all(content == stores["1 process"] for content in stores.values())
    return {"profile": profile, "data": data, "workers": workers, "timings": timings, "identical": identical,
            "same_store": same_store}


def render(result: dict[str, Any]) -> str:
    profile: Profile = result["profile"]
    data: Synthesis = result["data"]
    sides = list(result["timings"])
    one, local, ray = sides
    lines = [
        f"profile `{profile.name}`: {profile.sessions} sessions × {profile.calls} calls ({data.calls} calls, "
        f"{data.input_bytes / 1e6:,.0f} MB of input replayed), PostgreSQL store, Ray cluster of "
        f"{result['workers']} nodes × 1 CPU on loopback",
        "",
        f"| stage | {one} s | {local} s | {ray} s | ray vs 1 process | ray vs local workers |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    timings = result["timings"]
    for stage in timings[one]:
        a, b, c = timings[one][stage], timings[local][stage], timings[ray][stage]
        lines.append(f"| {stage} | {a:.2f} | {b:.2f} | {c:.2f} | {a / c:.2f}× | {b / c:.2f}× |")
    totals = [sum(timings[side].values()) for side in sides]
    lines += [f"| **total** | {totals[0]:.2f} | {totals[1]:.2f} | {totals[2]:.2f} | {totals[0] / totals[2]:.2f}× | "
              f"{totals[1] / totals[2]:.2f}× |", "",
              f"Outputs (bundle and every export) byte-identical on the three sides: {result['identical']}; "
              f"store content after the three call ingests identical: {result['same_store']}. Each stage is one "
              "`sediment` process (a Ray stage connects to the cluster as a driver, which it pays for); one run "
              "per side."]
    return "\n".join(lines)
