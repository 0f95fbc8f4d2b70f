"""``sediment report NAME``: read-only reports over the fact store (docs/reports.md).

Thin: each command gathers its options, asks :mod:`sediment.reports` for the report and
renders it, as JSON on stdout (``--json``, keys in the report's order) or as rich tables with
small bar charts on stdout. Lines about files written go to stderr.
"""

from __future__ import annotations

import enum
import inspect
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from sediment.cli import console, settings
from sediment.errors import SedimentError, UsageError

if TYPE_CHECKING:
    from sediment.host.kinds import Objective
    from sediment.host.registry import PluginRegistry
    from sediment.reports.dataset_diagnostics import DatasetDiagnosticsReport
    from sediment.reports.merge_retention import MergeRetentionReport

MIRROR_ENV = settings.MIRROR_ENV
DIAGNOSTICS = "dataset-diagnostics"
BAR_WIDTH = 24


class ReportCommands(TyperGroup):
    """The ``report`` group: bare ``sediment report`` prints the help (as every command group
    does), exit 2; an unknown name is one line naming the reports there are, exit 2."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())  # as the other command groups do: the help, exit code 2
            ctx.exit(2)
        return list(super().parse_args(ctx, args))

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted({*super().list_commands(ctx), DIAGNOSTICS})

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name == DIAGNOSTICS:
            return diagnostics_command()
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        if not name.startswith("-") and self.get_command(ctx, name) is None:
            raise UsageError(f"unknown report '{name}' (choices: {', '.join(self.list_commands(ctx))})")
        return super().resolve_command(ctx, args)


report_app = typer.Typer(
    cls=ReportCommands,
    help="Read-only reports over the fact store: `sediment report dataset-diagnostics` describes the "
         "training datasets the objectives would write; `sediment report merge-retention` measures how "
         "much of each attributed agent edit survives to its pull request's head and merge. See "
         "docs/reports.md.",
    no_args_is_help=False,
    invoke_without_command=False,
)

ORG_OPTION = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID).")
MIRRORS_OPTION = typer.Option(None, "--mirrors", metavar="DIR", envvar=MIRROR_ENV, show_envvar=True,
                              help="Root of bare git mirrors (default: $SEDIMENT_HOME/mirrors when it exists).")


def _as_of(value: str | None) -> datetime:
    if value is None or not value.strip():
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--as-of is not an RFC 3339 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise UsageError(f"--as-of needs a UTC offset: {value!r}")
    return parsed.astimezone(UTC)


# --- rendering helpers ------------------------------------------------------------------------


def bar(value: float, top: float, width: int = BAR_WIDTH) -> Text:
    """A horizontal bar of ``value`` against ``top`` in eighth-blocks (empty for 0)."""
    if top <= 0 or value <= 0:
        return Text("")
    eighths = max(1, round(width * 8 * min(value, top) / top))
    full, rest = divmod(eighths, 8)
    return Text("█" * full + ("" if rest == 0 else " ▏▎▍▌▋▊▉"[rest]), style="cyan")


def bar_chart(title: str, items: Sequence[tuple[str, float]], *, value_format: str = "{:g}") -> Table:
    """One row per ``(label, value)``: the label, a bar scaled to the largest value, the value."""
    table = Table(title=console.cell(title), title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column("label")
    table.add_column("bar")
    table.add_column("value", justify="right")
    top = max((v for _, v in items), default=0.0)
    for label, value in items:
        table.add_row(console.cell(label), bar(value, top), value_format.format(value))
    return table


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items() if v) or "-"


def _print(*renderables: Any) -> None:
    for renderable in renderables:
        console.render(renderable)


def _emit_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, allow_nan=False))


def _leakage_command() -> None:
    from sediment.cli.leakage import LEAKAGE_HELP, leakage

    report_app.command("leakage", help=LEAKAGE_HELP)(leakage)


_leakage_command()


# --- merge-retention --------------------------------------------------------------------------


def _retention_bins(scores: Iterable[float]) -> list[tuple[str, float]]:
    bins = [("[0.0, 0.2)", 0.0), ("[0.2, 0.4)", 0.0), ("[0.4, 0.6)", 0.0), ("[0.6, 0.8)", 0.0),
            ("[0.8, 1.0)", 0.0), ("1.0", 0.0)]
    counts = [0] * len(bins)
    for score in scores:
        counts[5 if score >= 1.0 else min(4, int(score * 5))] += 1
    return [(label, float(n)) for (label, _), n in zip(bins, counts, strict=True)]


def render_merge_retention(report: MergeRetentionReport, rows: Sequence[dict[str, Any]]) -> None:
    """The report as a person reads it: counts, then one block per side with its distribution,
    a bar chart of the scores and the threshold table."""
    summary = Table(title=console.cell(f"merge retention · org {report.org_id}"), title_justify="left",
                    show_header=False)
    summary.add_column("what")
    summary.add_column("n", justify="right")
    for label, value in (("attributed file candidates", report.attributed_file_candidates),
                         ("joined to a merge", report.candidates_joined_to_merge),
                         ("scored rows", report.scored_rows),
                         ("joined pull requests", report.joined_pull_requests),
                         ("scored pull requests", report.scored_pull_requests),
                         ("explicit-accept rows", report.explicit_accept_rows)):
        summary.add_row(label, str(value))
    _print(summary)
    _print(bar_chart("membership", [(k, float(v)) for k, v in report.membership.items()]))
    for title, counts in (("scoring skips", report.scoring_skips), ("attribution skips", report.attribution_skips),
                          ("decision attachment skips", report.decision_attachment_skips)):
        _print(console.line(f"{title}: ", _counts(counts)))
    for side, scores, key in (("head", report.head, "head_retention_score"),
                              ("merge", report.merge, "merge_retention_score")):
        d = scores.distribution
        _print(console.line((f"{side} retention", "bold"), f"  n={d.count} mean={_number(d.mean)} "
                            f"median={_number(d.median)} p10={_number(d.p10)} p90={_number(d.p90)}"))
        if d.count:
            _print(bar_chart(f"{side} retention scores", _retention_bins(r[key] for r in rows), value_format="{:.0f}"))
        for cut in scores.thresholds:
            rate = "-" if cut.rate is None else f"{cut.rate:.1%}"
            _print(f"  below {cut.threshold:g}: {cut.below}/{cut.total} ({rate})")
    if report.repository_skipped:
        _print(console.line("repository skipped: ", json.dumps(report.repository_skipped, sort_keys=True)))


def _write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    from sediment.export.writer import atomic_write_bytes, encode_row

    if not rows:
        console.say(f"wrote 0 merge-retention rows; left {path} unchanged")
        return
    try:
        atomic_write_bytes(path, b"".join(encode_row(r) for r in rows))
    except (OSError, ValueError) as exc:
        raise SedimentError(f"couldn't write merge-retention rows: {exc}") from None
    console.say(f"wrote {len(rows)} merge-retention rows to {path}")


MERGE_RETENTION_HELP = (
    "How much of each attributed agent edit survives to its pull request's head and merge.\n\n"
    "Candidates are attributed files whose Session a git note binds to the commit; each is matched to the "
    "pull request whose head contains the commit and whose base does not (or whose number a CI run on the "
    "commit names); a joined one is scored with four-gram containment of the lines it added against the file "
    "at the head and at the merge commit (1.0: all of it survived). Needs the mirrors. See docs/reports.md.\n\n"
    "\b\nExamples:\n"
    "  sediment report merge-retention\n"
    "  sediment report merge-retention --json --rows-out merge-retention.jsonl\n"
)


@report_app.command("merge-retention", help=MERGE_RETENTION_HELP)
def merge_retention(
    org: str | None = ORG_OPTION,
    mirrors: Path | None = MIRRORS_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object on stdout."),
    rows_out: Path | None = typer.Option(
        None, "--rows-out", metavar="FILE",
        help="Also write one merge-retention row per scored file to FILE (JSONL, replaced atomically; "
             "left unchanged when there are no rows)."),
    as_of: str | None = typer.Option(
        None, "--as-of", metavar="TIME",
        help="Boundary: merges captured after this RFC 3339 time are left out (default: now)."),
) -> None:
    """How much of each attributed agent edit survives to its pull request's head and merge."""
    from sediment.reports.merge_retention import store_merge_retention

    org_id = settings.org_id(org)
    boundary = _as_of(as_of)
    root = settings.mirror_option(mirrors, "the report")
    found = store_merge_retention(settings.store(), org_id, root, as_of=boundary)
    if rows_out is not None:
        _write_rows(rows_out, found.rows)
    if as_json:
        _emit_json(found.report.as_json())
    else:
        render_merge_retention(found.report, found.rows)


# --- dataset-diagnostics ----------------------------------------------------------------------


@cache
def _registry() -> PluginRegistry:
    from sediment.host.registry import load_registry

    return load_registry()


def _diagnosing() -> list[Objective]:
    return [o for _, o in sorted(_registry().objectives.items()) if o.diagnoses]


def _stratum_label(row: dict[str, Any]) -> str:
    sources = [row.get(k) for k in ("chosen_label_source", "rejected_label_source", "eligibility_source")]
    return " > ".join(str(s) for s in sources if s)


def _dataset_label(row: dict[str, Any]) -> str:
    dataset = row.get("dataset")
    head = f"{dataset} {row['recipe_id']} v{row['recipe_version']}" if dataset else \
        f"{row['recipe_id']} v{row['recipe_version']}"
    return f"{head} · {_stratum_label(row)}"


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_dataset_diagnostics(report: DatasetDiagnosticsReport) -> None:
    """The report as a person reads it, in the contract's section order: bar charts for the
    balance, the Confidence histograms and the bucket sizes; duplicates named with row ids."""
    _print(console.line(("org: ", "bold"), report.org_id))
    recipes = sorted({f"{r['dataset']} {r['recipe_id']} v{r['recipe_version']}" for r in report.model_balance})
    if recipes:
        _print(console.line("recipes: ", ", ".join(recipes)))
    _print(bar_chart("class/model balance (rows)",
                     [(f"{r['dataset']} · {_stratum_label(r)} · {r['model']}", float(r["rows"]))
                      for r in report.model_balance], value_format="{:.0f}"))
    if not report.model_balance:
        _print("  no rows")
    _print(console.line(("confidence distribution", "bold")))
    for chart in report.histograms:
        stratum = {"chosen_label_source": chart.stratum.chosen_label_source,
                   "rejected_label_source": chart.stratum.rejected_label_source,
                   "eligibility_source": chart.stratum.eligibility_source}
        title = f"{chart.dataset} · {_stratum_label(stratum)} · {chart.metric}"
        rows = [r for r in report.confidence_distributions if r["dataset"] == chart.dataset
                and r["metric"] == chart.metric and _stratum_label(r) == _stratum_label(stratum)]
        table = Table(title=console.cell(title), title_justify="left", box=None, pad_edge=False)
        for column in ("model", "n", "mean", "median", "min", "max", "stdev"):
            table.add_column(column, justify="left" if column == "model" else "right")
        for row in rows:
            st = row["stats"]
            table.add_row(console.cell(row["model"] or "(all models)"), str(st["count"]), _number(st["mean"]),
                          _number(st["median"]), _number(st["min"]), _number(st["max"]), _number(st["stdev"]))
        _print(table, bar_chart("", [(b, float(n)) for b, n in chart.bins], value_format="{:.0f}"))
    for name, sections in report.prompt_buckets.items():
        _print(console.line((f"{name} prompt-bucket sparsity", "bold")))
        for row in sections.bucket_sparsity:
            _print(bar_chart(f"  {_dataset_label(row)}: {row['total_buckets']} buckets, {row['total_candidates']} "
                             f"candidates, {row['singleton_candidates']} singletons "
                             f"({row['singleton_candidate_fraction']:.1%}), {row['cap_hit_buckets']} over the cap",
                             [(f"size {k}", float(v)) for k, v in row["bucket_size_histogram"].items()],
                             value_format="{:.0f}"))
    _print(console.line(("cross-split prompt duplicates", "bold")))
    for row in report.cross_split_duplicates:
        _print(console.line(f"  {_dataset_label(row)}: {row['duplicate_prompt_count']} prompts in train and eval"))
        for example in row["examples"]:
            _print(console.line("    ", (_short(example["prompt"]), "italic")))
            _print(console.line(f"      train ({example['train_count']}): ", ", ".join(example["train_row_ids"])))
            _print(console.line(f"      eval ({example['eval_count']}): ", ", ".join(example["eval_row_ids"])))
    _print(console.line(("confidence-floor exclusions", "bold")))
    for row in report.confidence_floor_exclusions:
        _print(console.line(f"  {row['dataset']} {row['recipe_id']} v{row['recipe_version']} · "
                            f"{row['eligibility_source']} · {row['model']}: {row['excluded_by_floor']} of "
                            f"{row['otherwise_eligible_completions']} excluded ({row['exclusion_rate']:.1%})"))
    for name, sections in report.prompt_buckets.items():
        _print(console.line((f"{name} near-duplicate prompt buckets", "bold")))
        for row in sections.near_duplicate_buckets:
            _print(console.line(f"  {_dataset_label(row)}: {row['near_miss_pair_count']} of "
                                f"{row['comparable_pair_count']} bucket pairs at Jaccard >= {row['threshold']:g} "
                                f"({row['bucket_count']} buckets)"))
            for example in row["examples"]:
                _print(console.line(f"    {example['similarity']:.3f} ", example["model"], ": ",
                                    ", ".join(example["bucket_a_row_ids"]), " ~ ",
                                    ", ".join(example["bucket_b_row_ids"])))
    fate = report.fate
    _print(bar_chart("Fate diagnostic (edits whose observation joins a decision)",
                     [(k, float(v)) for k, v in fate["fates"].items()], value_format="{:.0f}"))
    _print(console.line(f"  explicit accepts: {_counts(fate['explicit_accept_fates'])}; with external changes: "
                        f"{fate['fates_with_external_changes']}; skipped: {_counts(fate['skipped'])}"))
    ab = report.abandonment
    _print(console.line(("abandonment", "bold"), f"  abandoned sessions: {ab['abandoned_sessions']}; "
                        f"not abandoned: {_counts(ab['derivation_skipped'])}"))


def _recipe_option(objective: Objective) -> inspect.Parameter:
    info = objective.info
    choices = enum.Enum(f"{objective.name}_report_recipes", {r.name: r.name for r in info.recipes},  # type: ignore[misc]
                        type=str)
    return inspect.Parameter(
        f"recipe_{objective.name.replace('-', '_')}", inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(choices(info.default_recipe.name), f"--{objective.name}-recipe",
                             help=f"{info.title} recipe the {objective.name} rows are diagnosed under."),
        annotation=choices)


def _threshold_option(objective: Objective) -> inspect.Parameter:
    from sediment.reports.dataset_diagnostics import DEFAULT_NEAR_DUPLICATE_THRESHOLD, section_prefix

    return inspect.Parameter(
        f"threshold_{section_prefix(objective.name)}", inspect.Parameter.KEYWORD_ONLY, annotation=float,
        default=typer.Option(DEFAULT_NEAR_DUPLICATE_THRESHOLD, f"--{objective.name}-near-duplicate-threshold",
                             metavar="F", help=f"Jaccard similarity of two {objective.name} prompt buckets' tokens at "
                             "which they are flagged (0.0 to 1.0)."))


def run_diagnostics(*, org: str | None, mirrors: Path | None, as_json: bool, max_examples: int,
                    thresholds: dict[str, float], recipes: dict[str, str | None], config: Path | None = None) -> None:
    """One ``sediment report dataset-diagnostics`` run (``thresholds``: per objective that
    declares prompt buckets, its near-duplicate threshold)."""
    from sediment.reports.dataset_diagnostics import check_options, store_dataset_diagnostics
    from sediment.settings import SettingsSources

    try:
        check_options(max_examples, thresholds)
    except ValueError as error:
        raise UsageError(str(error)) from None
    org_id = settings.org_id(org)
    diagnosing = _diagnosing()
    root = settings.mirror_option(mirrors, "the report") if any(o.info.direct_needs_mirrors for o in diagnosing) else (
        settings.mirror_option(mirrors, "the report") if mirrors is not None else None)
    registry = _registry()
    sources = SettingsSources.load(config_file=config, overrides=[])
    registry.check_settings_sources(sources)
    report = store_dataset_diagnostics(settings.store(), org_id, root, registry=registry, sources=sources,
                                       recipes=recipes, max_examples=max_examples,
                                       near_duplicate_thresholds=thresholds)
    if as_json:
        _emit_json(report.as_json())
    else:
        render_dataset_diagnostics(report)


@cache
def diagnostics_command() -> Any:
    """The click command of ``sediment report dataset-diagnostics``: one ``--NAME-recipe`` option
    per installed objective that takes part, and one ``--NAME-near-duplicate-threshold`` per
    such objective that declares prompt buckets (from their declarations)."""
    from sediment.reports.dataset_diagnostics import section_prefix

    diagnosing = _diagnosing()
    bucketing = [o for o in diagnosing if o.info.prompt_buckets]
    params = [
        inspect.Parameter("org", inspect.Parameter.KEYWORD_ONLY, default=ORG_OPTION, annotation=str | None),
        inspect.Parameter("mirrors", inspect.Parameter.KEYWORD_ONLY, default=MIRRORS_OPTION, annotation=Path | None),
        inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=typer.Option(
            False, "--json", help="Print the report as one JSON object on stdout (sections in contract order).")),
        *(_recipe_option(o) for o in diagnosing),
        inspect.Parameter("max_examples", inspect.Parameter.KEYWORD_ONLY, annotation=int, default=typer.Option(
            5, "--max-examples", metavar="N", help="Examples listed per duplicate section (at least 0).")),
        *(_threshold_option(o) for o in bucketing),
        inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Path | None, default=typer.Option(
            None, "--config", metavar="FILE", envvar="SEDIMENT_CONFIG_FILE", show_envvar=True,
            help="TOML file of plugin settings and the ladder's label-confidence table, as for an export.")),
    ]
    recipe_names = {f"recipe_{o.name.replace('-', '_')}": o.name for o in diagnosing}
    threshold_names = {f"threshold_{section_prefix(o.name)}": o.name for o in bucketing}

    def command(**options: Any) -> None:
        recipes = {recipe_names[k]: (None if v is None else v.value) for k, v in list(options.items())
                   if k in recipe_names}
        thresholds = {threshold_names[k]: v for k, v in options.items() if k in threshold_names}
        for key in (*recipe_names, *threshold_names):
            options.pop(key)
        run_diagnostics(recipes=recipes, thresholds=thresholds, **options)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = (
        "What the training datasets would look like: class/model balance, Confidence distributions, "
        "cross-split prompt duplicates, Confidence-floor exclusions, prompt-bucket sparsity, near-duplicate "
        "prompt buckets, edit Fates and abandonment.\n\n\b\nEvery installed objective that implements "
        "diagnose_evidence takes part (" + (", ".join(o.name for o in diagnosing) or "none installed")
        + "), each under the recipe its --NAME-recipe option names, reading the fact store directly "
        "as a direct export would; nothing is written. See docs/reports.md.\n\n\b\nExamples:\n"
        "  sediment report dataset-diagnostics\n"
        "  sediment report dataset-diagnostics --json --max-examples 10\n")
    app = typer.Typer(add_completion=False)
    decorate: Callable[[Callable[..., None]], Any] = app.command(DIAGNOSTICS)
    decorate(command)
    return typer.main.get_command(app)
