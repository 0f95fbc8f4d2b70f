"""Recorded Sessions that exercise every Responses item kind, built through real segmentation."""

from __future__ import annotations

from typing import Any

from sediment.plugin import ReasoningPart, Rollout, ToolCallPart, ToolCallResponsePart, ToolDefinition
from sediment.testing import call, message, outcome, rollout

SHA = "c" * 40
TOOLS = (
    ToolDefinition(name="read_file", description="Read a file",
                   parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolDefinition(name="write_file", parameters={"type": "object", "properties": {
        "path": {"type": "string"}, "text": {"type": "string"}}}, strict=True),
    ToolDefinition(name="run_tests", parameters=None),
)
SYSTEM = "You are a careful coding agent."
PROMPT = "tests/test_calc.py::test_add fails; fix add() in calc.py."


def tool_loop(session: str, *, split: str = "train", result: str = "passed", prompt: str = PROMPT,
              **overrides: Any) -> Rollout:
    """Three calls: reasoning + text + a tool call; two parallel tool calls after an
    Anthropic-style tool result (a list of text blocks inside a user message); a final answer
    after two tool-role results (one a JSON object)."""
    tools = overrides.pop("tools", TOOLS)
    models = overrides.pop("models", ("claude-sonnet-4-5",) * 3)
    history = [message("system", SYSTEM), message("user", prompt)]
    out0 = message("assistant", ReasoningPart(content="The test expects 3; add() subtracts."), "Let me read calc.py.",
                   ToolCallPart(id=f"{session}-t0", name="read_file", arguments={"path": "calc.py"}))
    calls = [call(session, 0, history, [out0], tools=tools, model=models[0])]
    history = [*history, out0, message("user", ToolCallResponsePart(
        id=f"{session}-t0", result=[{"type": "text", "text": "def add(a, b):\n    return a - b\n"}]))]
    out1 = message("assistant",
                   ToolCallPart(id=f"{session}-t1", name="write_file",
                                arguments={"path": "calc.py", "text": "def add(a, b):\n    return a + b\n"}),
                   ToolCallPart(id=f"{session}-t2", name="run_tests", arguments={}))
    calls.append(call(session, 1, history, [out1], tools=overrides.pop("tools_1", tools), model=models[1]))
    history = [*history, out1, message("tool", ToolCallResponsePart(id=f"{session}-t1", result="ok")),
               message("tool", ToolCallResponsePart(id=f"{session}-t2", result={"passed": 3, "failed": 0}))]
    out2 = message("assistant", "Fixed add(); the test passes.", finish_reason="stop")
    calls.append(call(session, 2, history + overrides.pop("extra_input", []), [out2], tools=tools, model=models[2]))
    return rollout(session, calls=calls, commits=[SHA], outcomes=[outcome(f"{session}-o", SHA, result)],
                   split=split, **overrides)


def compacted(session: str, *, split: str = "train") -> Rollout:
    """Two segments: the second starts from a rewritten history holding an assistant text
    message and a developer message (what a client sends after compaction)."""
    first = [message("system", SYSTEM), message("user", "Document calc.py.")]
    out0 = message("assistant", ToolCallPart(id=f"{session}-t0", name="read_file", arguments={"path": "calc.py"}))
    rewritten = [message("developer", "Summary of earlier work follows."),
                 message("assistant", "I read calc.py: add() and sub().", "Next: the README."),
                 message("user", "Go on.", "Keep it short.")]
    out1 = message("assistant", "Documented add() and sub().")
    calls = [call(session, 0, first, [out0], tools=TOOLS, model="gpt-4.1"),
             call(session, 1, rewritten, [out1], tools=TOOLS, model="gpt-4.1")]
    return rollout(session, calls=calls, commits=[SHA], outcomes=[outcome(f"{session}-o", SHA, "failed")],
                   split=split)
