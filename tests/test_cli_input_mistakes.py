"""Every file-reading command answers the same mistakes with the same exit code (docs/cli.md,
"Mistakes with input files"): one line naming the file, and no empty output left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SHA = "0123456789abcdef0123456789abcdef01234567"
JUNIT = ["--provider", "other", "--run-id", "1", "--run-attempt", "1", "--repo", "a/b", "--commit", SHA]

#: command (before FILE, OUT standing for an output path), its bad flags, its code for bad input
COMMANDS: dict[str, tuple[list[str], list[str], int]] = {
    "ingest facts": (["ingest", "facts"], ["--no-such-flag"], 8),
    "ingest github": (["ingest", "github"], ["--no-such-flag"], 8),
    "ingest ci": (["ingest", "ci"], ["--no-such-flag"], 8),
    "ingest calls": (["ingest", "calls", "--format", "litellm"], ["--workers", "0"], 8),
    "ingest gitlab": (["ingest", "gitlab"], ["--no-such-flag"], 8),
    "ingest circleci": (["ingest", "circleci"], ["--no-such-flag"], 8),
    "ingest buildkite": (["ingest", "buildkite"], ["--no-such-flag"], 8),
    "ingest otlp": (["ingest", "otlp"], ["--workers", "0"], 8),
    "ingest transcripts": (["ingest", "transcripts", "codex"], ["--format", "x"], 8),
    "ingest junit": (["ingest", "junit", *JUNIT], ["--run-attempt", "0"], 8),
    "schema validate": (["schema", "validate"], ["--limit", "many"], 6),
    "trajectory import": (["trajectory", "import", "swe-agent-traj", "--out", "OUT"], ["--from-store"], 8),
    "trajectory export-atif": (["trajectory", "export-atif", "--out", "OUT"], ["--version", "ATIF-v0"], 8),
    "library import": (["library", "import", "canonical-jsonl", "--library", "OUT"], ["--from-store"], 8),
}


#: The commands that read JSON Lines records (not JUnit XML, not rows to validate or export).
JSON_LINES = sorted(set(COMMANDS) - {"ingest junit", "schema validate", "trajectory export-atif"})
#: A VCR / pytest-recording cassette: YAML, each line of it not JSON at all.
CASSETTE = b"interactions:\n- request:\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n" \
    b"  response:\n    status:\n      code: 200\nversion: 1\n"


def _file(tmp_path: Path, mistake: str) -> Path:
    if mistake == "yaml":
        path = tmp_path / "cassette.yaml"
        path.write_bytes(CASSETTE)
        return path
    path = tmp_path / f"{mistake}.jsonl"
    if mistake == "unreadable":  # unreadable whoever runs it (root reads a mode-000 file)
        path.symlink_to(path.name)
    elif mistake == "empty":
        path.write_bytes(b"")
    elif mistake in ("wrong_format", "bad_flags"):
        path.write_bytes(b"\x00\xff<not json, not xml>\n")
    return path


@pytest.mark.parametrize("mistake", ["missing", "unreadable", "empty", "wrong_format", "bad_flags"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_one_exit_code_per_mistake(tmp_path: Path, command: str, mistake: str) -> None:
    _check(tmp_path, command, mistake)


@pytest.mark.parametrize("command", JSON_LINES)
def test_a_yaml_file_is_one_line_saying_it_is_not_json_lines(tmp_path: Path, command: str) -> None:
    """Wrong format: YAML (issue 25): one line, not one `not JSON` line per line of the file."""
    _check(tmp_path, command, "yaml")


def _check(tmp_path: Path, command: str, mistake: str) -> None:
    words, bad_flags, bad_input = COMMANDS[command]
    out = tmp_path / "out"
    path = _file(tmp_path, mistake)
    args = [str(out) if word == "OUT" else word for word in words]
    args += [*bad_flags, str(path)] if mistake == "bad_flags" else [str(path)]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": "acme"}
    result = subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                            env=environ, timeout=120, check=False)
    expected = {"missing": 2, "unreadable": 2, "bad_flags": 2}.get(mistake, bad_input)
    assert result.returncode == expected, result.stderr
    assert "Traceback" not in result.stderr
    named = [line for line in result.stderr.splitlines() if str(path) in line]
    if mistake == "missing":
        assert named == [f"error: {path}: no such file" + (" or folder" if command in (
            "ingest transcripts", "trajectory import", "library import") else "")]
    elif mistake == "unreadable":
        assert named == [f"error: {path}: cannot read: Too many levels of symbolic links"]
    elif mistake == "empty":
        assert len(named) == 1 and "empty" in named[0], named  # `FILE: empty file: no records` (no rows)
    elif mistake == "wrong_format":
        assert len(named) == 1, result.stderr
    elif mistake == "yaml":
        assert len(named) == 1, result.stderr
        assert named[0].endswith(": not JSON Lines (it looks like YAML): no line of it is JSON"), named
    else:
        assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1, result.stderr
    assert not out.exists(), "a failed command leaves no output behind"
