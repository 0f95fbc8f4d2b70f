"""Help and human output that read well: bare groups, summaries without Python reprs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def sediment(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": "acme"}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=120, check=False)


@pytest.mark.parametrize("group", [[], ["mirror"], ["ingest"], ["schema"], ["library"], ["trajectory"]])
def test_a_bare_group_prints_its_help_and_no_empty_error_line(tmp_path: Path, group: list[str]) -> None:
    result = sediment(tmp_path, *group)
    assert result.returncode == 2  # click's no_args_is_help: the help, as a usage error
    assert "Usage:" in result.stdout and "Commands" in result.stdout
    assert "error:" not in result.stderr and result.stderr.strip() == ""


def test_ingest_summary_prints_counts_not_python_reprs(tmp_path: Path) -> None:
    fact = {"fact_type": "nope"}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(fact) + "\n")
    github = tmp_path / "gh.json"
    github.write_text(json.dumps({"zen": "hi", "hook_id": 1}) + "\n")
    result = sediment(tmp_path / "home", "ingest", "github", "--event", "ping", str(github))
    assert "skipped on purpose: unsupported_event:ping: 1" in result.stderr, result.stderr
    assert "{'" not in result.stderr


def test_a_choice_error_lists_the_choices_on_one_line(tmp_path: Path) -> None:
    result = sediment(tmp_path, "ingest", "calls", str(tmp_path / "calls.jsonl"))
    assert result.returncode == 2
    assert result.stderr == ("error: Missing option '--format'. Choose from: litellm, openai-chat, "
                             "openai-responses, anthropic\n"), result.stderr
    assert "\\n" not in result.stderr and "\\t" not in result.stderr


def test_a_wrong_choice_names_the_choices_without_a_validator_prefix(tmp_path: Path) -> None:
    """Regression (issue 25, the README path): ``--provider github`` printed "Invalid value for
    '--provider': Value error, 'github' is not one of …", pydantic's prefix leaking through typer."""
    result = sediment(tmp_path / "home", "ingest", "junit", str(tmp_path / "r.xml"), "--provider", "github",
                      "--run-id", "1", "--run-attempt", "1", "--repo", "acme/proj", "--commit", "a" * 40)
    assert result.returncode == 2
    assert result.stderr == ("error: Invalid value for '--provider': 'github' is not one of 'github_actions', "
                             "'jenkins', 'gitlab_ci', 'circleci', 'buildkite', 'other', 'github_checks'.\n"), \
        result.stderr


def _commands(command: Any, ctx: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any, Any]]:
    """Every command of the click tree under ``command``, with its path and context."""
    import click

    yield path, command, ctx
    if hasattr(command, "list_commands"):  # a group (typer's groups are not click.Group subclasses)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, click.Context(sub, info_name=name, parent=ctx), (*path, name))


def command_tree() -> list[tuple[tuple[str, ...], Any, Any]]:
    import click
    import typer

    from sediment.cli import app

    root = typer.main.get_command(app)
    return list(_commands(root, click.Context(root, info_name="sediment")))


def test_no_flag_shows_a_bool_metavar_in_any_help() -> None:
    from typer.testing import CliRunner

    from sediment.cli import app

    runner = CliRunner()
    shown = 0
    for path, _, _ in command_tree():
        result = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, (path, result.output)
        assert "list[" not in result.output, (path, result.output)  # regression: <list[str]>, a Python annotation
        shown += "--help" in result.output
    assert shown > 40  # the whole tree was rendered, not just the root


def test_long_help_is_reflowed_not_broken_at_the_source_lines() -> None:
    """Regression (issue 25, the README path): typer's rich layout kept the docstring's hard line
    breaks and wrapped again, so `ingest transcripts --help` read "as the client had" / "it (after
    a compaction…" on two lines even on a wide terminal. Every paragraph is now one flowing line."""
    from typer.testing import CliRunner

    from sediment.cli import app

    result = CliRunner().invoke(app, ["ingest", "transcripts", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    flowing = ("Each model turn becomes an InferenceCall whose input is the conversation as the client had it "
               "(after a compaction: what it continued from) and whose output is the recorded assistant message,")
    assert any(flowing in line for line in result.output.splitlines()), result.output
    for path, command, _ in command_tree():
        for paragraph in (command.help or "").split("\n\n"):
            assert "\n" not in paragraph or paragraph.startswith("\b"), (path, paragraph)


def test_command_summaries_are_whole_first_sentences_on_one_line() -> None:
    from typer.core import TyperGroup

    checked = []
    for path, command, ctx in command_tree():
        if type(command) is not TyperGroup:  # the rich command list (export and report list their own)
            continue
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            summary = sub.short_help or sub.help or ""
            assert "\n" not in summary, (path, name, summary)
            assert summary.endswith((".", "!", "?")), (path, name, summary)
            checked.append((*path, name))
    assert {("demo",), ("objectives",), ("targets",), ("ingest", "calls")} <= set(checked)


def test_tables_in_a_pipe_keep_every_cell_whole(tmp_path: Path) -> None:
    result = sediment(tmp_path, "targets")  # stdout is a pipe
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert "rollouts.jsonl" in result.stdout and "no_segments" in result.stdout


def test_serve_on_port_zero_announces_the_port_it_bound(tmp_path: Path) -> None:
    import httpx

    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(tmp_path), "SEDIMENT_ORG_ID": "acme"}
    process = subprocess.Popen([sys.executable, "-m", "sediment", "serve", "--port", "0"], env=environ,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if line.startswith("receiving for org acme on "):
                break
        else:
            raise AssertionError(f"no announcement; exit {process.wait(10)}")
        match = re.search(r"http://127\.0\.0\.1:(\d+) ", line)
        assert match, line
        port = int(match.group(1))
        assert port != 0
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "nothing answers on the announced port"
                time.sleep(0.05)
        assert response.status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def test_a_table_without_rows_in_a_pipe_is_as_wide_as_its_title(tmp_path: Path) -> None:
    """The README walk piped ``report dataset-diagnostics`` over a store with no SFT or DPO rows:
    the empty 'class/model balance (rows)' chart was laid out 100,000 columns wide. A table that
    nothing bounds is laid out at its least width; one with rows keeps its natural width."""
    import io

    from rich.console import Console
    from rich.table import Table

    from sediment.cli import console

    empty = Table(title="class/model balance (rows)", title_justify="left", show_header=False, box=None)
    empty.add_column("label")
    full = Table(title="t", title_justify="left", box=None)
    full.add_column("file")
    full.add_row("rollouts.jsonl " * 20)
    printed = []
    for table in (empty, full):
        buffer = io.StringIO()
        original = console.out
        console.out = Console(file=buffer, soft_wrap=True, highlight=False, markup=False, emoji=False)
        try:
            console.render(table)
        finally:
            console.out = original
        printed.append(buffer.getvalue().splitlines())
    assert [line.rstrip() for line in printed[0]] == ["class/model balance (rows)"]
    assert max(len(line) for line in printed[0]) < 80
    assert ("rollouts.jsonl " * 20).strip() in printed[1][-1]
