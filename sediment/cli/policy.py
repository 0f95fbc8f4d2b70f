"""``sediment policy``: the derivation policy ``derive --policy`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import typer

policy_app = typer.Typer(help="Show the derivation policy (the TOML `sediment derive --policy` reads).",
                         no_args_is_help=True)


@policy_app.command()
def show(
    policy: Path | None = typer.Option(None, "--policy", help="Show this file merged over the defaults "
                                       "(default: the default policy)."),
    as_json: bool = typer.Option(False, "--json", help="Print the resolved policy and its digest as JSON."),
) -> None:
    """Print the policy as TOML with a comment per field.

    Save it, change what you need (or keep only those fields) and pass it to `derive --policy`."""
    from sediment.model.policy import DerivationPolicy
    from sediment.model.policy_toml import policy_toml

    resolved = DerivationPolicy.from_toml(policy) if policy is not None else DerivationPolicy()
    if as_json:
        typer.echo(json.dumps({"policy": resolved.model_dump(mode="json"), "digest": resolved.digest}))
        return
    typer.echo(policy_toml(resolved), nl=False)
