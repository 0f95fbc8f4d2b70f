"""The CLI's two consoles: data to stdout, diagnostics and summaries to stderr."""

from __future__ import annotations

from rich.console import Console

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


def error(message: str) -> None:
    """One line, no traceback: the shape of every expected failure."""
    err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
