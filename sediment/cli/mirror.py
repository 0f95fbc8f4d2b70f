"""``sediment mirror``: bare git mirrors, and the git-note edges they expose."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from sediment.cli import console, settings

if TYPE_CHECKING:
    from sediment.git.mirror_root import MirrorLocation, MirrorRoot
    from sediment.git.repositories import RepositoryContext
    from sediment.model.facts import RepositoryIdentity

mirror_app = typer.Typer(help="Manage bare git mirrors (reference patches, git-note attribution).",
                         no_args_is_help=True)

_JSON_HELP = "Print one JSON object on stdout (docs/cli.md); warnings stay on stderr."

_REPOSITORY_ID_HELP = ("GitHub's immutable repository id (repository.id of its webhooks): key the mirror by "
                       "it. Needed when the stored Facts show several repositories that held the name.")


def _location(location: MirrorLocation) -> dict[str, Any]:
    """A mirror as JSON: ``repo``, ``repository_id`` (null for a legacy mirror keyed by the
    name) and ``path``."""
    identity = location.identity
    return {"repo": location.repo, "repository_id": identity.repository_id if identity is not None else None,
            "path": str(location.path)}


def _report(location: MirrorLocation, mirrors: MirrorRoot, org: str, as_json: bool = False) -> dict[str, Any]:
    """Record the mirror's new note edges; say so unless ``as_json``, and return them as JSON:
    the mirror, ``stored``, ``already_seen``, ``restated``, ``git_ai_notes``, ``unbound_attestations``,
    ``problems``."""
    from sediment.ingest.git_notes import observe_notes

    result = observe_notes(mirrors, settings.store(), org, location.repo, settings.capture_time(), location.identity)
    for problem in result.problems:
        console.warning(problem)
    if not as_json:
        console.say(f"{location.repo}: {result.counts()}")
    if result.git_ai_notes and not as_json:
        unbound = ", ".join(f"{k}: {v}" for k, v in sorted(result.unbound_attestations.items())) or "none"
        console.say(f"{location.repo}: {result.git_ai_notes} git-ai note(s) read; attestation lines "
                    f"binding no Session: {unbound}")
    return {**_location(location), "stored": result.stored, "already_seen": result.already_seen,
            "restated": result.restated, "git_ai_notes": result.git_ai_notes,
            "unbound_attestations": dict(sorted(result.unbound_attestations.items())),
            "problems": [str(problem) for problem in result.problems]}


def _context(org: str) -> RepositoryContext:
    from sediment.git.repositories import RepositoryContext

    return RepositoryContext.from_store(settings.store(), org)


def _identity(repository_id: str | None) -> RepositoryIdentity | None:
    from sediment.errors import UsageError
    from sediment.ingest.ci.github_fields import GITHUB_HOST
    from sediment.model.facts import RepositoryIdentity

    if repository_id is None:
        return None
    try:
        return RepositoryIdentity(provider="github", host=GITHUB_HOST, repository_id=repository_id.strip())
    except ValueError:
        raise UsageError(f"--repository-id must be a positive decimal number: {repository_id!r}") from None


def _settle(location: MirrorLocation, mirrors: MirrorRoot, org: str, repositories: RepositoryContext
            ) -> MirrorLocation:
    """A legacy mirror of a name an identified repository now holds: re-keyed by that identity,
    or (several held it) reported as unused."""
    from sediment.git.repositories import describe

    rekeyed = mirrors.rekey(org, location, repositories)
    if rekeyed is not None and rekeyed.identity is not None:
        console.say(f"keyed the mirror of {location.repo} by {describe(rekeyed.identity)} "
                    f"(the stored Facts name it): {rekeyed.path}")
        return rekeyed
    if location.identity is None and not repositories.legacy_mirror_usable(location.repo):
        console.warning(settings.unused_mirror_warning(location.repo))
    return location


@mirror_app.command("add")
def add(
    repo: str = typer.Argument(..., metavar="OWNER/REPO", help="Repository slug the mirror serves."),
    source: str = typer.Argument(..., help="Path or URL to fetch from."),
    repository_id: str | None = typer.Option(None, "--repository-id", metavar="ID", help=_REPOSITORY_ID_HELP),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Create a bare mirror, fetch branches and refs/notes/sediment, record new note edges.

    The mirror is keyed by the repository's identity when the stored Facts (GitHub webhooks
    carry the immutable repository id) show exactly one repository that held OWNER/REPO, so
    a renamed repository keeps its mirror and a new repository of the same name gets its own;
    with several, the add is refused until --repository-id chooses one; with none, it is a
    legacy mirror keyed by the name.

    Atomic: the mirror is built in a private directory and moved into place only when its
    fetch succeeded; a failed add leaves nothing behind and can simply be retried.
    """
    from sediment.git.mirror_root import MirrorLocation, mirror_identity

    org_id = settings.org_id(org)
    slug = _slug(repo)
    chosen = _identity(repository_id)
    with settings.mirror_root_to_add() as mirrors:
        identity = mirror_identity(_context(org_id), slug, chosen)
        path = mirrors.add(org_id, slug, source, identity)
    if not as_json:
        console.say(f"mirrored {slug} into {path}")
    report = _report(MirrorLocation(slug, identity, path), mirrors, org_id, as_json)
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False))


def _slug(repo: str) -> str:
    from sediment.errors import UsageError
    from sediment.identifiers import normalize_repo_slug

    try:
        slug = normalize_repo_slug(repo)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not slug:
        raise UsageError(f"repository must be 'owner/repo': {repo!r}")
    return slug


@mirror_app.command("fetch")
def fetch(
    repo: str | None = typer.Argument(None, metavar="[OWNER/REPO]", help="One repository (default: all)."),
    repository_id: str | None = typer.Option(None, "--repository-id", metavar="ID",
                                             help="Fetch the mirror keyed by this repository id."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Refresh mirrors from their origin; new note edges become SessionCommitObservation Facts.

    A legacy mirror whose name one identified repository now holds (it was added before that
    repository's webhooks arrived) is keyed by that repository's identity first, so its
    commits and notes count for that repository; the edges it gave before are then counted as
    restated under the identity, not as new.
    """
    from sediment.git.mirror_root import no_mirror

    org_id = settings.org_id(org)
    mirrors = settings.existing_mirror_root()  # none set up yet: nothing to fetch, no mirror to name
    repositories = _context(org_id)
    chosen = _identity(repository_id)
    slug = _slug(repo) if repo else ""
    everything = repo is None and chosen is None
    if mirrors is None and not everything:
        raise no_mirror(slug, chosen)
    fetched: list[dict[str, Any]] = []
    if mirrors is not None:
        locations = mirrors.mirrors(org_id) if everything else [mirrors.named(org_id, slug, chosen, repositories)]
        for location in locations:
            location = _settle(location, mirrors, org_id, repositories)
            mirrors.fetch(org_id, location.repo, location.identity)
            fetched.append(_report(location, mirrors, org_id, as_json))
    if as_json:
        typer.echo(json.dumps({"mirrors": fetched}, ensure_ascii=False))


@mirror_app.command("remove")
def remove(
    repo: str = typer.Argument(..., metavar="OWNER/REPO", help="Repository slug of the mirror."),
    repository_id: str | None = typer.Option(None, "--repository-id", metavar="ID",
                                             help="Remove the mirror keyed by this repository id."),
    legacy: bool = typer.Option(False, "--legacy", help="Remove the legacy mirror keyed by the name "
                                "(when an identified mirror serves the name too)."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
) -> None:
    """Delete a mirror (also a half-made one) so it can be added again; stored Facts are kept."""
    from sediment.errors import UsageError
    from sediment.git.mirror_root import MirrorError

    org_id = settings.org_id(org)
    slug = _slug(repo)
    mirrors = settings.existing_mirror_root()
    chosen = _identity(repository_id)
    if legacy and chosen is not None:
        raise UsageError("--legacy and --repository-id name different mirrors; give one")
    if mirrors is None:
        raise MirrorError(f"no mirror of {slug} to remove: {settings.mirror_root_path()} does not exist")
    found = None if legacy else mirrors.locate(org_id, slug, chosen)
    identity = found.identity if found is not None else chosen
    path = mirrors.remove(org_id, slug, identity)
    console.say(f"removed the mirror of {slug} ({path})")


@mirror_app.command("list")
def list_mirrors(org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
                 as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout: mirrors "
                                              "(repo, repository_id or null for a legacy mirror, path).")) -> None:
    """List the org's mirrors (identified ones first) and where they live."""
    org_id = settings.org_id(org)
    mirrors = settings.existing_mirror_root()  # none set up yet: no mirror to list
    locations = mirrors.mirrors(org_id) if mirrors is not None else []
    if as_json:
        typer.echo(json.dumps({"mirrors": [_location(location) for location in locations]}, ensure_ascii=False))
        return
    for location in locations:
        typer.echo(f"{console.visible(location.repo)}\t{console.visible(location.path)}")
