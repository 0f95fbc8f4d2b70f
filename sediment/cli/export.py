"""``sediment export rlvr``: project Rollouts into rows for one target."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from sediment.bundle import open_bundle
from sediment.cli import console
from sediment.errors import ConfigurationError, UsageError
from sediment.export.pipeline import ProgressCallback, export_rlvr_from_rollouts
from sediment.export.registry import load_registry
from sediment.mirrors import MirrorRoot

MIRROR_ENV = "SEDIMENT_MIRROR_PATH"

export_app = typer.Typer(
    help="Export training rows. RLVR is `sediment export rlvr --target NAME --out DIR --from BUNDLE`.",
    no_args_is_help=True,
)


@contextmanager
def _progress(enabled: bool) -> Iterator[ProgressCallback | None]:
    if not enabled:
        yield None
        return
    with Progress(TextColumn("exporting rollouts"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console.err, transient=True) as bar:
        task = bar.add_task("export", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def render_summary(summary: dict[str, Any]) -> None:
    """The export summary as a table plus one line per published file, on stderr."""
    table = Table(title=f"RLVR export · target {summary['target']}", title_justify="left")
    table.add_column("population")
    table.add_column("rows", justify="right")
    table.add_column("skipped")
    table.add_row("rollouts derived", str(summary["rollouts"]), "")
    for label, rows, skipped in (("task rows", "task_rows", "task_skipped"),
                                 ("rollout rows", "rollout_rows", "rollout_skipped")):
        counts = ", ".join(f"{k}: {v}" for k, v in summary[skipped].items()) or "-"
        table.add_row(label, str(summary[rows]), counts)
    fragmented = {k: v for k, v in summary["fragmented"].items() if v}
    if fragmented:
        table.add_row("fragmented (not skipped)", "", ", ".join(f"{k}: {v}" for k, v in fragmented.items()))
    console.err.print(table)
    if not summary["written"]:
        console.err.print("nothing written (empty projections leave existing files untouched)")
    for path, rows in summary["written"].items():
        console.err.print(f"[green]✓[/]wrote {path} ([bold]{rows}[/] rows)")
    if summary["environment_manifest"]:
        console.err.print(f"[green]✓[/]wrote {summary['environment_manifest']} (experimental taskset manifest)")


@export_app.command("rlvr")
def rlvr(
    target: str | None = typer.Option(
        None, "--target", "-t", metavar="NAME",
        help="Target to project for (required): see `sediment targets` for the installed ones.",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory; use a fresh one per export."),
    source: Path | None = typer.Option(
        None, "--from", metavar="BUNDLE", help="Derived bundle directory to export (see docs/bundle.md)."
    ),
    mirrors: Path | None = typer.Option(
        None, "--mirrors", metavar="DIR", envvar=MIRROR_ENV, show_envvar=True,
        help="Root of bare git mirrors, for reference patches (targets that need them).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object on stdout."),
) -> None:
    """Project Rollouts into RLVR rows for one target.

    Writes <population>.jsonl, or <population>.train.jsonl / .eval.jsonl when the bundle's
    policy has an eval split, into a fresh output directory claimed by the target. Rewards
    come only from recorded CI verdicts; see docs/exports.md.
    """
    registry = load_registry()
    if target is None:
        raise UsageError(
            f"missing option --target; --target choices: {', '.join(sorted(registry.targets))}; "
            "see `sediment targets`"
        )
    chosen = registry.get(target)
    mirror_root = None
    if chosen.info.needs_mirrors:
        if mirrors is None or not str(mirrors).strip():
            raise ConfigurationError(f"{MIRROR_ENV} is not set; the export needs mirrors (or pass --mirrors)")
        mirror_root = MirrorRoot(mirrors)
    if source is None:
        raise UsageError("--from BUNDLE is required: this build exports derived bundles only")
    bundle = open_bundle(source)
    with _progress(console.err.is_terminal and not as_json) as progress:
        summary = export_rlvr_from_rollouts(
            bundle, mirror_root, out, target=chosen.name, split_enabled=bundle.split_enabled,
            registry=registry, fragmented=bundle.manifest.fragmented, progress=progress,
        )
    if as_json:
        console.out.print_json(json.dumps(summary)) if os.environ.get("SEDIMENT_PRETTY_JSON") else \
            typer.echo(json.dumps(summary, sort_keys=False))
    else:
        render_summary(summary)
