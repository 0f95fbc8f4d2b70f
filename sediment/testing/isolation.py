"""Environment isolation, opt-in per suite with the ini option ``sediment_isolate_environment =
true`` (Sediment's own suite sets it).

With it, every test of the suite runs without operator configuration: each ``SEDIMENT_*``
variable is removed for the test, and plugin discovery sees only Sediment's built-in plugins
(``SEDIMENT_LOAD_PLUGINS``), unless the test is marked ``sediment_installed_plugins``. A result
then cannot depend on the developer's shell or on what else is installed.

It is off by default because installing Sediment registers the kit in every pytest run: a
plugin's or an application's own suite may set ``SEDIMENT_*`` variables on purpose (a store
URL, a settings file, the plugins to load), and the kit may not remove them behind its back.
Only the lane's own ``SEDIMENT_TEST_DATABASE_URL`` is hidden from a test not marked ``postgres``
in every suite (:mod:`sediment.testing.lanes`).
"""

from __future__ import annotations

import os

import pytest

from sediment.testing.lanes import TEST_DATABASE_ENV_VAR

ISOLATE_OPTION = "sediment_isolate_environment"


def add_isolation_option(parser: pytest.Parser) -> None:
    parser.addini(ISOLATE_OPTION, "run every test without SEDIMENT_* variables and with only the built-in "
                  "plugins discovered (Sediment's own suite sets it)", type="bool", default=False)


@pytest.fixture(autouse=True)
def _clean_sediment_environment(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """With ``sediment_isolate_environment``: no operator configuration leaks into the test, and
    discovery sees only the built-in plugins (unless the test is marked
    ``sediment_installed_plugins``); only a test marked ``postgres`` sees the PostgreSQL test
    server's URL. Without the option nothing changes."""
    if not request.config.getini(ISOLATE_OPTION):
        return
    from sediment.host.discovery import BUILTIN_PLUGINS, LOAD_ENV_VAR

    marked = request.node.get_closest_marker("postgres") is not None
    for name in [n for n in os.environ if n.startswith("SEDIMENT_") and (n != TEST_DATABASE_ENV_VAR or not marked)]:
        monkeypatch.delenv(name, raising=False)
    if request.node.get_closest_marker("sediment_installed_plugins") is None:
        monkeypatch.setenv(LOAD_ENV_VAR, ",".join(BUILTIN_PLUGINS))
