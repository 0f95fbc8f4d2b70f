"""``sediment derive``: write the reviewed bundle that ``export rlvr --from`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sediment.cli import console, settings


def derive(
    out: Path = typer.Option(..., "--out", "-o", help="New bundle directory (must not exist)."),
    policy: Path | None = typer.Option(None, "--policy", help="Derivation policy TOML (default policy if absent)."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest on stdout."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Processes deriving Sessions in parallel "
                                "(the bundle is byte-identical for any count)."),
) -> None:
    """Derive every Session's Rollout from the fact store and mirrors into a bundle.

    A legacy mirror whose name one identified repository now holds is keyed by that identity
    first, as `mirror fetch` would (without fetching), so the order of `mirror add` and ingest
    never changes the bundle."""
    from sediment.derive.sessions import derive_bundle
    from sediment.model.policy import DerivationPolicy

    resolved = DerivationPolicy.from_toml(policy) if policy else DerivationPolicy()
    org_id = settings.org_id(org)
    mirrors = settings.mirror_root(create=True)
    settings.settle_mirrors(org_id, root=mirrors)  # Facts that arrived elsewhere (a receiver) may name one now
    path, _ = derive_bundle(settings.store(), org_id, out, policy=resolved, mirrors=mirrors, workers=workers)
    manifest = json.loads((path / "manifest.json").read_text(encoding="ascii"))
    if as_json:
        typer.echo(json.dumps(manifest))
        return
    console.say(f"derived {manifest['counts']['rollouts']} rollout(s) into {path}")
    fragmented = {k: v for k, v in manifest["fragmented"].items() if v}
    if fragmented:
        console.say(f"fragmented (not skipped): {fragmented}")
    if manifest["skipped"]:
        console.say(f"skipped: {manifest['skipped']}")
