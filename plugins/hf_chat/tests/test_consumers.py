"""Both hf-chat profiles' exports loaded by the real consumer packages (datasets 5.2.0,
trl 1.16.0, transformers 5.24.0 in .venv-consumers/hf): tests/consumers/hf/check_hf.py runs
there on the demo's profile directories and on richer exports made here, and prints what the
packages really did."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sediment_hf_chat import messages, prompts

from sediment import export_rlvr_from_rollouts
from sediment.demo import run_demo
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.model.facts import ReasoningPart, ToolCallPart, ToolCallResponsePart, ToolDefinition
from sediment.testing import GitRepo, call, message, outcome, rollout, run_consumer, run_export

ROOT = Path(__file__).parents[3]
CHECK = ROOT / "tests" / "consumers" / "hf" / "check_hf.py"


def assert_consumed(facts: dict[str, Any], splits: dict[str, int], columns: list[str]) -> None:
    """What every export must give the consumer: exactly its splits and columns, rows equal
    after Arrow, conversational rows, and renderings that hold every recorded text."""
    assert facts["splits"] == splits
    assert facts["columns"] == dict.fromkeys(splits, columns)
    assert facts["features_as_declared"] is True
    assert facts["rows_equal"] == dict.fromkeys(splits, True)
    assert facts["conversational"] == dict.fromkeys(splits, True)
    assert facts["rendered_rows"] == sum(splits.values())
    assert facts["render_missing"] == []
    assert facts["render_arrow_equal"] is True


def rich_messages_export(out: Path, mirrors: MirrorRoot) -> dict[str, int]:
    """An unsplit export with what the demo lacks: reasoning, Anthropic-style tool results in a
    user message (text blocks and JSON), a developer message, a row without tools."""
    tool = ToolDefinition(name="bash", description="Run a command",
                          parameters={"type": "object", "properties": {"cmd": {"type": "string"}}})
    asked = message("assistant", ReasoningPart(content="run the tests"), "Running.",
                    ToolCallPart(id="tu_1", name="bash", arguments={"cmd": "pytest -q"}),
                    ToolCallPart(id="tu_2", name="bash", arguments={"cmd": "git diff"}))
    results = message("user", ToolCallResponsePart(id="tu_1", result=[{"type": "text", "text": "1 failed"}]),
                      ToolCallResponsePart(id="tu_2", result={"diff": "", "exit": 0}), "please fix it")
    inputs = [message("system", "You are a coding agent."), message("user", "fix add()")]
    calls = [call("s1", 0, inputs, [asked], tools=(tool,)),
             call("s1", 1, [*inputs, asked, results], [message("assistant", "Fixed add().")], tools=(tool,))]
    plain = [call("s2", 0, [message("developer", "Be brief."), message("user", "what is 2+2?")],
                  [message("assistant", ReasoningPart(content="simple"), "4")])]
    result = run_export([rollout("s1", calls=calls), rollout("s2", calls=plain)], out, target="sediment",
                        profile=messages.PROFILE_ID, mirrors=mirrors)
    assert result.summary["rows"] == 2
    return {"train": 2}


def prompts_export_with_commands(out: Path, mirrors: MirrorRoot, git_repo: GitRepo) -> dict[str, int]:
    git_repo.commit({"calc.py": "def add(a, b):\n    return a - b\n"}, "base")
    fix = git_repo.commit({"calc.py": "def add(a, b):\n    return a + b\n"}, "fix")
    rollouts = [rollout(s, calls=[call(s, 0, [message("user", f"task {s}: make add() add")], [message("assistant", "ok")])],
                        commits=[fix], outcomes=[outcome(f"o{s}", fix, run_id=s)]) for s in ("s1", "s2")]
    summary = export_rlvr_from_rollouts(rollouts, mirrors, out, target="sediment", profile=prompts.PROFILE_ID,
                                        split_enabled=False,
                                        verifier_commands=VerifierCommands({"owner/repo": "pytest -q"}))
    assert summary["rows"] == 2
    return {"train": 2}


def test_profile_exports_load_and_render_in_datasets_and_trl(consumer_python: Callable[[str], Path], tmp_path: Path,
                                                             mirror_root: MirrorRoot, git_repo: GitRepo) -> None:
    python = consumer_python("hf")  # skipped when .venv-consumers/hf is absent, failed under CI
    demo = run_demo(tmp_path / "demo")
    summaries = demo["profiles"]
    demo_dirs = {name: tmp_path / "demo" / "profiles" / name for name in (messages.PROFILE_ID, prompts.PROFILE_ID)}
    expected = {name: summaries[name]["diagnostics"]["rows_by_split"] for name in demo_dirs}
    assert expected == {messages.PROFILE_ID: {"train": 12, "eval": 2}, prompts.PROFILE_ID: {"train": 9, "eval": 2}}
    rich_splits = rich_messages_export(tmp_path / "rich", mirror_root)
    command_splits = prompts_export_with_commands(tmp_path / "commands", mirror_root, git_repo)

    demo_messages, demo_prompts, rich, commands = run_consumer(
        python, CHECK, f"messages={demo_dirs[messages.PROFILE_ID]}", f"prompts={demo_dirs[prompts.PROFILE_ID]}",
        f"messages={tmp_path / 'rich'}", f"prompts={tmp_path / 'commands'}", home=tmp_path / "hf")

    message_columns = [f["name"] for f in messages.FEATURES]
    prompt_columns = [f["name"] for f in prompts.FEATURES]
    assert_consumed(demo_messages, expected[messages.PROFILE_ID], message_columns)
    assert_consumed(demo_prompts, expected[prompts.PROFILE_ID], prompt_columns)
    assert_consumed(rich, rich_splits, message_columns)
    assert_consumed(commands, command_splits, prompt_columns)
    # the demo's OpenAI Chat calls declare three function tools and run a tool loop
    assert demo_messages["counts"]["tools"] == 3 * sum(expected[messages.PROFILE_ID].values())
    # every call's result is in the conversation, but for the compacted Session's first segment, which
    # ends on a tool call: 24 tool calls in the demo's rollout segments
    assert demo_messages["counts"]["tool_calls"] == demo_messages["counts"]["tool_messages"] + 1 == 24
    assert rich["counts"] == {"tool_calls": 2, "tool_messages": 2, "reasoning": 2, "tools": 1}
    assert demo_prompts["render_ends"] == ["<|assistant|>"] * sum(expected[prompts.PROFILE_ID].values()) and commands["render_ends"] == ["<|assistant|>"] * 2
