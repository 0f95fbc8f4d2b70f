"""``sediment demo``: the whole path on a generated repository and Sessions."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from sediment.cli import console
from sediment.errors import UsageError


def demo(
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Fresh directory for the demo (default: a new temp dir)."),
) -> None:
    """Run the whole path on generated data: git repository with notes, agent call logs,
    GitHub webhooks → mirror, embedded store, derived bundle, every export target, every
    objective without targets (Recovery) and every consumer profile.

    Writes inputs/ (the files an operator would have), home/ (the SQLite fact store and the
    mirror), bundle/, exports/<target>/ (and exports/<objective>/), profiles/<profile-id>/
    under --out, and prints each export's summary.
    """
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="sediment-demo-"))
    elif out.exists() and any(out.iterdir()):
        raise UsageError(f"demo output directory is not empty: {out}")
    out.mkdir(parents=True, exist_ok=True)
    from sediment.demo import run_demo

    result = run_demo(out)
    from sediment.cli.export import render_summary

    for summary in [*result["exports"].values(), *result["profiles"].values()]:
        if "refused" in summary:  # a format-only profile that cannot carry the demo's rows
            console.say(f"profile {summary['profile']} wrote nothing: {summary['refused']}")
            continue
        render_summary(summary)
    ingested = result["ingested"]
    console.say(f"ingested {ingested['calls']['records']} model calls, {ingested['webhooks']['records']} "
                f"GitHub deliveries, {ingested['test_results']} JUnit test results and "
                f"{ingested['observations']} git-note edges into {result['home']}")
    console.say(f"inputs: {result['inputs']}")
    console.say(f"bundle: {result['bundle']}")
    console.say(f"try: sediment schema validate $(find {out}/exports {out}/profiles -name '*.jsonl')")
