"""Splitting a reference patch into ``patch`` (source files) and ``test_patch`` (test files).

A file section of a unified diff (``diff --git a/X b/Y`` up to the next one) is a test file
when its old or new path matches one of the repository's test-file globs. Globs are matched
against the whole repository-relative path: ``*`` and ``?`` stay within one path segment,
``**/`` spans any number of directories (none included), ``[...]`` is a character class.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

#: Where tests live in common layouts (Python, JavaScript/TypeScript, Go, Java/Maven).
DEFAULT_TEST_FILES: tuple[str, ...] = (
    "test/**", "tests/**", "**/test/**", "**/tests/**", "**/__tests__/**", "src/test/**",
    "**/test_*.py", "**/*_test.py", "**/conftest.py", "**/*_test.go",
    "**/*.test.[jt]s", "**/*.test.[jt]sx", "**/*.spec.[jt]s", "**/*.spec.[jt]sx",
)


@cache
def _pattern(glob: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 1)) > i:
            out.append(glob[i:end + 1])
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def is_test_file(path: str, globs: Iterable[str]) -> bool:
    return any(_pattern(glob).match(path) for glob in globs)


@dataclass(frozen=True)
class FileSection:
    """One file's part of a unified diff."""

    text: str
    paths: tuple[str, ...]
    new_file: bool


def _paths(lines: Sequence[str]) -> tuple[str, ...]:
    found: list[str] = []
    for line in lines[1:]:
        if line.startswith("diff --git "):
            break
        for prefix in ("--- a/", "+++ b/", "rename from ", "rename to ", "copy from ", "copy to "):
            if line.startswith(prefix):
                found.append(line[len(prefix):])
    if not found:  # a mode-only or binary change: "diff --git a/X b/X" with the same path twice
        header = lines[0][len("diff --git a/"):]
        half = (len(header) - len(" b/")) // 2
        if header[half:half + 3] == " b/" and header[:half] == header[half + 3:]:
            found.append(header[:half])
    return tuple(dict.fromkeys(found))


def sections(patch: str) -> list[FileSection]:
    """The file sections of ``patch``, in order."""
    lines = patch.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git a/")]
    result = []
    for position, start in enumerate(starts):
        end = starts[position + 1] if position + 1 < len(starts) else len(lines)
        chunk = lines[start:end]
        bare = [line.rstrip("\n") for line in chunk]
        result.append(FileSection("".join(chunk), _paths(bare), any(b.startswith("new file mode") for b in bare[1:6])))
    return result


def split_patch(patch: str, globs: Iterable[str]) -> tuple[str, str, list[FileSection]]:
    """``(source patch, test patch, test file sections)`` of a reference patch."""
    globs = tuple(globs)
    source: list[FileSection] = []
    tests: list[FileSection] = []
    for section in sections(patch):
        (tests if any(is_test_file(p, globs) for p in section.paths) else source).append(section)
    return "".join(s.text for s in source), "".join(s.text for s in tests), tests
