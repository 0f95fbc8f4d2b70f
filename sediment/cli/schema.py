"""``sediment schema``: validate exported JSONL against the published schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from sediment.cli import console, input_files
from sediment.errors import SchemaValidationError

schema_app = typer.Typer(help="Inspect and apply the published row schemas.", no_args_is_help=True)


@schema_app.command("validate")
def validate(
    paths: list[Path] = typer.Argument(..., help="Exported JSONL files."),
    limit: int = typer.Option(20, help="Show at most this many problems."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout: files, rows, "
                                 "problem_count, problems (file, line, path, message; at most --limit), native, "
                                 "unchecked."),
) -> None:
    """Validate every row of each file against its schema: a canonical or evidence row against
    the schema its schema_id names (the core's and every installed plugin's), a profile's data
    file (named in the compatibility.json beside it) against the profile's native row schema.

    A data file of a profile that declares no native schema is listed as not checked."""
    from sediment.export.native_rows import native_rows
    from sediment.host.registry import load_registry

    input_files.check(paths)
    registry = load_registry()
    declared = {name: profile.info.native_schema for name, profile in registry.profiles.items()}
    problems: list[dict[str, Any]] = []
    native: dict[str, dict[str, str]] = {}
    unchecked: list[dict[str, str]] = []
    total = rows = 0
    for path in paths:
        data = native_rows(path, declared)
        if data is not None and data.schema_id is None:
            unchecked.append({"file": str(path), "profile": data.profile,
                              "reason": f"profile {data.profile} declares no schema for its data rows"})
            if not as_json:
                console.say(f"{path}: not checked: profile {data.profile} declares no schema for its data rows")
            continue
        if data is not None and data.schema_id is not None:
            native[str(path)] = {"profile": data.profile, "schema_id": data.schema_id}
        schema_id = data.schema_id if data is not None else None
        for problem in registry.schemas.validate_file(path, schema_id):
            total += 1
            if len(problems) < limit:
                problems.append(problem.as_json())
                if not as_json:
                    console.say(str(problem))
        rows += _lines(path)
    if as_json:
        typer.echo(json.dumps({"files": len(paths), "rows": rows, "problem_count": total, "problems": problems,
                               "native": native, "unchecked": unchecked}, ensure_ascii=False))
    if total:
        raise SchemaValidationError(f"{total} schema problem(s) in {len(paths)} file(s)")
    if not as_json:
        console.say(f"all rows valid ({len(paths)} file(s))")


def _lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


@schema_app.command("list")
def list_schemas() -> None:
    """Print every schema id: the core's and every installed plugin's."""
    from sediment.host.registry import load_registry

    for schema_id in load_registry().schemas.ids():
        typer.echo(console.visible(schema_id))  # plugin-supplied: one id per line
