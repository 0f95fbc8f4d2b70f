"""``sediment trajectory``: import agent trajectories into canonical records, export them to ATIF.

Thin: :func:`sediment.importing.run.import_results` reads, this prints. Refusals are
``FILE:LINE: FIELD: message`` lines on stderr; the other records are written, and the command
exits 8 when any record was refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from sediment.cli import console, input_files, settings
from sediment.errors import UsageError
from sediment.ingest import IngestError
from sediment.output_paths import writing

trajectory_app = typer.Typer(
    help="Import agent trajectories (SWE-agent, OpenHands, SWE-Gym, nebius, ATIF, Sediment bundles) into canonical "
         "Trajectory records (docs/trajectories.md), and export records to ATIF.", no_args_is_help=True)


def _formats() -> dict[str, str]:
    from sediment.host.registry import load_registry

    return {name: importer.info.description for name, importer in sorted(load_registry().importers.items())}


@trajectory_app.command("formats")
def formats() -> None:
    """List the installed source formats (importer plugins)."""
    for name, description in _formats().items():
        console.show(f"{name}: {description}")


@trajectory_app.command("import")
def import_(fmt: str = typer.Argument(..., metavar="FORMAT", help="Source format (see `sediment trajectory formats`)."),
            paths: list[Path] | None = typer.Argument(None, help="Files or directories (walked in name "
                                                                      "order); gzip and Zstandard files are read as "
                                                                      "they are."),
            out: Path = typer.Option(..., "--out", help="JSON Lines file to write, one canonical record per line; "
                                                        "an existing file is refused."),
            from_store: bool = typer.Option(False, "--from-store",
                                            help="Read Sediment's own Rollouts from the configured fact store "
                                                 "(SEDIMENT_DATABASE_URL / SEDIMENT_HOME) instead of PATHs, "
                                                 "derived one Session at a time (sediment-rollouts)."),
            org: str | None = typer.Option(None, "--org", help="Org id with --from-store (default: SEDIMENT_ORG_ID).")
            ) -> None:
    """Read source files (or, with --from-store, the fact store's Rollouts) into canonical records,
    one per line of --out, in input order.

    Every record is validated (content-addressed id, unique ids, causal links, declared
    omissions); a record that cannot be stored exactly is refused as `FILE:LINE: FIELD: message`
    and every other record is written (exit code 8 when any was refused).
    """
    from sediment.importing.run import import_results
    from sediment.trajectory import to_json
    from sediment.trajectory.sources import ImportRefusal

    installed = _formats()
    if fmt not in installed:
        raise UsageError(f"unknown source format {fmt!r}; installed formats: {', '.join(installed)}")
    if out.exists():
        raise UsageError(f"--out {out} already exists; choose a new file")
    files = settings.import_paths(paths, from_store)
    input_files.check(files, folders=True)
    settings.content_redaction()
    if from_store:
        from sediment.importing.run import import_store_results

        results = import_store_results(fmt, settings.store_rollouts(org))
    else:
        results = import_results(fmt, files)
    written = refused = 0
    staging = out.with_name(f".{out.name}.partial")
    with writing("--out file", out, staging), staging.open("w", encoding="ascii", newline="\n") as handle:
        for item in results:
            if isinstance(item, ImportRefusal):
                refused += 1
                console.error(item)
            else:
                handle.write(to_json(item) + "\n")
                written += 1
        handle.flush()
        os.fsync(handle.fileno())
        if written or not refused:
            staging.replace(out)
        else:  # every record refused: no empty file left behind
            staging.unlink()
    console.say(f"{written} record(s) written to {out}; {refused} refused")
    if refused:
        raise IngestError(f"{refused} record(s) refused; every other record was written")


@trajectory_app.command("export-atif")
def export_atif(records: Path = typer.Argument(..., help="Canonical records (JSON Lines, as `import` writes; gzip or "
                                                         "Zstandard compressed is read too)."),
                out: Path = typer.Option(..., "--out", help="Directory for <n>.json ATIF files and their "
                                                            "<n>.outcome.json sidecars; created, must not exist."),
                version: str = typer.Option("ATIF-v1.8", "--version", help="ATIF-v1.8 or ATIF-v1.7.")) -> None:
    """Write each record as an ATIF document, with outcome, verification and every loss in a sidecar."""
    from sediment.ingest.reading.compressed import InputUnreadable, open_input
    from sediment.ingest.reading.files import EMPTY
    from sediment.trajectory import TrajectoryError, from_json
    from sediment.trajectory.atif import ATIF_VERSIONS, write_atif

    if version not in ATIF_VERSIONS:
        raise UsageError(f"unknown ATIF version {version!r}; use one of {', '.join(ATIF_VERSIONS)}")
    if out.exists():
        raise UsageError(f"--out {out} already exists; choose a new directory")
    input_files.check([records])
    refused = count = 0
    with writing("ATIF directory", out):
        out.mkdir(parents=True)
        number = 0
        try:
            with open_input(records) as handle:  # plain, gzip or Zstandard
                for number, line in enumerate(handle, start=1):
                    try:
                        record = from_json(line)
                    except TrajectoryError as exc:
                        refused += 1
                        console.error(f"{records}:{number}: {exc}")
                        continue
                    write_atif(record, out / f"{count:06d}.json", version)
                    count += 1
        except InputUnreadable as exc:  # corrupt, truncated or a bomb: the documents before are kept
            refused += 1
            console.error(f"{records}:{number + 1}: {exc}")
        if not count:  # nothing to export: no empty directory left behind
            out.rmdir()
    if not count and not refused:
        refused = 1
        console.error(f"{records}: {EMPTY}")
    console.say(f"{count} ATIF document(s) written to {out}; {refused} refused")
    if refused:
        raise IngestError(f"{refused} record(s) refused; every other record was exported")


__all__ = ["trajectory_app"]
