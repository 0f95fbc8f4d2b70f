"""hf-trl-sft-v3 and hf-trl-dpo-v4: the rows, the evidence sidecar, the order and the card on
hand-built SFT and DPO evidence; then the same exports (and the demo's) loaded by the real
datasets 5.2.0 and TRL 1.16.0 in .venv-consumers/hf (tests/consumers/hf/check_trl_profiles.py)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sediment_hf_chat import trl_dpo, trl_sft

from sediment.plugin import (
    CallCapture,
    InferenceMessage,
    ReasoningPart,
    Rollout,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
    canonical_digest,
)
from sediment.testing import (
    ORG,
    REPO,
    T0,
    DeveloperDecision,
    Evidence,
    FileAttribution,
    VerifierCommands,
    assign_split,
    call,
    export_objective,
    load_registry,
    message,
    outcome,
    read_rows,
    rollout,
    run_consumer,
    run_demo,
    run_objective,
)

ROOT = Path(__file__).parents[3]
CHECK = ROOT / "tests" / "consumers" / "hf" / "check_trl_profiles.py"
TRAIN = [s for s in (f"s{i}" for i in range(200)) if assign_split(s, 0.1) == "train"]
EVAL = [s for s in (f"s{i}" for i in range(200)) if assign_split(s, 0.1) == "eval"]
ACCEPT = ((True, True),)
REJECT = ((False, True),)


def session(name: str, prompt: list[InferenceMessage], answer: InferenceMessage, decisions: Any = ACCEPT,
            ci: str | None = "passed", capture: CallCapture | None = None,
            tools: tuple[ToolDefinition, ...] | None = None) -> Rollout:
    """One Session whose one call answers ``prompt`` with ``answer``, explicitly decided on."""
    commit = f"{abs(hash(name)) % 16**40:040x}"
    calls = [call(name, 0, prompt, [answer], model="gpt-x", model_call_id=f"resp-{name}", capture=capture,
                  tools=tools)]
    made = tuple(DeveloperDecision(
        decision_id=f"d-{name}-{i}", org_id=ORG, session_id=name, agent_harness="claude-code", file_path="a.py",
        accepted=accepted, explicit=explicit, interaction_mode="agent", call_id=f"resp-{name}",
        occurred_at=T0 + timedelta(seconds=i), captured_at=T0 + timedelta(days=1))
        for i, (accepted, explicit) in enumerate(decisions))
    attributions = (FileAttribution(inference_call_id=f"{name}-c0", repo=REPO, commit_sha=commit, file_path="a.py",
                                    similarity_score=0.9),)
    outcomes = [outcome(f"o-{name}", commit, ci, run_id=f"r-{name}")] if ci else []
    return rollout(name, calls=calls, commits=[commit], outcomes=outcomes, session_decisions=made,
                   file_attributions=attributions, split="eval" if name in EVAL else "train")


TOOL_PROMPT = [
    message("system", "You are a coding agent."),
    message("user", "fix add() — it subtracts"),
    message("assistant", ReasoningPart(content="look first"), "Reading.",
            ToolCallPart(id="tu_1", name="read_file", arguments={"path": "calc.py", "lines": 20})),
    message("tool", ToolCallResponsePart(id="tu_1", result="def add(a, b):\n    return a - b\n")),
]


#: The tools the tool loop's call declared (a description, strict, nested parameters).
TOOLS = (
    ToolDefinition(name="read_file", description="Read a file of the repository.", strict=True,
                   parameters={"type": "object", "properties": {"path": {"type": "string"},
                                                                "lines": {"type": "integer", "minimum": 1}},
                               "required": ["path"]}),
    ToolDefinition(name="write_file", parameters={"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}}}),
)
CHAT_TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file of the repository.",
                                      "parameters": TOOLS[0].parameters, "strict": True}},
    {"type": "function", "function": {"name": "write_file", "parameters": TOOLS[1].parameters}},
]


def rich_sessions() -> list[Rollout]:
    """SFT samples and DPO pairs with what the demo lacks: reasoning, a tool loop in the prompt,
    a tool call in the answer, declared tools with descriptions, a developer message,
    timestamp-like and non-ASCII text."""
    answer = message("assistant", ReasoningPart(content="swap the operator"), "Fixed: a + b.",
                     ToolCallPart(id="tu_2", name="write_file", arguments={"path": "calc.py", "content": "+"}))
    dated = [message("developer", "Answer with a date only."), message("user", "2026-03-02")]
    return [
        session(TRAIN[0], TOOL_PROMPT, answer, tools=TOOLS),
        session(TRAIN[1], TOOL_PROMPT, message("assistant", "I would rewrite everything."), REJECT, tools=TOOLS),
        session(TRAIN[2], dated, message("assistant", "2026-03-02T09:00:00Z")),
        session(TRAIN[3], dated, message("assistant", "née 2026‑03‑03"), REJECT),
        session(EVAL[0], [message("user", "what is 2+2?")], message("assistant", ReasoningPart(content="easy"), "4")),
    ]


def profile_export(rollouts: list[Rollout], out: Path, objective: str, profile: str,
                   split_enabled: bool = True) -> dict[str, Any]:
    return export_objective(Evidence(rollouts, split_enabled), out, objective=objective, profile=profile,
                            verifier_commands=VerifierCommands.empty())


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


def test_sft_rows_are_the_samples_with_reasoning_renamed_and_the_metadata_in_the_sidecar(tmp_path: Path) -> None:
    sessions = rich_sessions()
    canonical = run_objective(sessions, tmp_path / "canonical", objective="sft", split_enabled=True)
    samples = {r["metadata"]["completion_id"]: r for rows in canonical.rows.values() for r in rows}
    assert len(samples) == 3
    summary = profile_export(sessions, tmp_path / "out", "sft", trl_sft.PROFILE_ID)
    assert (summary["profile"], summary["objective"], summary["target"]) == ("hf-trl-sft-v3", "sft", "sft")
    assert (summary["rows"], summary["skipped"], summary["canonical_rows"]) == (3, {}, 3)
    assert summary["canonical_skipped"] == canonical.summary["sample_skipped"]
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        ".sediment-sft-target", "README.md", "compatibility.json", "data.eval.jsonl", "data.train.jsonl",
        "evidence.eval.jsonl", "evidence.train.jsonl"]
    registry = load_registry()
    for side in ("train", "eval"):
        data, evidence = lines(out / f"data.{side}.jsonl"), read_rows(out / f"evidence.{side}.jsonl", registry)
        assert len(data) == len(evidence)
        # ordered by the data row's digest
        assert [e["row_sha256"] for e in evidence] == sorted(e["row_sha256"] for e in evidence)
        for row, line in zip(data, evidence, strict=True):
            sample = samples[line["instance_id"]]
            assert list(row) == ["prompt", "completion", "tools"] and row["tools"] == sample["tools"]
            assert line["row_sha256"] == canonical_digest(row)
            assert line["source_row_sha256"] == canonical_digest(sample)
            assert line["prompt_sha256"] == canonical_digest({"prompt": sample["prompt"]})
            declared = "declared" if sample["tools"] else "none_declared"
            assert line["evidence"] == {"metadata": sample["metadata"], "tool_definitions": declared}
            assert line["split"] == side == sample["metadata"]["split"]
            assert row == {"prompt": renamed(sample["prompt"]), "completion": renamed(sample["completion"]),
                           "tools": sample["tools"]}
    [tooled] = [r for r in lines(out / "data.train.jsonl") if r["prompt"][0]["role"] == "system"]
    # the tools the call declared, in request order and chat-template shape; the other rows declared none
    assert tooled["tools"] == CHAT_TOOLS
    every = lines(out / "data.train.jsonl") + lines(out / "data.eval.jsonl")
    assert sorted(len(r["tools"]) for r in every) == [0, 0, 2]
    assert tooled["prompt"][2] == {"role": "assistant", "reasoning_content": "look first", "content": "Reading.",
                                   "tool_calls": [{"id": "tu_1", "type": "function", "function": {
                                       "name": "read_file", "arguments": {"path": "calc.py", "lines": 20}}}]}
    assert tooled["completion"][0]["reasoning_content"] == "swap the operator"
    compatibility = json.loads((out / "compatibility.json").read_text(encoding="ascii"))
    assert compatibility["profile"]["id"] == "hf-trl-sft-v3" and compatibility["profile"]["objective"] == "sft"
    assert compatibility["profile"]["validated_with"] == [["datasets", "5.2.0"], ["trl", "1.16.0"],
                                                          ["transformers", "5.24.0"]]
    assert compatibility["diagnostics"]["rows_by_split"] == {"train": 2, "eval": 1}
    assert "list: json" in (out / "README.md").read_text(encoding="utf-8")


def renamed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{("reasoning_content" if k == "thinking" else k): v for k, v in m.items()} for m in messages]


def test_dpo_rows_keep_chosen_and_rejected_with_an_explicit_prompt(tmp_path: Path) -> None:
    sessions = rich_sessions()
    canonical = run_objective(sessions, tmp_path / "canonical", objective="dpo", split_enabled=True)
    pairs = [r for rows in canonical.rows.values() for r in rows]
    assert len(pairs) == 2
    summary = profile_export(sessions, tmp_path / "out", "dpo", trl_dpo.PROFILE_ID)
    assert (summary["rows"], summary["canonical_rows"], summary["skipped"]) == (2, 2, {})
    data, evidence = lines(tmp_path / "out" / "data.train.jsonl"), lines(tmp_path / "out" / "evidence.train.jsonl")
    by_id = {f"{p['metadata']['chosen_completion_id']}>{p['metadata']['rejected_completion_id']}": p for p in pairs}
    assert sorted(by_id) == sorted(e["instance_id"] for e in evidence)
    for row, line in zip(data, evidence, strict=True):
        pair = by_id[line["instance_id"]]
        assert list(row) == ["prompt", "chosen", "rejected", "tools"]
        assert row == {"prompt": renamed(pair["prompt"]), "chosen": renamed(pair["chosen"]),
                       "rejected": renamed(pair["rejected"]), "tools": pair["tools"]}
        declared = "declared" if pair["tools"] else "none_declared"
        assert line["evidence"] == {"metadata": pair["metadata"], "tool_definitions": declared}
    # the tool loop's two calls declared the same two tools: the pair carries them, in request order and
    # chat-template shape; the dated pair's calls declared none
    assert sorted((r["tools"] for r in data), key=len) == [[], CHAT_TOOLS]
    assert {r["chosen"][0].get("content") for r in data} == {"Fixed: a + b.", "2026-03-02T09:00:00Z"}
    assert {r["rejected"][0]["content"] for r in data} == {"I would rewrite everything.", "née 2026‑03‑03"}


def test_profile_exports_are_byte_identical_under_shuffled_and_repeated_evidence(tmp_path: Path) -> None:
    def files(out: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}

    for objective, profile in (("sft", trl_sft.PROFILE_ID), ("dpo", trl_dpo.PROFILE_ID)):
        first = tmp_path / f"{profile}-a"
        profile_export(rich_sessions(), first, objective, profile)
        for seed in (1, 2):
            shuffled = rich_sessions()
            random.Random(seed).shuffle(shuffled)
            again = tmp_path / f"{profile}-{seed}"
            profile_export(shuffled, again, objective, profile)
            assert files(again) == files(first)


def test_rows_load_and_render_in_datasets_and_trl(consumer_python: Callable[[str], Path], tmp_path: Path) -> None:
    python = consumer_python("hf")  # skipped when .venv-consumers/hf is absent, failed under CI
    run_demo(tmp_path / "demo")
    demo = tmp_path / "demo" / "profiles"
    profile_export(rich_sessions(), tmp_path / "sft", "sft", trl_sft.PROFILE_ID)
    profile_export(rich_sessions(), tmp_path / "dpo", "dpo", trl_dpo.PROFILE_ID)
    profile_export(rich_sessions(), tmp_path / "sft-unsplit", "sft", trl_sft.PROFILE_ID, split_enabled=False)
    facts = run_consumer(python, CHECK, f"sft={demo / trl_sft.PROFILE_ID}", f"dpo={demo / trl_dpo.PROFILE_ID}",
                         f"sft={tmp_path / 'sft'}", f"dpo={tmp_path / 'dpo'}", f"sft={tmp_path / 'sft-unsplit'}",
                         home=tmp_path / "hf")
    demo_sft, demo_dpo, sft, dpo, unsplit = facts
    assert (demo_sft["splits"], demo_dpo["splits"]) == ({"train": 2, "eval": 2}, {"train": 1})
    assert (sft["splits"], dpo["splits"], unsplit["splits"]) == ({"train": 2, "eval": 1}, {"train": 2}, {"train": 3})
    for checked in facts:
        splits = list(checked["splits"])
        columns = ["prompt", "completion", "tools"] if checked["kind"] == "sft" else [
            "prompt", "chosen", "rejected", "tools"]
        assert checked["columns"] == dict.fromkeys(splits, columns)
        # the Arrow round trips give back exactly the JSON rows: through the card, load_dataset("json") and from_list
        for way in ("card_equal", "json_equal", "from_list_equal"):
            assert checked[way] == dict.fromkeys(splits, True), (way, checked)
        assert checked["conversational"] is True
        assert checked["rendered_keys"] == sorted(c for c in columns if c != "tools")
        # every prompt ends on a user or tool message: TRL adds the generation prompt
        assert checked["generation_prompt"] == checked["rendered_rows"] == sum(checked["splits"].values())
        # every recorded text (contents, reasoning, tool names and argument values) is in its own rendering
        assert checked["missing"] == []
        assert checked["render_arrow_equal"] is True
    # the declared tools reach the template: each one's name, description and parameters are in the
    # rendered prompt (the demo's calls declare read_file, write_file and run_tests, its one DPO pair too; the
    # rich export's tool loop declares two tools, in one SFT sample and one DPO pair)
    assert [checked.get("tools_rendered") for checked in facts] == [4 * 3, 3, 2, 2, 2]
    assert all(checked.get("tools_missing", []) == [] for checked in facts)


@pytest.mark.parametrize(("objective", "profile"), [
    ("sft", trl_sft.PROFILE_ID), ("dpo", trl_dpo.PROFILE_ID), ("sft", "fireworks-sft-v2"), ("dpo", "fireworks-dpo-v3")])
def test_trainer_profiles_keep_transcript_rows_with_the_marker_in_their_evidence(
        tmp_path: Path, objective: str, profile: str) -> None:
    capture = CallCapture(source="transcript:codex@0.104.0", lacks=("exact_request", "tool_definitions"))
    prompt = [message("user", "fix add()")]
    sessions = [session(TRAIN[0], prompt, message("assistant", "Fixed."), capture=capture),
                session(TRAIN[1], prompt, message("assistant", "Rewrote it."), REJECT),
                session(TRAIN[2], [message("user", "and sub()")], message("assistant", "Done."))]
    summary = profile_export(sessions, tmp_path / "out", objective, profile, split_enabled=False)
    assert summary["skipped"] == {}
    evidence = read_rows(tmp_path / "out" / "evidence.jsonl", load_registry())
    marker = {"source": "transcript:codex@0.104.0", "lacks": ["exact_request", "tool_definitions"]}
    found = {line["instance_id"]: line["evidence"]["metadata"] for line in evidence}
    if objective == "sft":
        assert len(found) == 2
        assert found[f"{TRAIN[0]}-c0"]["capture"] == marker and "capture" not in found[f"{TRAIN[2]}-c0"]
        if profile == trl_sft.PROFILE_ID:  # the transcript did not record the tools: the sidecar says so
            declared = {line["instance_id"]: line["evidence"]["tool_definitions"] for line in evidence}
            assert declared == {f"{TRAIN[0]}-c0": "not_recorded", f"{TRAIN[2]}-c0": "none_declared"}
    else:
        [metadata] = found.values()
        assert metadata["chosen_capture"] == marker and "rejected_capture" not in metadata
        # the chosen call's transcript did not record the tools: the pair's [] says nothing, and the sidecar says so
        assert [line["evidence"]["tool_definitions"] for line in evidence] == ["not_recorded"]


def test_sft_rows_with_a_provider_built_in_tool_are_skipped_as_non_function_tool(tmp_path: Path) -> None:
    """The canonical sample keeps the built-in tool as its type and name; a chat template has no
    schema to render for it, so the TRL profile counts the row as ``non_function_tool``."""
    search = ToolDefinition(type="web_search_preview", name="web_search_preview")
    prompt = [message("user", "fix add()")]
    sessions = [session(TRAIN[0], prompt, message("assistant", "Fixed."), tools=(TOOLS[0], search)),
                session(TRAIN[2], [message("user", "and sub()")], message("assistant", "Done."), tools=TOOLS)]
    canonical = run_objective(sessions, tmp_path / "canonical", objective="sft", split_enabled=False)
    tools = {r["metadata"]["completion_id"]: r["tools"] for r in canonical.rows["sft.jsonl"]}
    assert tools == {f"{TRAIN[0]}-c0": [CHAT_TOOLS[0], {"type": "web_search_preview", "name": "web_search_preview"}],
                     f"{TRAIN[2]}-c0": CHAT_TOOLS}
    summary = profile_export(sessions, tmp_path / "out", "sft", trl_sft.PROFILE_ID, split_enabled=False)
    assert (summary["rows"], summary["skipped"]) == (1, {"non_function_tool": 1})
    [row] = lines(tmp_path / "out" / "data.jsonl")
    assert row["tools"] == CHAT_TOOLS


def test_dpo_pairs_with_a_provider_built_in_tool_are_skipped_as_non_function_tool(tmp_path: Path) -> None:
    """The canonical pair keeps the built-in tool; hf-trl-dpo-v4 counts the pair as
    ``non_function_tool`` and keeps the pair whose calls declared function tools only."""
    search = ToolDefinition(type="web_search_preview", name="web_search_preview")
    built_in = (TOOLS[0], search)
    prompt, other = [message("user", "fix add()")], [message("user", "and sub()")]
    sessions = [session(TRAIN[0], prompt, message("assistant", "Fixed."), tools=built_in),
                session(TRAIN[1], prompt, message("assistant", "Rewrote it."), REJECT, tools=built_in),
                session(TRAIN[2], other, message("assistant", "Done."), tools=TOOLS),
                session(TRAIN[3], other, message("assistant", "Not done."), REJECT, tools=TOOLS)]
    canonical = run_objective(sessions, tmp_path / "canonical", objective="dpo", split_enabled=False)
    tools = {r["metadata"]["chosen_completion_id"]: r["tools"] for r in canonical.rows["dpo.jsonl"]}
    assert tools == {f"{TRAIN[0]}-c0": [CHAT_TOOLS[0], {"type": "web_search_preview", "name": "web_search_preview"}],
                     f"{TRAIN[2]}-c0": CHAT_TOOLS}
    summary = profile_export(sessions, tmp_path / "out", "dpo", trl_dpo.PROFILE_ID, split_enabled=False)
    assert (summary["rows"], summary["skipped"]) == (1, {"non_function_tool": 1})
    [row] = lines(tmp_path / "out" / "data.jsonl")
    assert row["tools"] == CHAT_TOOLS
