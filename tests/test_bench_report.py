"""The bench's report (bench/run.py): each speed-up compares a stage with its own parallel run
(docs/performance.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

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
