"""Call logs read span by span (sediment.ingest.calls.spans): replayed messages are found by
their text, never parsed again, and the store holds exactly what a plain parse stores
(docs/performance.md, Replayed history)."""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.ingest import TranslationError
from sediment.ingest.calls import ReplayMemo, translate_call
from sediment.ingest.calls.spans import SpanReader
from sediment.ingest.reading import files as reading_files
from sediment.ingest.reading.files import ingest_files
from sediment.ingest.reading.json_text import JsonReader, RecordProblem
from sediment.store import FactStore

ORG = "org-spans"
CAPTURED = datetime(2026, 7, 1, tzinfo=UTC)


def _record_line(session: str, pieces: list[str], output: dict[str, Any], call: int, *, gap: str = ", ",
                 key: str = "messages", tools: list[str] | None = None, tools_first: bool = False,
                 call_format: str = "openai-chat") -> str:
    """A request/response pair whose ``request.messages`` is the given element texts, and whose
    ``request.tools`` (when given) is the given tool texts, after the messages or before them. As
    a LiteLLM payload (``call_format="litellm"``): the messages at the top, the tools in
    ``model_parameters`` (after the response, as LiteLLM writes it, or before the messages)."""
    response: dict[str, Any] = {"id": f"resp-{session}-{call}", "model": "m",
                                "choices": [{"index": 0, "message": output, "finish_reason": "stop"}]}
    if call_format == "openai-responses":
        key, response = "input", {"id": f"resp-{session}-{call}", "object": "response", "model": "m",
                                  "status": "completed", "output": [output]}
    if call_format == "anthropic":
        content = output["content"] if isinstance(output["content"], list) else [
            {"type": "text", "text": output["content"] or ""}]
        response = {"id": f"resp-{session}-{call}", "type": "message", "role": "assistant", "model": "m",
                    "content": content, "stop_reason": "end_turn"}
    listed = f'"{key}": [' + gap.join(pieces) + "]"
    if call_format == "litellm":
        parameters = '"model_parameters": {"temperature": 0' + (
            ', "tools": [' + gap.join(tools) + "]" if tools is not None else "") + "}"
        head = f'{{"metadata": {{"session_id": "{session}"}}, "model": "m", '
        if tools_first:
            return f'{head}{parameters}, {listed}, "response": {json.dumps(response)}}}'
        return f'{head}{listed}, "response": {json.dumps(response)}, {parameters}}}'
    if tools is not None:
        declared = '"tools": [' + gap.join(tools) + "]"
        listed = f"{declared}, {listed}" if tools_first else f"{listed}, {declared}"
    return f'{{"session_id": "{session}", "request": {{"model": "m", {listed}}}, "response": {json.dumps(response)}}}'


def _ingest(path: Path, home: Path, mode: str, call_format: str = "openai-chat") -> tuple[Any, FactStore]:
    """Ingest ``path`` into a new store: ``fast`` (the CLI's way), ``plain`` (the plain reader,
    with the replay memo) or ``bare`` (the plain reader, every call translated whole)."""
    store = FactStore(f"sqlite:///{home / f'{mode}.db'}")
    memo = ReplayMemo() if mode != "bare" else None
    report = ingest_files([str(path)], lambda record: translate_call(
        record, format=call_format, org_id=ORG, captured_at=CAPTURED, memo=memo), store,
        reader=(lambda: SpanReader(min_line=0)) if mode == "fast" else None)
    return report, store


def _content(home: Path, mode: str) -> list[Any]:
    with sqlite3.connect(home / f"{mode}.db") as db:
        calls = db.execute("SELECT fact_id, natural_key, session_id, record, input_hashes, output_hashes, raw_refs, "
                           "tools_hash FROM inference_calls ORDER BY fact_id").fetchall()
        blobs = db.execute("SELECT blob_hash, content FROM blobs ORDER BY blob_hash").fetchall()
    return [*calls, *blobs]


def _same_everywhere(lines: list[str], call_format: str = "openai-chat") -> tuple[list[str], int]:
    """Ingest ``lines`` the three ways; assert equal stores, Facts and problems. Returns the
    problems and how many elements the fast reader reused."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        path = home / "calls.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        results = {mode: _ingest(path, home, mode, call_format) for mode in ("fast", "plain")}
        with pytest.MonkeyPatch.context() as patch:  # bare: no text remembered, every one scanned
            patch.setattr(reading_files, "remembering_texts", contextlib.nullcontext)
            results["bare"] = _ingest(path, home, "bare", call_format)
        problems = {mode: [str(p) for p in report.problems] for mode, (report, _) in results.items()}
        assert problems["fast"] == problems["plain"] == problems["bare"]
        warnings = {mode: report.warnings for mode, (report, _) in results.items()}
        assert warnings["fast"] == warnings["plain"] == warnings["bare"]
        memo = ReplayMemo()  # call by call: the same Fact, warnings (in order) or refusal with the memo as without
        for line in lines:
            with contextlib.suppress(RecordProblem):
                assert _translated(JsonReader().parse(line), call_format, memo) == _translated(
                    JsonReader().parse(line), call_format, None)
        contents = {mode: _content(home, mode) for mode in results}
        assert contents["fast"] == contents["plain"] == contents["bare"]
        facts = {}
        for mode, (_, store) in results.items():
            facts[mode] = [call.model_dump() for session in store.session_ids(ORG)
                           for call in store.calls_for_session(ORG, session)]
        for fast, plain, bare in zip(facts["fast"], facts["plain"], facts["bare"], strict=True):
            for field in fast:  # field by field, so a failure names the field
                assert fast[field] == plain[field] == bare[field], field
        stored = json.dumps(facts["fast"], default=str)
        assert SECRET not in stored and GROWN not in stored  # every secret redacted, however it came
        sent = {}
        for line in lines:  # each stored call's raw record reads back as sent, its replayed lists included
            with contextlib.suppress(RecordProblem):
                record = JsonReader().parse(line)
                if SECRET[:8] not in json.dumps(record) and NEAR[:8] not in json.dumps(record):
                    sent[record["response"]["id"]] = record
        for fact in facts["fast"]:
            if fact["raw"]["response"]["id"] in sent:
                assert _typed(fact["raw"], keyed=True) == _typed(sent[fact["raw"]["response"]["id"]], keyed=True)
        reader = SpanReader(min_line=0)
        plain_reader = JsonReader()
        for line in lines:
            try:
                expected: Any = plain_reader.parse(line)
            except RecordProblem as exc:
                with pytest.raises(RecordProblem, match="^" + __import__("re").escape(str(exc)) + "$"):
                    reader.parse(line)
                continue
            assert _typed(reader.parse(line)) == _typed(expected)
        return problems["fast"], reader.reused


def _translated(record: Any, call_format: str, memo: ReplayMemo | None) -> Any:
    """One record's Facts and warnings (in their order), or its refusal."""
    try:
        translation = translate_call(record, format=call_format, org_id=ORG, captured_at=CAPTURED, memo=memo)
    except TranslationError as exc:
        return str(exc)
    return [fact.model_dump() for fact in translation.facts], translation.warnings, translation.skipped


def _typed(value: Any, *, keyed: bool = False) -> Any:
    """``value`` with every scalar's type beside it (``==`` takes 1, 1.0 and true for one); its
    objects' keys in order, or ``keyed`` by name (the store keeps objects by key)."""
    if isinstance(value, dict):
        items = sorted(value.items()) if keyed else value.items()
        return [(key, _typed(item, keyed=keyed)) for key, item in items]
    if isinstance(value, list):
        return [_typed(item, keyed=keyed) for item in value]
    return (type(value).__name__, json.dumps(value))


# --- the property: replayed, rewritten and compacted histories -----------------------------

#: A (fake) token, and one a character short of one (kept), which one more character makes a token.
SECRET = "ghp_" + "Q7wErT9yUi3oPa5sDf1gHj8kLz2xCv4bNm6M"
NEAR = "ghp_" + "Q7wErT9yUi3oPa5sDf1gHj8kLz2xC"
GROWN = NEAR + "Z"
TEXT = st.one_of(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
                 st.sampled_from([f"key {SECRET}", f"near {NEAR}", "x" * 40]))
NUMBER = st.sampled_from([1, 1.0, 0.0, -0.0, True, 10, 2.5])


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "tool"]))
    if role == "tool":
        found: dict[str, Any] = {"role": "tool", "tool_call_id": draw(st.sampled_from(["c1", "c2"])),
                                 "content": draw(TEXT)}
    elif role == "assistant" and draw(st.booleans()):  # a tool call, whose arguments may not be JSON (a warning)
        arguments = draw(st.sampled_from([json.dumps({"n": draw(NUMBER)}), "{not json"]))
        found = {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}
    else:
        found = {"role": role, "content": draw(TEXT)}
    if draw(st.booleans()):
        found["meta"] = {"n": draw(NUMBER), "tags": [draw(TEXT)]}
    return found


def _spell(message: dict[str, Any], how: str) -> str:
    """One spelling of a message: the same value in other bytes, or another value."""
    if how == "compact":
        return json.dumps(message, separators=(",", ":"))
    if how == "unicode":
        return json.dumps(message, ensure_ascii=False)
    if how == "reordered":
        return json.dumps(dict(reversed(list(message.items()))))
    if how == "spaced":
        return json.dumps(message, separators=(" ,  ", " : "))
    if how == "number":  # 1 ↔ 1.0 (another value), or an exponent (the same value)
        changed = json.loads(json.dumps(message))
        meta = changed.setdefault("meta", {"n": 1})
        meta["n"] = float(meta["n"]) if isinstance(meta["n"], int) else int(meta["n"])
        return json.dumps(changed)
    if how == "exponent":
        return json.dumps(message).replace("2.5", "25e-1").replace("1.0", "10E-1")
    if how == "escaped":  # a character as a \\u escape: the same value
        text = json.dumps(message)
        return text.replace('"role"', '"r\\u006fle"', 1)
    if how == "secret":  # a secret inserted into the replayed message
        changed = json.loads(json.dumps(message))
        changed["content"] = f"{changed.get('content') or ''} {SECRET}" if changed.get("role") != "tool" else SECRET
        return json.dumps(changed)
    if how == "grown":  # one more character: a kept near-token becomes a token
        text = json.dumps(message)
        return text.replace(NEAR, GROWN) if NEAR in text else text.replace('"role": "', f'"note": "{GROWN}", "role": "', 1)
    if how == "character":
        text = json.dumps(message)
        return text.replace('"role": "', '"role": "x', 1) if '"role": "tool"' not in text else text[:-1] + ', "x": 1}'
    return json.dumps(message)


SPELLINGS = ["plain", "compact", "unicode", "reordered", "spaced", "number", "exponent", "escaped", "character",
             "secret", "grown"]


@st.composite
def tool_entries(draw: st.DrawFn) -> dict[str, Any]:
    description = draw(st.one_of(TEXT, st.just(f"uses {SECRET}")))
    return {"type": "function", "function": {"name": draw(st.sampled_from(["read", "edit", "run"])),
                                              "description": description,
                                              "parameters": {"type": "object", "properties": {
                                                  "n": {"type": "integer", "default": draw(NUMBER)}}}}}


def _tool_step(draw: st.DrawFn, tools: list[str] | None) -> list[str] | None:
    """The tool list a Session's next call declares: the same texts again (most often), one entry
    spelled otherwise (the same value in other bytes, or another value), one more entry, or none."""
    step = draw(st.sampled_from(["same", "same", "respell", "append", "none"]))
    if step == "none" or tools is None:
        return None if step == "none" else [json.dumps(draw(tool_entries())) for _ in range(draw(st.integers(0, 3)))]
    tools = list(tools)
    if step == "respell" and tools:
        index = draw(st.integers(0, len(tools) - 1))
        tools[index] = _spell(json.loads(tools[index]), draw(st.sampled_from([s for s in SPELLINGS if s != "secret"])))
    elif step == "append":
        tools.append(json.dumps(draw(tool_entries())))
    return tools


def _as_item(message: dict[str, Any]) -> dict[str, Any]:
    """A Chat message as an OpenAI Responses item: a tool call as a ``function_call``, a tool
    result as a ``function_call_output``, any other message untyped (its role and content)."""
    extra = {"meta": message["meta"]} if "meta" in message else {}
    if message.get("tool_calls"):
        function = message["tool_calls"][0]["function"]
        return {"type": "function_call", "call_id": "c1", "name": function["name"],
                "arguments": function["arguments"], **extra}
    if message["role"] == "tool":
        return {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"],
                **extra}
    return message


def _as_blocks(message: dict[str, Any]) -> dict[str, Any]:
    """A Chat message as an Anthropic message: a tool call as a ``tool_use`` block, a tool result
    as a user message's ``tool_result`` block, any other message as it is."""
    extra = {"meta": message["meta"]} if "meta" in message else {}
    if message.get("tool_calls"):
        function = message["tool_calls"][0]["function"]
        arguments = function["arguments"]
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
        return {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": function["name"],
                                                  "input": arguments}], **extra}
    if message["role"] == "tool":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": message["tool_call_id"],
                                             "content": message["content"]}], **extra}
    return message


@st.composite
def histories(draw: st.DrawFn, call_format: str = "openai-chat") -> list[str]:
    """Lines of up to two interleaved Sessions: each call replays the previous call's
    messages and output byte for byte, except where a step rewrites one replayed message or
    compacts the history into a summary; and declares the tools of the previous call again,
    except where a step respells or adds one, or declares none."""
    lines: list[str] = []
    state: dict[str, list[str]] = {"s1": [], "s2": []}
    last_output: dict[str, str | None] = {"s1": None, "s2": None}
    declared: dict[str, list[str] | None] = {"s1": None, "s2": None}
    tools_first = draw(st.booleans())
    for call in range(draw(st.integers(1, 7))):
        session = draw(st.sampled_from(["s1", "s2"]))
        history = state[session]
        if last_output[session] is not None:
            history.append(last_output[session])  # type: ignore[arg-type]
        step = draw(st.sampled_from(["replay", "replay", "rewrite", "compact"]))
        if step == "rewrite" and history:
            index = draw(st.integers(0, len(history) - 1))
            history[index] = _spell(json.loads(history[index]), draw(st.sampled_from(SPELLINGS)))
        elif step == "compact" and history:
            keep = draw(st.integers(0, len(history)))
            history[:] = [json.dumps({"role": "user", "content": "summary " + draw(TEXT)}), *history[len(history) - keep:]]
        history.append(_spell(_shaped(call_format, draw(messages())), draw(st.sampled_from(SPELLINGS))))
        output = draw(messages().filter(lambda m: m["role"] != "tool"))
        output["role"] = "assistant"
        output = _shaped(call_format, output)
        last_output[session] = json.dumps(output)
        declared[session] = _tool_step(draw, declared[session])
        lines.append(_record_line(session, list(history), output, call, gap=draw(st.sampled_from([", ", ",", " ,\t"])),
                                  tools=declared[session], tools_first=tools_first, call_format=call_format))
    return lines


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_replayed_rewritten_and_compacted_histories_store_what_a_plain_parse_stores(lines: list[str]) -> None:
    _same_everywhere(lines)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories("openai-responses"))
def test_responses_items_replayed_rewritten_and_compacted_store_what_a_plain_parse_stores(lines: list[str]) -> None:
    """The same property for OpenAI Responses: typed items, whose consecutive assistant-side
    items (an output item and the tool call or message after it) make one message."""
    _same_everywhere(lines, "openai-responses")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories("anthropic"))
def test_anthropic_messages_replayed_rewritten_and_compacted_store_what_a_plain_parse_stores(lines: list[str]) -> None:
    """The same property for Anthropic Messages: tool calls and results as content blocks."""
    _same_everywhere(lines, "anthropic")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories("litellm"))
def test_litellm_payloads_replayed_rewritten_and_compacted_store_what_a_plain_parse_stores(lines: list[str]) -> None:
    """The same property for LiteLLM payloads: ``messages`` at the top of the record and the tool
    list in ``model_parameters``, before the messages or after the response."""
    _same_everywhere(lines, "litellm")


# --- examples --------------------------------------------------------------------------


def _session(turns: int, *, spell: Any = json.dumps) -> list[str]:
    history: list[str] = []
    lines = []
    for call in range(turns):
        history.append(spell({"role": "user", "content": f"turn {call} " + "x" * 300}))
        output = {"role": "assistant", "content": f"answer {call}", "meta": {"n": 1}}
        lines.append(_record_line("s", list(history), output, call))
        history.append(json.dumps(output))
    return lines


def test_replayed_messages_are_found_by_their_text_not_parsed_again() -> None:
    lines = _session(6)
    _, reused = _same_everywhere(lines)
    # call k replays 2k-1 messages... every element after its first sighting is reused
    assert reused == sum(2 * call - 1 for call in range(1, 6))
    reader = SpanReader(min_line=0)
    first, second = reader.parse(lines[1]), reader.parse(lines[2])
    assert second["request"]["messages"][0] is first["request"]["messages"][0]  # the very object


def test_a_number_spelled_otherwise_in_a_replayed_message_is_stored_as_sent() -> None:
    """Regression: the replay memo took 1.0 for the 1 it had seen (Python's ==) and stored 1."""
    lines = _session(3)
    lines[2] = lines[2].replace('"meta": {"n": 1}', '"meta": {"n": 1.0}', 1)
    _same_everywhere(lines)
    memo = ReplayMemo()
    calls = [translate_call(JsonReader().parse(line), format="openai-chat", org_id=ORG, captured_at=CAPTURED,
                            memo=memo).facts[0] for line in lines]
    replayed = calls[2].raw["request"]["messages"][1]["meta"]["n"]  # type: ignore[attr-defined]
    assert replayed == 1.0 and type(replayed) is float


@pytest.mark.parametrize(("spoil", "problem"), [
    (lambda text: text.replace('"content"', '"role": "user", "content"', 1), "duplicate key 'role'"),
    (lambda text: text.replace('"content": "turn 1', '"deep": ' + "[" * 300 + "]" * 300 + ', "content": "turn 1', 1),
     "nested deeper than 256 levels"),
    (lambda text: text.replace('"content": "turn 1', '"deep": ' + "[" * 252 + "]" * 252 + ', "content": "turn 1', 1),
     None),  # as deep as a message may nest in its place: stored
    (lambda text: text.replace('"meta": {"n": 1}', '"meta": {"n": 1e400}', 1), "number out of range: 1e400"),
])
def test_a_spoiled_replayed_message_is_refused_as_a_plain_parse_refuses_it(spoil: Any, problem: str | None) -> None:
    """A replayed message whose bytes differ (here: made hostile) is parsed anew and refused
    with the plain parse's very words; the calls around it still ingest."""
    lines = _session(5)
    lines[3] = lines[3][:60] + spoil(lines[3][60:])
    problems, _ = _same_everywhere(lines)
    if problem is None:
        assert not problems
    else:
        assert len(problems) == 1 and problems[0].endswith(problem), problems


def test_bad_utf8_in_a_replayed_message_is_refused_as_a_plain_parse_refuses_it() -> None:
    lines = [line.encode() for line in _session(4)]
    lines[2] = lines[2].replace(b"turn 0", b"turn \xff", 1)
    reader, plain = SpanReader(min_line=0), JsonReader()
    reader.parse(lines[0])
    reader.parse(lines[1])
    with pytest.raises(RecordProblem) as fast:
        reader.parse(lines[2])
    with pytest.raises(RecordProblem) as slow:
        plain.parse(lines[2])
    assert str(fast.value) == str(slow.value) and str(fast.value).startswith("not UTF-8")
    assert reader.parse(lines[3]) == plain.parse(lines[3])


def test_a_list_under_an_escaped_key_or_given_twice_is_read_the_plain_way() -> None:
    lines = _session(3)
    escaped = lines[2].replace('"messages"', '"m\\u0065ssages"', 1)
    twice = lines[2].replace('"model": "m", ', '"messages": [], ', 1)
    reader = SpanReader(min_line=0)
    reader.parse(lines[1])
    assert reader.parse(escaped) == JsonReader().parse(escaped)
    with pytest.raises(RecordProblem, match="duplicate key 'messages'"):
        reader.parse(twice)


@pytest.mark.parametrize(("call_format", "key"), [("openai-responses", "input"), ("litellm", "messages")])
def test_the_other_formats_replayed_lists_are_read_by_span(call_format: str, key: str) -> None:
    reader = SpanReader(min_line=0)
    if call_format == "litellm":
        lines = [line.replace('"request": {"model": "m", "messages"', '"messages"', 1).replace(
            ']}, "response"', '], "response"', 1) for line in _session(4)]
    else:
        lines = [line.replace('"messages"', f'"{key}"', 1) for line in _session(4)]
    for line in lines:
        assert _typed(reader.parse(line)) == _typed(JsonReader().parse(line))
    assert reader.reused > 0


def test_spans_are_forgotten_beyond_the_memory_and_still_read_exactly() -> None:
    lines = _session(6)
    reader = SpanReader(min_line=0, memory_bytes=400)
    for line in lines:
        assert _typed(reader.parse(line)) == _typed(JsonReader().parse(line))


@pytest.mark.parametrize("session", [_session, lambda calls: _tool_session(calls + 6)], ids=["messages", "tools"])
def test_workers_read_with_their_own_span_reader(tmp_path: Path, session: Any) -> None:
    """Two workers store what one stores, byte for byte, replayed tool lists included (each
    worker's first call of a Session carries its whole list)."""
    for index in range(2):
        (tmp_path / f"calls-{index}.jsonl").write_text("\n".join(
            line.replace('"s"', f'"s{index}"').replace("resp-s-", f"resp-s{index}-") for line in session(4)) + "\n")
    paths = sorted(str(p) for p in tmp_path.glob("calls-*.jsonl"))
    contents = []
    for workers, reader in ((1, None), (2, lambda: SpanReader(min_line=0))):
        store = FactStore(f"sqlite:///{tmp_path / f'w{workers}.db'}")
        memo = ReplayMemo()
        report = ingest_files(paths, lambda record, memo=memo: translate_call(  # type: ignore[misc]
            record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo), store, workers=workers,
            reader=reader)
        assert report.stored["inference_calls"] == 2 * len(session(4)) and not report.problems
        contents.append(_content(tmp_path, f"w{workers}"))
    assert contents[0] == contents[1]


def test_a_list_read_before_is_taken_whole_only_when_its_text_ends_where_an_element_ends() -> None:
    """A line whose list starts with the whole text of a list read before takes its elements
    with one comparison; when that text ends inside a longer element (a number: ``1`` before
    ``123``) the list is read element by element, and every line reads as a plain parse reads it."""
    head = json.dumps({"role": "user", "content": "x" * 200})
    pieces = [[head, "12"], [head, "123"], [head, "12", "5"], [head, "12 "], [head, "12", head],
              [head, "1"], [head, "123", "4"], [head, "12", "5", "true"], [head, "12", "5"]]
    lines = [_record_line("s", piece, {"role": "assistant", "content": "a"}, call) for call, piece in enumerate(pieces)]
    reader = SpanReader(min_line=0)
    for line in lines:
        assert _typed(reader.parse(line)) == _typed(JsonReader().parse(line))
    whole = SpanReader(min_line=0)
    whole.parse(lines[2])
    parsed = whole.parsed
    whole.parse(lines[7])  # lines[2]'s list whole, then one element
    assert whole.parsed == parsed + 1
    _same_everywhere(lines)


def test_a_replayed_list_of_any_characters_is_taken_whole_by_its_bytes() -> None:
    """A Session's previous list is matched on the line's bytes, before they are decoded: with
    characters of one to four UTF-8 bytes (spelled raw or escaped) before, inside and after it,
    each call takes the previous call's list whole and parses only its new element, and every
    line (given as bytes, as ingest reads it, or as text) reads as a plain parse reads it."""
    texts = ["plain", "naïve café", "✓ done", "clef 𝄞 here", "é again"]  # odd calls spell them raw
    pieces: list[str] = []
    lines: list[str] = []
    for call, text in enumerate(texts * 2):
        pieces.append(json.dumps({"role": "user", "content": f"{text} {call} " + "é" * call}, ensure_ascii=call % 2 == 0))
        output = {"role": "assistant", "content": f"réponse {call} 𝄞"}
        lines.append(_record_line("s-ü", list(pieces), output, call))
    for form in (lambda line: line.encode("utf-8"), lambda line: line):
        reader = SpanReader(min_line=0)
        for call, line in enumerate(lines):
            parsed, reused = reader.parsed, reader.reused
            assert _typed(reader.parse(form(line))) == _typed(JsonReader().parse(line))
            assert (reader.parsed - parsed, reader.reused - reused) == ((1, 0) if call == 0 else (1, call))
    _same_everywhere(lines)


def test_text_that_is_not_utf8_encodable_is_read_the_plain_way() -> None:
    """A line given as text holding a lone surrogate (no UTF-8 spelling) is read as the plain
    reader reads it, and a line given as a bytearray as a bytes line is."""
    pieces = [json.dumps({"role": "user", "content": "x" * 40})]
    line = _record_line("s", pieces, {"role": "assistant", "content": "a"}, 0).replace('"m"', '"\ud800"', 1)
    reader = SpanReader(min_line=0)
    assert _typed(reader.parse(line)) == _typed(JsonReader().parse(line))
    assert reader.parsed == 0  # not read by span: parsed whole
    plain = _record_line("s", pieces, {"role": "assistant", "content": "a"}, 1)
    assert _typed(reader.parse(bytearray(plain.encode()))) == _typed(JsonReader().parse(plain))
    assert reader.parsed == 1


def test_a_batch_is_appended_once_its_lines_reach_the_byte_bound(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is bounded by the bytes of the lines it was read from as well as by its count, and
    how the Facts are batched changes nothing that is stored."""
    path = tmp_path / "calls.jsonl"
    lines = _session(12)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    contents, batches = [], []
    for mode, bound in (("whole", reading_files.BATCH_BYTES), ("bytes", 3 * max(len(line) for line in lines))):
        monkeypatch.setattr(reading_files, "BATCH_BYTES", bound)
        store = FactStore(f"sqlite:///{tmp_path / f'{mode}.db'}")
        sizes: list[int] = []
        prepare = store.prepare
        monkeypatch.setattr(store, "prepare", lambda facts, sizes=sizes, prepare=prepare: (sizes.append(len(facts)),
                                                                                           prepare(facts))[1])
        memo = ReplayMemo()
        report = ingest_files([str(path)], lambda record, memo=memo: translate_call(  # type: ignore[misc]
            record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo), store)
        assert report.stored["inference_calls"] == 12 and not report.problems
        batches.append(sizes)
        contents.append(_content(tmp_path, mode))
    assert batches[0] == [12]  # under both bounds: one batch
    expected, held, size = [], 0, 0  # a batch ends at the line that takes its bytes to the bound
    for line in lines:
        held, size = held + 1, size + len(line) + 1
        if size >= 3 * max(len(line) for line in lines):
            expected.append(held)
            held = size = 0
    assert batches[1] == ([*expected, held] if held else expected)
    assert len(batches[1]) >= 2 and sum(batches[1]) == 12
    assert contents[0] == contents[1]


def _tool_session(calls: int, *, call_format: str = "openai-chat", tools_first: bool = False) -> list[str]:
    """One Session declaring the same four tools with every call; from call 8 on, a fifth, which
    is the first spelled with another number (``1.0``: another value)."""
    tools = [json.dumps({"type": "function", "function": {
        "name": f"tool{n}", "description": f"does {n} " + "d" * 3000,
        "parameters": {"type": "object", "properties": {"x": {"type": "integer", "default": 1}}}}}) for n in range(4)]
    history: list[str] = []
    lines = []
    for call in range(calls):
        history.append(json.dumps({"role": "user", "content": f"turn {call} " + "x" * 300}))
        declared = tools if call < 8 else [*tools, tools[0].replace('"default": 1', '"default": 1.0')]
        output = {"role": "assistant", "content": f"answer {call}"}
        lines.append(_record_line("s", list(history), output, call, tools=declared, tools_first=tools_first,
                                  call_format=call_format))
        history.append(json.dumps(output))
    return lines


def test_a_tool_list_sent_with_every_call_is_stored_once_and_read_back_as_sent(tmp_path: Path) -> None:
    """An agent declares its tools with every call. Each call's body holds its raw tool list as a
    delta on the Session's previous call (the entries kept, the new ones' hashes), not the list
    again, and every call reads back as sent (``_same_everywhere``)."""
    from sediment.store.blob_codec import unpack

    lines = _tool_session(10)
    _same_everywhere(lines)
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _ingest(path, tmp_path, "fast")
    with sqlite3.connect(tmp_path / "fast.db") as db:
        rows = db.execute("SELECT c.raw_refs, b.content FROM inference_calls c JOIN blobs b ON b.blob_hash = c.record "
                          "ORDER BY c.observed_at, c.fact_id").fetchall()
    deltas = []
    for refs, content in rows:
        assert ["request", "tools"] in json.loads(refs)
        deltas.append(json.loads(unpack(content))["raw"]["request"]["tools"])
    first = [delta for delta in deltas if delta["base"] is None]
    assert len(first) == 1 and first[0]["keep"] == 0 and len(first[0]["add"]) == 4
    again = sorted((delta["keep"], len(delta["add"])) for delta in deltas if delta["base"] is not None)
    assert again == [(4, 0)] * 7 + [(4, 1)] + [(5, 0)]  # the fifth tool, stored once, then kept


def test_the_replay_memo_gives_a_resent_tool_list_the_previous_calls_entries() -> None:
    """Entries equal to the previous call's at their place become those very objects (so the
    redaction and the store skip them by identity); an entry spelled with another value stays."""
    lines = _tool_session(10)
    memo = ReplayMemo()
    records = [JsonReader().parse(line) for line in lines]
    calls = [translate_call(record, format="openai-chat", org_id=ORG, captured_at=CAPTURED, memo=memo).facts[0]
             for record in records]
    first, second, changed = (record["request"]["tools"] for record in (records[0], records[1], records[8]))
    assert all(a is b for a, b in zip(second, first, strict=True))
    assert all(a is b for a, b in zip(calls[1].tools or (), calls[0].tools or (), strict=True))  # type: ignore[attr-defined]
    assert all(a is b for a, b in zip(changed[:4], first, strict=True))
    assert changed[4]["function"]["parameters"]["properties"]["x"]["default"] == 1.0
    assert type(changed[4]["function"]["parameters"]["properties"]["x"]["default"]) is float


@pytest.mark.parametrize("call_format", ["anthropic", "openai-responses"])
def test_the_other_formats_tool_lists_are_read_by_span_and_stored_once(call_format: str, tmp_path: Path) -> None:
    """Anthropic Messages (tools before the messages, as its callers often send them) and
    OpenAI Responses declare their tools in ``request.tools`` too: read by span, each entry given
    the previous call's object, stored as a delta, and every call read back as sent."""
    if call_format == "anthropic":
        tools = [{"name": f"tool{n}", "description": f"does {n} " + "d" * 600,
                  "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}} for n in range(3)]
    else:
        tools = [{"type": "function", "name": f"tool{n}", "description": f"does {n} " + "d" * 600,
                  "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}} for n in range(3)]
    history: list[dict[str, Any]] = []
    lines = []
    for call in range(6):
        if call_format == "anthropic":
            history.append({"role": "user", "content": f"turn {call} " + "x" * 300})
            request = {"model": "m", "max_tokens": 100, "tools": tools, "messages": history}
            response: dict[str, Any] = {"id": f"resp-{call}", "type": "message", "role": "assistant", "model": "m",
                                        "content": [{"type": "text", "text": f"answer {call}"}],
                                        "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
            output: dict[str, Any] = {"role": "assistant", "content": response["content"]}
        else:
            history.append({"role": "user", "content": f"turn {call} " + "x" * 300})
            request = {"model": "m", "input": history, "tools": tools}
            output = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"answer {call}"}]}
            response = {"id": f"resp-{call}", "object": "response", "model": "m", "status": "completed", "output": [output]}
        lines.append(json.dumps({"session_id": "s", "request": request, "response": response}))
        history = [*history, output]
    problems, reused = _same_everywhere(lines, call_format)
    assert not problems and reused > 0
    reader = SpanReader(min_line=0)
    first, second = (reader.parse(line) for line in lines[:2])
    assert all(a is b for a, b in zip(second["request"]["tools"], first["request"]["tools"], strict=True))
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _ingest(path, tmp_path, "fast", call_format)
    with sqlite3.connect(tmp_path / "fast.db") as db:
        refs = [json.loads(row[0]) for row in db.execute("SELECT raw_refs FROM inference_calls")]
    assert len(refs) == 6 and all(["request", "tools"] in found for found in refs)


@pytest.mark.parametrize("tools_first", [False, True], ids=["tools-after-response", "tools-before-messages"])
def test_a_litellm_log_translates_replayed_messages_once_and_stores_its_tool_list_once(tools_first: bool,
                                                                                      tmp_path: Path) -> None:
    """A LiteLLM payload replays ``messages`` and resends ``model_parameters.tools`` as a
    request/response pair does: the span reader takes both by their bytes (whichever comes first),
    the replay memo translates a replayed message once, and the store keeps the raw tool list as
    a delta on the Session's previous call. Every call reads back as sent (``_same_everywhere``)."""
    from sediment.store.blob_codec import unpack

    lines = _tool_session(10, call_format="litellm", tools_first=tools_first)
    problems, reused = _same_everywhere(lines, "litellm")
    assert not problems and reused > 0
    reader = SpanReader(min_line=0)
    first, second = (reader.parse(line) for line in lines[:2])
    assert all(a is b for a, b in zip(second["model_parameters"]["tools"], first["model_parameters"]["tools"],
                                      strict=True))
    assert second["messages"][0] is first["messages"][0]
    memo = ReplayMemo()
    calls = [translate_call(JsonReader().parse(line), format="litellm", org_id=ORG, captured_at=CAPTURED,
                            memo=memo).facts[0] for line in lines[:3]]
    before, after = calls[1].input_messages, calls[2].input_messages  # type: ignore[attr-defined]
    assert len(after) == len(before) + 2 and all(a is b for a, b in zip(after[:len(before)], before, strict=True))
    assert all(a is b for a, b in zip(calls[1].tools, calls[0].tools, strict=True))  # type: ignore[attr-defined]
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _ingest(path, tmp_path, "fast", "litellm")
    with sqlite3.connect(tmp_path / "fast.db") as db:
        rows = db.execute("SELECT c.raw_refs, b.content FROM inference_calls c JOIN blobs b ON b.blob_hash = c.record "
                          "ORDER BY c.observed_at, c.fact_id").fetchall()
    deltas = []
    for refs, content in rows:
        assert ["model_parameters", "tools"] in json.loads(refs) and ["messages"] in json.loads(refs)
        deltas.append(json.loads(unpack(content))["raw"]["model_parameters"]["tools"])
    assert sorted((delta["keep"], len(delta["add"])) for delta in deltas) == [(0, 4)] + [(4, 0)] * 7 + [(4, 1), (5, 0)]


@pytest.mark.parametrize("call_format", ["openai-responses", "litellm"])
def test_replayed_responses_items_are_read_once_and_an_assistant_turn_of_several_items_stays_one_message(
        call_format: str) -> None:
    """OpenAI Responses items (as a request's ``input``, or a LiteLLM payload's ``messages``): a
    replayed item is translated once, instructions sent again are the same system message, and
    an assistant turn of several items (reasoning, then
    a tool call) read before is the very message made of them before, so redaction and the
    store skip it by identity. What is stored is what a plain parse stores."""
    history: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": "task " + "x" * 300}]}]
    lines = []
    for call in range(4):
        output = [{"type": "reasoning", "id": f"rs{call}", "summary": [{"type": "summary_text", "text": f"think {call}"}]},
                  {"type": "function_call", "call_id": f"c{call}", "name": "run", "arguments": json.dumps({"n": call})}]
        response = {"id": f"resp-{call}", "object": "response", "model": "m", "status": "completed", "output": output}
        record: dict[str, Any] = ({"metadata": {"session_id": "s"}, "model": "m", "messages": history,
                                   "response": response, "model_parameters": {"instructions": "be brief"}}
                                  if call_format == "litellm" else
                                  {"session_id": "s", "request": {"model": "m", "instructions": "be brief",
                                                                  "input": history}, "response": response})
        lines.append(json.dumps(record))
        history = [*history, *output, {"type": "function_call_output", "call_id": f"c{call}", "output": f"done {call}"}]
    memo = ReplayMemo()
    calls = [translate_call(JsonReader().parse(line), format=call_format, org_id=ORG, captured_at=CAPTURED,
                            memo=memo).facts[0] for line in lines]
    for before, after in itertools.pairwise(calls):
        inputs, earlier = after.input_messages, before.input_messages  # type: ignore[attr-defined]
        assert len(inputs) == len(earlier) + 2 and all(a is b for a, b in zip(inputs[:len(earlier)], earlier,
                                                                               strict=True))
    roles = ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert [m.role for m in calls[2].input_messages] == roles  # type: ignore[attr-defined]
    assert [len(m.parts) for m in calls[2].input_messages] == [1, 1, 2, 1, 2, 1]  # type: ignore[attr-defined]
    problems, reused = _same_everywhere(lines, call_format)
    assert not problems and reused > 0


def test_replayed_anthropic_messages_are_translated_once() -> None:
    """An Anthropic Messages request's replayed messages, and its system prompt sent again, are
    the previous call's very translations (redaction and the store then skip them by identity)."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "task " + "x" * 300}]
    lines = []
    for call in range(4):
        content = [{"type": "thinking", "thinking": f"think {call}", "signature": "sig"},
                   {"type": "tool_use", "id": f"t{call}", "name": "run", "input": {"n": call}}]
        response = {"id": f"resp-{call}", "type": "message", "role": "assistant", "model": "m", "content": content,
                    "stop_reason": "tool_use"}
        lines.append(json.dumps({"session_id": "s", "request": {"model": "m", "max_tokens": 9, "system": "be brief",
                                                                "messages": history}, "response": response}))
        history = [*history, {"role": "assistant", "content": content},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{call}", "content": "ok"}]}]
    memo = ReplayMemo()
    calls = [translate_call(JsonReader().parse(line), format="anthropic", org_id=ORG, captured_at=CAPTURED,
                            memo=memo).facts[0] for line in lines]
    for before, after in itertools.pairwise(calls):
        inputs, earlier = after.input_messages, before.input_messages  # type: ignore[attr-defined]
        assert len(inputs) == len(earlier) + 2 and all(a is b for a, b in zip(inputs[:len(earlier)], earlier,
                                                                               strict=True))
    assert [m.role for m in calls[1].input_messages] == ["system", "user", "assistant", "user"]  # type: ignore[attr-defined]
    problems, reused = _same_everywhere(lines, "anthropic")
    assert not problems and reused > 0


@pytest.mark.parametrize("call_format", ["openai-chat", "openai-responses", "anthropic", "litellm"])
def test_every_format_stores_and_warns_the_same_with_two_workers_and_a_session_split_across_files(
        tmp_path: Path, call_format: str) -> None:
    """A Session's calls in two files, read by two workers: the second file's worker starts with
    no memo of the Session, and the store, the warnings and the calls read back are what one
    process gives, byte for byte. Each call's tool call has arguments that are not JSON (a
    warning, given again for every replayed copy of it)."""
    history: list[str] = []
    lines = []
    for call in range(6):
        history.append(json.dumps({"role": "user", "content": f"turn {call} " + "x" * 300}))
        output = _shaped(call_format, {
            "role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "f", "arguments": "{not json" if call % 2 else json.dumps({"n": call})}}]})
        lines.append(_record_line("s", list(history), output, call, call_format=call_format))
        history.append(json.dumps(output))
    (tmp_path / "calls-0.jsonl").write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    (tmp_path / "calls-1.jsonl").write_text("\n".join(lines[3:]) + "\n", encoding="utf-8")
    paths = sorted(str(p) for p in tmp_path.glob("calls-*.jsonl"))
    contents, warnings, calls = [], [], []
    for workers in (1, 2):
        store = FactStore(f"sqlite:///{tmp_path / f'w{workers}.db'}")
        memo = ReplayMemo()
        report = ingest_files(paths, lambda record, memo=memo: translate_call(  # type: ignore[misc]
            record, format=call_format, org_id=ORG, captured_at=CAPTURED, memo=memo), store, workers=workers,
            reader=SpanReader)
        assert report.stored["inference_calls"] == 6 and not report.problems
        contents.append(_content(tmp_path, f"w{workers}"))
        warnings.append(report.warnings)
        calls.append([call.model_dump() for call in store.calls_for_session(ORG, "s")])
        store.close()
    assert contents[0] == contents[1] and calls[0] == calls[1]
    assert warnings[0] == warnings[1] and warnings[0]["malformed_tool_arguments"] == 5  # calls 1, 2, 3, 4, 5


def _shaped(call_format: str, message: dict[str, Any]) -> dict[str, Any]:
    """A Chat message in ``call_format``'s shape (LiteLLM logs Chat messages as they are)."""
    shape = {"openai-responses": _as_item, "anthropic": _as_blocks}.get(call_format)
    return message if shape is None else shape(message)
