"""JUnit XML reports (``sediment ingest junit``) → TestCaseResult Facts.

Every report of one command belongs to one CI run attempt (:class:`RunAttempt`: provider, run
id, attempt number, repository, commit); each ``<testcase>`` element becomes one
TestCaseResult of that attempt:

- ``outcome``: a ``<failure>`` child → ``failed``, else ``<error>`` → ``error``, else
  ``<skipped>`` → ``skipped`` (pytest's xfail included; its ``type`` stays in ``raw``), else
  ``passed``.
- ``flaky_reruns``: the reruns the runner recorded inside the attempt — ``<rerun>``,
  ``<flakyFailure>``, ``<flakyError>``, ``<rerunFailure>``, ``<rerunError>`` children (Surefire,
  nextest); for pytest also the earlier elements of a test that pytest-rerunfailures writes
  once per attempt (the last element is the outcome; a producer that records one rerun both
  ways counts once: the larger of the two counts).
- ``duration_ms`` from ``time`` (seconds; absent → None); ``test_id`` normalized per runner
  (:mod:`.dialects`); ``classname``, ``name`` verbatim; ``suite`` the enclosing
  ``<testsuite>``'s name; ``test_file`` the ``file`` attribute (pytest: the test's path).
- ``report_sha256`` (the file's SHA-256) and ``locator`` (the element's path) name the element;
  ``raw`` is the element itself (:func:`~.parse.element_record`), for a folded pytest rerun with
  the earlier elements under ``earlier_attempts`` (each with its ``locator``).
- ``test_result_id`` is derived from the natural key ``(org, provider, repo, run_id,
  run_attempt, report_sha256, locator)``, so re-ingesting a report stores nothing new.

A report is all-or-nothing: it is read and translated entirely before anything is stored, and
a file that is too large, not well-formed, hostile (a DTD, entities), not JUnit, or holds one
bad element (no ``name``, a ``time`` that is not seconds) is reported as ``FILE: problem`` and
stores nothing; the other files still ingest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sediment.errors import validation_message
from sediment.identifiers import CommitSha, NonEmptyId, NonEmptyRepoSlug, OrgId
from sediment.ingest.facts_jsonl import describe_validation_error, test_case_result_id
from sediment.ingest.junit.dialects import detect_runner, duration_ms, folds_reruns, normalize_test_id
from sediment.ingest.junit.parse import (
    MAX_REPORT_BYTES,
    Case,
    ReportError,
    cases,
    element_record,
    parse_report,
    read_report,
)
from sediment.ingest.reading.files import IngestReport, InputProblem
from sediment.model.facts import CIProvider, TestCaseResult, TestOutcome, TestRunner
from sediment.store import FactStore

__all__ = [
    "MAX_REPORT_BYTES", "ReportError", "ReportProblem", "RunAttempt", "ingest_junit_reports", "test_result_id",
    "translate_report",
]

#: Result children in precedence order (the first one present decides the outcome).
RESULT_TAGS: tuple[tuple[str, TestOutcome], ...] = (("failure", "failed"), ("error", "error"), ("skipped", "skipped"))
#: Children recording a rerun inside the attempt.
RERUN_TAGS = frozenset({"rerun", "flakyFailure", "flakyError", "rerunFailure", "rerunError"})

_PROVIDER: TypeAdapter[CIProvider] = TypeAdapter(CIProvider)
_ORG: TypeAdapter[str] = TypeAdapter(OrgId)
_ID: TypeAdapter[str] = TypeAdapter(NonEmptyId)
_REPO: TypeAdapter[str] = TypeAdapter(NonEmptyRepoSlug)
_SHA: TypeAdapter[str] = TypeAdapter(CommitSha)


@dataclass(frozen=True)
class RunAttempt:
    """The CI run attempt every report of one ingest belongs to (validated and normalized)."""

    org_id: str
    provider: CIProvider
    run_id: str
    run_attempt: int
    repo: str
    commit_sha: str

    def __post_init__(self) -> None:
        if isinstance(self.run_attempt, bool) or not isinstance(self.run_attempt, int) or self.run_attempt < 1:
            raise ValueError(f"run_attempt: {self.run_attempt!r} is not a positive integer")
        for name, adapter in (("org_id", _ORG), ("provider", _PROVIDER), ("run_id", _ID), ("repo", _REPO),
                              ("commit_sha", _SHA)):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(f"{name}: expected a string, got {type(value).__name__}")
            try:
                object.__setattr__(self, name, adapter.validate_python(value))
            except ValidationError as exc:
                message = validation_message(exc.errors()[0])
                raise ValueError(f"{name}: {message}") from None


class ReportProblem(InputProblem):
    """A report that failed as a whole: shown as ``FILE: problem``."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def test_result_id(attempt: RunAttempt, report_sha256: str, locator: str) -> str:
    """The deterministic id of the result read from one element of one report."""
    return test_case_result_id(attempt.org_id, attempt.provider, attempt.repo, attempt.run_id,
                               attempt.run_attempt, report_sha256, locator)


test_result_id.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def translate_report(data: bytes, attempt: RunAttempt, *, captured_at: datetime,
                     runner: TestRunner | None = None) -> tuple[TestCaseResult, ...]:
    """Every TestCaseResult of one report, in document order; ReportError when any part is bad.

    ``runner`` None detects it from the report (:func:`~.dialects.detect_runner`), else ``junit``.
    """
    digest = hashlib.sha256(data).hexdigest()
    root = parse_report(data)
    chosen: TestRunner = runner or detect_runner(root) or "junit"
    groups: dict[tuple[Any, ...], list[tuple[int, Case]]] = {}
    for index, case in enumerate(cases(root)):
        element = case.element
        if "name" not in element.attrib:
            raise ReportError(f"{case.locator}: <testcase> has no name attribute")
        if not element.attrib["name"].strip():
            raise ReportError(f"{case.locator}: <testcase> has an empty name")
        key: tuple[Any, ...] = (
            (id(case.suite), element.get("classname"), element.get("name"), element.get("file"))
            if folds_reruns(chosen) else (index,))
        groups.setdefault(key, []).append((index, case))
    finals = sorted(groups.values(), key=lambda group: group[-1][0])  # in document order of each outcome
    return tuple(_result([case for _, case in group], attempt, chosen, digest, captured_at) for group in finals)


def _result(group: list[Case], attempt: RunAttempt, runner: TestRunner, digest: str,
            captured_at: datetime) -> TestCaseResult:
    final = group[-1]
    element = final.element
    tags = [child.tag for case in group for child in case.element]
    outcome: TestOutcome = next((o for tag, o in RESULT_TAGS if tag in {c.tag for c in element}), "passed")
    reruns = max(len(group) - 1, sum(1 for tag in tags if tag in RERUN_TAGS))
    classname = element.get("classname")
    name = element.attrib["name"]
    test_id, test_file = normalize_test_id(runner, classname=classname, name=name, file=element.get("file"))
    raw = element_record(element)
    if len(group) > 1:
        raw["earlier_attempts"] = [{"locator": case.locator, **element_record(case.element)} for case in group[:-1]]
    try:
        millis = duration_ms(runner, element.get("time"))
        return TestCaseResult(
            test_result_id=test_result_id(attempt, digest, final.locator), org_id=attempt.org_id,
            provider=attempt.provider, run_id=attempt.run_id, run_attempt=attempt.run_attempt, repo=attempt.repo,
            commit_sha=attempt.commit_sha, runner=runner, test_id=test_id, outcome=outcome, classname=classname,
            name=name, suite=None if final.suite is None else final.suite.get("name"), test_file=test_file,
            duration_ms=millis, flaky_reruns=reruns, report_sha256=digest, locator=final.locator,
            captured_at=captured_at, raw=raw,
        )
    except ValidationError as exc:
        raise ReportError(f"{final.locator}: {describe_validation_error(exc)}") from None
    except ValueError as exc:
        raise ReportError(f"{final.locator}: {exc}") from None


def ingest_junit_reports(paths: Iterable[str], store: FactStore, attempt: RunAttempt, *, captured_at: datetime,
                         runner: TestRunner | None = None) -> IngestReport:
    """Read, translate and store each report whole; a bad report is one problem and stores nothing.

    ``records`` counts the results read from good reports; ``stored`` / ``duplicates`` come from
    the store (a re-ingested report is all duplicates).
    """
    report = IngestReport()
    for path in paths:
        try:
            results = translate_report(read_report(path), attempt, captured_at=captured_at, runner=runner)
        except OSError as exc:
            report.problems.append(ReportProblem(path, 0, f"cannot read: {exc.strerror or exc}"))
            continue
        except ReportError as exc:
            report.problems.append(ReportProblem(path, 0, str(exc)))
            continue
        report.records += len(results)
        if results:
            written = store.append(results)
            report.stored.update(written.stored)
            report.duplicates.update(written.duplicates)
    return report
