"""Progress of long commands: a rich bar on stderr when it is a terminal, nothing otherwise.

Every command that can run for more than a couple of seconds (derive, export, every ingest,
library import) reports through one of these; in a pipe, a file or under ``--json`` they
print nothing, and the bar is transient (gone once the command prints its summary).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from sediment.cli import console

Update = Callable[[int, int], None]
"""``update(done, total)``: ``done`` of ``total`` units finished."""

CountUpdate = Callable[[int, int, int], None]
"""``update(files_done, files_total, records)``: files finished and records read so far."""


def wanted(as_json: bool = False) -> bool:
    """Whether to show a bar: stderr is a terminal and the output is not JSON."""
    return console.err.is_terminal and not as_json


@contextmanager
def bar(label: str, *, enabled: bool) -> Iterator[Update | None]:
    """A bar of ``label`` (input: shown literally) counting units to a known total; ``None``
    when not ``enabled``."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn(console.visible(label)), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console.err, transient=True) as progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


@contextmanager
def records(label: str, *, enabled: bool) -> Iterator[CountUpdate | None]:
    """A bar over input files that also counts the records read (a single large file still
    shows it is moving); ``None`` when not ``enabled``."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn(console.visible(label)), BarColumn(),
                  TextColumn("{task.completed}/{task.total} file(s), {task.fields[records]} record(s)"),
                  TimeElapsedColumn(), console=console.err, transient=True) as progress:
        task = progress.add_task(label, total=None, records=0)

        def update(files_done: int, files_total: int, records_read: int) -> None:
            progress.update(task, completed=files_done, total=files_total, records=records_read)

        yield update


@contextmanager
def counter(label: str, *, enabled: bool) -> Iterator[Callable[[int], None] | None]:
    """A running count of ``label`` (no known total): ``update(count)``; ``None`` when not ``enabled``."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn(console.visible(label)), BarColumn(), TextColumn("{task.completed} record(s)"),
                  TimeElapsedColumn(), console=console.err, transient=True) as progress:
        task = progress.add_task(label, total=None)

        def update(count: int) -> None:
            progress.update(task, completed=count)

        yield update
