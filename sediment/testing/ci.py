"""What a missing test input means, inside CI and outside it: :func:`under_ci`,
:func:`unavailable`, :func:`require_path` and :func:`optional_path` skip a test whose data or
tool is missing, naming it, and fail it under CI (``CI=true``). With the ini option
``sediment_ci_forbids_skips = true`` every skipped or xfailed test fails under CI too, except
the node ids ``sediment_ci_allowed_skips`` names, each with its reason (the report hooks below)."""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import NoReturn

import pytest


def under_ci(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the tests run under CI: ``CI`` is ``true`` or ``1`` (any case), as CI services set it."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() in ("true", "1")


def unavailable(reason: str, *, environ: Mapping[str, str] | None = None) -> NoReturn:
    """Skip the running test because what it needs is missing (``reason`` names it); under CI
    fail it instead, since there everything a test needs must be present."""
    if under_ci(environ):
        pytest.fail(f"{reason}; under CI (CI=true) it must be present and the test must run", pytrace=False)
    pytest.skip(reason)


def require_path(path: Path, what: str, *, hint: str = "", environ: Mapping[str, str] | None = None) -> Path:
    """``path`` when it exists; else the test skips naming ``what`` and where it was looked for
    (and ``hint``, how to get it), and fails under CI (see :func:`unavailable`)."""
    if not path.exists():
        unavailable(f"{what} not found at {path}" + (f" ({hint})" if hint else ""), environ=environ)
    return path


def optional_path(path: Path, what: str, *, hint: str = "", environ: Mapping[str, str] | None = None) -> Path | None:
    """``path`` when it exists, else ``None`` (a test that adds real data when present goes on
    without it); under CI its absence fails the test, since there it must be present."""
    if path.exists():
        return path
    if under_ci(environ):
        require_path(path, what, hint=hint, environ=environ)
    return None


def allowed_skips(config: pytest.Config) -> dict[str, str]:
    """``sediment_ci_allowed_skips``: node id (without parameters, or with) → reason."""
    allowed = {}
    for line in config.getini("sediment_ci_allowed_skips"):
        node, _, reason = line.partition(": ")
        if not node.strip() or not reason.strip():
            raise pytest.UsageError(f"sediment_ci_allowed_skips: {line!r} is not 'NODE_ID: reason'")
        allowed[node.strip()] = reason.strip()
    return allowed


def _skip_is_a_failure(config: pytest.Config, nodeid: str) -> bool:
    if not (config.getini("sediment_ci_forbids_skips") and under_ci()):
        return False
    allowed = allowed_skips(config)
    return nodeid not in allowed and nodeid.split("[", 1)[0] not in allowed


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    if hasattr(report, "wasxfail"):
        return f"xfail: {report.wasxfail}" if report.wasxfail else "xfail"
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


_CI_SKIP = ("{reason} -- under CI (CI=true) no test may skip or xfail: provide what it needs, or allow it "
            "with its reason in sediment_ci_allowed_skips")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Under CI with ``sediment_ci_forbids_skips``: a skipped or xfailed (or xpassed) phase fails."""
    report = yield
    if (report.skipped or hasattr(report, "wasxfail")) and _skip_is_a_failure(item.config, item.nodeid):
        reason = _skip_reason(report)
        if hasattr(report, "wasxfail"):
            del report.wasxfail
        report.outcome = "failed"
        report.longrepr = _CI_SKIP.format(reason=reason)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                          pytest.CollectReport]:
    """Under CI with ``sediment_ci_forbids_skips``: a module or class that skips while collected fails."""
    report = yield
    if report.skipped and _skip_is_a_failure(collector.config, report.nodeid):
        reason = _skip_reason(report)
        report.outcome = "failed"
        report.longrepr = _CI_SKIP.format(reason=reason)
    return report
