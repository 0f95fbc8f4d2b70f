"""References in the code and the docs point into the repository (issue 21, item 5).

The Sediment contract texts are not part of the repository, so no "contract §N" may stand in
the code, the docs, the README, the examples or the tests; a rule is cited by the page under
``docs/`` that states it. Every ``docs/NAME.md`` a docstring or comment under ``sediment/`` or ``plugins/``
names must exist, and so must every one a test names.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where a reference to the contract texts may not stand.
SCANNED = ("sediment", "plugins", "docs", "README.md", "examples", "tests")
#: This file names the forms it looks for.
SELF = Path(__file__).resolve()
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".json", ".jsonl", ".txt", ".sh", ".cfg", ".ini"}
CONTRACT_SECTION = re.compile(r"contract,?\s+§", re.IGNORECASE)
DOC_PAGE = re.compile(r"docs/([A-Za-z0-9_.-]+\.md)")


def _text_files() -> Iterator[Path]:
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from sorted(p for p in path.rglob("*")
                              if p.is_file() and p.suffix in TEXT_SUFFIXES and p.resolve() != SELF)


def _python_files() -> Iterator[Path]:
    for name in ("sediment", "plugins", "tests"):
        yield from sorted(p for p in (ROOT / name).rglob("*.py") if p.resolve() != SELF)


def _docstrings_and_comments(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every module, class and function docstring and every comment."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].lineno, body[0].value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def test_no_contract_section_references() -> None:
    found = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
             for path in _text_files()
             for text in [path.read_text(encoding="utf-8", errors="replace")]
             for match in CONTRACT_SECTION.finditer(text)]
    assert found == []


def test_scanner_sees_a_contract_section_reference() -> None:
    # the pattern catches the forms the references took, line breaks included
    for text in ("(contract §1.2)", "(objectives contract §12, item 18)", "see contract, §2 step 9",
                 "the export Contract\n    §3"):
        assert CONTRACT_SECTION.search(text), text
    assert not CONTRACT_SECTION.search("docs/exports.md, Skip reasons")


def test_docstring_doc_pages_exist() -> None:
    missing = [f"{path.relative_to(ROOT)}:{line}: docs/{page}"
               for path in _python_files()
               for line, text in _docstrings_and_comments(path.read_text(encoding="utf-8"))
               for page in DOC_PAGE.findall(text)
               if not (ROOT / "docs" / page).is_file()]
    assert missing == []


def test_docstring_doc_pages_are_seen() -> None:
    # the reader finds pages in docstrings and comments, not in other strings
    source = '"""See docs/exports.md."""\n# and docs/operate.md\nPATH = "docs/absent.md"\n'
    pages = [page for _, text in _docstrings_and_comments(source) for page in DOC_PAGE.findall(text)]
    assert pages == ["exports.md", "operate.md"]
