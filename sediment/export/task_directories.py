"""Task directories of a profile that declares ``writes_directories`` (docs/plugins.md, "A
consumer profile"): staged privately with the export's data files, published with them.

Each kept row's :class:`~sediment.host.declarations.TaskDirectory` is written into the export's
private stage (files 0644, executables 0755, directories 0755), its bytes counted against the
stage's budget. At publication every staged directory is renamed into place
(``<out>/<name>/`` unsplit, ``<out>/<train|eval>/<name>/`` split) before the data and evidence
files are, so that the files that make a directory an export's appear last; a name already
present in the output directory stops the export before anything is renamed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sediment.errors import CapacityError, OutputDirectoryError, PluginError
from sediment.file_modes import current_umask
from sediment.host.declarations import TaskDirectory
from sediment.split import Split

STAGED = "directories"


def side_folder(split: Split | None) -> str:
    """Where a side's directories go, relative to the output directory (``""``: at its top)."""
    return "" if split is None else split


class DirectoryStage:
    """The task directories of one export, staged under ``root`` until publication."""

    def __init__(self, root: Path, *, profile: str, max_record_bytes: int) -> None:
        self.root = root
        self.profile = profile
        self.max_record_bytes = max_record_bytes
        self.staged: list[tuple[Split | None, str]] = []
        self._names: set[str] = set()

    def add(self, split: Split | None, directory: TaskDirectory) -> int:
        """Stage one directory; its size in bytes (the caller counts it against the stage budget)."""
        problem = directory.problem()
        if problem is not None:
            raise PluginError(f"profile {self.profile!r} wrote an invalid task directory: {problem}")
        if directory.name in self._names:
            raise PluginError(f"profile {self.profile!r} wrote task directory {directory.name!r} twice")
        size = sum(len(content) for content in directory.files.values())
        if size > self.max_record_bytes:
            raise CapacityError(f"bundle record exceeds byte budget: task directory {directory.name!r} holds {size} "
                                f"bytes (limit {self.max_record_bytes}); nothing was published")
        self._names.add(directory.name)
        base = self.root / side_folder(split) / directory.name
        mask = current_umask()  # published as any program's new files are: 0666 (0777 executable) less the umask
        for path in sorted(directory.files):
            target = base / path
            target.parent.mkdir(mode=0o777 & ~mask, parents=True, exist_ok=True)
            with open(target, "xb") as handle:
                handle.write(directory.files[path])
            os.chmod(target, (0o777 if path in directory.executable else 0o666) & ~mask)
        os.chmod(base, 0o777 & ~mask)
        self.staged.append((split, directory.name))
        return size

    def publish(self, out_dir: Path) -> list[Path]:
        """fsync and rename every staged directory into ``out_dir``; their published paths."""
        destinations = [out_dir / side_folder(split) / name for split, name in self.staged]
        taken = [str(d.relative_to(out_dir)) for d in destinations if os.path.lexists(d)]
        if taken:
            raise OutputDirectoryError(f"output directory already contains {taken[0]}; use a new directory for each "
                                       "export")
        for split, name in self.staged:
            _sync_tree(self.root / side_folder(split) / name)
        for (split, name), destination in zip(self.staged, destinations, strict=True):
            destination.parent.mkdir(mode=0o777 & ~current_umask(), exist_ok=True)
            os.rename(self.root / side_folder(split) / name, destination)
        return destinations


def _sync_tree(directory: Path) -> None:
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())


def tree_record(directory: Path) -> dict[str, int | str]:
    """``compatibility.json``'s record of a published directory: file count, bytes, and the
    SHA-256 of its listing (each file's relative path, mode and content digest, sorted)."""
    listing = hashlib.sha256()
    files = size = 0
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        content = path.read_bytes()
        mode = "755" if os.stat(path).st_mode & 0o100 else "644"
        listing.update(f"{path.relative_to(directory).as_posix()}\0{mode}\0"
                       f"{hashlib.sha256(content).hexdigest()}\n".encode())
        files += 1
        size += len(content)
    return {"files": files, "bytes": size, "sha256": listing.hexdigest()}
