"""``sediment library``: the persistent trajectory library (import, SFT views, inspect, gallery)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer

from sediment.cli import console, input_files, progress, settings
from sediment.output_paths import writing

library_app = typer.Typer(
    help=("The trajectory library: one immutable canonical record per agent attempt (public sources and "
          "Sediment's own Rollouts), ranked per task, projected into SFT views. See docs/library.md."),
    no_args_is_help=True)

def counted(records: Iterator[Any], update: Callable[[int], None] | None) -> Iterator[Any]:
    """``records`` as they are, ``update`` called with how many have passed."""
    if update is None:
        yield from records
        return
    for count, record in enumerate(records, 1):
        yield record
        update(count)


_LIBRARY = typer.Option(..., "--library", help="The library directory (created by the first import).")


@library_app.command("import")
def import_(
    format: str = typer.Argument(..., metavar="FORMAT",
                                 help="Source format: an importer plugin's format name, or canonical-jsonl "
                                      "(canonical records, e.g. another library's all.jsonl.gz)."),
    paths: list[Path] | None = typer.Argument(None, help="Input files of that format, plain or gzip/Zstandard "
                                                                     "compressed."),
    library: Path = _LIBRARY,
    from_store: bool = typer.Option(False, "--from-store",
                                    help="Read Sediment's own Rollouts from the configured fact store "
                                         "(SEDIMENT_DATABASE_URL / SEDIMENT_HOME) instead of PATHs, derived one "
                                         "Session at a time (format sediment-rollouts)."),
    org: str | None = typer.Option(None, "--org", help="Org id with --from-store (default: SEDIMENT_ORG_ID)."),
    materialize_all: bool = typer.Option(False, "--materialize-all",
                                         help="Also write all.jsonl.gz: every canonical record in one file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout: added, already_present, "
                                 "record_count, new_shards, failed, problems (at most 50)."),
) -> None:
    """Import attempts (an importer's format, or canonical-jsonl) into a library.

    Records already present are skipped (importing the same
    input twice changes nothing); new records go into new content-named shards, earlier shards are
    never rewritten; rankings, splits, partitions and index.sqlite are rebuilt. A record that
    cannot be imported is reported as one line (file, line, field) and the rest are imported (exit 8);
    so is a canonical line over 64 MiB, and a corrupt, truncated or bomb gzip or Zstandard file,
    told by its bytes (the records before it are kept). An import killed outright leaves its
    staging behind; the next one removes it."""
    from sediment.importing.inputs import check_format, records_for, store_records
    from sediment.ingest import IngestError
    from sediment.ingest.reading.files import EMPTY
    from sediment.trajectory.library import Library
    from sediment.trajectory.record import Trajectory

    check_format(format)
    files = settings.import_paths(paths, from_store)
    input_files.check(files, folders=True)
    problems: list[str] = []
    for path in [path for path in files if path.is_file() and input_files.empty(path)]:
        problems.append(f"{path}: {EMPTY}")
        files.remove(path)
    skipped: list[str] = []
    if from_store:
        records: Iterator[Trajectory] = store_records(format, settings.store_rollouts(org), problems)
    target = Library(library)
    if not from_store:
        records = records_for(format, files, problems, target.known_ids(), skipped)
    created = not library.exists()
    with writing("library", library), progress.counter("importing", enabled=progress.wanted()) as update:
        report = target.import_records(counted(records, update), materialize_all=materialize_all,
                                       prevalidated=True)
    if created and problems and not report.record_count:  # a failed import leaves no empty library behind
        shutil.rmtree(library)
    report.already_present += len(skipped)
    for problem in problems[:50]:
        console.warning(problem)
    if len(problems) > 50:
        console.say(f"… and {len(problems) - 50} more")
    if as_json:
        typer.echo(json.dumps({"library": str(library), "added": report.added,
                               "already_present": report.already_present, "record_count": report.record_count,
                               "new_shards": [str(shard) for shard in report.new_shards],
                               "failed": len(problems), "problems": problems[:50]}, ensure_ascii=False))
    else:
        console.say(f"{report.added} record(s) added, {report.already_present} already present; "
                    f"{report.record_count} in the library ({len(report.new_shards)} new shard(s))")
    if problems:
        raise IngestError(f"{len(problems)} record(s) failed to import; every other record was imported")


@library_app.command("views")
def views_(
    library: Path = _LIBRARY,
    out: Path = typer.Option(..., "--out", help="JSONL file to write (one sample a line)."),
    view: str = typer.Option("full", "--view", help="full (one sample per attempt, event loss mask) or turns "
                                                    "(one sample per supervised assistant decision)."),
    selection: str = typer.Option("best", "--selection",
                                  help="best (rank 1 of each task and environment), successful, or all."),
    benchmark: list[str] = typer.Option([], "--benchmark", help="Keep this task family (repeatable)."),
    source: list[str] = typer.Option([], "--source", help="Keep this source id (repeatable)."),
    source_version: list[str] = typer.Option([], "--source-version", help="Keep this source revision."),
    model: list[str] = typer.Option([], "--model", help="Keep this model."),
    scaffold: list[str] = typer.Option([], "--scaffold", help="Keep this scaffold/producer."),
    split: list[str] = typer.Option([], "--split", help="Keep this derived task split (train or eval)."),
    quality_tier: list[int] = typer.Option([], "--quality-tier", help="Keep this quality tier, 1 (best) to 5."),
    max_rank: int | None = typer.Option(None, "--max-rank", help="Keep attempts ranked at most this within a task."),
    include_ineligible: bool = typer.Option(False, "--include-ineligible",
                                            help="Also attempts that are not SFT-eligible (structural gate "
                                                 "failed, or evaluation-only source)."),
    sample: int | None = typer.Option(None, "--sample", help="Keep this many (rows, or tasks with --sampling task)."),
    sampling: str = typer.Option("random", "--sampling", help="random, task or source-balanced."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed (same seed, same sample)."),
    format: str = typer.Option("json", "--format",
                               help="json (the view samples), arrow (flat fields plus structured fields as JSON "
                                    "text: loads into an Arrow table without loss), or chat (with --view turns: "
                                    "{prompt, completion} chat messages)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout: out, view, format, "
                                 "samples, attempts."),
) -> None:
    """Write SFT view samples (full or turns) of selected, filtered, sampled attempts.

    Selection reads
    index.sqlite; only the surviving records are read from their shards."""
    import orjson

    from sediment.errors import UsageError
    from sediment.trajectory.adapter import SAMPLINGS, SELECTIONS, VIEWS, CanonicalDatasetAdapter, Filters
    from sediment.trajectory.views import arrow_row, turn_chat_messages

    for option, value, choices in (("--view", view, VIEWS), ("--selection", selection, SELECTIONS),
                                   ("--sampling", sampling, SAMPLINGS)):
        if value not in choices:  # before anything is read or written
            raise UsageError(f"unknown {option} {value!r}; one of: {', '.join(choices)}")
    if format not in {"json", "arrow", "chat"}:
        raise UsageError(f"unknown --format {format!r}; one of: json, arrow, chat")
    if format == "chat" and view != "turns":
        raise UsageError("--format chat needs --view turns")
    shapes: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
        "json": dict, "arrow": arrow_row, "chat": turn_chat_messages}
    shape = shapes[format]
    adapter = CanonicalDatasetAdapter(library)
    filters = Filters(benchmark=benchmark, source=source, source_version=source_version, model=model,
                      scaffold=scaffold, split=split, quality_tier=quality_tier, max_rank=max_rank,
                      include_ineligible=include_ineligible)
    rows = adapter.sample(adapter.select(selection, filters), sample, sampling, seed)
    count = 0
    with writing("--out file", out):
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("wb") as handle:
            for item in adapter.project(rows, view):
                handle.write(orjson.dumps(shape(item)) + b"\n")
                count += 1
    if as_json:
        typer.echo(json.dumps({"out": str(out), "view": view, "format": format, "samples": count,
                               "attempts": len(rows)}, ensure_ascii=False))
        return
    console.say(f"{count} {view} sample(s) from {len(rows)} attempt(s) written to {out}")


@library_app.command("inspect")
def inspect_(
    library: Path = _LIBRARY,
    trajectory_id: str = typer.Option(..., "--trajectory-id", metavar="ID",
                                      help="The record to show: its id, or a prefix of it that names one record "
                                           "(several: one line naming them, exit 2)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead: the record, its ranking row, its "
                                                       "full-trajectory sample, every assistant-turn sample (the "
                                                       "exact model_input objects) and the task's alternatives."),
) -> None:
    """Show one record, its turn samples and its task's alternatives.

    Shows the interaction, every causal turn sample with its exact model input and
    supervised target, verification evidence, missing fields, and the task's alternatives side by side."""
    from sediment.trajectory.catalog import resolve
    from sediment.trajectory.inspect import render, report
    from sediment.trajectory.library import Library

    opened = Library(library)
    trajectory_id = resolve(opened, trajectory_id)
    if as_json:
        typer.echo(json.dumps(report(opened, trajectory_id), ensure_ascii=False, sort_keys=True))
        return
    console.out.print(render(opened, trajectory_id))


@library_app.command("gallery")
def gallery_(
    library: Path = _LIBRARY,
    out: Path = typer.Option(..., "--out", help="Directory to write index.html and one page per representative."),
    page_size: int = typer.Option(100, "--page-size", min=1, help="Records listed on one index page."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout: out, representatives, "
                                 "records, index_pages, pages, largest_page_bytes."),
) -> None:
    """Write a static HTML gallery of representative attempts and an index of every record.

    One deterministic representative for every source x outcome x
    tier combination present, each page showing the full interaction, every turn sample, the exact
    model input, supervised target, verification evidence, missing fields and alternatives; long
    events and samples are folded so a page stays near 1 MB. The index lists every record,
    --page-size a page, with a legend of the quality tiers."""
    from sediment.trajectory.gallery import write_gallery
    from sediment.trajectory.library import Library

    with writing("gallery directory", out):
        gallery = write_gallery(Library(library), out, page_size)
    if as_json:
        typer.echo(json.dumps({"out": str(out), "representatives": len(gallery.pages), "records": gallery.records,
                               "index_pages": gallery.index_pages, "pages": gallery.pages,
                               "largest_page_bytes": max(gallery.sizes.values())}, ensure_ascii=False))
        return
    console.say(f"gallery of {len(gallery.pages)} representative(s) and {gallery.records} record(s) on "
                f"{len(gallery.index_pages)} index page(s) written to {out / 'index.html'}")


@library_app.command("list")
def list_(
    library: Path = _LIBRARY,
    source: list[str] = typer.Option([], "--source", help="Keep this source id (repeatable)."),
    task: list[str] = typer.Option([], "--task", help="Keep this task key (repeatable)."),
    benchmark: list[str] = typer.Option([], "--benchmark", help="Keep this task family (repeatable)."),
    quality_tier: list[int] = typer.Option([], "--quality-tier", help="Keep this quality tier, 1 (best) to 5."),
    eligible: bool | None = typer.Option(None, "--eligible/--ineligible",
                                         help="Keep only SFT-eligible attempts, or only the others."),
    split: list[str] = typer.Option([], "--split", help="Keep this derived task split (train or eval)."),
    retained: bool = typer.Option(False, "--retained", help="Only retained attempts (not the duplicates "
                                                              "collapsed into them)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout: library, count, records "
                                 "(trajectory_id, source_id, task_key, task_family, outcome_category, quality_tier, "
                                 "within_task_rank, sft_eligible, split, event_count, retained_trajectory_id)."),
) -> None:
    """List the library's records with their ranking, filtered.

    Reads index.sqlite only. One tab-separated line a record on stdout (a header first), sorted
    by id; a duplicate shows the tier, rank and eligibility of the attempt it is retained as."""
    from sediment.trajectory.catalog import COLUMNS, CatalogFilters, catalog
    from sediment.trajectory.library import Library

    rows = catalog(Library(library), CatalogFilters(
        source=source, task=task, benchmark=benchmark, quality_tier=quality_tier, sft_eligible=eligible,
        split=split, retained_only=retained))
    if as_json:
        typer.echo(json.dumps({"library": str(library), "count": len(rows), "records": rows}, ensure_ascii=False))
        return
    typer.echo("\t".join(COLUMNS))
    for row in rows:
        typer.echo("\t".join(console.visible("-" if row[column] is None else row[column]) for column in COLUMNS))
    console.say(f"{len(rows)} record(s)")
