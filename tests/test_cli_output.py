"""What the CLI prints is the project's own styling plus input shown literally, one line per message.

Every test runs the real command in a subprocess (``python -m sediment`` with ``SEDIMENT_HOME`` and
``SEDIMENT_ORG_ID=acme``). Input — payload values and keys, file names, paths, option values,
plugin metadata — must never be read as rich markup (``[red]``, ``[/bold]``, ``[link=…]``, emoji
codes), and a control character in it (newline, CR, ESC, NUL, Unicode line separators) is written
visibly, so a payload cannot forge an ``error:`` line or send a terminal escape sequence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sediment.bundle.write import write_bundle
from sediment.testing import ORG, POLICY, outcome, rollout, unavailable

ROOT = Path(__file__).parents[1]
#: a line a payload would like to print on its own, styled and with terminal escapes
FORGED = "x\nerror: forged line\r\x1b[2J\x1b[31m[red]R[/red][link=mailto:x@evil.example]L[/link]\x00\u2028\x85:smile:"
#: how it must appear instead: literally, on the line of the message that carries it
SHOWN = "x\\nerror: forged line\\r\\x1b[2J\\x1b[31m[red]R[/red][link=mailto:x@evil.example]L[/link]\\x00\\u2028\\x85:smile:"
#: the same for command-line arguments, paths and environment values (which cannot hold NUL)
FORGED_ARG, SHOWN_ARG = FORGED.replace("\x00", ""), SHOWN.replace("\\x00", "")


def sediment(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ |= {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": "acme", **(env or {})}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=120, check=False)


def lines(stream: str) -> list[str]:
    """Lines as a terminal or a log reader would split them (every Unicode line boundary)."""
    return stream.splitlines()


def assert_clean(stream: str) -> None:
    """No traceback, no forged line, no raw control character, no rendered emoji."""
    assert "Traceback" not in stream, stream
    assert not any(line.startswith("error: forged") for line in lines(stream)), stream
    assert not any(ch in stream for ch in "\r\x1b\x00\u2028\x85"), repr(stream)
    assert "😄" not in stream


def test_markup_in_an_event_name_is_printed_not_parsed(tmp_path: Path) -> None:
    """The reported crash: a rich MarkupError after storing, from a skip reason naming the event."""
    delivery = tmp_path / "m.json"
    delivery.write_text(json.dumps({"headers": {"X-GitHub-Event": "[/bold]"}, "payload": {}}))
    result = sediment(tmp_path / "home", "ingest", "github", str(delivery))
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert "skipped on purpose: unsupported_event:[/bold]: 1" in lines(result.stderr)

    styled = tmp_path / "styled.json"
    styled.write_text(json.dumps({"headers": {"X-GitHub-Event": "[red]x[/red][link=https://evil.example]y[/link]:smile:"},
                                  "payload": {}}))
    result = sediment(tmp_path / "home", "ingest", "github", str(styled))
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert "unsupported_event:[red]x[/red][link=https://evil.example]y[/link]:smile:: 1" in result.stderr


def test_a_skip_reason_cannot_forge_summary_lines(tmp_path: Path) -> None:
    delivery = tmp_path / "forged.json"
    delivery.write_text(json.dumps({"headers": {"X-GitHub-Event": FORGED}, "payload": {}}))
    result = sediment(tmp_path / "home", "ingest", "github", str(delivery))
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert len(lines(result.stderr)) == 2, result.stderr  # records read, skipped on purpose
    [skipped] = [line for line in lines(result.stderr) if line.startswith("skipped on purpose: ")]
    assert "[red]r[/red]" in skipped and "\\x1b[2j" in skipped  # the reason as stored (lowercased), escaped


def test_a_payload_cannot_forge_ingest_problem_lines(tmp_path: Path) -> None:
    """A field name chosen by the sender is named in the problem line; it stays on that line."""
    record = tmp_path / "outcomes.jsonl"
    record.write_text(json.dumps({FORGED: 1}) + "\n")
    result = sediment(tmp_path / "home", "ingest", "ci", str(record))
    assert result.returncode == 8, result.stderr
    assert_clean(result.stderr)
    shown = lines(result.stderr)
    assert len(shown) == 3, result.stderr  # the problem, the counts, the one-line failure
    assert shown[0].startswith(f"error: {record}:1: ") and f"{SHOWN}: Extra inputs are not permitted" in shown[0]
    assert shown[2] == "error: 1 record(s) failed to ingest; every other record was ingested"


def test_file_names_are_shown_literally_on_one_line(tmp_path: Path) -> None:
    missing = str(tmp_path / f"[bold]{FORGED_ARG}")
    bad = tmp_path / "[bold] \x1b[31m\n.json"
    bad.write_text("{not json\n")
    result = sediment(tmp_path / "home", "ingest", "github", missing, str(bad))
    assert result.returncode == 2, result.stderr  # a missing file is a usage error, before anything is read
    assert_clean(result.stderr)
    assert lines(result.stderr) == [f"error: {tmp_path}/[bold]{SHOWN_ARG}: no such file"]
    result = sediment(tmp_path / "home", "ingest", "github", str(bad))
    assert result.returncode == 8, result.stderr
    assert_clean(result.stderr)
    shown = lines(result.stderr)
    assert len(shown) == 3, result.stderr
    assert shown[0].startswith(f"error: {tmp_path}/[bold] \\x1b[31m\\n.json:1: not JSON")


def test_the_error_boundary_prints_one_line(tmp_path: Path) -> None:
    """A SedimentError whose message carries input: `sediment/cli/__init__.py` main."""
    result = sediment(tmp_path / "home", "export", "rlvr", "--target", FORGED_ARG, "--out", str(tmp_path / "o"))
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert lines(result.stderr) == [
        f"error: unsupported RLVR target: {SHOWN_ARG}; installed targets: nemo-gym, sediment, swe-bench"]

    mirror = sediment(tmp_path / "home", "mirror", "add", "acme/calc", str(tmp_path / FORGED_ARG))
    assert mirror.returncode == 1, mirror.stderr
    assert_clean(mirror.stderr)
    [line] = lines(mirror.stderr)
    assert line.startswith(f"error: cannot fetch acme/calc from {tmp_path}/{SHOWN_ARG}: ")


def test_usage_errors_print_one_line(tmp_path: Path) -> None:
    """Errors the command-line parser raises go through the same boundary."""
    result = sediment(tmp_path / "home", "facts", FORGED_ARG)
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    [line] = lines(result.stderr)
    assert line.startswith("error: ") and "[red]R[/red]" in line


def test_export_summaries_show_paths_literally(tmp_path: Path) -> None:
    """`✓wrote PATH (N rows)`: the output directory is the operator's; keep the project's ✓."""
    sha = "a" * 40
    bundle = write_bundle([rollout("s1", commits=[sha], outcomes=[outcome("o1", sha)])], tmp_path / "bundle",
                          org_id=ORG, policy=POLICY, quarantine_revision=0)
    out = tmp_path / "x[" / f"bold]{FORGED_ARG}"  # "…/x[/bold]…": a closing tag that matches nothing
    result = sediment(tmp_path / "home", "export", "rlvr", "--target", "nemo-gym", "--from", str(bundle),
                      "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert f"✓wrote {tmp_path}/x[/bold]{SHOWN_ARG}/rollouts.train.jsonl (1 rows)" in lines(result.stderr)
    assert (out / "rollouts.train.jsonl").is_file()


def test_derive_summary_shows_the_path_literally(tmp_path: Path) -> None:
    out = tmp_path / "x[" / f"bold]{FORGED_ARG}"
    out.parent.mkdir(parents=True)  # the bundle's parent must exist
    result = sediment(tmp_path / "home", "derive", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert lines(result.stderr) == [
        "warning: no mirrors (SEDIMENT_MIRROR_PATH is not set and $SEDIMENT_HOME/mirrors does not exist): no "
        "Session can be bound to a commit; add them with: sediment mirror add OWNER/REPO URL",
        f"derived 0 rollout(s) into {tmp_path}/x[/bold]{SHOWN_ARG}"]


def test_derive_summary_prints_skip_counts_as_name_count_pairs(tmp_path: Path) -> None:
    """`skipped: reason: N`, as the ingest summaries print counts, never a Python dict."""
    sys.path.insert(0, str(ROOT / "bench"))
    from synth import Profile, synthesize  # every second Session commits nothing: Jaccard finds no commit

    data = synthesize(Profile("derive-summary", sessions=2, calls=1, user_bytes=64, assistant_bytes=64,
                              uncommitted_every=2), tmp_path / "inputs")
    home, env = tmp_path / "home", {"SEDIMENT_ORG_ID": "bench", "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
    for args in (["ingest", "calls", "--format", "openai-chat", *map(str, data.call_files)],
                 ["ingest", "github", *map(str, data.webhook_files)], ["mirror", "add", "bench/monorepo", str(data.origin)]):
        assert sediment(home, *args, env=env).returncode == 0
    result = sediment(home, "derive", "--out", str(tmp_path / "bundle"), env=env)
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert lines(result.stderr) == [f"derived 2 rollout(s) into {tmp_path / 'bundle'}",
                                    "skipped: attribution.jaccard_no_candidate_commit: 1",
                                    "why a Session bound no commit: sediment derive --explain-attribution SESSION"]


def test_derive_summary_counts_are_not_a_python_repr(tmp_path: Path) -> None:
    """Regression (issue 25, the README path): a real Claude Code transcript with no mirror derives
    Rollouts that bind no commit, and the summary printed ``skipped: {'attribution…': 2}``."""
    shared = Path(os.environ.get("SEDIMENT_INPUT_FIXTURES") or ROOT.parent / "shared" / "fixtures" / "inputs")
    transcript = shared / "claude_code" / "git-ai.example-claude-code.jsonl"
    if not transcript.is_file():
        unavailable(f"the shared transcript fixtures not found under {shared} (set SEDIMENT_INPUT_FIXTURES)")
    home = tmp_path / "home"
    assert sediment(home, "ingest", "transcripts", "claude-code", str(transcript)).returncode == 0
    result = sediment(home, "derive", "--out", str(tmp_path / "bundle"))
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text(encoding="ascii"))
    assert manifest["skipped"], manifest  # the case: something was skipped
    expected = ", ".join(f"{reason}: {count}" for reason, count in sorted(manifest["skipped"].items()))
    assert lines(result.stderr)[-2:] == [f"skipped: {expected}",
                                         "why a Session bound no commit: sediment derive --explain-attribution SESSION"]
    assert "{" not in result.stderr and "'" not in result.stderr


def test_log_messages_are_one_line(tmp_path: Path) -> None:
    """`-v` diagnostics carry paths and parse errors from the operator's files."""
    bundle = write_bundle([], tmp_path / "bundle", org_id=ORG, policy=POLICY, quarantine_revision=0)
    result = sediment(tmp_path / "home", "-v", "export", "rlvr", "--target", "sediment", "--from", str(bundle),
                      "--out", str(tmp_path / "o"), "--mirrors", str(tmp_path),
                      env={"SEDIMENT_VERIFIER_COMMANDS_FILE": str(tmp_path / FORGED_ARG)})
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert f"verifier_commands_file_absent path={tmp_path}/{SHOWN_ARG}" in result.stderr


@pytest.fixture
def odd_plugins(tmp_path: Path) -> dict[str, str]:
    """The example target and profile, installed as distributions whose metadata is hostile."""
    site = tmp_path / "site"
    paths = [str(site)]
    for example, name in (("third_party_target", "sediment-verdicts"), ("third_party_profile", "sediment-plain-chat")):
        dist = site / f"{name.replace('-', '_')}-0.1.0.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n"
                                       "Version: 0.1.0[/bold][red]R[/red]\x1b[2J\x00\n")
        project = tomllib.loads((ROOT / "examples" / example / "pyproject.toml").read_text())["project"]
        entries = "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["sediment"].items())
        (dist / "entry_points.txt").write_text(f"[sediment]\n{entries}")
        paths.append(str(ROOT / "examples" / example / "src"))
    return {"PYTHONPATH": os.pathsep.join(paths)}


@pytest.mark.sediment_installed_plugins
def test_plugin_supplied_text_is_never_markup(tmp_path: Path, odd_plugins: dict[str, str]) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= odd_plugins | {"COLUMNS": "1000"}  # the whole table: nothing cut short
    for command in ("targets", "profiles"):
        result = subprocess.run([sys.executable, "-m", "sediment", command], capture_output=True, text=True,
                                env=environ, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        assert_clean(result.stdout + result.stderr)
        assert "0.1.0[/bold][red]R[/red]\\x1b[2J\\x00" in result.stdout, result.stdout


def test_an_empty_file_is_counted_as_a_file_not_a_record(tmp_path: Path) -> None:
    """The README walk met ``0 record(s) read`` then ``1 record(s) failed to ingest`` for an empty
    file: the closing line counts whole files apart from the records that failed."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = sediment(tmp_path / "home", "ingest", "github", str(empty))
    assert result.returncode == 8, result.stderr
    assert lines(result.stderr)[-1] == "error: 1 file(s) refused whole; every other record was ingested"
    bad = tmp_path / "outcomes.jsonl"
    bad.write_text(json.dumps({"x": 1}) + "\n")
    result = sediment(tmp_path / "home", "ingest", "ci", str(empty), str(bad))
    assert result.returncode == 8, result.stderr
    assert lines(result.stderr)[-1] == \
        "error: 1 record(s) failed to ingest and 1 file(s) refused whole; every other record was ingested"


def test_another_clients_transcript_is_counted_as_a_file_refused_whole(tmp_path: Path) -> None:
    """Regression (issue 25): a Codex rollout given to `ingest transcripts claude-code` is one
    problem (at its first entry, naming the other client), but the closing line counted it as
    ``1 line(s) failed to ingest``; the file is refused whole, as an empty one is."""
    rollout_file = tmp_path / "rollout-2026-02-23T20-34-25.jsonl"
    rollout_file.write_text("".join(json.dumps(entry) + "\n" for entry in (
        {"timestamp": "2026-02-23T20:34:25Z", "type": "session_meta", "payload": {"id": "s-1", "cwd": "/w"}},
        {"timestamp": "2026-02-23T20:34:26Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}})))
    result = sediment(tmp_path / "home", "ingest", "transcripts", "claude-code", str(rollout_file))
    assert result.returncode == 8, result.stderr
    problem, *_, closing = lines(result.stderr)
    assert problem.startswith(f"error: {rollout_file}:1: type: no line is a claude-code transcript entry")
    assert closing == "error: 1 file(s) refused whole; every other line was ingested"
    broken = tmp_path / "broken.jsonl"  # a Claude Code session with a line that is not JSON
    broken.write_text(json.dumps({"type": "summary", "summary": "Fix add()", "leafUuid": "u-1"}) + "\n{not json\n")
    result = sediment(tmp_path / "home", "ingest", "transcripts", "claude-code", str(rollout_file), str(broken))
    assert result.returncode == 8, result.stderr
    assert lines(result.stderr)[-1] == \
        "error: 1 line(s) failed to ingest and 1 file(s) refused whole; every other line was ingested"


def test_calls_that_name_no_session_under_the_format_chosen_say_where_it_is_read(tmp_path: Path) -> None:
    """The README walk read the demo's request/response pairs with ``--format litellm``: every
    record was skipped as ``no_session`` and the command stored nothing, exit 0, without a word
    on why. It now ends with one warning naming where the format reads the Session and which
    format reads the other shape; an ingest that stores calls says nothing more."""
    from sediment.demo import write_inputs

    calls = write_inputs(tmp_path / "inputs").calls
    result = sediment(tmp_path / "home", "ingest", "calls", "--format", "litellm", str(calls))
    assert result.returncode == 0, result.stderr
    count = len(calls.read_text().splitlines())
    assert lines(result.stderr)[-1] == (
        f"warning: no record named its Session (all {count} skipped as no_session): --format litellm reads it "
        "from LiteLLM's metadata (metadata.session_id, the x-sediment-session header, ...); request/response "
        "pairs with a session_id are read with --format openai-chat, openai-responses or anthropic")
    result = sediment(tmp_path / "home", "ingest", "calls", "--format", "openai-chat", str(calls))
    assert result.returncode == 0, result.stderr
    assert "warning:" not in result.stderr and f"stored inference_calls: {count}" in result.stderr
    as_json = sediment(tmp_path / "home2", "ingest", "calls", "--format", "litellm", str(calls), "--json")
    assert as_json.returncode == 0 and "warning:" not in as_json.stderr  # --json: the counts say it
    assert json.loads(as_json.stdout)["skipped"] == {"no_session": count}
