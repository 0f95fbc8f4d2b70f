"""The input files a command names, checked before anything is read or written.

docs/cli.md ("Mistakes with input files") is the one truth every file-reading command follows:
a file that does not exist, or that cannot be opened (permissions, a symlink loop, a folder
where a file is needed), is a usage error (exit 2) naming the file in one line, raised before a
record is stored or an output is created. ``-`` (stdin) is not checked.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sediment.errors import UsageError

_MISSING = {errno.ENOENT, errno.ENOTDIR}


def check(paths: Iterable[str | Path], *, folders: bool = False) -> None:
    """Raise :class:`UsageError` (``FILE: no such file``, ``FILE: cannot read: REASON``) for the
    first path that cannot be read; with ``folders`` a readable folder is accepted too."""
    for path in paths:
        if str(path) == "-":
            continue
        try:
            mode = os.stat(path).st_mode
            if stat.S_ISDIR(mode):
                if not folders:
                    raise UsageError(f"{path}: cannot read: is a folder, not a file")
                os.listdir(path)
            elif stat.S_ISREG(mode):
                with open(path, "rb"):
                    pass
            elif not os.access(path, os.R_OK):  # a pipe or device: opening it could wait for a writer
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        except OSError as exc:
            if exc.errno in _MISSING:
                what = "no such file or folder" if folders else "no such file"
                raise UsageError(f"{path}: {what}") from None
            raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def empty(path: str | Path) -> bool:
    """Whether a regular file holds nothing but whitespace (read no further than its first 64 KiB);
    a pipe or device is never read here."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        return False
    with open(path, "rb") as handle:
        head = handle.read(64 * 1024)
        return not head.strip() and not handle.read(1)
