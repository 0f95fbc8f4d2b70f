"""``sediment demo``: the whole path on a generated repository and Sessions."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from sediment.cli import console
from sediment.cli.export import render_summary
from sediment.demo import run_demo
from sediment.errors import UsageError


def demo(
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Fresh directory for the demo (default: a new temp dir)."),
) -> None:
    """Build a demo repository and five agent Sessions, then export every target.

    Writes mirrors/ (a real bare git mirror), bundle/ (the derived bundle) and
    exports/<target>/ under --out, and prints each export's summary.
    """
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="sediment-demo-"))
    elif out.exists() and any(out.iterdir()):
        raise UsageError(f"demo output directory is not empty: {out}")
    out.mkdir(parents=True, exist_ok=True)
    result = run_demo(out)
    for summary in result["exports"].values():
        render_summary(summary)
    console.err.print(f"bundle: {result['bundle']}\nmirrors: {result['mirrors']}")
    console.err.print(f"try: sediment schema validate {out}/exports/*/*.jsonl")
