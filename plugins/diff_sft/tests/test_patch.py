"""The patch section parser: valid sections kept verbatim, unsupported and malformed sections
counted, on hand-written git-format text and on patches of real pygit2 mirrors."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from sediment_diff_sft.patch import MALFORMED, UNSUPPORTED, parse_patch, split_sections

from sediment.plugin import Mirror
from sediment.testing import GitRepo, MirrorRoot

MODIFY = ("diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n"
          "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n")
EMPTY_ADD = "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
RENAME_ONLY = ("diff --git a/old.txt b/new.txt\nsimilarity index 100%\nrename from old.txt\nrename to new.txt\n")
MODE_ONLY = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
NO_NEWLINE = ("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n"
              "+b\n\\ No newline at end of file\n")
DELETE = "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
QUOTED = ('diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n--- "a/caf\\303\\251.py"\n'
          '+++ "b/caf\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n')
TWO_HUNKS = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n a\n+new\n b\n"
             "@@ -10,2 +11,1 @@\n c\n-d\n")


@pytest.mark.parametrize(("text", "path"), [
    (MODIFY, "calc.py"), (EMPTY_ADD, "empty.txt"), (RENAME_ONLY, "new.txt"), (MODE_ONLY, "run.sh"),
    (NO_NEWLINE, "x.py"), (DELETE, "gone.py"), (QUOTED, "café.py"), (TWO_HUNKS, "m.py"),
], ids=["modify", "empty-add", "rename-only", "mode-only", "no-newline", "delete", "quoted", "two-hunks"])
def test_valid_sections_are_kept_verbatim_under_their_path(text: str, path: str) -> None:
    parsed = parse_patch(text)
    assert [(s.path, s.text) for s in parsed.sections] == [(path, text)]
    assert not parsed.skipped


@pytest.mark.parametrize("text", [
    "diff --git a/b.png b/b.png\nindex 1..2 100644\nBinary files a/b.png and b/b.png differ\n",
    "diff --git a/b.bin b/b.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\n",
    "diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n",
    "diff --git a/sub b/sub\nindex 1111111..2222222 160000\n--- a/sub\n+++ b/sub\n@@ -1 +1 @@\n-Subproject commit a\n"
    "+Subproject commit b\n",
    "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..2222222\n",
    "diff --cc merged.py\nindex 1,2..3\n@@@ -1,1 -1,1 +1,1 @@@\n",
    'diff --git "a/\\377.py" "b/\\377.py"\n--- "a/\\377.py"\n+++ "b/\\377.py"\n@@ -1 +1 @@\n-a\n+b\n',
], ids=["binary", "git-binary", "copy", "submodule-index", "submodule-mode", "combined", "non-utf8-path"])
def test_unsupported_sections_are_counted(text: str) -> None:
    parsed = parse_patch(text + MODIFY)
    assert parsed.skipped == {UNSUPPORTED: 1}
    assert [s.path for s in parsed.sections] == ["calc.py"]


@pytest.mark.parametrize("text", [
    "diff --git a/a b/a\nweird header\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n@@ -1 +1 @@\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n",
    "diff --git a/a b/a\n@@ -1 +1 @@\n-a\n+b\n",
    "diff --git a/a b/a\nindex 1..2 100644\n",
    "diff --git a/a b/b\nrename from a\nrename from a\nrename to b\n",
    "diff --git a/a b/b\nrename from a\n",
    "diff --git a/a b/b\nrename from a\nrename to b\n--- a/a\n+++ b/c\n@@ -1 +1 @@\n-a\n+b\n",
    "diff --git a/a b/a\n--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n",
    "diff --git a/a b/a\n--- a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n",
    "diff --git a/ b/\n--- a/\n+++ b/\n@@ -1 +1 @@\n-a\n+b\n",
    'diff --git a/q"x b/q"x\n--- a/q"x\n+++ b/q"x\n@@ -1 +1 @@\n-a\n+b\n',
    'diff --git "a/\\q" "b/\\q"\n--- "a/\\q"\n+++ "b/\\q"\n@@ -1 +1 @@\n-a\n+b\n',
    'diff --git "a/\\000" "b/\\000"\n--- "a/\\000"\n+++ "b/\\000"\n@@ -1 +1 @@\n-a\n+b\n',
    "diff --git a/a b/z\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @ bad\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -0,1 +1 @@\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-c\n+d\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +9 @@\n-c\n+d\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n*a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n-a\n+b\n",
    "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n+c\n",
], ids=["unknown-header", "minus-without-plus", "headers-without-hunk", "hunk-without-headers", "no-change",
        "duplicate-rename", "incomplete-rename", "rename-disagrees", "both-dev-null", "missing-prefix",
        "empty-path", "quote-in-path", "bad-escape", "nul-in-path", "header-inconsistent", "bad-hunk-header",
        "start-zero-with-count", "hunks-out-of-order", "inconsistent-offset", "bad-body-line", "empty-body-line",
        "misplaced-no-newline", "counts-not-exhausted", "counts-overrun"])
def test_malformed_sections_are_counted(text: str) -> None:
    parsed = parse_patch(MODIFY + text)
    assert parsed.skipped == {MALFORMED: 1}
    assert [s.path for s in parsed.sections] == ["calc.py"]


def test_sections_split_at_diff_lines_and_blank_ones_are_ignored() -> None:
    assert split_sections(MODIFY + "\n\n" + DELETE) == [MODIFY + "\n\n", DELETE]
    assert "".join(split_sections(MODIFY + DELETE)) == MODIFY + DELETE
    assert parse_patch("  \n").sections == ()


def _commit(repo: pygit2.Repository, entries: list[tuple[str, bytes, int]], parents: list[pygit2.Oid]) -> str:
    index = pygit2.Index()
    if parents:
        index.read_tree(repo.get(parents[0]).tree)  # type: ignore[union-attr]
    for name, data, mode in entries:
        index.add(pygit2.IndexEntry(name, repo.create_blob(data), mode))
    signature = pygit2.Signature("Dev", "dev@example.com", 1_767_000_000 + len(parents), 0)
    return str(repo.create_commit("refs/heads/main", signature, signature, "c", index.write_tree(repo), parents))


def test_real_mirror_patches_parse_clean_and_binary_is_unsupported(tmp_path: Path,
                                                                   commit_history: dict[str, str],
                                                                   git_repo: GitRepo) -> None:
    mirror = Mirror(pygit2.Repository(str(git_repo.path)))
    for name in ("root", "c1", "c2", "c3"):
        parsed = parse_patch(mirror.commit_patch(commit_history[name]))
        assert not parsed.skipped, name
    assert parse_patch(mirror.commit_patch(commit_history["c2"])).paths == {"renamed.txt", "test_calc.py"}
    repo = pygit2.init_repository(str(tmp_path / "raw.git"), bare=True)
    base = _commit(repo, [("a.py", b"x = 1\n", pygit2.enums.FileMode.BLOB)], [])
    head = _commit(repo, [("a.py", b"x = 2\n", pygit2.enums.FileMode.BLOB_EXECUTABLE),
                          ("img.png", b"\x89PNG\x00\x01\x02", pygit2.enums.FileMode.BLOB)],
                   [pygit2.Oid(hex=base)])
    parsed = parse_patch(Mirror(repo).commit_patch(head))
    assert parsed.skipped == {UNSUPPORTED: 1}
    assert [s.path for s in parsed.sections] == ["a.py"]
    assert "new mode 100755" in parsed.sections[0].text
    assert MirrorRoot(tmp_path).path == tmp_path
