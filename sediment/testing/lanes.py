"""Test lanes: what needs more than Python is marked, so that a suite can leave it out with
``-m``. The ``consumer_python`` fixture (marked ``consumer``) and :func:`run_consumer` run check
scripts in consumer venvs; the ``store_url`` fixture (its PostgreSQL side marked ``postgres``),
:func:`postgres_store_url` and :func:`postgres_base_url` reach the PostgreSQL test server, which
only a test marked ``postgres`` may use."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sediment.testing.ci import require_path, unavailable

TEST_DATABASE_ENV_VAR = "SEDIMENT_TEST_DATABASE_URL"
_unmarked_test: str | None = None
"""The running test's node id when it is not marked ``postgres`` (it may not use the server)."""


@pytest.fixture
def consumer_python(request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``consumer_python("verifiers")``: the interpreter of a consumer venv that
    ``scripts/consumer-venv`` built under ``<rootdir>/.venv-consumers/<name>``. A missing venv
    skips the test with the reason, and fails it under CI (``CI=true``), where it must exist.
    Every test using it is marked ``consumer``."""

    def find(name: str) -> Path:
        python = request.config.rootpath / ".venv-consumers" / name / "bin" / "python"
        return require_path(python, f"the consumer venv .venv-consumers/{name}",
                            hint=f"scripts/consumer-venv {name} builds it")

    return find


def run_consumer(python: Path, script: Path, *args: str | Path, home: Path, timeout: int = 600) -> list[Any]:
    """Run a check script in a consumer venv (offline: no hub) and parse its JSON output lines."""
    import subprocess

    environment = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(home),
                       PYTHONWARNINGS="ignore")
    process = subprocess.run([str(python), str(script), *map(str, args)], capture_output=True, text=True,
                             env=environment, timeout=timeout, check=False)
    assert process.returncode == 0, f"{script.name} failed:\n{process.stderr[-4000:]}"
    return [json.loads(line) for line in process.stdout.splitlines() if line.startswith("{")]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses ``consumer_python`` ``consumer`` (before ``-m`` deselects)."""
    for item in items:
        if "consumer_python" in getattr(item, "fixturenames", ()):
            item.add_marker("consumer")


@pytest.fixture(autouse=True)
def _postgres_lane(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[None]:
    """Only a test marked ``postgres`` sees the PostgreSQL test server's URL
    (``SEDIMENT_TEST_DATABASE_URL``, the lane's own variable, in every suite); an unmarked one
    that asks for the server fails naming the mark."""
    global _unmarked_test
    marked = request.node.get_closest_marker("postgres") is not None
    if not marked:
        monkeypatch.delenv(TEST_DATABASE_ENV_VAR, raising=False)
    _unmarked_test = None if marked else request.node.nodeid
    try:
        yield
    finally:
        _unmarked_test = None


def _postgres_database(base_url: str) -> str:
    """A fresh, uniquely named database on the test server; its URL."""
    import secrets

    import psycopg

    name = f"sediment_test_{secrets.token_hex(6)}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh fact store URL on each backend. PostgreSQL needs SEDIMENT_TEST_DATABASE_URL
    (``./run test`` starts a server); under CI its absence is a failure, not a skip. The
    PostgreSQL side is marked ``postgres``."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'facts.db'}"
    return _postgres_database(postgres_base_url())


def postgres_store_url() -> str:
    """A fresh database on the PostgreSQL test server (skips without one, fails under CI); a
    test calling it carries ``@pytest.mark.postgres``."""
    return _postgres_database(postgres_base_url())


def postgres_base_url() -> str:
    """The PostgreSQL test server's URL (``SEDIMENT_TEST_DATABASE_URL``, which ``./run test``
    sets); without it the test skips, and fails under CI."""
    if _unmarked_test is not None:
        pytest.fail(f"{_unmarked_test} uses the PostgreSQL test server but is not marked postgres: add "
                    "@pytest.mark.postgres (./run test --fast leaves such tests out)", pytrace=False)
    base = os.environ.get(TEST_DATABASE_ENV_VAR)
    if not base:
        unavailable("no PostgreSQL test server: SEDIMENT_TEST_DATABASE_URL is not set (./run test starts one)")
    return base
