"""The kit's ini options and markers (``pytest_addoption``, ``pytest_configure``)."""

from __future__ import annotations

import pytest

from sediment.testing.ci import allowed_skips
from sediment.testing.isolation import add_isolation_option


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("sediment_ci_forbids_skips", "under CI (CI=true) report every skipped or xfailed test as failed",
                  type="bool", default=False)
    parser.addini("sediment_ci_allowed_skips", "node ids that may skip under CI, one a line: 'NODE_ID: reason'",
                  type="linelist", default=[])
    add_isolation_option(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sediment_installed_plugins: discover every installed Sediment plugin, not only the built-ins "
        "(with sediment_isolate_environment)"
    )
    config.addinivalue_line("markers", "postgres: needs the PostgreSQL test server (SEDIMENT_TEST_DATABASE_URL)")
    config.addinivalue_line("markers", "consumer: loads rows in a consumer venv (the consumer_python fixture)")
    allowed_skips(config)  # a malformed allow-list is a usage error at start-up
