"""Hardened reading of one JUnit XML report: bounded, no DTD, no entities, one clear problem.

A report is read whole (it is stored all-or-nothing) and parsed incrementally with
:mod:`defusedxml`'s ``iterparse`` over the standard library's expat parser:

- **Size cap.** A file over :data:`MAX_REPORT_BYTES` (64 MiB) is refused before anything is
  parsed: a regular file by its size on disk (it is never read), a pipe or stdin after reading
  one byte past the cap.
- **No DTD.** A ``<!DOCTYPE …>`` is refused, so no entity is ever declared: internal entity
  expansion (billion laughs, quadratic blowup) and external entities (``SYSTEM
  "file:///etc/passwd"``, network fetches) cannot happen. The five predefined XML entities and
  character references work as usual.
- **Encodings.** The XML declaration's encoding is honoured (UTF-8 when there is none); bytes
  invalid in it are an error, never replaced.
- **Shape.** The root is ``<testsuites>`` or ``<testsuite>``; ``<testcase>`` elements are read
  from it and from nested ``<testsuite>`` elements. Elements nest at most :data:`MAX_DEPTH` (64)
  levels deep, checked as each element opens: a report is refused at the first element past
  the bound, so a stream of unclosed elements never builds its tree (memory stays bounded by
  the report's bytes), and reading a report never recurses without bound.

Every refusal is a :class:`ReportError` whose message says what is wrong (and where, for
syntax errors); the caller prefixes the file name.
"""

from __future__ import annotations

import io
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from defusedxml import (  # type: ignore[import-untyped]
    DefusedXmlException,
    DTDForbidden,
    EntitiesForbidden,
    ExternalReferenceForbidden,
)
from defusedxml.ElementTree import iterparse  # type: ignore[import-untyped]

from sediment.ingest.reading.compressed import InputUnreadable, open_input

MAX_REPORT_BYTES = 64 * 1024 * 1024
"""The largest report read (64 MiB); larger files are refused unread."""

MAX_DEPTH = 64
"""The deepest element nesting read (real reports nest a handful of levels)."""

ROOT_TAGS = ("testsuites", "testsuite")


class ReportError(ValueError):
    """The report cannot be read: too large, not well-formed, hostile, or not JUnit."""


@dataclass(frozen=True)
class Case:
    """One ``<testcase>`` element and where it sits."""

    element: ET.Element
    #: The nearest enclosing ``<testsuite>`` (None for a case directly under ``<testsuites>``).
    suite: ET.Element | None
    #: The element's path from the root: ``testsuites/testsuite[0]/testcase[3]`` (0-based index
    #: among same-named siblings).
    locator: str


def read_report(path: str, *, limit: int = MAX_REPORT_BYTES) -> bytes:
    """The report's bytes; ``-`` is stdin. Refuses (unread) a plain file larger than ``limit``; a
    gzip or Zstandard report is inflated as it is read and refused once past ``limit``."""
    try:
        with open_input(path) as handle:
            if path != "-" and handle.seekable():  # a plain file: measured before it is read
                status = os.fstat(handle.fileno())
                if status.st_size > limit:
                    raise ReportError(f"report is {status.st_size} bytes; the limit is {limit} bytes ({_mib(limit)})")
            return _read_bounded(handle, limit)
    except InputUnreadable as exc:
        raise ReportError(str(exc)) from None


def _read_bounded(handle: BinaryIO, limit: int) -> bytes:
    data = handle.read(limit + 1)  # a file that grew since it was measured, or a pipe
    if len(data) > limit:
        raise ReportError(f"report is larger than the limit of {limit} bytes ({_mib(limit)})")
    return data


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def parse_report(data: bytes) -> ET.Element:
    """The root element of a JUnit report, parsed without DTDs or entity declarations; the
    nesting bound is checked as each element opens (see the module docstring)."""
    if not data.strip():
        raise ReportError("empty file: no records")
    try:
        root = _parse_bounded(data)
    except DefusedXmlException as exc:
        raise ReportError(f"refused: {_defused(exc)}; DTDs and entity declarations are not allowed") from None
    except ET.ParseError as exc:
        raise ReportError(f"not well-formed XML: {exc}") from None
    except (ValueError, LookupError) as exc:  # e.g. an encoding Python does not know
        if isinstance(exc, ReportError):
            raise
        raise ReportError(f"cannot decode the report: {exc}") from None
    if root.tag not in ROOT_TAGS:
        raise ReportError(f"root element is <{root.tag}>, not <testsuites> or <testsuite>")
    return root


def _parse_bounded(data: bytes) -> ET.Element:
    """The root element, read event by event; refused at the first element nested deeper than
    :data:`MAX_DEPTH`, before the rest of the report is parsed."""
    events = iterparse(io.BytesIO(data), events=("start", "end"),
                       forbid_dtd=True, forbid_entities=True, forbid_external=True)
    depth = 0
    root: ET.Element | None = None
    for event, element in events:
        if event == "end":
            depth -= 1
            continue
        depth += 1
        if root is None:
            root = element
        if depth > MAX_DEPTH:
            raise ReportError(f"elements nest deeper than {MAX_DEPTH} levels")
    if root is None:  # expat already reports a document without an element as "no element found"
        raise ReportError("report has no element")
    return root


def _defused(exc: Exception) -> str:
    if isinstance(exc, DTDForbidden):
        return "the report declares a DTD (<!DOCTYPE …>)"
    if isinstance(exc, EntitiesForbidden):
        return "the report declares an entity"
    if isinstance(exc, ExternalReferenceForbidden):
        return "the report refers to an external entity"
    return f"the report uses a forbidden XML construct ({type(exc).__name__})"


def cases(root: ET.Element) -> Iterator[Case]:
    """Every ``<testcase>`` under the root and its nested ``<testsuite>`` elements, in document order."""
    yield from _walk(root, root.tag, root if root.tag == "testsuite" else None)


def _walk(element: ET.Element, path: str, suite: ET.Element | None) -> Iterator[Case]:
    seen: dict[str, int] = {}
    for child in element:
        if child.tag not in ("testsuite", "testcase"):
            continue
        index = seen.get(child.tag, 0)
        seen[child.tag] = index + 1
        locator = f"{path}/{child.tag}[{index}]"
        if child.tag == "testcase":
            yield Case(child, suite, locator)
        else:
            yield from _walk(child, locator, child)


def element_record(element: ET.Element) -> dict[str, Any]:
    """An element as a JSON object, losslessly: ``tag``, ``attributes`` (in document order),
    ``text`` (the character data before the first child), ``children`` (each with its ``tail``,
    the character data after it). Absent text, tails and children are left out."""
    record: dict[str, Any] = {"tag": element.tag, "attributes": dict(element.attrib)}
    if element.text is not None:
        record["text"] = element.text
    children = []
    for child in element:
        item = element_record(child)
        if child.tail is not None:
            item["tail"] = child.tail
        children.append(item)
    if children:
        record["children"] = children
    return record
