"""``sediment facts`` / ``quarantine`` / ``release``: look into and curate the fact store."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from sediment.cli import console, settings

ORG_HELP = "Org id (default: SEDIMENT_ORG_ID)."


def facts(
    org: str | None = typer.Option(None, "--org", help=ORG_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print counts as JSON on stdout."),
) -> None:
    """Count stored Facts per table (and how many are quarantined)."""
    org_id = settings.org_id(org)
    store = settings.store()
    counts = store.counts(org_id)
    if as_json:
        typer.echo(json.dumps({"org_id": org_id, "backend": store.backend, "tables": counts,
                               "quarantine_revision": store.quarantine_revision(org_id),
                               "stored_bytes": store.stored_bytes()}))
        return
    table = Table(title=console.cell(f"Facts of {org_id} ({store.backend})"), title_justify="left")
    table.add_column("table")
    table.add_column("stored", justify="right")
    table.add_column("quarantined", justify="right")
    for name, row in counts.items():
        table.add_row(console.cell(name), console.cell(row["stored"]), console.cell(row["quarantined"]))
    console.render(table)
    console.show(f"quarantine revision: {store.quarantine_revision(org_id)}")


def quarantine(
    table: str = typer.Argument(..., help="Fact table, e.g. inference_calls, ci_outcomes."),
    fact_id: str = typer.Argument(..., help="The Fact's id."),
    reason: str = typer.Option(..., "--reason", help="Why (kept in the append-only log)."),
    org: str | None = typer.Option(None, "--org", help=ORG_HELP),
) -> None:
    """Exclude a Fact from every derivation and export (nothing is deleted)."""
    revision = settings.store().quarantine(settings.org_id(org), table, fact_id, reason)
    console.say(f"quarantined {table}/{fact_id} (revision {revision})")


def release(
    table: str = typer.Argument(..., help="Fact table."),
    fact_id: str = typer.Argument(..., help="The Fact's id."),
    reason: str = typer.Option(..., "--reason", help="Why (kept in the append-only log)."),
    org: str | None = typer.Option(None, "--org", help=ORG_HELP),
) -> None:
    """Undo a quarantine; the log keeps both actions."""
    revision = settings.store().release(settings.org_id(org), table, fact_id, reason)
    console.say(f"released {table}/{fact_id} (revision {revision})")
