"""The CLI's two consoles: data to stdout, diagnostics and summaries to stderr.

Every human-readable line the CLI prints goes through this module (data on stdout — JSON,
``mirror list``, ``schema list`` — is written with ``typer.echo``, its fields :func:`visible`
where they are not JSON). Text that comes from outside the
project — file names, paths, field values, error messages, skip reasons, plugin-supplied
names and descriptions — is never markup and never more than the characters it holds:

- the consoles have markup and emoji codes off, and input is passed as :class:`rich.text.Text`,
  so ``[red]``, ``[/bold]`` or ``[link=…]`` in a value is printed as written, never parsed;
- :func:`visible` writes every character that ``str.isprintable`` rejects (newline, CR, tab,
  ESC, NUL, DEL, C1 controls, lone surrogates, bidirectional overrides, line separators, …) as
  its Python escape (``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\x00``, ``\\u202e``, ``\\U000e0001``), so one
  message is exactly one line and cannot forge lines or send terminal escape sequences. A
  backslash already in the text is kept as it is.

Only the project's own fixed words are styled (``error:``, the green ``✓``): :func:`line` takes
them as ``(text, style)`` pairs, and everything else as input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

out = Console(soft_wrap=True, highlight=False, markup=False, emoji=False)
err = Console(stderr=True, soft_wrap=True, highlight=False, markup=False, emoji=False)

_PIPE_WIDTH = 100_000
"""The width a table is laid out in when the console is not a terminal: wide enough for every
cell at its natural width, so nothing is cut to ``…`` in a pipe or a file."""

Styled = tuple[str, str]
"""The project's own text and its rich style, e.g. ``("✓", "green")``."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(value: object) -> str:
    """``value`` as text on one line: every non-printable character as its Python escape."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def counts(counted: Mapping[str, int]) -> str:
    """``name: count, …`` in name order: how summaries print counts by reason (never a Python repr)."""
    return ", ".join(f"{name}: {count}" for name, count in sorted(counted.items()))


def line(*parts: str | Styled) -> Text:
    """One line of output: ``str`` parts are input, shown literally and :func:`visible`;
    ``(text, style)`` parts are the project's own styled words."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(visible(part[0]), style=part[1])
        else:
            text.append(visible(part))
    return text


def cell(*values: object) -> Text:
    """A table cell of input values, one per line (each value :func:`visible` on its own line)."""
    return Text("\n".join(visible(value) for value in values))


def cells(values: Iterable[object]) -> Text:
    """:func:`cell` of an iterable."""
    return cell(*values)


def say(*parts: str | Styled) -> None:
    """A diagnostic or summary line on stderr (see :func:`line`)."""
    err.print(line(*parts))


def show(*parts: str | Styled) -> None:
    """A line of human-readable output on stdout (see :func:`line`)."""
    out.print(line(*parts))


def error(message: object) -> None:
    """One line, no traceback: the shape of every expected failure. ``message`` is input."""
    say(("error:", "bold red"), " ", visible(message))


def warning(message: object) -> None:
    """One warning line on stderr. ``message`` is input."""
    say(("warning:", "yellow"), " ", visible(message))


def render(renderable: RenderableType, *, stderr: bool = False) -> None:
    """Print a table (or any rich renderable) on stdout, or stderr with ``stderr=True``.

    On a terminal it is laid out to the terminal's width. Anywhere else (a pipe, a file) there
    is no width to fit, and a fitted table would cut cells to ``rollouts.j…``: it is laid out at
    its natural width instead, every cell whole."""
    console = err if stderr else out
    if console.is_terminal:
        console.print(renderable)
        return
    if isinstance(renderable, Table) and renderable.title is not None:  # its title whole on one line too
        title = renderable.title
        needed = title.cell_len if isinstance(title, Text) else cell_len(str(title))
        renderable.min_width = max(renderable.min_width or 0, needed)
    wide = _plain(console, _PIPE_WIDTH)
    measured = Measurement.get(wide, wide.options, renderable)
    if measured.maximum >= _PIPE_WIDTH:  # nothing bounds it (a table without rows): as narrow as it can be
        wide = _plain(console, max(measured.minimum, 1))
    wide.print(renderable)


def _plain(console: Console, width: int) -> Console:
    """A console writing to ``console``'s file at ``width`` columns, without styles or wrapping."""
    return Console(file=console.file, width=width, soft_wrap=False, highlight=False, markup=False,
                   emoji=False, force_terminal=False, color_system=None)
