"""Repository-relative paths for the file paths agents report (docs/evidence.md, File paths: kept as sent).

Clients name an edited file their own way: Copilot sends a path relative to the workspace,
Codex the paths its patch names (relative to its working directory), Claude Code the absolute
path on the developer's machine (``<checkout>/src/app.py``), which never equals the
repository-relative path an attributed commit touched (``src/app.py``).

Facts keep the path exactly as the client sent it (``DeveloperDecision.file_path``, the edit
Facts' ``file_path``). A join that needs the repository-relative path derives it here, with one
of two pure functions:

- :func:`repository_relative_path`, when the directory the repository is checked out at is known
  (the Session's working directory, when the agent ran at the top of the working tree);
- :func:`match_repository_path`, against the repository paths a commit touched, when it is not:
  the one path the client's path ends with, on whole path components.

Both answer ``None`` rather than guess: a path outside the checkout, one that climbs out with
``..``, a form that is not a POSIX path, or (for the match) no candidate or more than one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable


def _clean(path: str) -> str | None:
    """``path`` normalized lexically (``a/./b`` and ``a//b`` are ``a/b``); None when it holds NUL,
    a backslash (a Windows path is not resolved) or is empty."""
    if not path or "\x00" in path or "\\" in path:
        return None
    return posixpath.normpath(path)


def repository_relative_path(file_path: str, checkout: str) -> str | None:
    """``file_path`` relative to ``checkout`` (an absolute directory), as a repository path.

    An absolute ``file_path`` must lie inside ``checkout``; a relative one is taken as relative
    to it already. The result never starts with ``..`` or ``/`` and is never ``.``
    (``<checkout>/src/app.py`` in ``<checkout>`` is ``src/app.py``).
    """
    root = _clean(checkout)
    path = _clean(file_path)
    if root is None or path is None or not root.startswith("/"):
        return None
    if not path.startswith("/"):
        path = posixpath.normpath(posixpath.join(root, path))
    if root == "/":
        relative = path[1:]
    elif path.startswith(root + "/"):
        relative = path[len(root) + 1:]
    else:
        return None
    if not relative or relative == "." or relative.startswith("../") or relative == "..":
        return None
    return relative


def match_repository_path(file_path: str, repository_paths: Iterable[str]) -> str | None:
    """The one repository path ``file_path`` names, matched on whole trailing components.

    An absolute ``file_path`` matches each candidate it ends with: ``<checkout>/src/app.py``
    matches ``src/app.py``, and ``app.py`` too (when both are candidates the answer is None, since
    the checkout could be at either place). A relative one (the client ran somewhere in the
    working tree) matches a candidate equal to it or ending with it: ``app.py`` matches
    ``sub/app.py``.
    """
    path = _clean(file_path)
    if path is None:
        return None
    found: set[str] = set()
    for candidate in repository_paths:
        clean = _clean(candidate)
        if clean is None or clean.startswith(("/", "../")) or clean in (".", ".."):
            continue
        if path == clean or (path.endswith("/" + clean) if path.startswith("/") else clean.endswith("/" + path)):
            found.add(candidate)
    return found.pop() if len(found) == 1 else None
