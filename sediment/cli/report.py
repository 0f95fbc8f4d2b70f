"""``sediment report NAME``: read-only reports over the fact store (docs/reports.md).

Thin: each command gathers its options, asks :mod:`sediment.reports` for the report and
renders it, as JSON on stdout (``--json``, keys in the report's order) or as rich tables with
small bar charts on stdout. Lines about files written go to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from sediment.cli import console, settings
from sediment.errors import ConfigurationError, SedimentError, UsageError

if TYPE_CHECKING:
    from sediment.mirrors import MirrorRoot
    from sediment.reports.merge_retention import MergeRetentionReport

MIRROR_ENV = "SEDIMENT_MIRROR_PATH"
BAR_WIDTH = 24


class ReportCommands(TyperGroup):
    """The ``report`` group: bare ``sediment report`` prints the help, exit 2; an unknown name
    is one line naming the reports there are, exit 2."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), err=True)
            ctx.exit(2)
        return list(super().parse_args(ctx, args))

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


def _mirror_root(option: Path | None) -> MirrorRoot:
    from sediment.home import sediment_home
    from sediment.mirrors import MirrorRoot

    if option is not None and str(option).strip():
        return MirrorRoot(option)
    default = sediment_home() / "mirrors"
    if default.is_dir():
        return MirrorRoot(default)
    raise ConfigurationError(f"{MIRROR_ENV} is not set; the report needs mirrors (or pass --mirrors)")


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
        console.out.print(renderable)


def _emit_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, allow_nan=False))


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


@report_app.command("merge-retention")
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
    """How much of each attributed agent edit survives to its pull request's head and merge.

    \b
    Candidates are attributed files whose Session a git note binds to the commit; each is
    matched to the pull request whose head contains the commit and whose base does not (or
    whose number a CI run on the commit names); a joined one is scored with four-gram
    containment of the lines it added against the file at the head and at the merge commit
    (1.0: all of it survived). Needs the mirrors. See docs/reports.md.

    \b
    Examples:
      sediment report merge-retention
      sediment report merge-retention --json --rows-out merge-retention.jsonl
    """
    from sediment.reports.merge_retention import store_merge_retention

    org_id = settings.org_id(org)
    boundary = _as_of(as_of)
    root = _mirror_root(mirrors)
    found = store_merge_retention(settings.store(), org_id, root, as_of=boundary)
    if rows_out is not None:
        _write_rows(rows_out, found.rows)
    if as_json:
        _emit_json(found.report.as_json())
    else:
        render_merge_retention(found.report, found.rows)
