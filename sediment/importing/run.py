"""Importing source files into canonical records, through importer plugins.

An importer plugin implements ``describe_importer`` (an :class:`ImporterInfo`) and
``import_source`` (one file's records and refusals). :func:`import_results` runs the importer
of one format over files and directories (a directory is walked in name order for the files
the importer claims), validating every record it yields; a record that breaks a canonical
rule, a file that cannot be read, and an importer's own refusal all become one
:class:`ImportRefusal` naming file, line and field, and the good records around them are kept.
:func:`import_records` is the same stream with the refusals handed to a callback.

Reading is streaming: an importer reads one unit at a time (:func:`read_units`), so memory
stays flat as the input grows.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sediment.errors import PluginError, UsageError
from sediment.ingest.reading.compressed import logical_name
from sediment.ingest.reading.wrong_format import FormatWatch, first_line
from sediment.trajectory.record import Trajectory, TrajectoryError, validated
from sediment.trajectory.redaction import redact_trajectory
from sediment.trajectory.sources import ImportRefusal, is_not_json

if TYPE_CHECKING:
    from sediment.host.kinds import Importer
    from sediment.host.registry import PluginRegistry
    from sediment.trajectory.store_source import StoreSource


def claimed_files(paths: Iterable[Path], patterns: tuple[str, ...]) -> Iterator[Path]:
    """Files as given, and for a directory every file under it (name order) matching a pattern."""
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                name = logical_name(child.name)  # a compressed file is claimed by its content's name
                if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                    yield child
        else:
            yield path


def _importer(fmt: str, registry: PluginRegistry | None) -> tuple[PluginRegistry, Importer]:
    """The registry (loaded when not given) and its importer of format ``fmt``, or a PluginError."""
    if registry is None:
        from sediment.host.registry import load_registry

        registry = load_registry()
    importer = registry.importers.get(fmt)
    if importer is None:
        known = ", ".join(sorted(registry.importers)) or "none"
        raise PluginError(f"no importer for source format {fmt!r} (installed: {known})")
    return registry, importer


def import_results(fmt: str, paths: Iterable[Path | str], *,
                   registry: PluginRegistry | None = None) -> Iterator[Trajectory | ImportRefusal]:
    """Every record and refusal of ``paths`` read by the importer of format ``fmt``."""
    registry, importer = _importer(fmt, registry)
    for path in claimed_files((Path(p) for p in paths), importer.info.patterns):
        yield from _one_file(importer.read, path)


def _checked(items: Iterable[object], where: Path) -> Iterator[Trajectory | ImportRefusal]:
    for item in items:
        if isinstance(item, ImportRefusal):
            yield item
        elif isinstance(item, Trajectory):
            try:
                yield validated(redact_trajectory(item))
            except TrajectoryError as exc:
                yield ImportRefusal(where, 0, item.source.locator, str(exc))
        else:
            raise PluginError(f"importer yielded {type(item).__name__}, not a Trajectory or ImportRefusal")


def _one_file(read: Callable[[Path], Iterable[object]], path: Path) -> Iterator[Trajectory | ImportRefusal]:
    if not path.is_file():
        yield ImportRefusal(path, 0, "(file)", "is not a readable file")
        return
    held: list[ImportRefusal] | None = []  # "not JSON" refusals before anything else: perhaps another format
    try:
        for item in _checked(read(path), path):
            if held is not None and isinstance(item, ImportRefusal) and is_not_json(item):
                held.append(item)
                continue
            yield from held or ()
            held = None
            yield item
    except OSError as exc:
        yield from held or ()
        yield ImportRefusal(path, 0, "(file)", f"cannot be read: {exc.strerror or exc}")
        return
    if held:
        yield from _one_refusal_or_all(path, held)


def _one_refusal_or_all(path: Path, held: list[ImportRefusal]) -> Iterator[ImportRefusal]:
    """A file whose every record was not JSON: one refusal when it is in another format
    (:mod:`~sediment.ingest.reading.wrong_format`), else each record's own."""
    try:
        head = first_line(path)
    except OSError:
        head = None
    watch = FormatWatch()
    if head is not None:
        watch.line(head)
    wrong = watch.verdict()
    if wrong is None:
        yield from held
    else:
        yield ImportRefusal(path, 0, "(file)", wrong)


def import_records(fmt: str, paths: Iterable[Path | str], *,
                   on_refusal: Callable[[ImportRefusal], None] | None = None,
                   registry: PluginRegistry | None = None) -> Iterator[Trajectory]:
    """The records of ``paths``; each refusal goes to ``on_refusal`` (dropped when ``None``)."""
    for item in import_results(fmt, paths, registry=registry):
        if isinstance(item, ImportRefusal):
            if on_refusal is not None:
                on_refusal(item)
        else:
            yield item


def import_store_results(fmt: str, source: StoreSource, *,
                         registry: PluginRegistry | None = None) -> Iterator[Trajectory | ImportRefusal]:
    """Every record and refusal the importer of ``fmt`` reads from the fact store's Rollouts
    (hook ``import_store``), each record validated; refusals name ``store:ORG``. An importer
    that does not read the store is refused at once (a usage error)."""
    registry, importer = _importer(fmt, registry)
    if not importer.reads_store:
        readers = ", ".join(sorted(n for n, i in registry.importers.items() if i.reads_store)) or "none"
        raise UsageError(f"source format {fmt!r} does not read the fact store (--from-store: {readers})")
    return _checked(importer.read_store(source), Path(f"store:{source.org_id}"))
