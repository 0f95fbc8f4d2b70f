"""``sediment targets``: the installed export targets and manifest plugins."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from sediment.cli import console


def targets(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """List installed export targets: files, closed skip vocabularies, schema ids and origin."""
    from sediment.export.registry import load_registry

    registry = load_registry()
    described = [registry.targets[name].as_json() for name in sorted(registry.targets)]
    if as_json:
        typer.echo(json.dumps({"targets": described, "manifest_plugins": registry.manifest_plugins}))
        return
    table = Table(title="Installed RLVR targets", title_justify="left", show_lines=True)
    for column in ("target", "files", "skip vocabulary", "schema ids", "from"):
        table.add_column(column)
    for item in described:
        table.add_row(
            item["name"],
            "\n".join(f for files in item["files"].values() for f in files[:1]),
            "\n".join(f"{p}: {', '.join(v)}" for p, v in item["skip_reasons"].items()),
            "\n".join(item["schema_ids"].values()),
            f"{item['origin']['distribution']} {item['origin']['version']}",
        )
    console.out.print(table)
    console.out.print(f"manifest plugins: {', '.join(registry.manifest_plugins) or 'none'}")
