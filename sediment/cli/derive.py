"""``sediment derive``: write the reviewed bundle that ``export rlvr --from`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sediment.cli import console, progress, settings
from sediment.errors import UsageError


def derive(
    out: Path | None = typer.Option(None, "--out", "-o", help="New bundle directory (must not exist; required "
                                    "unless --explain-attribution)."),
    policy: Path | None = typer.Option(None, "--policy", help="Derivation policy TOML, merged over the defaults "
                                       "(`sediment policy show` prints them)."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest on stdout."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Processes deriving Sessions in parallel "
                                "(the bundle is byte-identical for any count)."),
    engine: str | None = typer.Option(None, "--engine", metavar="local|ray", envvar="SEDIMENT_ENGINE",
                                      show_envvar=True, help=settings.ENGINE_HELP),
    explain: str | None = typer.Option(None, "--explain-attribution", metavar="SESSION", help=(
        "Write no bundle: show why SESSION was (not) bound to commits: its notes, the candidate commits "
        "and each code file's best Jaccard score against the threshold.")),
) -> None:
    """Derive every Session's Rollout from the fact store and mirrors into a bundle.

    A legacy mirror whose name one identified repository now holds is keyed by that identity
    first, as `mirror fetch` would (without fetching), so the order of `mirror add` and ingest
    never changes the bundle."""
    from sediment.derive.sessions import derive_bundle
    from sediment.model.policy import DerivationPolicy

    resolved = DerivationPolicy.from_toml(policy) if policy else DerivationPolicy()
    if explain is None and out is None:
        raise UsageError("Missing option '--out' / '-o' (or --explain-attribution SESSION).")
    if explain is not None and out is not None:
        raise UsageError("--explain-attribution writes no bundle: drop --out")
    chosen_engine = settings.engine(engine)
    org_id = settings.org_id(org)
    mirrors = settings.existing_mirror_root()  # with none, a warning line once the work is done
    if mirrors is not None:
        settings.settle_mirrors(org_id, root=mirrors)  # Facts that arrived elsewhere (a receiver) may name one now
    if explain is not None:
        from sediment.cli.attribution_explain import show
        from sediment.derive.explain import explain_session

        explanation = explain_session(settings.store(), org_id, explain, policy=resolved, mirrors=mirrors)
        if mirrors is None:
            settings.warn_no_mirrors()
        show(explanation, as_json=as_json)
        return
    assert out is not None
    with progress.bar("deriving sessions", enabled=progress.wanted(as_json)) as update:
        path, _ = derive_bundle(settings.store(), org_id, out, policy=resolved, mirrors=mirrors, workers=workers,
                                progress=update, engine=chosen_engine)
    if mirrors is None:
        settings.warn_no_mirrors()
    manifest = json.loads((path / "manifest.json").read_text(encoding="ascii"))
    if as_json:
        typer.echo(json.dumps(manifest))
        return
    console.say(f"derived {manifest['counts']['rollouts']} rollout(s) into {path}")
    fragmented = {k: v for k, v in manifest["fragmented"].items() if v}
    if fragmented:
        console.say(f"fragmented (not skipped): {console.counts(fragmented)}")
    if manifest["skipped"]:
        console.say(f"skipped: {console.counts(manifest['skipped'])}")
        if any(reason.startswith("attribution.") for reason in manifest["skipped"]):
            console.say("why a Session bound no commit: sediment derive --explain-attribution SESSION")
