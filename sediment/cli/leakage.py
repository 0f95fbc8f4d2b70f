"""``sediment report leakage DIR...``: overlaps across the splits of exported rows, and with a
benchmark (docs/leakage.md). Thin: reads options, asks :mod:`sediment.reports` for the report,
writes the tag file (and the JSON and HTML pages) under ``--out``, renders the summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from sediment.cli import console
from sediment.errors import ExitCode, SedimentError, UsageError

TAG_FILE = "eval_sets.jsonl"
JSON_FILE = "leakage.json"
HTML_FILE = "leakage.html"
MAX_SHOWN = 5


class LeakageFound(SedimentError):
    """``--fail-on KIND`` found that kind of overlap (the report and tags were still written)."""

    exit_code = ExitCode.LEAKAGE


class InputProblems(SedimentError):
    """Some exported lines could not be read (each named on stderr); every other row was."""

    exit_code = ExitCode.INPUT


LEAKAGE_HELP = (
    "Overlaps across train and eval of exported rows, and with a benchmark: the same prompt or problem "
    "statement, the same repository, base commit or overlapping commit ranges, near-duplicate prompts and "
    "reference patches (MinHash LSH), the same external task id.\n\n"
    "Reads every *.jsonl of each DIR (canonical rows and profile data lines with their evidence sidecar). "
    "Tags, never deletes: with --out it writes eval_sets.jsonl (one line per row id: the eval sets it "
    "overlaps), leakage.json and leakage.html. See docs/leakage.md.\n\n"
    "\b\nExamples:\n"
    "  sediment report leakage exports/tasks exports/chat exports/pairs --out leakage/\n"
    "  sediment report leakage out/sediment --benchmark swe-bench-verified.jsonl --mirrors ~/mirrors\n"
    "  sediment report leakage exports/chat --json --fail-on exact_prompt\n"
)


def _render(report: Any) -> None:
    out = console.out
    summary = report.as_json()
    splits = ", ".join(f"{s}: {n}" for s, n in summary["splits"].items()) or "none"
    out.print(console.line(("leakage", "bold"), f"  {summary['rows']} rows ({splits}) from "
                           f"{len(summary['inputs'])} director{'y' if len(summary['inputs']) == 1 else 'ies'}"))
    if report.benchmark is not None:
        b = report.benchmark
        out.print(console.line(("benchmark ", "bold"), f"{b['name']}: {b['instances']} instances ({b['file']})"))
    table = Table(title="overlaps per kind", title_justify="left", box=None, pad_edge=False)
    table.add_column("kind")
    table.add_column("findings", justify="right")
    table.add_column("flagged rows per split")
    for kind, counts in summary["kinds"].items():
        rows = ", ".join(f"{s}: {n}" for s, n in counts["rows"].items()) or "-"
        style = "bold red" if counts["findings"] and kind not in ("same_repository",) else ""
        table.add_row(console.cell(kind), str(counts["findings"]), console.cell(rows), style=style)
    console.render(table)
    for kind in summary["kinds"]:
        found = [f for f in report.findings if f.kind == kind]
        if not found:
            continue
        out.print(console.line((kind, "bold"), f" ({len(found)})"))
        for finding in found[:MAX_SHOWN]:
            similarity = "" if finding.similarity is None else f" ~{finding.similarity:.2f}"
            out.print(console.line("  ", finding.key, similarity, f" {finding.detail}" if finding.detail else ""))
            for split in sorted({r.split for r in finding.rows}):
                ids = sorted({r.row_id for r in finding.rows if r.split == split})
                shown = ", ".join(ids[:MAX_SHOWN]) + (f" … (+{len(ids) - MAX_SHOWN})" if len(ids) > MAX_SHOWN else "")
                out.print(console.line(f"    {split}: ", shown))
        if len(found) > MAX_SHOWN:
            out.print(console.line(f"  … {len(found) - MAX_SHOWN} more (--json or --out for all)"))
    for note in report.notes:
        out.print(console.line(("note: ", "yellow"), note))


def _write(out_dir: Path, report: Any, html: str | None) -> None:
    from sediment.export.writer import atomic_write_bytes, encode_row

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tags = report.tags()
        atomic_write_bytes(out_dir / TAG_FILE, b"".join(encode_row(t) for t in tags))
        atomic_write_bytes(out_dir / JSON_FILE, (json.dumps(report.as_json(), indent=2, allow_nan=False) + "\n")
                           .encode("utf-8"))
        if html is not None:
            atomic_write_bytes(out_dir / HTML_FILE, html.encode("utf-8"))
    except OSError as exc:
        from sediment.errors import OutputDirectoryError

        raise OutputDirectoryError(f"cannot write output directory {out_dir}: {exc.strerror or exc}") from None
    console.say(f"wrote {len(tags)} row tags to {out_dir / TAG_FILE}")


def leakage(
    dirs: list[Path] = typer.Argument(..., metavar="DIR...", help="Export directories (any objective, target "
                                      "or profile)."),
    out: Path | None = typer.Option(None, "--out", metavar="DIR", help="Write eval_sets.jsonl, leakage.json and "
                                    "leakage.html here (created; these three files are replaced)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object on stdout."),
    fail_on: list[str] = typer.Option([], "--fail-on", metavar="KIND", help="Exit 12 when this kind of overlap "
                                      "is present (repeatable; 'any' for every kind)."),
    mirrors: Path | None = typer.Option(None, "--mirrors", metavar="DIR", envvar="SEDIMENT_MIRROR_PATH",
                                        help="Root of bare git mirrors: walk commit ranges and ancestry in them."),
    org: str | None = typer.Option(None, "--org", envvar="SEDIMENT_ORG_ID",
                                   help="Org whose mirrors serve rows that name no org_id."),
    task_id_field: list[str] = typer.Option([], "--task-id-field", metavar="PATH", help="Dotted path of an "
                                            "external task id in a row (repeatable; replaces the defaults)."),
    threshold: float = typer.Option(0.8, "--threshold", metavar="F", envvar="SEDIMENT_LEAKAGE_THRESHOLD",
                                    help="Estimated Jaccard similarity at which two texts are near duplicates."),
    num_perm: int = typer.Option(128, "--num-perm", metavar="N", envvar="SEDIMENT_LEAKAGE_NUM_PERM",
                                 help="MinHash permutations (more: a finer estimate, slower)."),
    shingle: int = typer.Option(3, "--shingle", metavar="N", help="Tokens per shingle for near duplicates."),
    benchmark: Path | None = typer.Option(None, "--benchmark", metavar="FILE", help="SWE-bench-style instances "
                                          "(JSONL, or Parquet with the parquet extra) or a list of 'owner/repo "
                                          "[COMMIT...]' lines: flag every row that overlaps them."),
    benchmark_name: str | None = typer.Option(None, "--benchmark-name", metavar="NAME", help="Name in the "
                                              "benchmark:<NAME> tag (default: the file's name before its "
                                              "first dot)."),
    ngram: int = typer.Option(8, "--ngram", metavar="N", help="Words per n-gram for problem-statement overlap."),
    ngram_threshold: float = typer.Option(0.5, "--ngram-threshold", metavar="F", help="Share of a benchmark "
                                          "problem statement's n-grams a row's prompt must hold."),
) -> None:
    from sediment.reports.leakage import KINDS, Settings
    from sediment.reports.leakage_rows import DEFAULT_TASK_ID_FIELDS
    from sediment.reports.leakage_run import run_leakage

    unknown = [k for k in fail_on if k != "any" and k not in KINDS]
    if unknown:
        raise UsageError(f"unknown --fail-on kind '{unknown[0]}' (choices: any, {', '.join(KINDS)})")
    if not 0.0 < threshold <= 1.0:
        raise UsageError("--threshold must be above 0.0 and at most 1.0")
    if not 2 <= num_perm <= 1024:
        raise UsageError("--num-perm must be between 2 and 1024")
    if shingle < 1:
        raise UsageError("--shingle must be >= 1")
    if ngram < 1 or not 0.0 < ngram_threshold <= 1.0:
        raise UsageError("--ngram must be >= 1 and --ngram-threshold above 0.0 and at most 1.0")
    settings = Settings(threshold=threshold, num_perm=num_perm, shingle=shingle, ngram=ngram,
                        ngram_threshold=ngram_threshold)
    report = run_leakage(dirs, settings=settings, mirrors=mirrors, org_id=org,
                         task_id_fields=tuple(task_id_field) or DEFAULT_TASK_ID_FIELDS,
                         benchmark=benchmark, benchmark_name=benchmark_name)
    read_problems = report.problems
    if out is not None:
        from sediment.reports.leakage_html import leakage_page

        _write(out, report, leakage_page(report))
    if as_json:
        typer.echo(json.dumps(report.as_json(), indent=2, allow_nan=False))
    else:
        _render(report)
    present = report.kinds_present()
    failing = [k for k in present if "any" in fail_on or k in fail_on]
    if failing:
        raise LeakageFound(f"leakage found: {', '.join(failing)} (--fail-on)")
    if read_problems:
        for problem in read_problems:
            console.warning(problem)
        raise InputProblems(f"{len(read_problems)} exported line(s) could not be read; every other row was")
