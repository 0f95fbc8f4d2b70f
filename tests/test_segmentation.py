"""Rollout segmentation and Turn construction (docs/evidence.md, with the continuity cases)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from sediment.model.facts import (
    DeveloperDecision,
    InferenceCall,
    InferenceMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from sediment.model.rollout import (
    FRAGMENT_REASONS,
    Turn,
    canonical_messages,
    output_tool_calls,
    scoring_text,
    segment_calls,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
INF = float("inf")
NAN = float("nan")

Messages = tuple[InferenceMessage, ...]


# --- factories -----------------------------------------------------------------------


def text(content: str) -> TextPart:
    return TextPart(content=content)


def reasoning(content: str) -> ReasoningPart:
    return ReasoningPart(content=content)


def tool_call(call_id: str, name: str = "edit", **arguments: Any) -> ToolCallPart:
    return ToolCallPart(id=call_id, name=name, arguments=arguments)


def tool_result(call_id: str, result: Any) -> ToolCallResponsePart:
    return ToolCallResponsePart(id=call_id, result=result)


def msg(role: str, *parts: Any, finish_reason: str | None = None) -> InferenceMessage:
    return InferenceMessage(role=role, parts=tuple(parts), finish_reason=finish_reason)


def system(content: str = "You are a coding agent.") -> InferenceMessage:
    return msg("system", text(content))


def user(content: str) -> InferenceMessage:
    return msg("user", text(content))


def assistant(*parts: Any, finish_reason: str | None = None) -> InferenceMessage:
    return msg("assistant", *parts, finish_reason=finish_reason)


def call(
    call_id: str,
    input_messages: Messages | list[InferenceMessage],
    output_messages: Messages | list[InferenceMessage] = (),
    *,
    seconds: int = 0,
    observed_at: datetime | None = None,
    session_id: str = "sess-1",
) -> InferenceCall:
    return InferenceCall(
        inference_call_id=call_id,
        org_id="acme",
        session_id=session_id,
        input_messages=tuple(input_messages),
        output_messages=tuple(output_messages),
        observed_at=observed_at or T0 + timedelta(seconds=seconds),
    )


def segment(*calls: InferenceCall) -> tuple[tuple[tuple[Turn, ...], ...], Counter[str]]:
    return segment_calls(list(calls))


def turn_ids(segments: tuple[tuple[Turn, ...], ...]) -> list[list[str]]:
    return [[t.inference_call_id for t in seg] for seg in segments]


PROMPT: Messages = (system(), user("Fix the failing test."))


# --- the continuity cases ------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A two-call scenario: call 1 is (prev_input, prev_output), call 2 has next_input."""

    prev_output: Messages
    next_input: Callable[[Messages, Messages], Messages]
    expected: str | None
    prev_input: Messages = PROMPT


def echo(*replay: InferenceMessage) -> Callable[[Messages, Messages], Messages]:
    """Next input = previous input + ``replay`` (the echo) + a new user message."""
    return lambda prev_input, _out: (*prev_input, *replay, user("Continue."))


def faithful(prev_input: Messages, prev_output: Messages) -> Messages:
    return (*prev_input, *prev_output, user("Continue."))


TOOL_ARGS = {"path": "src/app.py", "edits": [{"old": "a", "new": "b"}], "dry_run": False}

CASES: dict[str, Case] = {
    # --- continue ---------------------------------------------------------------------
    "text-continues": Case(
        prev_output=(assistant(text("Looking at the test."), finish_reason="stop"),),
        next_input=faithful,
        expected=None,
    ),
    "tool-continues": Case(
        prev_output=(assistant(tool_call("call-1", **TOOL_ARGS)),),
        next_input=lambda i, o: (*i, *o, msg("tool", tool_result("call-1", {"ok": True}))),
        expected=None,
    ),
    "reasoning-continues": Case(
        prev_output=(assistant(reasoning("Think first."), text("Done.")),),
        next_input=faithful,
        expected=None,
    ),
    "reasoning-only-output-continues": Case(
        prev_output=(assistant(reasoning("Only thoughts.")),),
        next_input=faithful,
        expected=None,
    ),
    "non-finite-continues": Case(
        prev_output=(assistant(tool_call("c", score=NAN, hi=INF, lo=-INF)),),
        next_input=echo(assistant(tool_call("c", score=float("nan"), hi=INF, lo=-INF))),
        expected=None,
    ),
    "object-key-order-continues": Case(
        prev_output=(assistant(tool_call("c", first=1, second={"x": 1, "y": [1, 2]})),),
        next_input=echo(assistant(tool_call("c", second={"y": [1, 2], "x": 1}, first=1))),
        expected=None,
    ),
    "finish-reason-ignored": Case(
        prev_output=(assistant(text("ok"), finish_reason="stop"),),
        next_input=echo(assistant(text("ok"), finish_reason=None)),
        expected=None,
    ),
    "tool-response-output-is-substantive": Case(
        prev_output=(msg("tool", tool_result("c", None)),),
        next_input=faithful,
        expected=None,
    ),
    # --- prior_output_absent ----------------------------------------------------------
    "absent-output": Case(
        prev_output=(),
        next_input=lambda i, _o: (*i, user("Anyone there?")),
        expected="prior_output_absent",
    ),
    "empty-parts": Case(
        prev_output=(assistant(),),
        next_input=faithful,
        expected="prior_output_absent",
    ),
    "empty-text": Case(
        prev_output=(assistant(text("")),),
        next_input=faithful,
        expected="prior_output_absent",
    ),
    "empty-text-and-reasoning": Case(
        prev_output=(assistant(reasoning(""), text("")), assistant()),
        next_input=faithful,
        expected="prior_output_absent",
    ),
    "empty-text-with-changed-input": Case(
        prev_output=(assistant(text("")),),
        next_input=lambda _i, _o: (user("Completely different history."),),
        expected="prior_output_absent",
    ),
    # --- prior_output_not_replayed ----------------------------------------------------
    "absent-echo": Case(
        prev_output=(assistant(text("Answer.")),),
        next_input=echo(),
        expected="prior_output_not_replayed",
    ),
    "contradictory-echo": Case(
        prev_output=(assistant(text("Answer A.")),),
        next_input=echo(assistant(text("Answer B."))),
        expected="prior_output_not_replayed",
    ),
    "regrouped-echo": Case(
        prev_output=(assistant(text("Plan.")), assistant(tool_call("c", path="a.py"))),
        next_input=echo(assistant(text("Plan."), tool_call("c", path="a.py"))),
        expected="prior_output_not_replayed",
    ),
    "split-echo": Case(
        prev_output=(assistant(text("Plan."), tool_call("c", path="a.py")),),
        next_input=echo(assistant(text("Plan.")), assistant(tool_call("c", path="a.py"))),
        expected="prior_output_not_replayed",
    ),
    "reordered-parts": Case(
        prev_output=(assistant(text("Plan."), tool_call("c", path="a.py")),),
        next_input=echo(assistant(tool_call("c", path="a.py"), text("Plan."))),
        expected="prior_output_not_replayed",
    ),
    "changed-role": Case(
        prev_output=(assistant(text("Answer.")),),
        next_input=echo(msg("user", text("Answer."))),
        expected="prior_output_not_replayed",
    ),
    "reasoning-dropped-from-echo": Case(
        prev_output=(assistant(reasoning("Hmm."), text("Answer.")),),
        next_input=echo(assistant(text("Answer."))),
        expected="prior_output_not_replayed",
    ),
    "boolean-vs-number": Case(
        prev_output=(assistant(tool_call("c", flag=True)),),
        next_input=echo(assistant(tool_call("c", flag=1))),
        expected="prior_output_not_replayed",
    ),
    "number-vs-boolean": Case(
        prev_output=(assistant(tool_call("c", flag=0)),),
        next_input=echo(assistant(tool_call("c", flag=False))),
        expected="prior_output_not_replayed",
    ),
    "list-order-change": Case(
        prev_output=(assistant(tool_call("c", paths=["a", "b"])),),
        next_input=echo(assistant(tool_call("c", paths=["b", "a"]))),
        expected="prior_output_not_replayed",
    ),
    "cache-control-changed": Case(
        prev_output=(
            assistant(tool_call("c", body={"text": "x", "cache_control": {"type": "ephemeral"}})),
        ),
        next_input=echo(
            assistant(tool_call("c", body={"text": "x", "cache_control": {"type": "persistent"}}))
        ),
        expected="prior_output_not_replayed",
    ),
    "cache-control-removed": Case(
        prev_output=(
            assistant(tool_call("c", body={"text": "x", "cache_control": {"type": "ephemeral"}})),
        ),
        next_input=echo(assistant(tool_call("c", body={"text": "x"}))),
        expected="prior_output_not_replayed",
    ),
    "different-non-finite": Case(
        prev_output=(assistant(tool_call("c", value=INF)),),
        next_input=echo(assistant(tool_call("c", value=-INF))),
        expected="prior_output_not_replayed",
    ),
    "nan-vs-inf": Case(
        prev_output=(assistant(tool_call("c", value=NAN)),),
        next_input=echo(assistant(tool_call("c", value=INF))),
        expected="prior_output_not_replayed",
    ),
    "tool-call-id-changed": Case(
        prev_output=(assistant(tool_call("call-1", path="a.py")),),
        next_input=echo(assistant(tool_call("call-2", path="a.py"))),
        expected="prior_output_not_replayed",
    ),
    # --- input_history_changed --------------------------------------------------------
    "rewritten-input": Case(
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda _i, o: (system(), user("Fix the OTHER test."), *o, user("Continue.")),
        expected="input_history_changed",
    ),
    "shortened-input": Case(
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda _i, _o: (user("Summary of the conversation so far."),),
        expected="input_history_changed",
    ),
    "dropped-system-message": Case(
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda i, o: (*i[1:], *o, user("Continue.")),
        expected="input_history_changed",
    ),
    "literal-json-text-key-order": Case(
        prev_input=(user('{"first":1,"second":2}'),),
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda _i, o: (user('{"second":2,"first":1}'), *o, user("Continue.")),
        expected="input_history_changed",
    ),
    "literal-json-text-whitespace": Case(
        prev_input=(user('{"first": 1}'),),
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda _i, o: (user('{"first":1}'), *o, user("Continue.")),
        expected="input_history_changed",
    ),
    "history-reasoning-changed": Case(
        prev_input=(user("q"), assistant(reasoning("old thought"), text("a")), user("q2")),
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda i, o: (
            i[0],
            assistant(reasoning("new thought"), text("a")),
            i[2],
            *o,
            user("Continue."),
        ),
        expected="input_history_changed",
    ),
    "history-role-changed": Case(
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda i, o: (msg("developer", *i[0].parts), i[1], *o, user("Continue.")),
        expected="input_history_changed",
    ),
    "input-changed-takes-precedence-over-missing-echo": Case(
        prev_output=(assistant(text("Answer.")),),
        next_input=lambda _i, _o: (system(), user("Rewritten.")),
        expected="input_history_changed",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_continuity_case(name: str) -> None:
    case = CASES[name]
    first = call("call-1", case.prev_input, case.prev_output, seconds=0)
    next_input = case.next_input(case.prev_input, case.prev_output)
    second = call("call-2", next_input, (assistant(text("Next answer.")),), seconds=1)

    segments, fragmented = segment(first, second)

    if case.expected is None:
        assert fragmented == Counter()
        assert turn_ids(segments) == [["call-1", "call-2"]]
        assert segments[0][1].new_messages == next_input[len(case.prev_input) :]
    else:
        assert fragmented == Counter({case.expected: 1})
        assert turn_ids(segments) == [["call-1"], ["call-2"]]
        assert segments[1][0].new_messages == next_input
    assert segments[0][0].new_messages == case.prev_input


# --- new_messages, counters and turn retention ----------------------------------------


def test_continuing_turn_new_messages_is_the_suffix_including_the_echo() -> None:
    out1 = (assistant(tool_call("t1", path="a.py")),)
    in2 = (*PROMPT, *out1, msg("tool", tool_result("t1", "contents")))
    out2 = (assistant(text("Patched.")),)
    in3 = (*in2, *out2, user("Thanks, now run the tests."))

    segments, fragmented = segment(
        call("c1", PROMPT, out1, seconds=0),
        call("c2", in2, out2, seconds=1),
        call("c3", in3, (assistant(text("Running.")),), seconds=2),
    )

    assert fragmented == Counter()
    (turns,) = segments
    assert [t.new_messages for t in turns] == [
        PROMPT,
        (*out1, msg("tool", tool_result("t1", "contents"))),
        (*out2, user("Thanks, now run the tests.")),
    ]


def test_boundary_turn_new_messages_is_the_full_input_and_prev_always_advances() -> None:
    out1 = (assistant(text("One.")),)
    in2 = (user("Compacted summary."),)  # input_history_changed vs c1
    out2 = (assistant(text("Two.")),)
    in3 = (*in2, *out2, user("More."))  # continues from c2, not from c1

    segments, fragmented = segment(
        call("c1", PROMPT, out1, seconds=0),
        call("c2", in2, out2, seconds=1),
        call("c3", in3, (assistant(text("Three.")),), seconds=2),
    )

    assert fragmented == Counter({"input_history_changed": 1})
    assert turn_ids(segments) == [["c1"], ["c2", "c3"]]
    assert segments[1][0].new_messages == in2
    assert segments[1][1].new_messages == (*out2, user("More."))


def test_fragmented_counts_each_boundary_by_reason() -> None:
    out = (assistant(text("ok")),)
    calls = [
        call("c1", PROMPT, (), seconds=0),  # c2 → prior_output_absent
        call("c2", PROMPT, out, seconds=1),  # c3 → prior_output_not_replayed
        call("c3", (*PROMPT, user("x")), out, seconds=2),  # c4 → continues
        call("c4", (*PROMPT, user("x"), *out, user("y")), out, seconds=3),  # c5 → history
        call("c5", (user("short"),), (assistant(text("")),), seconds=4),  # c6 → output absent
        call("c6", (user("short"), assistant(text("")), user("z")), out, seconds=5),
    ]

    segments, fragmented = segment(*calls)

    assert fragmented == Counter(
        {"prior_output_absent": 2, "prior_output_not_replayed": 1, "input_history_changed": 1}
    )
    assert set(fragmented) <= set(FRAGMENT_REASONS)
    assert turn_ids(segments) == [["c1"], ["c2"], ["c3", "c4"], ["c5"], ["c6"]]
    # Fragmentation never drops a Turn.
    assert sum(len(s) for s in segments) == len(calls)


def test_fragment_reason_vocabulary() -> None:
    assert FRAGMENT_REASONS == (
        "prior_output_absent",
        "input_history_changed",
        "prior_output_not_replayed",
    )


def test_single_call_is_one_segment_with_its_full_input() -> None:
    segments, fragmented = segment(call("only", PROMPT, (assistant(text("hi")),)))
    assert fragmented == Counter()
    assert turn_ids(segments) == [["only"]]
    assert segments[0][0].new_messages == PROMPT


def test_no_calls_no_segments() -> None:
    assert segment_calls([]) == ((), Counter())


def test_decisions_attach_to_their_turns() -> None:
    decision = DeveloperDecision(
        decision_id="d1",
        org_id="acme",
        session_id="sess-1",
        agent_harness="claude-code",
        file_path="src/app.py",
        accepted=True,
        explicit=True,
        interaction_mode="agent",
        occurred_at=T0,
        captured_at=T0,
    )
    out1 = (assistant(text("a")),)
    segments, _ = segment_calls(
        [
            call("c1", PROMPT, out1, seconds=0),
            call("c2", (*PROMPT, *out1, user("b")), (assistant(text("b")),), seconds=1),
        ],
        {"c2": (decision,)},
    )
    assert [t.decisions for t in segments[0]] == [(), (decision,)]


# --- ordering ------------------------------------------------------------------------


def _conversation() -> list[InferenceCall]:
    """Five calls forming one continuous conversation, plus one compaction boundary."""
    calls: list[InferenceCall] = []
    history: Messages = PROMPT
    for i in range(5):
        output = (assistant(text(f"answer {i}"), tool_call(f"t{i}", step=str(i))),)
        calls.append(call(f"c{i}", history, output, seconds=i * 10))
        history = (*history, *output, user(f"follow-up {i}"))
    calls.append(call("c5", (user("compacted"),), (assistant(text("z")),), seconds=50))
    return calls


def test_calls_are_ordered_by_observed_at_regardless_of_input_order() -> None:
    calls = _conversation()
    expected = segment(*calls)
    assert turn_ids(expected[0]) == [["c0", "c1", "c2", "c3", "c4"], ["c5"]]
    assert expected[1] == Counter({"input_history_changed": 1})
    for seed in range(10):
        shuffled = list(calls)
        random.Random(seed).shuffle(shuffled)
        assert segment_calls(shuffled) == expected


def test_observed_at_ties_break_on_inference_call_id() -> None:
    out = (assistant(text("ok")),)
    b = call("b", PROMPT, out, seconds=0)
    a = call("a", PROMPT, out, seconds=0)
    segments, fragmented = segment(b, a)
    assert turn_ids(segments) == [["a"], ["b"]]
    assert fragmented == Counter({"prior_output_not_replayed": 1})


def test_ordering_uses_utc_instants_not_local_wall_clock() -> None:
    plus_two = timezone(timedelta(hours=2))
    out = (assistant(text("ok")),)
    # 13:00+02:00 is 11:00 UTC, i.e. before 12:00 UTC even though its wall clock is later.
    early = call("z-early", PROMPT, out, observed_at=datetime(2024, 5, 1, 13, 0, tzinfo=plus_two))
    late = call("a-late", (*PROMPT, *out, user("n")), out, observed_at=T0)
    segments, fragmented = segment(late, early)
    assert turn_ids(segments) == [["z-early", "a-late"]]
    assert fragmented == Counter()


# --- completion text and tool calls --------------------------------------------------


def test_completion_text_rules() -> None:
    output = (
        assistant(
            reasoning("secret chain of thought"),
            text("First paragraph."),
            text(""),
            tool_call(
                "t1",
                b="second",
                a="first",
                n=3,
                flag=True,
                nothing=None,
                empty="",
                nested={"z": "z-leaf", "y": ["l1", 2, "l2", {"k": "v"}]},
            ),
        ),
        msg("tool", tool_result("t1", "tool output is not scored")),
        assistant(text("Last words.")),
    )
    assert scoring_text(output) == "\n".join(
        ["First paragraph.", "first", "second", "l1", "l2", "v", "z-leaf", "Last words."]
    )


def test_completion_keeps_whitespace_only_pieces_and_drops_empty_ones() -> None:
    output = (assistant(text(""), text(" "), text("x"), text("")),)
    assert scoring_text(output) == " \nx"


def test_completion_of_nothing_is_empty() -> None:
    assert scoring_text(()) == ""
    assert scoring_text((assistant(),)) == ""
    assert scoring_text((assistant(reasoning("only reasoning"), text("")),)) == ""
    assert scoring_text((msg("tool", tool_result("t", "r")),)) == ""
    assert scoring_text((assistant(tool_call("t", n=1, b=False)),)) == ""


def test_turn_completion_and_tool_calls_come_from_the_call_output() -> None:
    input_tool = tool_call("old", path="input.py")
    t1 = tool_call("t1", name="read", path="a.py")
    t2 = tool_call("t2", name="write", path="b.py", content="new")
    output = (
        assistant(text("Reading."), t1),
        msg("tool", tool_result("t1", "...")),
        assistant(reasoning("ponder"), t2),
    )
    prompt = (*PROMPT, assistant(input_tool), msg("tool", tool_result("old", "x")))
    ((turn,),), _ = segment(call("c1", prompt, output))

    assert turn.tool_calls == (t1, t2)
    assert output_tool_calls(output) == (t1, t2)
    assert turn.completion == "Reading.\na.py\nnew\nb.py"
    assert turn.inference_call_id == "c1"


def test_no_tool_calls_gives_empty_tuple() -> None:
    ((turn,),), _ = segment(call("c1", PROMPT, (assistant(text("plain")),)))
    assert turn.tool_calls == ()
    assert turn.completion == "plain"
    assert output_tool_calls(()) == ()


# --- canonical form ------------------------------------------------------------------


def test_canonical_messages_ignore_finish_reason_and_dict_order() -> None:
    left = (assistant(tool_call("c", a=1, b={"x": [1, {"p": 1, "q": 2}]}), finish_reason="stop"),)
    right = (assistant(tool_call("c", b={"x": [1, {"q": 2, "p": 1}]}, a=1), finish_reason=None),)
    assert canonical_messages(left) == canonical_messages(right)


def test_canonical_messages_distinguish_booleans_numbers_and_non_finite() -> None:
    def canon(value: Any) -> Any:
        return canonical_messages((assistant(tool_call("c", v=value)),))

    assert canon(True) != canon(1)
    assert canon(False) != canon(0)
    assert canon(None) != canon(0)
    assert canon("1") != canon(1)
    assert canon(float("nan")) == canon(float("nan"))
    assert canon(INF) == canon(float("inf"))
    assert canon(INF) != canon(-INF)
    assert canon(NAN) != canon(INF)
    assert canon([1, 2]) != canon([2, 1])


def test_canonical_messages_compare_tool_results_and_text_literally() -> None:
    def canon(*parts: Any) -> Any:
        return canonical_messages((msg("tool", *parts),))

    assert canon(tool_result("t", {"a": 1, "b": 2})) == canon(tool_result("t", {"b": 2, "a": 1}))
    assert canon(tool_result("t", True)) != canon(tool_result("t", 1))
    assert canon(text('{"a":1,"b":2}')) != canon(text('{"b":2,"a":1}'))
    assert canon(text("x")) != canon(reasoning("x"))


def test_shared_replayed_messages_segment_as_equal_copies_do() -> None:
    """Calls read from the store share their replayed messages (the very objects); segmentation
    reuses the canonical forms of a shared prefix. Sessions whose histories are replayed,
    rewritten (an equal or a changed copy), compacted or not echoed segment alike whether the
    messages are shared or every call holds its own copies, and in any input order."""
    pool = [user("Fix it."), assistant(text("Done.")), assistant(tool_call("t1", path="a.py")),
            msg("tool", tool_result("t1", {"ok": True, "n": 1})), assistant(text(""))]
    for seed in range(30):
        rng = random.Random(seed)
        history: list[InferenceMessage] = [system(), user("Start.")]
        calls = []
        for index in range(10):
            step = rng.choice(["replay", "replay", "replay", "rewrite", "copy", "compact", "no_echo"])
            if step == "rewrite":
                history[rng.randrange(len(history))] = rng.choice(pool)
            elif step == "copy":  # an equal message, another object
                position = rng.randrange(len(history))
                history[position] = history[position].model_copy(deep=True)
            elif step == "compact":
                history = [user("Summary."), *history[rng.randrange(len(history)):]]
            output = [rng.choice(pool)]
            calls.append(call(f"c{index}", list(history), output, seconds=index))
            if step != "no_echo":
                history.extend(output)
            history.append(rng.choice(pool))
        shared = segment_calls(calls)
        copies = segment_calls([c.model_copy(deep=True) for c in calls])
        shuffled = list(calls)
        rng.shuffle(shuffled)
        assert shared == copies == segment_calls(shuffled)
        assert (turn_ids(shared[0]), shared[1]) == _reference_segments(calls)


def _reference_segments(calls: list[InferenceCall]) -> tuple[list[list[str]], Counter[str]]:
    """The continuity rule read plainly (docs/evidence.md): every call's whole input canonicalized."""
    ids: list[list[str]] = []
    fragmented: Counter[str] = Counter()
    for prev, current in zip([None, *calls], calls, strict=False):
        reason = None
        if prev is not None:
            before, now = canonical_messages(prev.input_messages), canonical_messages(current.input_messages)
            out = canonical_messages(prev.output_messages)
            if not any(isinstance(p, ToolCallPart | ToolCallResponsePart) or p.content
                       for m in prev.output_messages for p in m.parts):
                reason = "prior_output_absent"
            elif now[:len(before)] != before:
                reason = "input_history_changed"
            elif now[:len(before) + len(out)] != before + out:
                reason = "prior_output_not_replayed"
        if prev is None or reason is not None:
            if reason is not None:
                fragmented[reason] += 1
            ids.append([current.inference_call_id])
        else:
            ids[-1].append(current.inference_call_id)
    return ids, fragmented
