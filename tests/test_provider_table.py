"""The provider table (sediment.ingest.ci.providers) is the one place the CLI, the receiver and
the webhook registry learn which providers exist and which headers they send."""

from __future__ import annotations

from typing import Any

import typer.main

from sediment.cli.ingest import ingest_app
from sediment.ingest.ci import webhooks
from sediment.ingest.ci.providers import FORGES, PROVIDERS, TABLE, provider
from sediment.receiver import app, translators


class _Stub:
    """Stands in for a Receiver: each endpoint names what built it."""

    def forge(self, name: str) -> Any:
        return ("forge", name)

    def captured(self, route: str) -> Any:
        return ("captured", route)

    def health(self, request: Any) -> Any:
        raise AssertionError


def _commands() -> dict[str, Any]:
    group = typer.main.get_command(ingest_app)
    return group.commands  # type: ignore[attr-defined,no-any-return]


def test_the_webhook_registry_is_the_table() -> None:
    assert tuple(row.name for row in TABLE) == webhooks.PROVIDERS
    for row in TABLE:
        assert webhooks.event_header(row.name) == row.event_header
        assert callable(row.load())


def test_every_forge_has_an_ingest_command_from_the_table() -> None:
    commands = _commands()
    for row in FORGES:
        command = commands[row.name]
        assert row.summary is not None and command.help.startswith(row.summary)
        event = next(param for param in command.params if param.name == "event")
        assert f"({row.event_header})" in event.help
    for row in TABLE:
        if row.summary is not None:
            assert commands[row.name].help.startswith(row.summary)


def test_every_forge_has_a_receiver_route_and_translator_with_the_table_headers() -> None:
    routes = {route.path: route.endpoint for route in app.route_table(_Stub())}  # type: ignore[arg-type]
    assert set(translators.FORGES) == {row.name for row in FORGES}
    for row in FORGES:
        assert routes[f"/ingest/{row.name}"] == ("forge", row.name)
        assert row.name in translators.TRANSLATORS
        assert row.event_header is not None
        assert translators.EVENT_HEADERS[row.name] == row.event_header.lower()
        assert row.event_header.lower() in app.KEPT_HEADERS
        if row.delivery_header is not None:
            assert translators.DELIVERY_ID_HEADERS[row.name] == row.delivery_header.lower()
            assert row.delivery_header.lower() in app.KEPT_HEADERS
        assert app.DELIVERY_ID_HEADERS.get(row.name, ()) == tuple(h.lower() for h in row.redelivery_headers)
    forge_routes = {path for path, endpoint in routes.items() if isinstance(endpoint, tuple) and endpoint[0] == "forge"}
    assert {path for path in forge_routes if path.count("/") == 2} == {f"/ingest/{row.name}" for row in FORGES}


def test_header_names_match_case_insensitively_and_the_receiver_keeps_only_table_headers() -> None:
    """The receiver reads lower-cased headers; every event and delivery header it keeps is the
    table's, apart from the request's own and the forges' informational ones."""
    table_headers = {h.lower() for row in FORGES
                     for h in (row.event_header, row.delivery_header, *row.redelivery_headers) if h is not None}
    assert app.KEPT_HEADERS - table_headers == {"content-type", "user-agent", "x-github-hook-id", "x-gitlab-instance"}


def test_an_unknown_provider_is_one_line_naming_the_known_ones() -> None:
    try:
        provider("jenkins")
    except ValueError as exc:
        assert str(exc) == ("unknown webhook provider 'jenkins'; known: github, gitlab, circleci, buildkite, ci, "
                            "litellm")
    else:
        raise AssertionError("no error")
    assert PROVIDERS["gitlab"].delivery_header == "X-Gitlab-Event-UUID"
