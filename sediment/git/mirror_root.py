"""The mirror root: where each bare mirror lives and how it is keyed, and adding, refreshing,
re-keying and removing mirrors (reading one is :mod:`sediment.git.mirror`). Only the git
package's mirror modules import pygit2.

Layout (docs/operate.md, Mirrors and attribution): a legacy repository lives at
``<root>/<percent-encode("<org_id>/<repo>")>``; an identified one at
``<root>/repositories-v1/<org>/<provider>/<host>/<repository_id>`` (each part
percent-encoded with no safe characters), so a renamed repository keeps its mirror and two
repository lifetimes of one name never share one. An identified mirror records the name it
was added under in its git config (``sediment.repository``). A directory is a mirror only if
it has ``HEAD``. Exports never fetch.

``add`` is atomic: the bare repository is built and fetched in a private directory beside its
final path (``<root>/.sediment-partial-*``, mode 0700, which is never a mirror name), and
renamed into place only once it is complete; a failure (a bad source, a fetch failing midway,
Ctrl-C) removes it. A process killed outright leaves its private directory behind, unlocked:
the next ``add`` or ``remove`` under the same root sweeps it (a builder holds an exclusive
``flock`` on ``lock`` in its directory for as long as it works, so only abandoned ones are
swept). ``remove`` renames the mirror into such a directory, then deletes it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote, unquote

import pygit2

from sediment.errors import ConfigurationError, SedimentError
from sediment.git.mirror import Mirror
from sediment.git.repositories import RepositoryContext, describe
from sediment.model.facts import RepositoryIdentity

IDENTIFIED_ROOT = "repositories-v1"
NAME_KEY = "sediment.repository"  #: an identified mirror's git config entry: the name it was added under
FETCH_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/notes/sediment*:refs/notes/sediment*",
                  "+refs/notes/ai*:refs/notes/ai*")
"""Branches, our notes and git-ai's (globs, so a repository without notes still fetches)."""
PARTIAL_PREFIX = ".sediment-partial-"  #: a mirror being built or removed; org ids never start with "."
_T = TypeVar("_T")


class MirrorError(SedimentError):
    """A mirror cannot be added, refreshed or removed as asked."""


class MirrorFetchError(MirrorError):
    """A mirror could not be created or refreshed from its source."""


def _encode(text: str) -> str:
    return quote(text, safe="")


@dataclass(frozen=True)
class MirrorLocation:
    """One mirror of an org: the repository name it serves, its identity (``None``: a legacy
    mirror, keyed by the name) and its directory."""

    repo: str
    identity: RepositoryIdentity | None
    path: Path


def no_mirror(repo: str, identity: RepositoryIdentity | None = None) -> MirrorError:
    """The one-line refusal for a mirror not added (named by ``repo``, else by its repository id)."""
    named = repo or (identity.repository_id if identity is not None else "")
    return MirrorError(f"no mirror of {named}; add it first with `sediment mirror add`")


@dataclass(frozen=True)
class MirrorRoot:
    """The root directory of every bare mirror."""

    path: Path

    def __post_init__(self) -> None:
        if not self.path.is_dir():
            raise ConfigurationError(f"mirror root does not exist or is not a directory: {self.path}")

    def mirror_path(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None) -> Path:
        """Where the mirror of ``repo`` (or of the identified repository: its name aside) lives."""
        if identity is not None:
            parts = (org_id, identity.provider, identity.host, identity.repository_id)
            return self.path.joinpath(IDENTIFIED_ROOT, *(_encode(p) for p in parts))
        return self.path / _encode(f"{org_id}/{repo}")

    def identified_mirrors(self, org_id: str) -> list[MirrorLocation]:
        """The org's identified mirrors, in identity order, each with the name it was added under."""
        found = []
        base = self.path / IDENTIFIED_ROOT / _encode(org_id)
        for path in sorted(base.glob("*/*/*")) if base.is_dir() else ():
            if not (path / "HEAD").is_file():
                continue
            provider, host, repository_id = (unquote(p) for p in path.relative_to(base).parts)
            try:
                identity = RepositoryIdentity.model_validate(
                    {"provider": provider, "host": host, "repository_id": repository_id})
                name = pygit2.Repository(str(path)).config[NAME_KEY]
            except (ValueError, KeyError, pygit2.GitError):
                continue  # not a mirror this Sediment made
            if isinstance(name, str):
                found.append(MirrorLocation(name, identity, path))
        return sorted(found, key=lambda m: (m.identity.provider, m.identity.host,  # type: ignore[union-attr]
                                            int(m.identity.repository_id)))  # type: ignore[union-attr]

    def mirrors(self, org_id: str) -> list[MirrorLocation]:
        """Every mirror of the org: identified ones (identity order), then legacy ones (by name)."""
        legacy = [MirrorLocation(repo, None, self.mirror_path(org_id, repo)) for repo in self.legacy_mirrors(org_id)]
        return self.identified_mirrors(org_id) + legacy

    def named(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None,
              repositories: RepositoryContext | None = None) -> MirrorLocation:
        """The one mirror serving the name ``repo`` (see :meth:`locate`), refused in one line
        when there is none."""
        found = self.locate(org_id, repo, identity, repositories)
        if found is None:
            raise no_mirror(repo, identity)
        return found

    def locate(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None,
               repositories: RepositoryContext | None = None) -> MirrorLocation | None:
        """The one mirror serving the name ``repo``: the legacy mirror of that name, or an
        identified one added under it or (with ``repositories``) whose identity held it; with
        ``identity``, the mirror keyed by it, whatever its name. ``None`` when there is none;
        refused in one line when several serve the name (two repository lifetimes of one name,
        each with its mirror): ``repository_mirror_identity_unresolved``.
        """
        def serves(m: MirrorLocation) -> bool:
            if m.repo == repo:
                return True
            return m.identity is not None and repositories is not None and repo in repositories.names(m.identity)

        if identity is not None:
            found = [m for m in self.identified_mirrors(org_id) if m.identity == identity]
        else:
            found = [m for m in self.mirrors(org_id) if serves(m)]
        if not found:
            return None
        if len(found) > 1:
            keyed = ", ".join(describe(m.identity) if m.identity else "a legacy mirror" for m in found)
            raise MirrorError(f"repository_mirror_identity_unresolved: {len(found)} mirrors serve {repo} ({keyed}); "
                              "choose one by its repository id")
        return found[0]

    def legacy_mirrors(self, org_id: str) -> list[str]:
        """Repositories (``owner/repo``) of ``org_id`` that have a legacy mirror, sorted."""
        prefix = f"{org_id}/"
        repos = []
        for entry in self.path.iterdir():
            name = unquote(entry.name)
            if name.startswith(prefix) and (entry / "HEAD").is_file():
                repos.append(name[len(prefix):])
        return sorted(repos)

    def _checked_path(self, org_id: str, repo: str, identity: RepositoryIdentity | None) -> Path:
        path = self.mirror_path(org_id, repo, identity)
        depth = 4 if identity is not None else 0  # repositories-v1/<org>/<provider>/<host>/<id>
        if path.resolve().parents[depth] != self.path.resolve():
            raise MirrorFetchError(f"repository name would escape the mirror root: {repo!r}")
        return path

    def add(self, org_id: str, repo: str, source: str, identity: RepositoryIdentity | None = None) -> Path:
        """Create the bare mirror of ``repo`` (keyed by ``identity`` when it has one) from
        ``source`` (a path or URL) and fetch it.

        Atomic: the mirror appears at its path complete, or not at all (see the module doc).
        """
        path = self._checked_path(org_id, repo, identity)
        if (path / "HEAD").exists():
            raise MirrorFetchError(f"mirror of {repo} already exists: {path} "
                                   "(use mirror fetch, or mirror remove to start over)")
        if _occupied(path):
            raise MirrorFetchError(f"{path} is in the way and is not a mirror of {repo}; "
                                   "remove it with `sediment mirror remove`")
        self._sweep_partials()
        with self._partial() as private:
            build = private / "mirror"

            def clone() -> None:
                repository = pygit2.init_repository(str(build), bare=True)
                if identity is not None:
                    repository.config[NAME_KEY] = repo
                repository.remotes.create("origin", source, FETCH_REFSPECS[0])
                for refspec in FETCH_REFSPECS[1:]:
                    repository.remotes.add_fetch("origin", refspec)
                repository.remotes["origin"].fetch(prune=pygit2.enums.FetchPrune.PRUNE)
                self._point_head(repository)

            try:
                _interruptible(clone)
            except (pygit2.GitError, ValueError) as exc:
                raise MirrorFetchError(f"cannot fetch {repo} from {source}: {exc}") from None
            except OSError as exc:
                raise MirrorFetchError(f"cannot create the mirror of {repo}: {exc.strerror or exc}") from None
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                os.rename(build, path)  # atomic on one filesystem; refuses a non-empty directory
            except OSError as exc:
                if (path / "HEAD").exists():
                    raise MirrorFetchError(f"mirror of {repo} already exists: {path} (added meanwhile)") from None
                raise MirrorFetchError(f"cannot move the mirror of {repo} into {path}: "
                                       f"{exc.strerror or exc}") from None
        return path

    def rekey(self, org_id: str, location: MirrorLocation, repositories: RepositoryContext) -> MirrorLocation | None:
        """Key a legacy mirror by the identity of the one repository the stored Facts show held
        its name (the rule ``add`` applies), moving it into that identity's path; ``None`` when
        it is not a legacy mirror of such a name, or when that identity has a mirror already.

        A mirror added before its repository's webhooks arrived is legacy; once they name the
        repository's id, its commits can qualify only under that identity.
        """
        if location.identity is not None or repositories.legacy_mirror_usable(location.repo):
            return None
        identity = repositories.mirror_identity(location.repo).identity
        if identity is None:
            return None
        target = self._checked_path(org_id, location.repo, identity)
        if _occupied(target):
            return None
        try:
            pygit2.Repository(str(location.path)).config[NAME_KEY] = location.repo
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(location.path, target)
        except (OSError, pygit2.GitError) as exc:
            raise MirrorError(f"cannot move the mirror of {location.repo} into {target}: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
        return MirrorLocation(location.repo, identity, target)

    def remove(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None) -> Path:
        """Delete the mirror of ``repo`` (whatever occupies its path, a half-made mirror too).

        The path is freed at once (the directory is renamed aside, then deleted).
        """
        path = self._checked_path(org_id, repo, identity)
        if not _occupied(path):
            raise MirrorError(f"no mirror of {repo} to remove: {path} does not exist")
        self._sweep_partials()
        with self._partial() as private:
            try:
                os.rename(path, private / "mirror")
            except FileNotFoundError:
                raise MirrorError(f"no mirror of {repo} to remove: {path} does not exist") from None
            except OSError as exc:
                raise MirrorError(f"cannot remove {path}: {exc.strerror or exc}") from None
        return path

    @contextmanager
    def _partial(self) -> Iterator[Path]:
        """A private, locked directory beside the mirrors; ``mirror`` in it is deleted on exit."""
        private: Path | None = None
        fd = -1
        try:
            private = Path(tempfile.mkdtemp(prefix=PARTIAL_PREFIX, dir=self.path))
            pending = private / "lock.new"
            fd = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(pending, private / "lock")  # a sweeper only ever sees a held lock
        except OSError as exc:
            if fd >= 0:
                os.close(fd)
            if private is not None:
                shutil.rmtree(private, ignore_errors=True)
            raise MirrorError(f"cannot write into the mirror root {self.path}: {exc.strerror or exc}") from None
        try:
            yield private
        finally:
            try:
                _delete(private / "mirror")
                if not _occupied(private / "mirror"):
                    shutil.rmtree(private, ignore_errors=True)
            finally:
                os.close(fd)  # what could not be deleted is left unlocked, for the next sweep

    def _sweep_partials(self) -> None:
        """Delete private directories their builder abandoned (killed; its lock was released)."""
        for entry in self.path.iterdir():
            if not entry.name.startswith(PARTIAL_PREFIX) or entry.is_symlink() or not entry.is_dir():
                continue
            try:
                fd = os.open(entry / "lock", os.O_RDWR)
            except OSError:
                continue  # being set up (its lock is not in place yet) or already gone
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # held: a live add or remove
            try:
                shutil.rmtree(entry, ignore_errors=True)
            finally:
                os.close(fd)

    def fetch(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None) -> None:
        """Refresh an existing mirror from its ``origin``."""
        mirror = self.open(org_id, repo, identity)
        if mirror is None:
            raise MirrorFetchError(f"no mirror of {repo}; add it first with `sediment mirror add`")
        repository = mirror._repo

        def refresh() -> None:
            known = set(repository.remotes["origin"].fetch_refspecs)
            for refspec in FETCH_REFSPECS:  # a mirror added before a refspec existed gains it
                if refspec not in known:
                    repository.remotes.add_fetch("origin", refspec)
            repository.remotes["origin"].fetch(prune=pygit2.enums.FetchPrune.PRUNE)
            self._point_head(repository)

        try:
            _interruptible(refresh)
        except (KeyError, pygit2.GitError) as exc:
            raise MirrorFetchError(f"cannot fetch {repo}: {exc}") from None

    @staticmethod
    def _point_head(repository: pygit2.Repository) -> None:
        branches = sorted(repository.branches.local)
        if repository.head_is_unborn and branches:
            preferred = next((b for b in ("main", "master") if b in branches), branches[0])
            repository.set_head(f"refs/heads/{preferred}")

    def open(self, org_id: str, repo: str, identity: RepositoryIdentity | None = None) -> Mirror | None:
        """The mirror, or ``None`` when it is absent (no directory or no ``HEAD``)."""
        path = self.mirror_path(org_id, repo, identity)
        if not (path / "HEAD").is_file():
            return None
        try:
            return Mirror(pygit2.Repository(str(path)))
        except pygit2.GitError:
            return None


def mirror_identity(repositories: RepositoryContext, repo: str,
                    chosen: RepositoryIdentity | None = None) -> RepositoryIdentity | None:
    """The identity a new mirror of ``repo`` is keyed by (``None``: a legacy mirror).

    ``chosen`` (an operator's repository id) must not contradict the stored Facts (that
    identity named, but never ``repo``); otherwise it is the one identity that held the name,
    refused in one line (``repository_mirror_identity_unresolved``) when several did or the
    name's evidence contradicts itself.
    """
    if chosen is not None:
        problem = repositories.mirror_conflict(repo, chosen)
        if problem is not None:
            raise MirrorError(f"repository_mirror_identity_unresolved: {problem}")
        return chosen
    resolved = repositories.mirror_identity(repo)
    if resolved.reason is not None:
        held = sorted(repositories.identities_named(repo), key=lambda i: (i.host, int(i.repository_id)))
        why = (f"{repo} was held by {' and '.join(describe(i) for i in held)}" if len(held) > 1
               else f"the stored Facts about {repo} contradict each other")
        raise MirrorError(f"repository_mirror_identity_unresolved: {why}; choose one by its repository id")
    return resolved.identity


def _occupied(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _delete(path: Path) -> None:
    """Delete what is at ``path`` (a directory tree; a file or symbolic link itself), as far as it can."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _interruptible(work: Callable[[], _T]) -> _T:
    """``work()`` in a daemon thread, the caller waiting in short steps.

    libgit2 blocks in system calls (a network read, an open) where a signal never reaches
    Python; waiting here keeps Ctrl-C (KeyboardInterrupt) prompt, so ``add`` can clean up.
    """
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the caller
            failure.append(exc)

    thread = threading.Thread(target=run, name="sediment-git", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    if failure:
        raise failure[0]
    return outcome[0]
