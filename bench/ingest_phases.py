"""Where one process's ``ingest calls`` spends its time, phase by phase.

    python bench/ingest_phases.py [--format F] FILE...   (the bench's kept input: DIR/inputs/calls/*)

Runs ``sediment ingest calls --format F FILE...`` (default ``openai-chat``) in this process, into a new store
in a temporary home (``SEDIMENT_ORG_ID`` and ``SEDIMENT_CAPTURE_TIME`` as the bench sets them),
with a timer around each phase of the pipeline, and prints one table: seconds and share of
the wall time. The phases nest as the pipeline does (redaction runs inside translation, blob
encoding inside store preparation); "reading and the rest" is what no timer covers: inflating
the input and cutting it into lines, the command's start, the loop around the phases. The parse
floor (orjson over every inflated line, bench/run.py's ``floors``) is measured first, in the same
process, for the ratio. A last line times reading alone, in the same process: inflating the
input, inflating and cutting it into lines as ingest does, and as the floor does (a buffered
reader's lines), so the part of the floor that is reading can be told from the part that is orjson.
The timers cost about a microsecond a call; the figures are for comparing phases, the bench's
table for the stage as a whole.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: (module, owner attribute or None, function name, phase label, depth in the table)
PHASES: tuple[tuple[str, str | None, str, str, int], ...] = (
    ("sediment.ingest.calls.spans", "SpanReader", "parse", "parse (span reader)", 0),
    ("sediment.ingest.calls", None, "translate_call", "translate", 0),
    ("sediment.ingest.calls.toolkit", None, "redact_call", "redact content", 1),
    ("sediment.store.write", "FactWriter", "_prepare", "store: prepare rows", 0),
    ("sediment.store.write", "FactWriter", "_blob", "encode, hash, compress blobs", 1),
    ("sediment.store.write", "FactWriter", "write_many", "store: write (SQLite)", 0),
)


def _timed(function: Callable[..., Any], label: str, seconds: Counter[str]) -> Callable[..., Any]:
    """``function`` timed into ``seconds[label]``, at its outermost call only."""
    depth = 0

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal depth
        depth += 1
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            depth -= 1
            if depth == 0:
                seconds[label] += time.perf_counter() - start
    return wrapper


def main(files: list[str], call_format: str = "openai-chat") -> None:
    import importlib

    from run import floors  # the bench's two floors, measured as its report measures them

    _, floor = floors([Path(path) for path in files])
    seconds: Counter[str] = Counter()
    for module_name, owner, name, label, _ in PHASES:
        module = importlib.import_module(module_name)
        holder = getattr(module, owner) if owner else module
        setattr(holder, name, _timed(getattr(holder, name), label, seconds))
    from sediment.cli import main as cli

    home = tempfile.mkdtemp(prefix="sediment-phases-")
    os.environ.update(SEDIMENT_HOME=home, SEDIMENT_ORG_ID="bench", SEDIMENT_CAPTURE_TIME="2026-07-01T00:00:00Z")
    sys.argv = ["sediment", "ingest", "calls", "--format", call_format, *files]
    start = time.perf_counter()
    try:
        cli()
    except SystemExit as done:
        if done.code not in (0, None):
            raise
    wall = time.perf_counter() - start
    covered = sum(seconds[label] for _, _, _, label, depth in PHASES if depth == 0)
    print(f"ingest calls of {len(files)} file(s) in one process: {wall:.2f} s wall, "
          f"{wall / floor:.2f}x the parse floor ({floor:.2f} s)\n")
    print("| phase | s | share of wall |\n| --- | ---: | ---: |")
    for _, _, _, label, depth in PHASES:
        name = ("&nbsp;&nbsp;" * depth) + label
        print(f"| {name} | {seconds[label]:.3f} | {seconds[label] / wall:.0%} |")
    print(f"| reading and the rest | {wall - covered:.3f} | {(wall - covered) / wall:.0%} |")
    inflate, ingest_lines, floor_lines = reading([Path(path) for path in files])
    print(f"\nreading alone: inflating {inflate:.2f} s; inflating and cutting lines as ingest does "
          f"{ingest_lines:.2f} s; as the parse floor does {floor_lines:.2f} s (of its {floor:.2f} s)")


def reading(files: list[Path]) -> tuple[float, float, float]:
    """Seconds to inflate ``files`` (into one buffer, as ingest's reads do), to inflate them and cut
    their lines as ingest does, and to do so as the parse floor does (a buffered reader's lines)."""
    from run import ingest_lines  # the stricter floor's lines

    from sediment.ingest.reading.compressed import READ_BUFFER, open_filling, open_input

    buffer = memoryview(bytearray(READ_BUFFER))
    start = time.perf_counter()
    for path in files:
        with open_filling(path) as fill:
            while fill(buffer):
                pass
    inflate = time.perf_counter() - start
    start = time.perf_counter()
    for path in files:
        for _ in ingest_lines(path):
            pass
    cut = time.perf_counter() - start
    start = time.perf_counter()
    for path in files:
        with open_input(path) as handle:
            for _ in handle:
                pass
    return inflate, cut, time.perf_counter() - start


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    arguments = sys.argv[1:]
    chosen = "openai-chat"
    if arguments[0] == "--format" and len(arguments) > 2:
        chosen, arguments = arguments[1], arguments[2:]
    main([str(Path(p)) for p in arguments], chosen)
