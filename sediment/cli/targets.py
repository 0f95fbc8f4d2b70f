"""``sediment targets`` and ``sediment profiles``: the installed plugins, as tables or JSON."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from sediment.cli import console


def targets(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """List installed export targets and manifest writers: files, closed skip vocabularies
    (the core's reasons first), schema ids, settings and origin."""
    from sediment.export.registry import load_registry

    registry = load_registry()
    described = [registry.targets[name].as_json() for name in sorted(registry.targets)]
    manifests = [registry.manifests[name].as_json() for name in sorted(registry.manifests)]
    if as_json:
        typer.echo(json.dumps({"targets": described, "manifest_plugins": manifests}))
        return
    table = Table(title="Installed RLVR targets", title_justify="left", show_lines=True)
    for column in ("target", "files", "skip vocabulary", "schema ids", "from"):
        table.add_column(column)
    for item in described:  # every cell is plugin-supplied text
        table.add_row(
            console.cell(item["name"]),
            console.cells(f for files in item["files"].values() for f in files[:1]),
            console.cells(f"{p}: {', '.join(v)}" for p, v in item["skip_reasons"].items()),
            console.cells(item["schema_ids"].values()),
            console.cell(f"{item['origin']['distribution']} {item['origin']['version']}"),
        )
    console.out.print(table)
    for item in manifests:
        console.show(f"manifest plugin {item['name']}: {', '.join(item['files'])} — {item['description']}")
    if not manifests:
        console.show("manifest plugins: none")


def profiles(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """List installed consumer profiles: the target rows each adapts, the consumer versions its
    rows were validated with, its support claim, skip vocabulary, settings and origin.

    Export with `sediment export rlvr --target TARGET --profile PROFILE --out DIR`.
    """
    from sediment.export.registry import load_registry

    registry = load_registry()
    described = [registry.profiles[name].as_json() for name in sorted(registry.profiles)]
    if as_json:
        typer.echo(json.dumps({"profiles": described, "retired": dict(sorted(registry.retired.items()))}))
        return
    if not described:
        console.show("no consumer profiles installed")
    for item in described:
        settings = ", ".join(f"{name}={'(required)' if s['required'] else json.dumps(s['default'])} (${s['env']})"
                             for name, s in item["settings"].items()) or "none"
        console.show((item["id"], "bold"), f"  {item['description']}")  # plugin-supplied: never markup
        for label, value in (
            ("adapts", f"target {item['target']} {item['population']} ({item['canonical_schema']})"),
            ("consumer", f"{item['consumer']}, validated with "
                         + (", ".join(f"{p}=={v}" for p, v in item["validated_with"]) or "no package")),
            ("support", item["support"]),
            ("skip reasons", ", ".join(item["skip_reasons"])),
            ("settings", settings),
            ("from", f"{item['origin']['distribution']} {item['origin']['version']}"),
        ):
            console.show(f"  {label:<13}{value}")
    for old, new in sorted(registry.retired.items()):
        console.show(f"retired: {old} (use {new})")
