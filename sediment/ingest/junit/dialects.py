"""Per-runner test ids: one test gets the same ``test_id`` in every attempt and on every commit.

Each runner's JUnit report names a test in its own way; ``test_id`` is normalized to the name
SWE-bench 5.0.2's log parser for that runner reports (``swebench/harness/log_parsers/``), so
FAIL_TO_PASS / PASS_TO_PASS lists derived from stored results are the names a SWE-bench harness
reads back from a log. ``classname`` and ``name`` keep what the report said.

**pytest** (``parse_log_pytest``: the node id after ``PASSED`` / ``FAILED`` / …):
``path/to/test_x.py::Class::Nested::name[param]``. pytest writes ``classname`` as the node id's
path with ``/`` → ``.`` and ``.py`` dropped, then its class names, and ``name`` as the function
name with its parameters. The path comes from the ``file`` attribute when the report has it
(``junit_family=xunit1``): the classes are what follows that module's dotted path in
``classname`` (after a ``junit_prefix`` too). Without ``file`` (xunit2, pytest's default) the
trailing ``classname`` segments that start with an upper-case letter are the classes (CapWords,
PEP 8), except the first segment, and the rest is the module path (``tests.unit.test_calc`` →
``tests/unit/test_calc.py``). So an upper-case package or module name, or a directory with a dot
in its name, is only read right from an xunit1 report. Backslashes in ``file`` become ``/``.
Where SWE-bench differs: it splits log lines at whitespace, so it truncates a parameter id with
a space (``test_a[a b]`` → ``test_a[a``); the id here keeps the whole name.
pytest-rerunfailures (16.6.1 and later) writes one ``<testcase>`` per attempt — the failed
attempts without a result child, so they would read as passes. Elements of one suite with the
same ``classname``, ``name`` and ``file`` are therefore one test: the last is its outcome, each
earlier one a rerun (see :func:`folds_reruns`).

**Jest** with jest-junit (``parse_log_jest_json``: describe titles and the test title joined by
`` > ``; ``parse_log_jest``, reading ``--verbose`` output, reports the bare title, which collides
across describe blocks): jest-junit writes ``{classname} {title}`` into both ``classname`` and
``name`` by default (``classname`` = the describe titles joined by ``ancestorSeparator``, default
a space). With ``JEST_JUNIT_CLASSNAME="{classname}"``, ``JEST_JUNIT_TITLE="{title}"`` and
``JEST_JUNIT_ANCESTOR_SEPARATOR=" > "`` the id is ``Describe > nested > title``, exactly SWE-bench's
form: ``classname > name`` (the title alone when there is no describe block). With only the title
template set, ``classname`` ends in `` {title}`` and the describe part before it is used. With
jest-junit's defaults, where ``classname`` equals ``name``, describe titles and title cannot be
told apart; the id is ``name`` without its surrounding whitespace (Jest's ``fullName``: the titles
joined by single spaces). jest-junit writes ``test.todo`` tests without a ``<skipped>`` child, so
they read as passed.

**Go** with gotestsum ``--junitfile`` (``parse_log_gotest``: ``--- PASS: TestName/sub_test``):
the ``name`` attribute, the test and subtest path as ``go test -v`` prints it; the package import
path stays in ``classname`` and ``suite`` (SWE-bench does not report it, so tests of the same name
in two packages share an id). gotestsum ``--rerun-fails`` lists every run as its own
``<testcase>`` (failures first), so each is its own result of the attempt.

**Maven Surefire** (``parse_log_maven``: the ``-Dtest=`` argument of each run):
``classname#name``, e.g. ``com.google.gson.JsonPrimitiveTest#testEquals``; a nested class keeps its
binary name (``Outer$Inner#method``). A JUnit 5 parameterized invocation keeps its display suffix
(``addsPairs(int, int, int)[2]``), so each invocation is its own test. Surefire writes times with
English digit grouping from 1000 s on (``1,234.5``); that form is read for this runner only.

**cargo-nextest** (``parse_log_cargo``: ``test module::name ... ok``): the ``name`` attribute, the
test's path inside its binary as ``cargo test`` prints it; the binary id (``crate::bin/name``) stays
in ``classname`` and ``suite``. nextest records retries inside the element (``flakyFailure``,
``rerunFailure``).

**junit** (any other producer; no SWE-bench parser): ``classname.name``, or ``name`` when there is
no ``classname``.

:func:`detect_runner` picks the runner from marks the producers leave, when exactly one runner's
marks are present: pytest — a ``<testsuites name="pytest tests">`` root or a
``<testsuite name="pytest">``; Jest — ``<testsuites name="jest tests">`` (jest-junit's default
``suiteName``); Go — a ``go.version`` suite property (gotestsum); Surefire — a
``xsi:noNamespaceSchemaLocation`` naming the Surefire report schema; nextest —
``<testsuites name="nextest-run">`` (nextest's default ``report-name``). Otherwise ``junit``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from decimal import ROUND_HALF_EVEN, Decimal

from sediment.model.facts import TestRunner

XSI = "{http://www.w3.org/2001/XMLSchema-instance}"
MAX_DURATION_MS = 2**63 - 1

_DECIMAL = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")


def detect_runner(root: ET.Element) -> TestRunner | None:
    """The runner whose marks the report carries, when exactly one runner's are present."""
    found: set[TestRunner] = set()
    if root.tag == "testsuites":
        marks: dict[str, TestRunner] = {"pytest tests": "pytest", "jest tests": "jest", "nextest-run": "nextest"}
        named = marks.get(root.get("name", ""))
        if named is not None:
            found.add(named)
    for suite in root.iter("testsuite"):
        if suite.get("name") == "pytest":
            found.add("pytest")
        if "surefire" in suite.get(f"{XSI}noNamespaceSchemaLocation", ""):
            found.add("surefire")
        if any(prop.get("name") == "go.version" for prop in suite.iterfind("properties/property")):
            found.add("go")
    return next(iter(found)) if len(found) == 1 else None


def folds_reruns(runner: TestRunner) -> bool:
    """Whether repeated elements of one test in one suite are reruns of it (pytest only)."""
    return runner == "pytest"


def normalize_test_id(runner: TestRunner, *, classname: str | None, name: str,
                      file: str | None) -> tuple[str, str | None]:
    """``(test_id, test_file)`` for one ``<testcase>``; ``test_file`` is the report's ``file``
    attribute, or for pytest the test's path."""
    if runner == "pytest":
        return _pytest(classname or "", name, file)
    if runner == "jest":
        return _jest(classname or "", name), file
    if runner == "surefire":
        return (f"{classname}#{name}" if classname else name), file
    if runner in ("go", "nextest"):
        return name, file
    return (f"{classname}.{name}" if classname else name), file


def _pytest(classname: str, name: str, file: str | None) -> tuple[str, str | None]:
    segments = classname.split(".") if classname else []
    if file:
        path = file.replace("\\", "/")
        module = (path[:-3] if path.endswith(".py") else path).replace("/", ".").split(".")
        classes = _after(segments, module)
        if classes is None:
            classes = _trailing_classes(segments)
    else:
        classes = _trailing_classes(segments)
        module = segments[: len(segments) - len(classes)]
        if not module:
            return name, None
        path = "/".join(module) + ".py"
    return "::".join([path, *classes, name]), path


def _after(segments: list[str], module: list[str]) -> list[str] | None:
    """The segments after the first occurrence of ``module`` in ``segments``, if it occurs."""
    for start in range(len(segments) - len(module) + 1):
        if segments[start:start + len(module)] == module:
            return segments[start + len(module):]
    return None


def _trailing_classes(segments: list[str]) -> list[str]:
    count = 0
    for segment in reversed(segments[1:]):
        if not segment[:1].isupper():
            break
        count += 1
    return segments[len(segments) - count:] if count else []


def _jest(classname: str, name: str) -> str:
    title = name.strip()
    ancestors = classname.strip()
    if ancestors == title or not ancestors:
        return title
    if ancestors.endswith(" " + title):
        ancestors = ancestors[: -len(title) - 1].strip()
        if not ancestors:
            return title
    return f"{ancestors} > {title}"


def duration_ms(runner: TestRunner, value: str | None) -> int | None:
    """A ``time`` attribute (seconds) in whole milliseconds (half-even); None when absent.

    Plain decimals and exponents are read; Surefire's English digit grouping (``1,234.5``) is
    read for ``surefire`` only. Anything else, negative or too large, is a ValueError."""
    if value is None:
        return None
    text = value.strip()
    if _GROUPED.fullmatch(text) and runner == "surefire":
        text = text.replace(",", "")
    elif text.startswith("-") and _DECIMAL.fullmatch(text[1:]):
        raise ValueError(f"time: {value!r} is negative")
    elif not _DECIMAL.fullmatch(text):
        raise ValueError(f"time: {value!r} is not a number of seconds")
    millis = int((Decimal(text) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))
    if millis > MAX_DURATION_MS:
        raise ValueError(f"time: {value!r} is too large")
    return millis
