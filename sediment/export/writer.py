"""The output directory of an export (docs/exports.md, Output directory; for every objective): claim, generation
lock, staging, atomic publish.

An output directory belongs to one export: one objective, and within it one target, one
consumer profile or the objective's own rows. ``.sediment-<objective>-target`` holds
``<target>``, ``profile:<id>`` or, for an objective without targets, its name (RLVR keeps its
contract-v2 ``.sediment-rlvr-target``); a claim of another objective refuses the directory.
The directory holds one generation of artifacts: a second export into a directory that holds
any is refused, so no stale file of an earlier export (say a train file whose partition is
now empty) can survive beside a new one. Rows are staged privately inside it and published
file by file with ``os.replace``; an empty partition never creates or truncates a file. Files
are keyed by stem (a population, or ``data`` / ``evidence`` for a profile) and split side.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sediment.errors import CapacityError, OutputDirectoryError
from sediment.export.task_directories import STAGED, DirectoryStage
from sediment.file_modes import publish_mode
from sediment.host.declarations import SPLIT_ORDER, PublishedExport, TaskDirectory, claim_file_name
from sediment.split import Split

CLAIM_GLOB = ".sediment-*-target"
STAGE_PREFIX = ".sediment-training-"
STAGE_LOCK_SUFFIX = ".sediment-stage-lock"
DEFAULT_MAX_RECORD_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_STAGE_BYTES = 8 * 1024 * 1024 * 1024
PROFILE_CLAIM_PREFIX = "profile:"

logger = logging.getLogger(__name__)


def lock_file_name(objective: str) -> str:
    """``.sediment-<objective>-export.lock``: held (a directory) while an export runs."""
    return f".sediment-{objective}-export.lock"


@dataclass(frozen=True)
class Ownership:
    """How exports of one objective own an output directory.

    :param objective: the objective's name (its claim and lock file names derive from it).
    :param title: how messages name it (``RLVR``).
    :param artifact_names: every file name any installed export may publish; one of them in
        a directory makes it an export's.
    :param foreign_artifacts: the names only other objectives' exports publish.
    :param labels: how a claimed plugin reads in messages (``sediment`` → ``RLVR target sediment``).
    :param titles: every installed objective's title, by name.
    """

    objective: str
    title: str
    artifact_names: frozenset[str]
    foreign_artifacts: frozenset[str] = frozenset()
    labels: Mapping[str, str] = field(default_factory=dict)
    titles: Mapping[str, str] = field(default_factory=dict)

    @property
    def claim_file(self) -> str:
        return claim_file_name(self.objective)

    @property
    def lock_file(self) -> str:
        return lock_file_name(self.objective)

    def label(self, claimed: str, claim_file: str | None = None) -> str:
        """How a claim reads in messages: ``RLVR target sediment``, ``profile hf-chat-messages-v1``,
        ``KTO objective kto``; ``claim_file`` names the claim it was read from (default: ours)."""
        if claimed.startswith(PROFILE_CLAIM_PREFIX):
            return f"profile {claimed[len(PROFILE_CLAIM_PREFIX):]}"
        if claimed in self.labels:
            return self.labels[claimed]
        owner = self.objective if claim_file in (None, self.claim_file) else _claim_objective(claim_file or "")
        if owner in self.titles:
            return f"{self.titles[owner]} target {claimed or 'unknown'}"
        return f"an export of objective {owner} ({claimed or 'unknown'}), which is not installed"


def _claim_objective(claim_file: str) -> str:
    return claim_file.removeprefix(".sediment-").removesuffix("-target")


def encode_row(row: dict[str, Any]) -> bytes:
    """One JSONL line: ASCII-escaped JSON, no NaN, default separators, the row's key order."""
    return (json.dumps(row, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def file_name(stem: str, split: Split | None) -> str:
    """``tasks.jsonl`` unsplit; ``tasks.train.jsonl`` / ``tasks.eval.jsonl`` when split."""
    return f"{stem}.jsonl" if split is None else f"{stem}.{split}.jsonl"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a private temp file beside ``path``, fsync it, give it the published
    mode (0666 less the umask: :mod:`sediment.file_modes`), then replace ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        publish_mode(fd)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def generation_lock(out_dir: Path, owner: Ownership) -> Iterator[None]:
    """Hold ``<out>/.sediment-<objective>-export.lock`` for one export (a directory, made atomically)."""
    lock = out_dir / owner.lock_file
    try:
        lock.mkdir()
    except FileExistsError:
        raise OutputDirectoryError(
            f"{owner.title} export already in progress for output directory {out_dir} "
            f"(if no export is running, a stopped one left {owner.lock_file}; use a fresh directory)"
        ) from None
    try:
        yield
    finally:
        try:
            lock.rmdir()
        except OSError as exc:
            logger.warning("export_lock_not_removed path=%s error=%s", lock, exc)


def _read_claim(path: Path, owner: Ownership) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        title = owner.titles.get(_claim_objective(path.name), owner.title)
        raise OutputDirectoryError(f"cannot read {title} target claim {path}: {exc}") from None


def _refuse_foreign_claims(out_dir: Path, claim: str, owner: Ownership) -> None:
    """A claim of another objective means the directory is another export's."""
    for path in sorted(out_dir.glob(CLAIM_GLOB)):
        if path.name != owner.claim_file:
            raise OutputDirectoryError(
                f"output directory already belongs to {owner.label(_read_claim(path, owner), path.name)}; "
                f"use a different directory for {claim.removeprefix(PROFILE_CLAIM_PREFIX)}"
            )


def claim_directory(out_dir: Path, claim: str, owner: Ownership) -> None:
    """Claim ``out_dir`` for ``claim`` (a target, ``profile:<id>`` or an objective without
    targets) of ``owner``'s objective, or refuse it.

    Exports of two objectives take different locks, so after creating its claim an export checks
    again for another objective's: of two racing claimants at most one proceeds (the other
    removes its claim and refuses), and a directory never ends up holding two generations.
    """
    path = out_dir / owner.claim_file
    name = claim.removeprefix(PROFILE_CLAIM_PREFIX)
    _refuse_foreign_claims(out_dir, claim, owner)
    present = sorted(n for n in owner.artifact_names if (out_dir / n).exists())
    for _ in range(2):
        if path.exists():
            claimed = _read_claim(path, owner)
            if claimed != claim:
                raise OutputDirectoryError(
                    f"output directory already belongs to {owner.label(claimed)}; use a different directory for {name}"
                )
            if present:
                raise OutputDirectoryError(
                    f"output directory already contains {name} artifacts "
                    f"({', '.join(present)}); use a new directory for each export"
                )
            return
        if present:
            whose = "export" if set(present) & owner.foreign_artifacts else owner.title
            raise OutputDirectoryError(
                f"output directory contains {whose} artifacts without a target claim "
                f"({', '.join(present)}); use a new directory"
            )
        fd, tmp = tempfile.mkstemp(prefix=owner.claim_file, suffix=".tmp", dir=out_dir)
        try:
            publish_mode(fd)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(claim + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                continue  # another export of this objective claimed it first: validate that claim
        finally:
            os.unlink(tmp)
        try:
            _refuse_foreign_claims(out_dir, claim, owner)
        except OutputDirectoryError:
            path.unlink()  # another objective claimed it at the same time: withdraw ours
            raise
        return
    raise OutputDirectoryError(f"cannot claim output directory {out_dir}")


def _append_file(source: IO[bytes], destination: IO[bytes]) -> None:
    """Append ``source`` to ``destination``: in the kernel where it can, else through a buffer."""
    size = os.fstat(source.fileno()).st_size
    copied = 0
    try:
        while copied < size:
            sent = os.copy_file_range(source.fileno(), destination.fileno(), size - copied)
            if sent == 0:
                break
            copied += sent
    except (AttributeError, OSError):
        pass
    if copied < size:
        source.seek(copied)
        destination.seek(0, os.SEEK_END)
        shutil.copyfileobj(source, destination, 1 << 20)


class RowFiles:
    """Rows appended to one JSONL file per (stem, split side), with byte budgets."""

    def __init__(self, directory: Path, *, split_enabled: bool, max_record_bytes: int, max_stage_bytes: int) -> None:
        self.directory = directory
        self.split_enabled = split_enabled
        self.max_record_bytes = max_record_bytes
        self.max_stage_bytes = max_stage_bytes
        self.bytes = 0
        self.counts: dict[tuple[str, Split | None], int] = {}
        self._handles: dict[tuple[str, Split | None], IO[bytes]] = {}
        #: the task directories of a profile that writes directories (staged on the first one)
        self.directories: DirectoryStage | None = None
        directory.mkdir(mode=0o700, exist_ok=True)

    def add_directory(self, profile: str, split: Split, directory: TaskDirectory) -> None:
        """Stage one task directory beside the rows; its bytes count against the stage budget."""
        if self.directories is None:
            self.directories = DirectoryStage(self.directory / STAGED, profile=profile,
                                              max_record_bytes=self.max_record_bytes)
        size = self.directories.add(split if self.split_enabled else None, directory)
        if self.bytes + size > self.max_stage_bytes:
            raise CapacityError(f"JSONL output exceeds {self.max_stage_bytes} encoded bytes; nothing was published")
        self.bytes += size

    def add(self, stem: str, split: Split, row: dict[str, Any]) -> None:
        """Append one row; budgets are enforced as rows arrive."""
        line = encode_row(row)
        if len(line) > self.max_record_bytes:
            raise CapacityError(
                f"bundle record exceeds byte budget: a {stem} row encodes to {len(line)} bytes "
                f"(limit {self.max_record_bytes}); nothing was published"
            )
        if self.bytes + len(line) > self.max_stage_bytes:
            raise CapacityError(f"JSONL output exceeds {self.max_stage_bytes} encoded bytes; nothing was published")
        key = (stem, split if self.split_enabled else None)
        self._handle(key).write(line)
        self.counts[key] += 1
        self.bytes += len(line)

    def _handle(self, key: tuple[str, Split | None]) -> IO[bytes]:
        """The open file of one partition, created on its first row (with the published mode,
        0666 less the umask, inside the private 0700 staging directory)."""
        handle = self._handles.get(key)
        if handle is None:
            path = self.directory / file_name(*key)
            handle = self._handles[key] = open(path, "xb")  # noqa: SIM115
            publish_mode(handle.fileno())
            self.counts[key] = 0
        return handle

    def absorb(self, other_directory: Path, counts: dict[tuple[str, Split | None], int],
               size: int, *, sync: bool = False) -> None:
        """Append another RowFiles' closed files (a worker's chunk), in file order.

        With ``sync`` the appended data is flushed to disk at once (while the workers go on),
        which leaves little for the fsync at publish time.
        """
        if self.bytes + size > self.max_stage_bytes:
            raise CapacityError(f"JSONL output exceeds {self.max_stage_bytes} encoded bytes; nothing was published")
        for key, count in counts.items():
            handle = self._handle(key)
            handle.flush()
            with open(other_directory / file_name(*key), "rb") as source:
                _append_file(source, handle)
            if sync:
                os.fdatasync(handle.fileno())
            self.counts[key] += count
        self.bytes += size

    def extend(self, lines: Mapping[tuple[str, Split | None], tuple[bytes, int]]) -> None:
        """Append encoded rows (a :class:`RowBuffer`'s, from a Ray task): per file, its bytes and row count."""
        size = sum(len(data) for data, _ in lines.values())
        if self.bytes + size > self.max_stage_bytes:
            raise CapacityError(f"JSONL output exceeds {self.max_stage_bytes} encoded bytes; nothing was published")
        for key, (data, count) in lines.items():
            self._handle(key).write(data)
            self.counts[key] += count
        self.bytes += size

    def close(self, *, sync: bool = False) -> None:
        """Close every partition file still open; with ``sync``, fsync each first."""
        for handle in self._handles.values():
            if not handle.closed:
                handle.flush()
                if sync:
                    os.fsync(handle.fileno())
                handle.close()


class RowBuffer(RowFiles):
    """Rows kept in memory, with the same budgets (a Ray task's, sent back to the exporting process
    with :meth:`take` and appended there with :meth:`RowFiles.extend`)."""

    def __init__(self, *, split_enabled: bool, max_record_bytes: int, max_stage_bytes: int) -> None:
        self.directory = Path()
        self.split_enabled = split_enabled
        self.max_record_bytes = max_record_bytes
        self.max_stage_bytes = max_stage_bytes
        self.bytes = 0
        self.counts = {}
        self._handles = {}

    def _handle(self, key: tuple[str, Split | None]) -> IO[bytes]:
        handle = self._handles.get(key)
        if handle is None:
            handle = self._handles[key] = io.BytesIO()
            self.counts[key] = 0
        return handle

    def take(self) -> dict[tuple[str, Split | None], tuple[bytes, int]]:
        """The rows added since the last call, per file: their bytes and count (then forgotten)."""
        taken = {key: (handle.getvalue(), self.counts[key])  # type: ignore[attr-defined]
                 for key, handle in self._handles.items()}
        self._handles, self.counts = {}, {}
        return taken


class StagingStore:
    """A private staging directory inside the output directory, swept when abandoned."""

    def __init__(
        self,
        out_dir: Path,
        *,
        split_enabled: bool,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        max_stage_bytes: int = DEFAULT_MAX_STAGE_BYTES,
    ) -> None:
        self.out_dir = out_dir
        self.split_enabled = split_enabled
        sweep_abandoned_stages(out_dir)
        name = STAGE_PREFIX + secrets.token_hex(8)
        self._lock_file = open(out_dir / (name + STAGE_LOCK_SUFFIX), "wb")  # noqa: SIM115
        fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.path = out_dir / name
        self.path.mkdir(mode=0o700)
        self.prepared = RowFiles(self.path / "prepared", split_enabled=split_enabled,
                                 max_record_bytes=max_record_bytes, max_stage_bytes=max_stage_bytes)

    def row_files(self, name: str) -> RowFiles:
        """Another private RowFiles inside the stage (a worker's chunk), with the same budgets."""
        return RowFiles(self.path / name, split_enabled=self.split_enabled,
                        max_record_bytes=self.prepared.max_record_bytes,
                        max_stage_bytes=self.prepared.max_stage_bytes)

    def add(self, stem: str, split: Split, row: dict[str, Any]) -> None:
        self.prepared.add(stem, split, row)

    def publish(self, stems: tuple[str, ...], *, target: str, profile: str | None = None,
                objective: str = "", parquet: tuple[str, ...] = ()) -> PublishedExport:
        """fsync every prepared file, then replace them into place: a profile's task directories
        first (:mod:`sediment.export.task_directories`), then the files in stem order, train first.
        The files of the ``parquet`` stems are first encoded as Parquet, in the stage
        (:mod:`sediment.export.parquet`), and published instead of their JSONL."""
        self.prepared.close(sync=True)
        counts = self.prepared.counts
        published = PublishedExport(self.out_dir, self.split_enabled, target=target, profile=profile,
                                    objective=objective)
        if self.prepared.directories is not None:  # before the files that make the directory an export's
            published.directories = self.prepared.directories.publish(self.out_dir)
        sides: tuple[Split | None, ...] = SPLIT_ORDER if self.split_enabled else (None,)
        names = {key: file_name(*key) for key in counts}
        for stem in parquet:
            names.update(self._encode_parquet(stem, [(stem, side) for side in sides if (stem, side) in counts]))
        for stem in stems:
            for side in sides:
                key = (stem, side)
                if key not in counts:
                    logger.info("empty partition left untouched: %s", self.out_dir / file_name(*key))
                    continue
                destination = self.out_dir / names[key]
                os.replace(self.prepared.directory / names[key], destination)
                published.files.setdefault(stem, {})[side] = (destination, counts[key])
        return published

    def _encode_parquet(self, stem: str, keys: list[tuple[str, Split | None]]) -> dict[tuple[str, Split | None], str]:
        from sediment.export.parquet import SUFFIX, write_parquet

        names = {key: file_name(*key).removesuffix(".jsonl") + SUFFIX for key in keys}
        directory = self.prepared.directory
        write_parquet([(directory / file_name(*key), directory / names[key]) for key in keys])
        for key in keys:
            with open(directory / names[key], "rb") as handle:
                publish_mode(handle.fileno())
                os.fsync(handle.fileno())
        return names

    def close(self) -> None:
        """Remove the staging directory and its lock, published or not."""
        self.prepared.close()
        shutil.rmtree(self.path, ignore_errors=True)
        lock_path = Path(self._lock_file.name)
        self._lock_file.close()
        with contextlib.suppress(FileNotFoundError):
            lock_path.unlink()


def sweep_abandoned_stages(out_dir: Path) -> None:
    """Remove staging directories whose lock no live export holds."""
    for lock_path in out_dir.glob(STAGE_PREFIX + "*" + STAGE_LOCK_SUFFIX):
        stage = out_dir / lock_path.name[: -len(STAGE_LOCK_SUFFIX)]
        with open(lock_path, "ab") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    continue
                raise
            shutil.rmtree(stage, ignore_errors=True)
            lock_path.unlink()
