"""How the CLI's help reads: command summaries that are whole sentences, flags without a type.

- In a group's command list each command is summarized by the first sentence of its help, on
  one line (typer's rich layout otherwise keeps the help's hard line breaks, and a summary
  breaks off mid-sentence at the end of a source line).
- A command's longer help is reflowed: each paragraph's source lines join into one, so the
  terminal wraps it (typer's rich layout keeps the hard line breaks and then wraps again, which
  leaves ragged half-lines on any terminal narrower than the source). A paragraph that starts
  with ``\b`` keeps its lines, as in click.
- A boolean flag takes no value, so the options panel shows no ``<bool>`` type for it.
- A repeatable option or a variadic argument shows its element's type (``<str>``, ``<path>``,
  ``<claude-code|codex|env>``), not the Python annotation ``<list[str]>``.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import typer
from typer.core import TyperArgument, TyperOption
from typer.main import solve_typer_info_help
from typer.models import DefaultPlaceholder

_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z`(\"']|$)")
"""A full stop that ends a sentence: followed by the end or by a capital, quote or code span,
so ``e.g. a value`` does not end one."""


def first_sentence(text: str) -> str:
    """The first sentence of ``text``'s first paragraph, whitespace collapsed onto one line."""
    paragraph = inspect.cleandoc(text).split("\n\n")[0]
    flat = " ".join(line for line in paragraph.split() if line != "\b")
    match = _SENTENCE_END.search(flat)
    return flat[: match.end()] if match else flat


def reflow(text: str) -> str:
    """``text`` with each paragraph on one line (a ``\b`` paragraph, and what follows ``\f``, as written)."""
    body, mark, rest = inspect.cleandoc(text).partition("\f")
    paragraphs = [p if p.startswith("\b") else " ".join(p.split()) for p in body.strip().split("\n\n")]
    return "\n\n".join(paragraphs) + (f"\n{mark}{rest}" if mark else "")


def summarize(app: typer.Typer) -> None:
    """Give every command and group of ``app`` (recursively) without an explicit short help the
    first sentence of its help as its summary, and reflow each command's help (see the module)."""
    for command in app.registered_commands:
        text = command.help or inspect.getdoc(command.callback) or ""
        if text:
            command.help = reflow(text)
        if command.short_help is None and text:
            command.short_help = first_sentence(text)
    for group in app.registered_groups:
        if isinstance(group.short_help, DefaultPlaceholder) or group.short_help is None:
            text = solve_typer_info_help(group)
            if text:
                group.short_help = first_sentence(text)
        if group.typer_instance is not None:
            summarize(group.typer_instance)


_display_type_rich = TyperOption.display_type_rich


_argument_display_type_rich = TyperArgument.display_type_rich
_LIST = re.compile(r"(<?)list\[(.*)\](>?)")


def element_type(shown: str | None) -> str | None:
    """``<list[X]>`` as ``<X>`` (a bare type name in lower case, as typer shows a single value's)."""
    if shown is None or (match := _LIST.fullmatch(shown)) is None:
        return shown
    opening, inner, closing = match.groups()
    return opening + (inner.lower() if inner.isidentifier() else inner) + closing


def _no_type_for_flags(self: TyperOption, ctx: Any) -> str | None:  # typer's own (vendored) click Context
    if self.is_flag and not self.count:
        return None
    return element_type(_display_type_rich(self, ctx))


def _argument_element_type(self: TyperArgument, ctx: Any) -> str | None:
    return element_type(_argument_display_type_rich(self, ctx))


TyperOption.display_type_rich = _no_type_for_flags  # type: ignore[method-assign]
TyperArgument.display_type_rich = _argument_element_type  # type: ignore[method-assign,assignment]
