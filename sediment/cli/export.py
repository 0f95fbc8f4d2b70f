"""``sediment export OBJECTIVE``: one subcommand per installed objective, built from the registry.

Each objective's declaration decides its options: ``--recipe`` choices from its recipes,
``--from`` and ``--workers`` if it reads bundles, ``--target`` / ``--profile`` / ``--workers`` if it
has targets (``--profile`` too if a profile adapts its rows, ``--workers`` if its Sessions are
independent: its workers project runs of Sessions; otherwise they check the bundle when it is opened
and run the part the objective does per Session, ``ExportContext.session_runs``).
Everything else is shared: evidence from a bundle or the fact store, the writer discipline,
the summary. Help texts of objectives are plugin-supplied, so ``sediment export`` renders its
help without rich markup: a description is shown as written.
"""

from __future__ import annotations

import enum
import inspect
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from typer.core import TyperGroup

from sediment.cli import console, settings
from sediment.cli.progress import bar as progress_bar
from sediment.cli.progress import wanted
from sediment.errors import UsageError

if TYPE_CHECKING:
    from sediment.export.pipeline import Evidence
    from sediment.git.mirror_root import MirrorRoot
    from sediment.host.kinds import Objective
    from sediment.host.registry import PluginRegistry

MIRROR_ENV = settings.MIRROR_ENV


@cache
def _registry() -> PluginRegistry:
    from sediment.host.registry import load_registry

    return load_registry()


def _recipes(objective: Objective) -> str:
    default = objective.info.default_recipe.name
    return ", ".join(f"{r.name} v{r.version}" + (" (default)" if r.name == default else "")
                     for r in objective.info.recipes)


class ObjectiveCommands(TyperGroup):
    """The ``export`` group: its subcommands are the installed objectives, built when asked for.
    Its help is plain text (objective descriptions are plugin-supplied: never markup)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rich_markup_mode = None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())  # as the other command groups do: the help, exit code 2
            ctx.exit(2)
        return list(super().parse_args(ctx, args))

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(_registry().objectives)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        objective = _registry().objectives.get(cmd_name)
        return None if objective is None else objective_command(objective)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """One entry per objective: its description, unit of evidence and recipes, never cut short."""
        rows = []
        for name in self.list_commands(ctx):
            objective = _registry().objectives[name]
            info = objective.info
            rows.append((console.visible(name), console.visible(
                f"{info.description} Unit of evidence: {info.unit}. Recipes: {_recipes(objective)}.")))
        if rows:
            with formatter.section("Objectives"):
                formatter.write_dl(rows)


export_app = typer.Typer(
    cls=ObjectiveCommands,
    rich_markup_mode=None,
    help="Export training rows for one objective: `sediment export OBJECTIVE --out DIR [--from BUNDLE]`. "
         "Each installed objective is a subcommand (below, with its unit of evidence and recipes; "
         "`sediment objectives` lists them in full); its recipes are the `--recipe` choices, and an "
         "objective with targets takes `--target NAME` (see `sediment targets`).",
    no_args_is_help=True,
)


_TICK = ("✓", "green")


def _counts(counts: dict[str, int]) -> Any:
    """Skip or fragment counts as one cell (:func:`console.counts`); the reasons are plugin-supplied text."""
    return console.cell(console.counts(counts) or "-")


def _render_files(summary: dict[str, Any]) -> None:
    if not summary["written"]:
        console.say("nothing written (empty projections leave existing files untouched)")
    if summary.get("nothing_written"):  # every unit skipped: the dominant reason and its remedy, last
        from sediment.evidence.remedies import hint_line

        console.say(hint_line(summary["nothing_written"]))
    for path, rows in summary["written"].items():
        console.say(_TICK, f"wrote {path} (", (str(rows), "bold"), " rows)")
    if summary.get("compatibility"):
        console.say(_TICK, f"wrote {summary['compatibility']} (profile, consumer versions, tallies)")
    for plugin, paths in summary["manifests"].items():
        for path in paths:
            console.say(_TICK, f"wrote {path} (manifest from {plugin})")


def render_summary(summary: dict[str, Any], objective: Objective | None = None) -> None:
    """The export summary as a table plus one line per published file, on stderr.

    :param objective: the objective exported (default: looked up from the summary).
    """
    if objective is None:
        registry = _registry()
        name = summary.get("objective") or registry.objective_of(summary["target"])
        objective = registry.objective(str(name))
    info = objective.info
    if "profile" in summary:
        _render_profile_summary(summary, info.units, "target" if info.has_targets else "objective")
        return
    owner = f"target {summary['target']}" if "target" in summary else f"objective {summary['objective']}"
    table = Table(title=console.cell(f"{info.title} export · {owner}"), title_justify="left")
    table.add_column("population")
    table.add_column("rows", justify="right")
    table.add_column("skipped")
    unit_skips = summary.get(f"{info.units}_skipped") if info.unit_skip_reasons else None
    table.add_row(console.cell(f"{info.units.replace('_', ' ')} derived"), console.cell(summary[info.units]),
                  "" if unit_skips is None else _counts(unit_skips))
    for population in info.population_names:
        label = info.label(population)
        rows, skipped = summary[f"{label}_rows"], summary[f"{label}_skipped"]
        if info.has_targets and not rows and not skipped:
            continue  # a population this target does not write
        table.add_row(console.cell(f"{label.replace('_', ' ')} rows"), console.cell(rows), _counts(skipped))
    fragmented = {k: v for k, v in summary["fragmented"].items() if v}
    if fragmented:
        table.add_row("fragmented (not skipped)", "", _counts(fragmented))
    console.render(table, stderr=True)
    _render_files(summary)


def _render_profile_summary(summary: dict[str, Any], units: str, owner: str = "target") -> None:
    table = Table(title=console.cell(f"Profile export · {summary['profile']} ({owner} {summary['target']})"),
                  title_justify="left")
    table.add_column("population")
    table.add_column("rows", justify="right")
    table.add_column("skipped")
    table.add_row(console.cell(f"{units.replace('_', ' ')} derived"), console.cell(summary[units]), "")
    table.add_row("canonical rows", console.cell(summary["canonical_rows"]), _counts(summary["canonical_skipped"]))
    table.add_row("consumer rows", console.cell(summary["rows"]), _counts(summary["skipped"]))
    fragmented = {k: v for k, v in summary["fragmented"].items() if v}
    if fragmented:
        table.add_row("fragmented (not skipped)", "", _counts(fragmented))
    console.render(table, stderr=True)
    _render_files(summary)


def _evidence(source: Path | None, org: str | None, mirror_root: MirrorRoot | None, workers: int) -> Evidence:
    """The export's evidence: the bundle ``--from`` names, else the fact store's Rollouts,
    derived one Session at a time."""
    from sediment.export.pipeline import Evidence

    if source is None:
        from sediment.evidence.context import store_evidence

        org_id = settings.org_id(org)
        if mirror_root is not None:
            settings.settle_mirrors(org_id, root=mirror_root)  # as derive does
        return store_evidence(settings.store(), org_id, mirror_root)
    from sediment.bundle.read import open_bundle

    bundle = open_bundle(source, workers=workers)
    return Evidence(bundle, bundle.split_enabled, mirror_root, bundle.manifest.fragmented)


def run_export(objective_name: str, *, out: Path, recipe: str | None = None, source: Path | None = None,
               org: str | None = None, mirrors: Path | None = None, target: str | None = None,
               profile: str | None = None, config: Path | None = None, assignments: list[str] | None = None,
               as_json: bool = False, workers: int = 1, data_format: str = "jsonl", engine: str | None = None) -> None:
    """One ``sediment export OBJECTIVE`` run: check the names, gather the evidence, export, report."""
    from sediment.export.pipeline import export_objective
    from sediment.settings import SettingsSources

    chosen_engine = settings.engine(engine)
    registry = _registry()
    objective = registry.objective(objective_name)
    if source is not None and not objective.info.supports_from:
        raise UsageError(f"sediment export {objective.name} has no --from: {objective.title} exports read the fact "
                         "store and mirrors directly (--org / SEDIMENT_ORG_ID, --mirrors), not a bundle; drop --from")
    chosen = None
    if objective.has_targets:
        if target is None:
            raise UsageError(
                f"missing option --target; --target choices: {', '.join(objective.targets)}; "
                "see `sediment targets`"
            )
        chosen = registry.get(target, objective=objective.name)
        if profile is not None:
            registry.profile(profile, target=chosen.name)
    elif profile is not None:
        registry.profile(profile, objective=objective.name)
    sources = SettingsSources.load(config_file=config, overrides=assignments or [])
    registry.check_settings_sources(sources)
    direct = source is None
    info = objective.info
    needs = (info.direct_needs_mirrors if direct else info.from_needs_mirrors) or (
        chosen is not None and chosen.info.needs_mirrors)
    mirror_root = settings.mirror_option(mirrors, "the export") if needs else None
    evidence = _evidence(source, org, mirror_root, workers)
    with progress_bar(f"exporting {info.units.replace('_', ' ')}", enabled=wanted(as_json)) as progress:
        summary = export_objective(
            evidence, out, objective=objective.name, target=None if chosen is None else chosen.name,
            profile=profile, recipe=recipe, registry=registry, settings=sources, progress=progress, workers=workers,
            data_format=data_format,
            engine=chosen_engine,
        )
    if as_json:
        console.out.print_json(json.dumps(summary)) if os.environ.get("SEDIMENT_PRETTY_JSON") else \
            typer.echo(json.dumps(summary, sort_keys=False))
    else:
        render_summary(summary, objective)


# --- building a subcommand from an objective's declaration ------------------------------------


def _option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _parameters(objective: Objective) -> list[inspect.Parameter]:
    """The options of ``sediment export NAME``, in the order ``--help`` lists them."""
    info = objective.info
    recipes = enum.Enum(f"{objective.name}_recipes", {r.name: r.name for r in info.recipes}, type=str)  # type: ignore[misc]
    params: list[inspect.Parameter] = []
    if info.has_targets:
        params.append(_option("target", str | None, typer.Option(
            None, "--target", "-t", metavar="NAME",
            help="Target to project for (required): see `sediment targets` for the installed ones.")))
    params.append(_option("out", Path, typer.Option(
        ..., "--out", "-o", help="Output directory; use a fresh one per export.")))
    params.append(_option("recipe", recipes, typer.Option(
        recipes(info.default_recipe.name), "--recipe",
        help="Recipe deciding which evidence becomes which rows: "
             + "; ".join(f"{r.name} v{r.version}" + (f": {r.description}" if r.description else "")
                         for r in info.recipes) + ".")))
    if info.supports_from:
        params.append(_option("source", Path | None, typer.Option(
            None, "--from", metavar="BUNDLE",
            help="Derived bundle to export (docs/bundle.md); without it, derive from the fact store directly.")))
    else:  # accepted only to be refused in one clear line
        params.append(_option("source", Path | None, typer.Option(None, "--from", metavar="BUNDLE", hidden=True)))
    params.append(_option("org", str | None, typer.Option(
        None, "--org", help="Org id for a direct export (default: SEDIMENT_ORG_ID).")))
    reads = "for reference patches (targets that need them)" if info.has_targets else (
        "read by direct exports" + (" and by exports --from a bundle" if info.from_needs_mirrors else ""))
    params.append(_option("mirrors", Path | None, typer.Option(
        None, "--mirrors", metavar="DIR", envvar=MIRROR_ENV, show_envvar=True,
        help=f"Root of bare git mirrors, {reads}.")))
    if info.has_targets:
        params.append(_option("profile", str | None, typer.Option(
            None, "--profile", "-p", metavar="PROFILE",
            help="Adapt the target's rows to one consumer release (see `sediment profiles`); writes "
                 "data/evidence files and compatibility.json instead of canonical rows.")))
    elif adapters := sorted(n for n, p in _registry().profiles.items() if p.objective == objective.name):
        params.append(_option("profile", str | None, typer.Option(
            None, "--profile", "-p", metavar="PROFILE",
            help=f"Adapt the {info.title} rows to one consumer release ({', '.join(adapters)}; see `sediment "
                 "profiles`); writes data/evidence files and compatibility.json instead of canonical rows.")))
    if info.has_targets or any(p.objective == objective.name for p in _registry().profiles.values()):
        formats = enum.Enum(f"{objective.name}_formats", {f: f for f in ("jsonl", "parquet")}, type=str)  # type: ignore[misc]
        params.append(_option("data_format", formats, typer.Option(
            formats("jsonl"), "--format",
            help="File format of a profile's data files: jsonl, or parquet (one schema across the splits; "
                 "nested values whose shapes differ become JSON text columns; needs pip install "
                 "'sediment[parquet]'). Evidence sidecars stay JSONL.")))
    params.append(_option("config", Path | None, typer.Option(
        None, "--config", metavar="FILE", envvar="SEDIMENT_CONFIG_FILE", show_envvar=True,
        help="TOML file of plugin settings, one [plugins.NAME] table per plugin.")))
    params.append(_option("assignments", list[str], typer.Option(
        [], "--set", metavar="PLUGIN.FIELD=VALUE",
        help="One plugin setting (repeatable); overrides the environment and --config.")))
    params.append(_option("as_json", bool, typer.Option(
        False, "--json", help="Print the summary as one JSON object on stdout.")))
    if info.has_targets or info.sessions_independent or info.supports_from:
        checking = "checking a --from bundle's records when it is opened"
        if info.has_targets:
            projecting = f"Processes projecting Rollouts in parallel, and {checking}"
        elif info.sessions_independent:
            projecting = (f"Processes projecting runs of Sessions in parallel (a --profile export adapts its rows in "
                          f"one process), and {checking}")
        else:  # its rows draw on several Sessions at once: the bundle's check and a per-Session part run in parallel
            projecting = (f"Processes {checking}, and running the part of the projection this objective does per "
                          "Session, if it has one; the rows, which draw on several Sessions, are made in one process")
        params.append(_option("workers", int, typer.Option(
            1, "--workers", "-w", min=1, help=f"{projecting} (the files are byte-identical for any count).")))
    if info.has_targets:
        params.append(_option("engine", str | None, typer.Option(
            None, "--engine", metavar="local|ray", envvar="SEDIMENT_ENGINE", show_envvar=True,
            help=settings.ENGINE_HELP)))
    return params


def _help(objective: Objective) -> str:
    """The description, the objective's own paragraphs as written, then its unit and recipes."""
    info = objective.info
    paragraphs = [console.visible(info.description or f"Export {info.title} rows.")]
    for paragraph in info.help.strip().split("\n\n"):
        if paragraph.strip():  # kept as written: \b stops the formatter from rewrapping it
            paragraphs.append("\b\n" + "\n".join(console.visible(line) for line in paragraph.splitlines()))
    files = ", ".join(f"{p}[.train|.eval].jsonl" for p in info.population_names)
    paragraphs.append(console.visible(f"Unit of evidence: {info.unit}. Recipes: {_recipes(objective)}. "
                                      f"Files: {files}."))
    return "\n\n".join(paragraphs)


def objective_command(objective: Objective) -> Any:
    """The click command of ``sediment export NAME`` for one objective."""
    name = objective.name
    params = _parameters(objective)

    def command(**options: Any) -> None:
        recipe = options.pop("recipe")
        if "data_format" in options:
            options["data_format"] = options["data_format"].value
        run_export(name, recipe=None if recipe is None else recipe.value, **options)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    app = typer.Typer(add_completion=False, rich_markup_mode=None)
    decorate: Callable[[Callable[..., None]], Any] = app.command(name, help=_help(objective))
    decorate(command)
    return typer.main.get_command(app)
