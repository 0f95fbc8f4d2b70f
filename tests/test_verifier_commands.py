"""Verifier command configuration (docs/exports.md): fail-soft loading and lookup."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sediment.evidence.verifier_commands import ENV_VAR, VerifierCommands

LOGGER = "sediment.evidence.verifier_commands"


# --- helpers -------------------------------------------------------------------------


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    return caplog


def write(tmp_path: Path, text: str, name: str = "verifiers.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def events(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    """(level, event name) of every record from the verifier-commands logger."""
    return [
        (record.levelno, record.getMessage().split()[0])
        for record in caplog.records
        if record.name == LOGGER
    ]


def messages(caplog: pytest.LogCaptureFixture, event: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == LOGGER and record.getMessage().split()[0] == event
    ]


# --- environment ---------------------------------------------------------------------


def test_env_var_name() -> None:
    assert ENV_VAR == "SEDIMENT_VERIFIER_COMMANDS_FILE"


def test_unset_environment_is_empty(logs: pytest.LogCaptureFixture) -> None:
    commands = VerifierCommands.from_environment({})
    assert dict(commands.commands) == {}
    assert commands.verification("acme/widget") is None
    assert events(logs) == []


def test_process_environment_is_read_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert dict(VerifierCommands.from_environment().commands) == {}

    path = write(tmp_path, '[repos."acme/widget"]\nverification_command = "pytest -q"\n')
    monkeypatch.setenv(ENV_VAR, str(path))
    assert dict(VerifierCommands.from_environment().commands) == {"acme/widget": "pytest -q"}


def test_environment_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[repos."acme/widget"]\nverification_command = "make test"\n')
    commands = VerifierCommands.from_environment({ENV_VAR: str(path)})
    assert commands.verification("acme/widget") == {"verification_command": "make test"}


def test_legacy_environment_variable_is_ignored(tmp_path: Path) -> None:
    path = write(tmp_path, '[repos."acme/widget"]\nverification_command = "pytest"\n')
    commands = VerifierCommands.from_environment({"SEDIMENT_REWARD_COMMANDS_FILE": str(path)})
    assert dict(commands.commands) == {}
    assert commands.verification("acme/widget") is None


# --- fail-soft file shapes -----------------------------------------------------------


def test_absent_file_is_empty_with_info(tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    commands = VerifierCommands.load(tmp_path / "missing.toml")
    assert dict(commands.commands) == {}
    assert events(logs) == [(logging.INFO, "verifier_commands_file_absent")]


def test_absent_file_named_by_environment(tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    commands = VerifierCommands.from_environment({ENV_VAR: str(tmp_path / "missing.toml")})
    assert dict(commands.commands) == {}
    assert events(logs) == [(logging.INFO, "verifier_commands_file_absent")]


def test_malformed_toml_is_empty_with_warning(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, '[repos."acme/widget"\nverification_command = \n')
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {}
    assert events(logs) == [(logging.WARNING, "verifier_commands_file_malformed")]


def test_unreadable_file_is_empty_with_warning(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "a-directory.toml"
    directory.mkdir()
    commands = VerifierCommands.load(directory)
    assert dict(commands.commands) == {}
    assert events(logs) == [(logging.WARNING, "verifier_commands_file_unreadable")]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty-file"),
        pytest.param('[other."acme/widget"]\nverification_command = "pytest"\n', id="no-repos"),
        pytest.param('repos = "acme/widget"\n', id="repos-string"),
        pytest.param('repos = ["acme/widget"]\n', id="repos-array"),
        pytest.param(
            '[[repos]]\nname = "acme/widget"\nverification_command = "x"\n', id="repos-array-of-tables"
        ),
        pytest.param('verification_command = "pytest"\n', id="top-level-command"),
    ],
)
def test_missing_or_non_table_repos_is_bad_shape(
    tmp_path: Path, logs: pytest.LogCaptureFixture, text: str
) -> None:
    commands = VerifierCommands.load(write(tmp_path, text))
    assert dict(commands.commands) == {}
    assert events(logs) == [(logging.WARNING, "verifier_commands_bad_shape")]


def test_empty_repos_table_is_a_valid_zero_repo_config(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    commands = VerifierCommands.load(write(tmp_path, "[repos]\n"))
    assert dict(commands.commands) == {}
    assert events(logs) == [(logging.INFO, "verifier_commands_loaded")]
    (message,) = messages(logs, "verifier_commands_loaded")
    assert "repo_count=0" in message


def test_valid_file_loads_with_info(tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    path = write(
        tmp_path,
        '[repos."acme/widget"]\nverification_command = "pytest -q"\n'
        '[repos."acme/gadget"]\nverification_command = "npm test"\n',
    )
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {"acme/widget": "pytest -q", "acme/gadget": "npm test"}
    assert events(logs) == [(logging.INFO, "verifier_commands_loaded")]
    (message,) = messages(logs, "verifier_commands_loaded")
    assert "repo_count=2" in message


def test_invalid_utf8_bytes_are_decoded_with_replacement(tmp_path: Path) -> None:
    path = tmp_path / "verifiers.toml"
    path.write_bytes(
        b'# comment \xff\xfe\n[repos."acme/widget"]\nverification_command = "pytest \xff"\n'
    )
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {"acme/widget": "pytest \ufffd"}


# --- entries -------------------------------------------------------------------------


def test_invalid_entries_are_skipped_while_siblings_load(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    path = write(
        tmp_path,
        "\n".join(
            [
                '[repos."acme/good"]',
                'verification_command = "pytest -q"',
                '[repos."acme/blank"]',
                'verification_command = "   "',
                '[repos."acme/empty"]',
                'verification_command = ""',
                '[repos."acme/number"]',
                "verification_command = 42",
                '[repos."acme/list"]',
                'verification_command = ["pytest", "-q"]',
                '[repos."acme/missing"]',
                'other = "x"',
                '[repos."acme/legacy"]',
                'rerun_command = "pytest"',
                '[repos."acme/also-good"]',
                'verification_command = "make check"',
                "",
            ]
        ),
    )
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {"acme/good": "pytest -q", "acme/also-good": "make check"}
    assert events(logs) == [(logging.WARNING, "verifier_command_entry_invalid")] * 6 + [
        (logging.INFO, "verifier_commands_loaded")
    ]
    (loaded,) = messages(logs, "verifier_commands_loaded")
    assert "repo_count=2" in loaded


def test_non_table_entry_is_invalid(tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    path = write(
        tmp_path,
        '[repos]\n"acme/flat" = "pytest"\n[repos."acme/widget"]\nverification_command = "x"\n',
    )
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {"acme/widget": "x"}
    assert (logging.WARNING, "verifier_command_entry_invalid") in events(logs)


@pytest.mark.parametrize("key", ["", "not-a-slug", "acme/", "/widget", "a/b/c", "acme/.."])
def test_invalid_repository_keys_are_skipped(
    tmp_path: Path, logs: pytest.LogCaptureFixture, key: str
) -> None:
    path = write(
        tmp_path,
        f'[repos."{key}"]\nverification_command = "bad"\n'
        '[repos."acme/widget"]\nverification_command = "good"\n',
    )
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {"acme/widget": "good"}
    assert events(logs) == [
        (logging.WARNING, "verifier_command_entry_invalid"),
        (logging.INFO, "verifier_commands_loaded"),
    ]


def test_commands_are_stored_stripped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[repos."acme/widget"]\nverification_command = "  \\tpytest -q tests/  \\n"\n',
    )
    commands = VerifierCommands.load(path)
    assert commands.verification("acme/widget") == {"verification_command": "pytest -q tests/"}


def test_display_case_key_is_normalized_and_matches_row_slug(tmp_path: Path) -> None:
    path = write(tmp_path, '[repos." Acme/Widget "]\nverification_command = "pytest"\n')
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {"acme/widget": "pytest"}
    assert commands.verification("acme/widget") == {"verification_command": "pytest"}


@pytest.mark.parametrize(
    ("first", "second"),
    [("Acme/Widget", "acme/widget"), ("acme/widget", "ACME/WIDGET")],
)
def test_case_variant_collision_later_entry_wins(
    tmp_path: Path, logs: pytest.LogCaptureFixture, first: str, second: str
) -> None:
    path = write(
        tmp_path,
        f'[repos."{first}"]\nverification_command = "first"\n'
        f'[repos."{second}"]\nverification_command = "second"\n',
    )
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {"acme/widget": "second"}
    assert events(logs) == [
        (logging.WARNING, "verifier_command_key_collision"),
        (logging.INFO, "verifier_commands_loaded"),
    ]
    (loaded,) = messages(logs, "verifier_commands_loaded")
    assert "repo_count=1" in loaded


def test_legacy_rerun_command_is_not_honored(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, '[repos."acme/widget"]\nrerun_command = "pytest"\n')
    commands = VerifierCommands.load(path)
    assert dict(commands.commands) == {}
    assert commands.verification("acme/widget") is None
    assert events(logs) == [
        (logging.WARNING, "verifier_command_entry_invalid"),
        (logging.INFO, "verifier_commands_loaded"),
    ]


def test_shell_syntax_is_stored_verbatim_not_interpreted(tmp_path: Path) -> None:
    marker = tmp_path / "ran.log"
    command = f"make deps && ./scripts/verify.sh --fast | tee {marker}"
    path = write(tmp_path, f'[repos."acme/widget"]\nverification_command = "{command}"\n')
    commands = VerifierCommands.load(path)
    assert commands.verification("acme/widget") == {"verification_command": command}
    assert not marker.exists()


# --- lookup --------------------------------------------------------------------------


def test_verification_lookup(tmp_path: Path) -> None:
    path = write(tmp_path, '[repos."acme/widget"]\nverification_command = "pytest -q"\n')
    commands = VerifierCommands.load(path)
    assert commands.verification("acme/widget") == {"verification_command": "pytest -q"}
    assert commands.for_repo("acme/widget") == "pytest -q"
    assert commands.verification("acme/other") is None
    assert commands.verification("other/widget") is None
    assert commands.verification("") is None
    assert commands.verification(None) is None
    assert commands.for_repo("acme/other") is None


def test_empty_commands_never_verify() -> None:
    commands = VerifierCommands.empty()
    assert dict(commands.commands) == {}
    assert commands.verification("acme/widget") is None
    assert VerifierCommands() == VerifierCommands.empty()
