"""fireworks-sft-v2 and fireworks-dpo-v3: every refusal, the weights, the argument text, the
sample's and the pair's tools and the reasoning rename on hand-built canonical rows; then whole exports (a refusal publishes nothing,
exit 9 through the CLI) and the profile records' format-only claim."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sediment_fireworks import dpo, sft
from sediment_fireworks.messages import DEVELOPER, SYSTEM_NOT_FIRST

from sediment.plugin import (
    IncompatibleRow,
    InferenceMessage,
    ReasoningPart,
    Rollout,
    ToolCallPart,
    ToolDefinition,
)
from sediment.testing import (
    ORG,
    POLICY,
    REPO,
    T0,
    DeveloperDecision,
    Evidence,
    FileAttribution,
    ProfileError,
    VerifierCommands,
    call,
    export_objective,
    load_registry,
    message,
    outcome,
    rollout,
    write_bundle,
)

SYSTEM = {"role": "system", "content": "You are a coding agent."}
USER = {"role": "user", "content": "fix add()"}
CALL = {"id": "tu_1", "type": "function", "function": {"name": "bash", "arguments": {"cmd": "pytest", "a": "é"}}}
TOOL = {"role": "tool", "name": "bash", "tool_call_id": "tu_1", "content": "1 failed"}


def sample(prompt: list[dict[str, Any]], completion: list[dict[str, Any]]) -> dict[str, Any]:
    return {"prompt": prompt, "completion": completion, "tools": [], "metadata": {"completion_id": "c1", "split": "train"}}


def pair(prompt: list[dict[str, Any]], chosen: list[dict[str, Any]], rejected: list[dict[str, Any]]) -> dict[str, Any]:
    return {"prompt": prompt, "chosen": chosen, "rejected": rejected, "tools": [],
            "metadata": {"chosen_completion_id": "c1", "rejected_completion_id": "c2", "split": "train"}}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


# --- fireworks-sft-v2 -------------------------------------------------------------------------


def test_sft_weights_assistant_messages_zero_in_the_prompt_one_in_the_completion() -> None:
    row = sample([SYSTEM, USER, {"role": "assistant", "thinking": "run it", "tool_calls": [CALL]}, TOOL],
                 [{"role": "assistant", "thinking": "fix", "content": "Fixed."}])
    before = copy.deepcopy(row)
    adapted = sft.adapt_row(row)
    assert adapted.body == {"messages": [
        SYSTEM, USER,
        {"role": "assistant", "reasoning_content": "run it",
         "tool_calls": [{"id": "tu_1", "type": "function", "function": {"name": "bash",
                                                                       "arguments": '{"a":"é","cmd":"pytest"}'}}],
         "weight": 0},
        TOOL,
        {"role": "assistant", "reasoning_content": "fix", "content": "Fixed.", "weight": 1},
    ], "tools": []}
    assert row == before  # the canonical row is not touched
    assert adapted.prompt == row["prompt"] and adapted.instance_id == "c1"
    assert adapted.evidence == {"metadata": row["metadata"], "tool_definitions": "none_declared"}
    # only assistant messages carry a weight
    assert [("weight" in m) for m in adapted.body["messages"]] == [False, False, True, False, True]


@pytest.mark.parametrize(("prompt", "message"), [
    ([{"role": "developer", "content": "Be brief."}, USER], f"{DEVELOPER} (row c1, message 0)"),
    ([SYSTEM, USER, {"role": "developer", "content": "Be brief."}], f"{DEVELOPER} (row c1, message 2)"),
    ([USER, SYSTEM], f"{SYSTEM_NOT_FIRST} (row c1, message 1)"),
    ([SYSTEM, USER, assistant("ok"), SYSTEM, USER], f"{SYSTEM_NOT_FIRST} (row c1, message 3)"),
])
def test_sft_refuses_developer_messages_and_a_system_message_after_the_first(prompt: list[dict[str, Any]],
                                                                             message: str) -> None:
    with pytest.raises(IncompatibleRow) as refused:
        sft.adapt_row(sample(prompt, [assistant("done")]))
    assert str(refused.value) == message


def test_sft_takes_a_leading_system_message_and_no_system_at_all() -> None:
    assert sft.adapt_row(sample([SYSTEM, USER], [assistant("x")])).body["messages"][0] == SYSTEM
    assert sft.adapt_row(sample([USER], [assistant("x")])).body == {
        "messages": [USER, {"role": "assistant", "content": "x", "weight": 1}], "tools": []}


#: A function tool as a row's ``tools`` hold it (the OpenAI chat ``tools`` shape).
WRITE = {"type": "function", "function": {"name": "write_file", "description": "Write a file.",
                                          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                                          "strict": True}}
RUN = {"type": "function", "function": {"name": "run_tests", "parameters": None}}


def test_sft_row_keeps_the_function_tools_the_call_declared_exactly_and_in_order() -> None:
    """Regression (issue 25): fireworks-sft-v1 wrote no tools and recorded ``absent``; the row now
    holds the sample's tools, in the request's order, and the sidecar says what they are."""
    row = {**sample([SYSTEM, USER], [assistant("done")]), "tools": [WRITE, RUN]}
    before = copy.deepcopy(row)
    adapted = sft.adapt_row(row)
    assert adapted.body["tools"] == [WRITE, RUN] and list(adapted.body) == ["messages", "tools"]
    assert adapted.evidence == {"metadata": row["metadata"], "tool_definitions": "declared"}
    assert row == before  # the canonical row is not touched
    assert adapted.body["tools"][0] is not row["tools"][0]  # a copy: the canonical row is not shared
    reversed_row = {**row, "tools": [RUN, WRITE]}
    assert sft.adapt_row(reversed_row).body["tools"] == [RUN, WRITE]
    transcript = sample([USER], [assistant("a")])
    transcript["metadata"]["capture"] = {"source": "transcript:claude-code@1", "lacks": ["tool_definitions"]}
    assert sft.adapt_row(transcript).evidence["tool_definitions"] == "not_recorded"


def test_sft_refuses_a_provider_built_in_tool() -> None:
    row = {**sample([USER], [assistant("a")]), "tools": [WRITE, {"type": "web_search_preview",
                                                                 "name": "web_search_preview"}]}
    with pytest.raises(IncompatibleRow) as refused:
        sft.adapt_row(row)
    assert str(refused.value) == f"{sft.FUNCTION_TOOLS_ONLY} (row c1, tool 1)"


# --- fireworks-dpo-v3 -------------------------------------------------------------------------


def test_dpo_text_pairs_become_input_preferred_and_non_preferred_outputs() -> None:
    row = pair([SYSTEM, USER, assistant("earlier"), USER], [assistant("good")], [assistant("bad")])
    adapted = dpo.adapt_row(row)
    assert adapted.body == {"input": {"messages": [SYSTEM, USER, assistant("earlier"), USER], "tools": []},
                            "preferred_output": [assistant("good")], "non_preferred_output": [assistant("bad")]}
    assert list(adapted.body) == ["input", "preferred_output", "non_preferred_output"]
    assert adapted.instance_id == "c1>c2" and adapted.prompt == row["prompt"]


def test_dpo_input_carries_the_function_tools_both_calls_declared() -> None:
    """Regression (issue 25): ``input.tools`` was always ``[]``; it now holds the pair's tools,
    and the sidecar says whether they were declared, none declared or not recorded."""
    run = RUN
    row = {**pair([USER], [assistant("good")], [assistant("bad")]), "tools": [WRITE, run]}
    before = copy.deepcopy(row)
    adapted = dpo.adapt_row(row)
    assert adapted.body["input"] == {"messages": [USER], "tools": [WRITE, run]}
    assert adapted.evidence == {"metadata": row["metadata"], "tool_definitions": "declared"}
    assert row == before  # the canonical row is not touched
    assert dpo.adapt_row(pair([USER], [assistant("a")], [assistant("b")])).evidence["tool_definitions"] == (
        "none_declared")
    transcript = pair([USER], [assistant("a")], [assistant("b")])
    transcript["metadata"]["rejected_capture"] = {"source": "transcript:codex@1", "lacks": ["tool_definitions"]}
    assert dpo.adapt_row(transcript).evidence["tool_definitions"] == "not_recorded"


def test_dpo_refuses_a_provider_built_in_tool() -> None:
    row = {**pair([USER], [assistant("a")], [assistant("b")]),
           "tools": [WRITE, {"type": "web_search_preview", "name": "web_search_preview"}]}
    with pytest.raises(IncompatibleRow) as refused:
        dpo.adapt_row(row)
    assert str(refused.value) == f"{dpo.FUNCTION_TOOLS_ONLY} (row c1>c2, tool 1)"


@pytest.mark.parametrize(("row", "message"), [
    (pair([{"role": "developer", "content": "d"}, USER], [assistant("a")], [assistant("b")]),
     f"{DEVELOPER} (row c1>c2, message 0)"),
    (pair([USER, SYSTEM], [assistant("a")], [assistant("b")]), f"{SYSTEM_NOT_FIRST} (row c1>c2, message 1)"),
    (pair([USER], [assistant("a"), assistant("b")], [assistant("c")]), f"{dpo.ONE_OUTPUT} (row c1>c2, chosen has 2)"),
    (pair([USER], [assistant("a")], []), f"{dpo.ONE_OUTPUT} (row c1>c2, rejected has 0)"),
    (pair([USER], [{"role": "assistant", "thinking": "hm", "content": "a"}], [assistant("b")]),
     f"{dpo.TEXT_ONLY} (row c1>c2, preferred_output message 0)"),
    (pair([USER], [assistant("a")], [{"role": "assistant", "tool_calls": [CALL]}]),
     f"{dpo.TEXT_ONLY} (row c1>c2, non_preferred_output message 0)"),
    (pair([USER, {"role": "assistant", "tool_calls": [CALL]}, TOOL], [assistant("a")], [assistant("b")]),
     f"{dpo.TEXT_ONLY} (row c1>c2, input message 1)"),
])
def test_dpo_refuses_what_its_text_only_format_cannot_carry(row: dict[str, Any], message: str) -> None:
    with pytest.raises(IncompatibleRow) as refused:
        dpo.adapt_row(row)
    assert str(refused.value) == message


# --- whole exports ----------------------------------------------------------------------------


def session(name: str, prompt: list[InferenceMessage], answer: InferenceMessage, accepted: bool,
            tools: tuple[ToolDefinition, ...] | None = None) -> Rollout:
    commit = f"{abs(hash(name)) % 16**40:040x}"
    decision = DeveloperDecision(
        decision_id=f"d-{name}", org_id=ORG, session_id=name, agent_harness="claude-code", file_path="a.py",
        accepted=accepted, explicit=True, interaction_mode="agent", call_id=f"resp-{name}",
        occurred_at=T0, captured_at=T0 + timedelta(days=1))
    return rollout(name, calls=[call(name, 0, prompt, [answer], model="gpt-x", model_call_id=f"resp-{name}",
                                       tools=tools)],
                   commits=[commit], outcomes=[outcome(f"o-{name}", commit, "passed", run_id=f"r-{name}")],
                   session_decisions=(decision,), split="train",
                   file_attributions=(FileAttribution(inference_call_id=f"{name}-c0", repo=REPO, commit_sha=commit,
                                                      file_path="a.py", similarity_score=0.9),))


def export(rollouts: list[Rollout], out: Path, objective: str, profile: str) -> dict[str, Any]:
    return export_objective(Evidence(rollouts, False), out, objective=objective, profile=profile,
                            verifier_commands=VerifierCommands.empty())


TEXT = [message("system", "Be exact."), message("user", "name a prime")]


def test_a_text_pair_exports_and_a_tool_call_refuses_the_whole_export(tmp_path: Path) -> None:
    text = [session("a", TEXT, message("assistant", "7"), True), session("b", TEXT, message("assistant", "9"), False)]
    summary = export(text, tmp_path / "ok", "dpo", dpo.PROFILE_ID)
    assert (summary["rows"], summary["skipped"]) == (1, {})
    [row] = [json.loads(line) for line in (tmp_path / "ok" / "data.jsonl").read_text(encoding="ascii").splitlines()]
    assert row == {"input": {"messages": [{"role": "system", "content": "Be exact."},
                                          {"role": "user", "content": "name a prime"}], "tools": []},
                   "preferred_output": [assistant("7")], "non_preferred_output": [assistant("9")]}
    compatibility = json.loads((tmp_path / "ok" / "compatibility.json").read_text(encoding="ascii"))
    assert compatibility["profile"]["validated_with"] == []
    assert compatibility["profile"]["support"] == "format; hosted acceptance not tested"
    assert not (tmp_path / "ok" / "README.md").exists()
    assert compatibility["profile"]["native_schema"] == dpo.NATIVE_SCHEMA

    tooled = [*text, session("c", TEXT, message("assistant", ToolCallPart(id="t", name="calc", arguments={})), False)]
    with pytest.raises(ProfileError, match=r"^profile fireworks-dpo-v3: Fireworks DPO v3 supports documented text "
                                           r"messages only \(row a-c0>c-c0, non_preferred_output message 0\); "
                                           "nothing was published$"):
        export(tooled, tmp_path / "refused", "dpo", dpo.PROFILE_ID)
    assert not [p for p in (tmp_path / "refused").iterdir() if not p.name.startswith(".sediment-")]


def schema_problems(data: Path) -> tuple[int, list[tuple[str, int, str | None]]]:
    """``sediment schema validate --json`` on a data file: its exit code and its problems."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    result = subprocess.run([sys.executable, "-m", "sediment", "schema", "validate", "--json", str(data)],
                            capture_output=True, text=True, env=environ, timeout=120, check=False)
    report = json.loads(result.stdout)
    return result.returncode, [(p["file"], p["line"], p["path"]) for p in report["problems"]]


@pytest.mark.parametrize(("pointer", "change"), [
    ("input/messages/2", lambda r: r["input"]["messages"].append({"role": "system", "content": "late"})),
    ("preferred_output", lambda r: r["preferred_output"].append(assistant("8"))),
    ("non_preferred_output/0", lambda r: r["non_preferred_output"][0].update(reasoning_content="hm")),
])
def test_dpo_rows_obey_their_native_schema_and_a_planted_wrong_one_is_one_problem(
        tmp_path: Path, pointer: str, change: Any) -> None:
    text = [session("a", TEXT, message("assistant", "7"), True), session("b", TEXT, message("assistant", "9"), False)]
    export(text, tmp_path / "ok", "dpo", dpo.PROFILE_ID)
    data = tmp_path / "ok" / "data.jsonl"
    assert schema_problems(data) == (0, [])
    [row] = [json.loads(line) for line in data.read_text(encoding="ascii").splitlines()]
    change(row)
    data.write_text(json.dumps(row) + "\n", encoding="ascii")
    assert schema_problems(data) == (6, [(str(data), 1, pointer)])


def test_an_sft_export_keeps_the_declared_tools_and_its_rows_obey_the_native_schema(tmp_path: Path) -> None:
    """Regression (issue 25), through a whole export: the declared tools reach the data row in
    request order; the row obeys fireworks-sft-row v2, and one without ``tools`` does not."""
    tools = (ToolDefinition(name="write_file", description="Write a file.", strict=True,
                            parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
             ToolDefinition(name="run_tests"))
    summary = export([session("a", TEXT, message("assistant", "7"), True, tools)], tmp_path / "ok", "sft",
                     sft.PROFILE_ID)
    assert (summary["rows"], summary["skipped"]) == (1, {})
    data = tmp_path / "ok" / "data.jsonl"
    [row] = [json.loads(line) for line in data.read_text(encoding="ascii").splitlines()]
    assert row["tools"] == [WRITE, RUN]
    [sidecar] = [json.loads(line) for line in (tmp_path / "ok" / "evidence.jsonl").read_text().splitlines()]
    assert sidecar["evidence"]["tool_definitions"] == "declared"
    assert schema_problems(data) == (0, [])
    del row["tools"]
    data.write_text(json.dumps(row) + "\n", encoding="ascii")
    assert schema_problems(data) == (6, [(str(data), 1, "")])
    built_in = (*tools, ToolDefinition(type="web_search_preview", name="web_search_preview"))
    with pytest.raises(ProfileError, match=r"^profile fireworks-sft-v2: Fireworks SFT v2 carries function tools only "
                                           r"\(row a-c0, tool 2\); nothing was published$"):
        export([session("a", TEXT, message("assistant", "7"), True, built_in)], tmp_path / "refused", "sft",
               sft.PROFILE_ID)


def test_an_sft_export_with_tools_is_byte_identical_under_shuffled_and_repeated_evidence(tmp_path: Path) -> None:
    """The declared tools (two orders of the same two, and none) change nothing of the export's
    determinism: repeating it, or shuffling the evidence, writes the same bytes."""
    write = ToolDefinition(name="write_file", description="Write a file.", strict=True,
                           parameters={"type": "object", "properties": {"path": {"type": "string"}}})
    run = ToolDefinition(name="run_tests")

    def sessions() -> list[Rollout]:
        return [session("a", TEXT, message("assistant", "7"), True, (write, run)),
                session("b", TEXT, message("assistant", ReasoningPart(content="odd"), "11"), True, (run, write)),
                session("c", [message("user", "name a square")], message("assistant", "9"), True),
                session("d", TEXT, message("assistant", ToolCallPart(id="t", name="run_tests", arguments={})), True,
                        (run,))]

    def files(out: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}

    first = tmp_path / "first"
    assert export(sessions(), first, "sft", sft.PROFILE_ID)["rows"] == 4
    assert sorted(len(json.loads(line)["tools"]) for line in (first / "data.jsonl").read_text().splitlines()) == [
        0, 1, 2, 2]
    for seed in (1, 2):
        shuffled = sessions()
        random.Random(seed).shuffle(shuffled)
        export(shuffled, tmp_path / f"again-{seed}", "sft", sft.PROFILE_ID)
        assert files(tmp_path / f"again-{seed}") == files(first)


def test_sft_reasoning_is_kept_and_a_developer_message_refuses(tmp_path: Path) -> None:
    answer = message("assistant", ReasoningPart(content="small primes"), "7")
    summary = export([session("a", TEXT, answer, True)], tmp_path / "ok", "sft", sft.PROFILE_ID)
    assert summary["rows"] == 1
    [row] = [json.loads(line) for line in (tmp_path / "ok" / "data.jsonl").read_text(encoding="ascii").splitlines()]
    assert row["messages"][-1] == {"role": "assistant", "reasoning_content": "small primes", "content": "7",
                                   "weight": 1}
    developer = [message("developer", "Be exact."), message("user", "name a prime")]
    with pytest.raises(ProfileError, match=f"^profile fireworks-sft-v2: {DEVELOPER}"):
        export([session("a", developer, answer, True)], tmp_path / "refused", "sft", sft.PROFILE_ID)


def test_the_cli_refuses_with_exit_code_9_and_one_line(tmp_path: Path) -> None:
    developer = [message("developer", "Be exact."), message("user", "name a prime")]
    bundle = write_bundle([session("a", developer, message("assistant", "7"), True)], tmp_path / "bundle",
                          org_id=ORG, policy=POLICY, quarantine_revision=0)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    result = subprocess.run([sys.executable, "-m", "sediment", "export", "sft", "--profile", sft.PROFILE_ID,
                             "--from", str(bundle), "--out", str(tmp_path / "out")], capture_output=True, text=True,
                            env=environ, timeout=120, check=False)
    assert result.returncode == 9, result.stderr
    assert f"profile fireworks-sft-v2: {DEVELOPER} (row a-c0, message 0); nothing was published" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_records_claim_the_format_only() -> None:
    registry = load_registry()
    for name in (sft.PROFILE_ID, dpo.PROFILE_ID):
        record = registry.profiles[name].record()
        assert (record["consumer"], record["validation"], record["support"], record["validated_with"]) == (
            "fireworks", "Fireworks documented JSONL contract, 2026-09-13", "format; hosted acceptance not tested", [])
    assert (registry.profiles[sft.PROFILE_ID].objective, registry.profiles[dpo.PROFILE_ID].objective) == ("sft", "dpo")
