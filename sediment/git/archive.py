"""A commit's tree as a gzipped tar, the way ``git archive --format=tar.gz`` lays it out: every
file under its repository path, modes 0644 / 0755, symlinks as symlinks, each entry dated at
the commit's committer time. The bytes depend on the tree and that time alone (owner root,
sorted entries, no gzip name or time), so the same commit always gives the same archive."""

from __future__ import annotations

import gzip
import io
import tarfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a caller holds an open Mirror already: importing this module needs no pygit2
    from sediment.git.mirror import Mirror

_SYMLINK = 0o120000
_EXECUTABLE = 0o100755


def tree_archive(mirror: Mirror, sha: str) -> bytes:
    """The tar.gz of ``sha``'s tree; a failed read raises :class:`~sediment.git.read_error.MirrorReadError`."""
    when = mirror.committer_time(sha)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        directories: set[str] = set()
        for path, mode, content in mirror.tree_files(sha):
            parts = path.split("/")
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth])
                if folder not in directories:
                    directories.add(folder)
                    tar.addfile(_info(folder + "/", tarfile.DIRTYPE, 0o755, when))
            if mode == _SYMLINK:
                info = _info(path, tarfile.SYMTYPE, 0o777, when)
                info.linkname = content.decode("utf-8", "surrogateescape")
                tar.addfile(info)
            else:
                info = _info(path, tarfile.REGTYPE, 0o755 if mode == _EXECUTABLE else 0o644, when)
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0) as archive:
        archive.write(raw.getvalue())
    return packed.getvalue()


def _info(name: str, kind: bytes, mode: int, when: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = kind, mode, when
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
