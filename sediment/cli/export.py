"""``sediment export rlvr``: project Rollouts into rows for one target."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from sediment.cli import console, settings
from sediment.errors import ConfigurationError, UsageError

if TYPE_CHECKING:
    from sediment.export.pipeline import ProgressCallback, RolloutSource
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


_TICK = ("✓", "green")


def _counts(counts: dict[str, int]) -> Text:
    """Skip or fragment counts as one cell; the reasons are plugin-supplied text."""
    return console.cell(", ".join(f"{k}: {v}" for k, v in counts.items()) or "-")


def _render_files(summary: dict[str, Any]) -> None:
    if not summary["written"]:
        console.say("nothing written (empty projections leave existing files untouched)")
    for path, rows in summary["written"].items():
        console.say(_TICK, f"wrote {path} (", (str(rows), "bold"), " rows)")
    if summary.get("compatibility"):
        console.say(_TICK, f"wrote {summary['compatibility']} (profile, consumer versions, tallies)")
    for plugin, paths in summary["manifests"].items():
        for path in paths:
            console.say(_TICK, f"wrote {path} (manifest from {plugin})")


def render_summary(summary: dict[str, Any]) -> None:
    """The export summary as a table plus one line per published file, on stderr."""
    if "profile" in summary:
        _render_profile_summary(summary)
        return
    table = Table(title=console.cell(f"RLVR export · target {summary['target']}"), title_justify="left")
    table.add_column("population")
    table.add_column("rows", justify="right")
    table.add_column("skipped")
    table.add_row("rollouts derived", console.cell(summary["rollouts"]), "")
    for label, rows, skipped in (("task rows", "task_rows", "task_skipped"),
                                 ("rollout rows", "rollout_rows", "rollout_skipped")):
        if not summary[rows] and not summary[skipped]:
            continue  # a population this target does not write
        table.add_row(label, console.cell(summary[rows]), _counts(summary[skipped]))
    fragmented = {k: v for k, v in summary["fragmented"].items() if v}
    if fragmented:
        table.add_row("fragmented (not skipped)", "", _counts(fragmented))
    console.err.print(table)
    _render_files(summary)


def _render_profile_summary(summary: dict[str, Any]) -> None:
    table = Table(title=console.cell(f"Profile export · {summary['profile']} (target {summary['target']})"),
                  title_justify="left")
    table.add_column("population")
    table.add_column("rows", justify="right")
    table.add_column("skipped")
    table.add_row("rollouts derived", console.cell(summary["rollouts"]), "")
    table.add_row("canonical rows", console.cell(summary["canonical_rows"]), _counts(summary["canonical_skipped"]))
    table.add_row("consumer rows", console.cell(summary["rows"]), _counts(summary["skipped"]))
    fragmented = {k: v for k, v in summary["fragmented"].items() if v}
    if fragmented:
        table.add_row("fragmented (not skipped)", "", _counts(fragmented))
    console.err.print(table)
    _render_files(summary)


def _mirror_root(option: Path | None) -> MirrorRoot:
    """``--mirrors`` / ``SEDIMENT_MIRROR_PATH``, else ``$SEDIMENT_HOME/mirrors`` when it exists."""
    from sediment.home import sediment_home
    from sediment.mirrors import MirrorRoot

    if option is not None and str(option).strip():
        return MirrorRoot(option)
    default = sediment_home() / "mirrors"
    if default.is_dir():
        return MirrorRoot(default)
    raise ConfigurationError(f"{MIRROR_ENV} is not set; the export needs mirrors (or pass --mirrors)")


@export_app.command("rlvr")
def rlvr(
    target: str | None = typer.Option(
        None, "--target", "-t", metavar="NAME",
        help="Target to project for (required): see `sediment targets` for the installed ones.",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory; use a fresh one per export."),
    source: Path | None = typer.Option(
        None, "--from", metavar="BUNDLE",
        help="Derived bundle to export (docs/bundle.md); without it, derive from the fact store directly.",
    ),
    org: str | None = typer.Option(None, "--org", help="Org id for a direct export (default: SEDIMENT_ORG_ID)."),
    mirrors: Path | None = typer.Option(
        None, "--mirrors", metavar="DIR", envvar=MIRROR_ENV, show_envvar=True,
        help="Root of bare git mirrors, for reference patches (targets that need them).",
    ),
    profile: str | None = typer.Option(
        None, "--profile", "-p", metavar="PROFILE",
        help="Adapt the target's rows to one consumer release (see `sediment profiles`); writes "
             "data/evidence files and compatibility.json instead of canonical rows.",
    ),
    config: Path | None = typer.Option(
        None, "--config", metavar="FILE", envvar="SEDIMENT_CONFIG_FILE", show_envvar=True,
        help="TOML file of plugin settings, one [plugins.NAME] table per plugin.",
    ),
    assignments: list[str] = typer.Option(
        [], "--set", metavar="PLUGIN.FIELD=VALUE",
        help="One plugin setting (repeatable); overrides the environment and --config.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object on stdout."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Processes projecting Rollouts in parallel "
                                "(the files are byte-identical for any count)."),
) -> None:
    """Project Rollouts into RLVR rows for one target, or for one consumer profile of it.

    From a bundle (--from) or directly from the fact store (derived one Session at a time).
    Writes <population>.jsonl, or <population>.train.jsonl / .eval.jsonl when the bundle's
    policy has an eval split, into a fresh output directory claimed by the target. With
    --profile, each canonical row is adapted to the consumer's native format
    (data[.train|.eval].jsonl), linked to its canonical row (evidence[...].jsonl), and
    described in compatibility.json. Rewards come only from recorded CI verdicts; see
    docs/exports.md and docs/plugins.md.

    Examples:

      sediment export rlvr --target sediment --from bundle --out exports/sediment

      sediment export rlvr --target nemo-gym --profile nemo-gym-rollouts-v2 --from bundle \\
        --set nemo-gym-rollouts-v2.agent_name=my_agent --out exports/nemo
    """
    from sediment.bundle import open_bundle
    from sediment.export.pipeline import export_rlvr_from_rollouts
    from sediment.export.registry import load_registry
    from sediment.export.settings import SettingsSources

    registry = load_registry()
    if target is None:
        raise UsageError(
            f"missing option --target; --target choices: {', '.join(sorted(registry.targets))}; "
            "see `sediment targets`"
        )
    chosen = registry.get(target)
    if profile is not None:
        registry.profile(profile, target=chosen.name)
    sources = SettingsSources.load(config_file=config, overrides=assignments)
    registry.check_settings_sources(sources)
    direct = source is None
    mirror_root = _mirror_root(mirrors) if (direct or chosen.info.needs_mirrors) else None
    rollouts: RolloutSource
    if source is None:
        from sediment.derive import StoreRollouts
        from sediment.policy import DerivationPolicy

        policy = DerivationPolicy()
        derived = StoreRollouts(settings.store(), settings.org_id(org), policy=policy, mirrors=mirror_root)
        rollouts, split_enabled, fragmented = derived, policy.split.eval_fraction > 0, derived.fragmented_counter
    else:
        bundle = open_bundle(source, workers=workers)
        rollouts, split_enabled, fragmented = bundle, bundle.split_enabled, bundle.manifest.fragmented
    with _progress(console.err.is_terminal and not as_json) as progress:
        summary = export_rlvr_from_rollouts(
            rollouts, mirror_root, out, target=chosen.name, profile=profile, split_enabled=split_enabled,
            registry=registry, settings=sources, fragmented=fragmented, progress=progress, workers=workers,
        )
    if as_json:
        console.out.print_json(json.dumps(summary)) if os.environ.get("SEDIMENT_PRETTY_JSON") else \
            typer.echo(json.dumps(summary, sort_keys=False))
    else:
        render_summary(summary)
