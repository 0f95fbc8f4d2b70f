"""Where a command writes: an output path that cannot be created or written is one line.

Commands that write files (exports, library imports, trajectory imports, views, galleries)
wrap their writing in :func:`writing`. An :class:`OSError` raised inside about the output path,
a path under it, or one of its parent folders (a read-only or full file system, a parent that is
a file, a path under ``/proc``) becomes one :class:`~sediment.errors.OutputDirectoryError` line
naming the path and the reason; any other ``OSError`` (reading an input, say) passes through.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sediment.errors import OutputDirectoryError


def _normal(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


def _concerns(exc: OSError, paths: tuple[Path, ...]) -> str | None:
    """The file name of ``exc`` that is one of ``paths``, under one, or a parent of one."""
    for name in (exc.filename, exc.filename2):
        if not isinstance(name, str | bytes | os.PathLike):
            continue
        named = _normal(os.fsdecode(name))
        for path in paths:
            own = _normal(path)
            if named == own or own.startswith(named.rstrip(os.sep) + os.sep) or named.startswith(own + os.sep):
                return named
    return None


def describe(exc: OSError, path: Path, named: str) -> str:
    """Why ``path`` could not be written, in words (``named``: the file the error is about)."""
    if exc.errno == errno.EEXIST and not Path(named).is_dir():
        reason = "exists and is not a directory"
    elif exc.errno == errno.ENOTDIR:
        reason = "a parent folder is a file, not a directory"
    else:
        reason = exc.strerror or str(exc)
    return reason if named == _normal(path) else f"{named}: {reason}"


@contextmanager
def writing(what: str, path: Path, *related: Path) -> Iterator[None]:
    """Turn an ``OSError`` about ``path`` (or ``related`` paths: a staging file beside it) raised
    inside into one line: ``cannot write WHAT PATH: reason`` (exit code 3)."""
    try:
        yield
    except OSError as exc:
        named = _concerns(exc, (path, *related))
        if named is None:
            raise
        raise OutputDirectoryError(f"cannot write {what} {path}: {describe(exc, path, named)}") from None
