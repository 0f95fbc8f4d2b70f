"""``sediment objectives``, ``sediment targets`` and ``sediment profiles``: the installed
plugins, as tables or JSON."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from sediment.cli import console


def objectives(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """List installed export objectives: the unit of evidence each reads, its recipes (the
    default first), the populations and files it writes, its targets or its own row schemas
    and closed skip vocabularies (an objective that derives its own units lists the reasons a
    unit was not derived under its unit), what it needs (mirrors, --from), settings and origin.

    Export one with `sediment export OBJECTIVE --out DIR` (see `sediment export --help`).
    """
    from sediment.host.registry import load_registry

    registry = load_registry()
    described = [registry.objectives[name].as_json() for name in sorted(registry.objectives)]
    if as_json:
        typer.echo(json.dumps({"objectives": described}))
        return
    if not described:
        console.show("no export objectives installed")
    for item in described:  # every value is plugin-supplied text: never markup
        console.show((item["name"], "bold"), f"  {item['description']}")
        recipes = ", ".join(f"{r['name']} v{r['version']}" + (" (default)" if r["name"] == item["default_recipe"]
                                                             else "") for r in item["recipes"])
        mirrors = ", ".join(what for what, needed in (("direct export", item["direct_needs_mirrors"]),
                                                       ("--from", item["from_needs_mirrors"])) if needed)
        details = [("unit", f"{item['unit']} (counted as {item['units']})")]
        if "unit_skip_reasons" in item:
            details.append(("  skip reasons", ", ".join(item["unit_skip_reasons"])))
        details.append(("recipes", recipes))
        for population, declared in item["populations"].items():
            details.append((population, f"{', '.join(declared['files'])} (rows counted as {declared['label']})"))
            if "schema_id" in declared:
                details += [("  schema", declared["schema_id"]),
                            ("  skip reasons", ", ".join(declared["skip_reasons"]))]
        if item["has_targets"]:
            details.append(("targets", ", ".join(item["targets"]) or "none installed"))
        details += [
            ("mirrors", f"read by {mirrors}" if mirrors else "not read"),
            ("--from", "a bundle" if item["supports_from"] else "not supported (reads the fact store)"),
            ("from", f"{item['origin']['distribution']} {item['origin']['version']}"),
        ]
        for label, value in details:
            console.show(f"  {label:<15}{value}")


def targets(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """List installed export targets and manifest writers: the objective each target exports,
    files, closed skip vocabularies (the core's reasons first), schema ids, settings and origin."""
    from sediment.host.registry import load_registry

    registry = load_registry()
    described = [registry.targets[name].as_json() for name in sorted(registry.targets)]
    manifests = [registry.manifests[name].as_json() for name in sorted(registry.manifests)]
    if as_json:
        typer.echo(json.dumps({"targets": described, "manifest_plugins": manifests}))
        return
    table = Table(title="Installed targets", title_justify="left", show_lines=True)
    for column in ("target", "objective", "files", "skip vocabulary", "schema ids", "from"):
        table.add_column(column)
    for item in described:  # every cell is plugin-supplied text
        table.add_row(
            console.cell(item["name"]),
            console.cell(item["objective"]),
            console.cells(f for files in item["files"].values() for f in files[:1]),
            console.cells(f"{p}: {', '.join(v)}" for p, v in item["skip_reasons"].items()),
            console.cells(item["schema_ids"].values()),
            console.cell(f"{item['origin']['distribution']} {item['origin']['version']}"),
        )
    console.render(table)
    for item in manifests:
        console.show(f"manifest plugin {item['name']}: {', '.join(item['files'])} — {item['description']}")
    if not manifests:
        console.show("manifest plugins: none")


def profiles(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """List installed consumer profiles: the target rows each adapts, the consumer versions its
    rows were validated with, its support claim, skip vocabulary, settings and origin.

    Export with `sediment export OBJECTIVE --target TARGET --profile PROFILE --out DIR`, the
    objective being the one of the profile's target (see `sediment targets`).
    """
    from sediment.host.registry import load_registry

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
            ("adapts", (f"target {item['target']} {item['population']}" if item["target"] in registry.targets
                        else f"objective {item['objective']} {item['population']} rows")
             + f" ({item['canonical_schema']})"),
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
