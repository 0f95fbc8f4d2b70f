"""Every ``sediment …`` command line in the README's and docs/*.md's code blocks (fenced, and
inline code spans that start with ``sediment``) names commands and ``--flags`` the CLI has: the click tree from ``typer.main.get_command`` is walked along the
line's words, and each ``--flag`` on it must be an option of the command reached (or of a
group on its way). A documented exception is allow-listed below with its reason."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import typer

from sediment.cli import app

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

ALLOWED: dict[tuple[str, str], str] = {
    # (document, the command line as written): why it is not checked
}

FENCE = re.compile(r"^```.*?$(.*?)^```", re.S | re.M)
PROMPT = re.compile(r"^(?:\$\s+|\./run\s+)?(?=sediment\s)")


def command_lines(text: str) -> Iterator[str]:
    """The ``sediment …`` lines of the fenced code blocks (continuations joined, comments dropped)."""
    for block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for raw in joined.splitlines():
            line = raw.strip()
            match = PROMPT.match(line)
            if match is None:
                continue
            line = line[match.end():]
            line = re.split(r"\s+#\s", line, maxsplit=1)[0]  # a trailing comment
            for part in re.split(r"\s*(?:&&|\||;)\s+(?=\S)", line):  # a pipeline's other commands are not ours
                if part.startswith("sediment "):
                    yield part.strip()
                    break


INLINE = re.compile(r"`(?:\./run )?(sediment [^`\n]+)`")


def inline_lines(text: str) -> Iterator[str]:
    """The inline code spans of the prose (outside fenced blocks) that are a ``sediment …`` command."""
    for match in INLINE.finditer(FENCE.sub("", text)):
        yield match.group(1).strip()


def words(line: str) -> list[str]:
    try:
        tokens = shlex.split(line, comments=False)
    except ValueError:  # an unbalanced quote in a placeholder: split on whitespace
        tokens = line.split()
    return [token.strip("[]()") for token in tokens]


def options_of(command: Any) -> set[str]:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts) if opt.startswith("--")}


def subcommands(group: Any, ctx: click.Context) -> dict[str, Any]:
    if not hasattr(group, "list_commands"):
        return {}
    return {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}


def _flags_of(command: Any) -> set[str]:
    """The options of ``command`` that take no value."""
    return {opt for param in command.params if getattr(param, "is_flag", False)
            for opt in (*param.opts, *param.secondary_opts)}


def problems_of(line: str, root: Any) -> list[str]:
    tokens = words(line)[1:]
    ctx = click.Context(root, info_name="sediment")
    reached = [root]  # the commands along the line: their options all apply
    for token in tokens:
        if token.startswith("-"):
            if token in _flags_of(reached[-1]):  # a group's own on/off flag: its command follows
                continue
            break
        commands = subcommands(reached[-1], ctx)
        if not commands:
            break
        alternatives = token.split("|")
        if all(name in commands for name in alternatives):
            chosen = [commands[name] for name in alternatives]
            reached.append(chosen[0] if len(chosen) == 1 else _Union(chosen))
            continue
        if token.isupper() or not token.replace("-", "").isalpha():  # a placeholder (OBJECTIVE) or a path
            reached.append(_Union(list(commands.values())))
            break
        return [f"no command {' '.join(tokens[:tokens.index(token) + 1])!r}"]
    known = {"--help"}.union(*(options_of(command) for command in reached))
    problems = []
    for token in tokens:
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", token):
            if flag not in known:
                problems.append(f"no option {flag}")
    return problems


class _Union:
    """Any one of several commands (``ingest github|gitlab``, ``export OBJECTIVE``): the options
    of each apply."""

    def __init__(self, commands: list[Any]) -> None:
        self.commands = commands
        self.params = [param for command in commands for param in command.params]


def documented() -> list[tuple[str, str]]:
    found = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for line in [*command_lines(text), *inline_lines(text)]:
            found.append((path.relative_to(REPO).as_posix(), line))
    return sorted(set(found))


def test_the_documents_have_command_lines() -> None:
    lines = documented()
    assert len(lines) > 200
    assert ("README.md", "sediment derive --out BUNDLE") in lines  # a fenced block
    assert ("README.md", "sediment objectives") in lines  # an inline span


@pytest.mark.parametrize(("document", "line"), documented())
def test_a_documented_command_line_exists_in_the_cli(document: str, line: str) -> None:
    if (document, line) in ALLOWED:
        pytest.skip(ALLOWED[(document, line)])
    root = typer.main.get_command(app)
    assert problems_of(line, root) == [], f"{document}: {line}"


def test_the_allow_list_names_lines_that_are_still_documented() -> None:
    assert set(ALLOWED) <= set(documented())


def test_the_readme_sets_the_org_before_the_first_command_that_needs_it() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    needs_org = re.search(r"^sediment (?:ingest|serve|mirror|derive|facts|hooks) ", text, re.M)
    sets_org = re.search(r"^export SEDIMENT_ORG_ID=", text, re.M)
    assert needs_org is not None and sets_org is not None
    assert sets_org.start() < needs_org.start()


TASK_SHAPED = [REPO / "docs" / "operate.md", REPO / "docs" / "cli.md"]
"""Pages split into task-shaped sections (issue 25): no prose paragraph or list item is a wall of text."""


def long_paragraphs(document: Path, limit: int = 150) -> list[str]:
    """The prose paragraphs and list items of ``document`` over ``limit`` words (code blocks and
    tables are not prose)."""
    prose = FENCE.sub("", document.read_text(encoding="utf-8"))
    long = []
    for block in re.split(r"\n\s*\n", prose):
        if block.lstrip().startswith("|"):  # a table
            continue
        for item in re.split(r"\n\s*(?=[-*] |\d+\. )", block):
            if len(item.split()) > limit:
                long.append(f"{len(item.split())} words: {item[:60]!r}")
    return long


@pytest.mark.parametrize("document", TASK_SHAPED, ids=lambda path: path.name)
def test_task_shaped_pages_have_no_paragraph_over_150_words(document: Path) -> None:
    assert not long_paragraphs(document)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_no_document_has_a_wall_of_text(document: Path) -> None:
    """Issue 25: no paragraph or list item of the README or docs/*.md runs past 150 words; a long
    one is split into a section per task, short paragraphs and lists."""
    assert not long_paragraphs(document)


def test_the_wall_of_text_check_sees_a_long_paragraph(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n" + "word " * 151 + "\n\n- " + "item " * 30 + "\n\n```\n" + "code " * 400 + "\n```\n",
                    encoding="utf-8")
    assert [line.split(":")[0] for line in long_paragraphs(page)] == ["151 words"]


@pytest.mark.parametrize("document", TASK_SHAPED, ids=lambda path: path.name)
def test_task_shaped_sections_open_with_a_runnable_example(document: Path) -> None:
    """Each `##`/`###` section's first block is a code block with a ``sediment`` (or ``python``) command."""
    text = document.read_text(encoding="utf-8")
    missing = []
    for match in re.finditer(r"^#{2,3} ([^\n]+)\n\n(.*?)(?=^#{1,3} |\Z)", text, re.S | re.M):
        heading, body = match.groups()
        if not (body.startswith("```") and re.search(r"^(?:sediment|python) ", body.split("```")[1], re.M)):
            missing.append(heading)
    assert not missing, missing
