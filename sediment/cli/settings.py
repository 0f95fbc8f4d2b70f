"""Settings every command reads: the acting org, the fact store, the mirror root."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sediment.errors import ConfigurationError, validation_message

if TYPE_CHECKING:
    from sediment.git.mirror_root import MirrorRoot
    from sediment.store import FactStore
    from sediment.trajectory.store_source import StoreSource

ORG_ENV = "SEDIMENT_ORG_ID"
MIRROR_ENV = "SEDIMENT_MIRROR_PATH"


def org_id(value: str | None) -> str:
    """``--org`` or ``SEDIMENT_ORG_ID``, normalized like every org id."""
    from pydantic import TypeAdapter, ValidationError

    from sediment.identifiers import OrgId

    raw = value or os.environ.get(ORG_ENV, "")
    if not raw.strip():
        raise ConfigurationError(f"{ORG_ENV} is not set; pass --org or export {ORG_ENV}")
    try:
        return str(TypeAdapter(OrgId).validate_python(raw))
    except ValidationError as exc:
        raise ConfigurationError(f"invalid org id: {validation_message(exc.errors()[0])}") from None


def store() -> FactStore:
    from sediment.store import FactStore

    return FactStore.from_environment()


@contextmanager
def mirror_root_to_add() -> Iterator[MirrorRoot]:
    """The mirror root ``mirror add`` adds to, created (with its missing parents) when missing. When
    the add fails, the directories it created go again, each only if empty: a failed add leaves
    nothing, not an empty root that a later export would take for mirrors set up."""
    from sediment.git.mirror_root import PARTIAL_PREFIX, MirrorRoot
    from sediment.home import ensure_directory

    path = mirror_root_path()
    created = [directory for directory in (path, *path.parents) if not _probed(directory, lambda there: there.exists())]
    ensure_directory(path, MIRROR_ENV)
    root = MirrorRoot(path)
    try:
        yield root
    except BaseException:
        if created:
            for walked, _, _ in os.walk(path, topdown=False):  # the root last
                if Path(walked).name.startswith(PARTIAL_PREFIX):
                    continue  # another add's, still empty: never this add's to remove
                with suppress(OSError):
                    os.rmdir(walked)  # refuses one that holds anything
            for parent in created[1:]:
                with suppress(OSError):
                    os.rmdir(parent)
        raise


def existing_mirror_root() -> MirrorRoot | None:
    """The mirror root (``SEDIMENT_MIRROR_PATH``, else ``$SEDIMENT_HOME/mirrors``) when that directory
    exists, else None. Only ``mirror add`` creates it: a command that reads mirrors never does,
    since an empty root would make a later export, which needs mirrors, write rows where it
    refused before."""
    from sediment.git.mirror_root import MirrorRoot

    path = mirror_root_path()
    return MirrorRoot(path) if _probed(path, lambda there: there.is_dir()) else None


def _probed(path: Path, test: Callable[[Path], bool]) -> bool:
    """``test(path)``; a parent that cannot be entered is one error line naming the path."""
    try:
        return test(path)
    except OSError as exc:
        raise ConfigurationError(f"cannot read the mirror root {path}: {exc.strerror or exc}") from None


def warn_no_mirrors() -> None:
    """The one warning line of a derivation without a mirror root."""
    from sediment.cli import console

    where = (f"{MIRROR_ENV} names no directory: {mirror_root_path()}" if os.environ.get(MIRROR_ENV, "").strip()
             else f"{MIRROR_ENV} is not set and $SEDIMENT_HOME/mirrors does not exist")
    console.warning(f"no mirrors ({where}): no Session can be bound to a commit; add them with: "
                    "sediment mirror add OWNER/REPO URL")


def mirror_root_path() -> Path:
    """Where the mirror root is (``SEDIMENT_MIRROR_PATH``, else ``$SEDIMENT_HOME/mirrors``), made or not."""
    from sediment.home import sediment_home

    value = os.environ.get(MIRROR_ENV, "").strip()
    return Path(value) if value else sediment_home() / "mirrors"


def unused_mirror_warning(repo: str) -> str:
    """Why a legacy mirror of ``repo`` is not read: several identified repositories held the name."""
    return (f"repository_mirror_identity_unresolved: the legacy mirror of {repo} is not used "
            "(identified repositories held that name); remove it with `sediment mirror remove "
            "--legacy` and add the one you mean with --repository-id")


#: ``--engine``'s help: the same words on every command that takes it.
ENGINE_HELP = ("Where the parallel work runs: local (forked processes, the default) or ray (tasks on the Ray "
               "cluster RAY_ADDRESS names; needs the sediment[ray] extra and a PostgreSQL store; docs/scale.md). "
               "The output is byte-identical either way.")


def engine(value: str | None) -> str:
    """The engine ``--engine`` (else SEDIMENT_ENGINE) names, checked."""
    from sediment.parallel import engine_name

    return engine_name(value)


CAPTURE_TIME_ENV = "SEDIMENT_CAPTURE_TIME"



def settle_mirrors(org: str, stored: Iterable[str] | None = None, root: MirrorRoot | None = None) -> None:
    """Key the org's legacy mirrors whose name one identified repository now holds by that
    identity, and observe their notes under it (:func:`sediment.ingest.git_notes.settle_legacy_mirrors`),
    saying so on stderr. ``stored``: the Fact tables an ingest just wrote to; nothing is done
    unless one of them can name an identity. ``root``: the mirror root (default:
    ``SEDIMENT_MIRROR_PATH`` or ``$SEDIMENT_HOME/mirrors``; without one there is nothing to settle)."""
    from sediment.cli import console
    from sediment.git.repositories import describe
    from sediment.ingest.git_notes import IDENTITY_TABLES, settle_legacy_mirrors

    if stored is not None and not IDENTITY_TABLES.intersection(stored):
        return
    if root is None:
        root = existing_mirror_root()
        if root is None:
            return
    settlement = settle_legacy_mirrors(root, store(), org, capture_time())
    for settled in settlement.settled:
        console.say(f"keyed the mirror of {settled.repo} by {describe(settled.identity)} (the stored Facts "
                    f"name it now): {settled.observed.counts()}")
        for problem in settled.observed.problems:
            console.warning(problem)
    for repo in settlement.unused:
        console.warning(unused_mirror_warning(repo))


def mirror_option(option: Path | None, needed_by: str) -> MirrorRoot:
    """``--mirrors`` (or ``SEDIMENT_MIRROR_PATH``, which typer reads into it), else
    ``$SEDIMENT_HOME/mirrors`` when it exists; ``needed_by`` names the command in the error."""
    from sediment.git.mirror_root import MirrorRoot
    from sediment.home import sediment_home

    if option is not None and str(option).strip():
        return MirrorRoot(option)
    default = sediment_home() / "mirrors"
    if default.is_dir():
        return MirrorRoot(default)
    raise ConfigurationError(f"{MIRROR_ENV} is not set; {needed_by} needs mirrors (or pass --mirrors)")


def capture_time() -> datetime:
    """Now, or ``SEDIMENT_CAPTURE_TIME`` (RFC 3339) for reproducible backfills and tests."""
    value = os.environ.get(CAPTURE_TIME_ENV, "").strip()
    if not value:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigurationError(f"{CAPTURE_TIME_ENV} is not an RFC 3339 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise ConfigurationError(f"{CAPTURE_TIME_ENV} needs a UTC offset: {value!r}")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ConfigurationError(f"{CAPTURE_TIME_ENV} is out of range once converted to UTC: {value!r}") from None


def store_rollouts(org: str | None) -> StoreSource:
    """The configured fact store's Rollouts of ``--org`` / ``SEDIMENT_ORG_ID`` for an importer,
    derived one Session at a time with the configured mirrors (as ``sediment derive`` does)."""
    from sediment.trajectory.store_source import store_source

    org_id_ = org_id(org)
    opened = store()  # a store that cannot be opened is the one error line, before any warning
    mirrors = existing_mirror_root()
    if mirrors is None:
        warn_no_mirrors()
    return store_source(opened, org_id_, mirrors)


def import_paths(paths: list[Path] | None, from_store: bool) -> list[Path]:
    """The input files of an import, or none with ``--from-store`` (one of the two is required)."""
    from sediment.errors import UsageError

    if from_store and paths:
        raise UsageError("give input PATHs or --from-store, not both")
    if not from_store and not paths:
        raise UsageError("give input PATHs, or --from-store to read the fact store's Rollouts")
    return list(paths or [])


def content_redaction(turn_off: bool = False) -> None:
    """Content redaction for this command: off with ``--no-redact-content`` (``turn_off``) or
    ``SEDIMENT_REDACT_CONTENT=0``, on otherwise; when off, one warning line on stderr says so."""
    from sediment.cli import console
    from sediment.ingest.redaction.content import ENV, content_redaction_enabled, set_content_redaction

    set_content_redaction(False if turn_off else None)  # this command's choice, never an earlier one's
    if not content_redaction_enabled():
        console.warning(f"content redaction is off ({'--no-redact-content' if turn_off else ENV + '=0'}): "
                        "secrets inside messages, tool calls and results, transcripts, OTLP records, CI "
                        "payloads and trajectories are stored as received")
