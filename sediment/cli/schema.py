"""``sediment schema``: validate exported JSONL against the published schemas."""

from __future__ import annotations

from pathlib import Path

import typer

from sediment.cli import console, input_files
from sediment.errors import SchemaValidationError

schema_app = typer.Typer(help="Inspect and apply the published row schemas.", no_args_is_help=True)


@schema_app.command("validate")
def validate(
    paths: list[Path] = typer.Argument(..., help="Exported JSONL files."),
    limit: int = typer.Option(20, help="Show at most this many problems."),
) -> None:
    """Validate every row of each file against the schema its schema_id names: the core's
    schemas and every installed plugin's (consumer-native profile data files carry no
    schema_id; validate their evidence files)."""
    from sediment.host.registry import load_registry

    input_files.check(paths)
    schemas = load_registry().schemas
    shown = total = 0
    for path in paths:
        for problem in schemas.validate_file(path):
            total += 1
            if shown < limit:
                console.say(str(problem))
                shown += 1
    if total:
        raise SchemaValidationError(f"{total} schema problem(s) in {len(paths)} file(s)")
    console.say(f"all rows valid ({len(paths)} file(s))")


@schema_app.command("list")
def list_schemas() -> None:
    """Print every schema id: the core's and every installed plugin's."""
    from sediment.host.registry import load_registry

    for schema_id in load_registry().schemas.ids():
        typer.echo(console.visible(schema_id))  # plugin-supplied: one id per line
