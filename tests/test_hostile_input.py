"""Hostile input on every ingest path: each record is stored exactly or refused with one line.

The rule (docs/operate.md "Ingest"): an ingest path either stores a record exactly (the Fact
read back from the store equals what was sent) or refuses it with one ``FILE:LINE: problem``
line naming the field; it never coerces, never crashes with a traceback, and never loses the
good records around a bad one. Each test here pins one way that went wrong: integers beyond 64
bits, duplicate keys, nesting, out-of-range times, over-long lines, and bugs reported as input.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import resource
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sediment.ingest import Translation, TranslationError
from sediment.ingest.calls import ReplayMemo, translate_call
from sediment.ingest.calls.toolkit import parse_timestamp
from sediment.ingest.ci.github import translate_github
from sediment.ingest.ci.neutral import translate_ci
from sediment.ingest.facts_jsonl import translate_fact
from sediment.ingest.reading.compressed import READ_BUFFER
from sediment.ingest.reading.files import MAX_DEPTH, IngestReport, _lines, ingest_files, records
from sediment.ingest.reading.json_text import JsonReader, RecordProblem
from sediment.model.facts import CIOutcome, DeveloperDecision, FactModel, InferenceCall, PullRequestMerge, Push
from sediment.store import FactStore

ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SHA = "3484a3fb816e0859fd6e1cea078d76385ff50625"
BIG = 18446744073709551616  # 2**64: one more than orjson's largest integer
GITHUB = Path(__file__).parent / "fixtures" / "github"

TRANSLATORS: dict[str, Callable[[dict[str, Any]], Translation]] = {
    "facts": lambda record: translate_fact(record, org_id=ORG),
    "ci": lambda record: translate_ci(record, org_id=ORG, captured_at=T0),
    "github": lambda record: translate_github(record, event=None, org_id=ORG, captured_at=T0),
    "calls": lambda record: translate_call(record, format="openai-chat", org_id=ORG, captured_at=T0,
                                           memo=ReplayMemo()),
}
TABLES = {"facts": "ci_outcomes", "ci": "ci_outcomes", "github": "ci_outcomes", "calls": "inference_calls"}


def ci_record(run_id: str = "b-1", **changes: Any) -> dict[str, Any]:
    return {"provider": "other", "run_id": run_id, "repo": "acme/widget", "commit_sha": SHA, "branch": "main",
            "result": "passed", **changes}


def fact_record(run_id: str = "b-1", **changes: Any) -> dict[str, Any]:
    return {"fact_type": "ci_outcome", "captured_at": "2024-05-01T12:05:00Z", **ci_record(run_id, **changes)}


def delivery(run_id: int = 289785012, **run_changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GITHUB / "workflow_run.completed.success.json").read_text(encoding="utf-8"))
    data["payload"]["workflow_run"].update(id=run_id, **run_changes)
    return data


def chat_record(session: str = "s-1", **changes: Any) -> dict[str, Any]:
    return {
        "request": {"model": "gpt-4.1", "messages": [{"role": "user", "content": "list the files"}]},
        "response": {"id": f"chatcmpl-{session}", "model": "gpt-4.1", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}]},
        "session_id": session, **changes,
    }


RECORDS: dict[str, Callable[[int], dict[str, Any]]] = {
    "facts": lambda n: fact_record(f"b-{n}"),
    "ci": lambda n: ci_record(f"b-{n}"),
    "github": lambda n: delivery(289785012 + n),
    "calls": lambda n: chat_record(f"s-{n}"),
}


def store_at(tmp_path: Path) -> FactStore:
    return FactStore(f"sqlite:///{tmp_path / 'facts.db'}")


def ingest(tmp_path: Path, command: str, text: str | bytes, *, name: str = "input.jsonl") -> tuple[IngestReport, FactStore]:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    store = store_at(tmp_path)
    return ingest_files([str(path)], TRANSLATORS[command], store), store


def stored(store: FactStore, table: str) -> list[FactModel]:
    return list(store.facts(table, ORG))


def problems(report: IngestReport) -> list[str]:
    return [f"{Path(p.path).name}:{p.line}: {p.message}" for p in report.problems]


def lines(*parts: str) -> str:
    return "".join(f"{part}\n" for part in parts)


def good_around(command: str, bad: str) -> str:
    """A good record, the bad line, another good record."""
    return lines(json.dumps(RECORDS[command](1)), bad, json.dumps(RECORDS[command](3)))


def assert_neighbours_kept(store: FactStore, command: str) -> None:
    assert len(stored(store, TABLES[command])) == 2, "the good records around the bad one are lost"


# --- 1. integers beyond 64 bits are kept exactly -----------------------------------------


@pytest.mark.parametrize("command", ["facts", "ci"])
def test_a_big_integer_in_raw_round_trips_through_the_store(tmp_path: Path, command: str) -> None:
    record = RECORDS[command](1) | {"raw": {"id": BIG, "negative": -BIG, "nested": [{"n": 10**40}]}}
    report, store = ingest(tmp_path, command, lines(json.dumps(record)))
    assert problems(report) == []
    (outcome,) = stored(store, "ci_outcomes")
    assert isinstance(outcome, CIOutcome)
    assert outcome.raw == {"id": BIG, "negative": -BIG, "nested": [{"n": 10**40}]}
    assert type(outcome.raw["id"]) is int


def test_a_big_integer_of_a_ci_record_stays_in_its_raw_and_typed_field(tmp_path: Path) -> None:
    record = ci_record(pr_number=BIG, run_attempt=BIG)
    report, store = ingest(tmp_path, "ci", lines(json.dumps(record)))
    assert problems(report) == []
    (outcome,) = stored(store, "ci_outcomes")
    assert isinstance(outcome, CIOutcome)
    assert (outcome.pr_number, outcome.run_attempt) == (BIG, BIG)
    assert outcome.raw == record


def test_a_big_github_run_id_round_trips(tmp_path: Path) -> None:
    data = delivery(BIG)
    data["payload"]["repository"]["id"] = BIG + 1
    report, store = ingest(tmp_path, "github", json.dumps(data, indent=2), name="delivery.json")
    assert problems(report) == []
    (outcome,) = stored(store, "ci_outcomes")
    assert isinstance(outcome, CIOutcome)
    assert outcome.run_id == str(BIG)
    assert outcome.raw == data["payload"]["workflow_run"]
    assert type(outcome.raw["id"]) is int


def test_a_big_integer_in_a_call_round_trips(tmp_path: Path) -> None:
    record = chat_record()
    record["request"]["seed"] = BIG
    record["response"]["system_fingerprint"] = {"n": -BIG}
    report, store = ingest(tmp_path, "calls", lines(json.dumps(record)))
    assert problems(report) == []
    (call,) = stored(store, "inference_calls")
    assert isinstance(call, InferenceCall)
    assert call.raw["request"]["seed"] == BIG and type(call.raw["request"]["seed"]) is int
    assert call.raw["response"]["system_fingerprint"] == {"n": -BIG}


def test_a_number_that_overflows_a_double_is_refused_not_made_infinite(tmp_path: Path) -> None:
    report, store = ingest(tmp_path, "ci", good_around("ci", json.dumps(ci_record("b-2"))[:-1] + ', "raw": {"x": 1e400}}'))
    assert problems(report) == ["input.jsonl:2: number out of range: 1e400"]
    assert_neighbours_kept(store, "ci")


def test_nan_and_infinity_tokens_are_still_kept(tmp_path: Path) -> None:
    text = json.dumps(ci_record())[:-1] + ', "raw": {"t": NaN, "u": -Infinity}}'
    report, store = ingest(tmp_path, "ci", lines(text))
    assert problems(report) == []
    (outcome,) = stored(store, "ci_outcomes")
    assert isinstance(outcome, CIOutcome)
    assert outcome.raw["t"] != outcome.raw["t"] and outcome.raw["u"] == float("-inf")


# --- 2. no coercion at the CLI level -----------------------------------------------------


@pytest.mark.parametrize(
    ("command", "changes", "message"),
    [
        ("ci", {"captured_at": "2"}, "captured_at: expected an RFC 3339 timestamp, got '2'"),
        ("ci", {"captured_at": 2}, "captured_at: expected an RFC 3339 timestamp string, got number"),
        ("ci", {"run_attempt": True}, "run_attempt: Input should be a valid integer"),
        ("ci", {"run_attempt": "3"}, "run_attempt: Input should be a valid integer"),
        ("ci", {"run_attempt": 3.0}, "run_attempt: Input should be a valid integer"),
        ("ci", {"schema_version": True}, "schema_version: Input should be a valid integer, got boolean"),
        ("facts", {"captured_at": 1714564800}, "captured_at: expected an RFC 3339 timestamp string, got number"),
        ("facts", {"pr_number": "3"}, "pr_number: Input should be a valid integer"),
    ],
)
def test_values_of_the_wrong_type_are_refused_naming_the_field(tmp_path: Path, command: str, changes: dict[str, Any],
                                                               message: str) -> None:
    record = RECORDS[command](2) | changes
    report, store = ingest(tmp_path, command, good_around(command, json.dumps(record)))
    assert problems(report) == [f"input.jsonl:2: {message}"]
    assert_neighbours_kept(store, command)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"edit_retention_score": False}, "edit_retention_score: Input should be a valid number"),
        ({"edit_retention_score": "0.5"}, "edit_retention_score: Input should be a valid number"),
        ({"accepted": 1}, "accepted: Input should be a valid boolean"),
        ({"observation_delay_ms": "3"}, "observation_delay_ms: Input should be a valid integer"),
        ({"occurred_at": "2024-05-01"}, "occurred_at: expected an RFC 3339 timestamp, got '2024-05-01'"),
    ],
)
def test_a_decision_is_not_coerced(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    decision = {"fact_type": "developer_decision", "session_id": "s-1", "agent_harness": "codex", "accepted": True,
                "explicit": True, "interaction_mode": "inline", "occurred_at": "2024-05-01T12:00:00Z",
                "captured_at": "2024-05-01T12:00:00Z"}
    text = lines(json.dumps(decision), json.dumps(decision | {"session_id": "s-2"} | changes),
                 json.dumps(decision | {"session_id": "s-3", "edit_retention_score": 1}))
    report, store = ingest(tmp_path, "facts", text)
    assert problems(report) == [f"input.jsonl:2: {message}"]
    kept = stored(store, "developer_decisions")
    assert len(kept) == 2
    assert {d.edit_retention_score for d in kept if isinstance(d, DeveloperDecision)} == {None, 1.0}


# --- 3. duplicate keys -------------------------------------------------------------------


def test_a_duplicate_key_is_refused_not_last_wins(tmp_path: Path) -> None:
    bad = json.dumps(ci_record("b-2", result="failed"))[:-1] + ', "result": "passed"}'
    report, store = ingest(tmp_path, "ci", good_around("ci", bad))
    assert problems(report) == ["input.jsonl:2: duplicate key 'result'"]
    assert_neighbours_kept(store, "ci")


NESTED_DUPLICATES = {  # command → (text in a good record, the same with a key given twice, the key)
    "facts": ('"raw": {"k": 1}', '"raw": {"k": 1, "k": 2}', "k"),
    "ci": ('"raw": {"k": 1}', '"raw": {"k": 1, "k": 2}', "k"),
    "github": ('"conclusion": "success"', '"conclusion": "failure", "conclusion": "success"', "conclusion"),
    "calls": ('"content": "list the files"', '"content": "list the files", "content": "again"', "content"),
}


@pytest.mark.parametrize("command", sorted(NESTED_DUPLICATES))
def test_a_nested_duplicate_key_is_refused_on_every_path(tmp_path: Path, command: str) -> None:
    record = RECORDS[command](2)
    if command in ("facts", "ci"):
        record["raw"] = {"k": 1}
    good, twice, key = NESTED_DUPLICATES[command]
    text = json.dumps(record)
    assert good in text
    report, store = ingest(tmp_path, command, good_around(command, text.replace(good, twice, 1)))
    assert problems(report) == [f"input.jsonl:2: duplicate key {key!r}"]
    assert_neighbours_kept(store, command)


def test_github_conclusion_given_twice_is_refused(tmp_path: Path) -> None:
    text = json.dumps(delivery(), indent=2).replace('"conclusion": "success"',
                                                    '"conclusion": "failure",\n  "conclusion": "success"', 1)
    report, store = ingest(tmp_path, "github", text, name="delivery.json")
    assert problems(report) == ["delivery.json:1: duplicate key 'conclusion'"]
    assert stored(store, "ci_outcomes") == []


def test_a_duplicate_in_one_element_of_a_document_array_fails_that_element_alone(tmp_path: Path) -> None:
    elements = [json.dumps(ci_record(f"b-{n}"), indent=2) for n in (1, 2, 3)]
    elements[1] = elements[1].replace('"result": "passed"', '"result": "failed", "result": "passed"')
    report, store = ingest(tmp_path, "ci", "[\n" + ",\n".join(elements) + "\n]\n", name="outcomes.json")
    assert problems(report) == ["outcomes.json:2: duplicate key 'result'"]
    assert_neighbours_kept(store, "ci")


# --- 4. nesting --------------------------------------------------------------------------


def nested(depth: int) -> str:
    """JSON text of arrays ``depth`` levels deep."""
    return "[" * depth + "]" * depth


def test_a_document_nested_1100_deep_is_one_problem_not_a_recursion_error(tmp_path: Path) -> None:
    report, _ = ingest(tmp_path, "facts", nested(1100) + "\n", name="d.json")
    assert problems(report) == [f"d.json:1: nested deeper than {MAX_DEPTH} levels"]


def test_a_deep_raw_fails_its_record_alone(tmp_path: Path) -> None:
    bad = json.dumps(ci_record("b-2"))[:-1] + f', "raw": {{"x": {nested(600)}}}}}'
    report, store = ingest(tmp_path, "ci", good_around("ci", bad))
    assert problems(report) == [f"input.jsonl:2: nested deeper than {MAX_DEPTH} levels"]
    assert_neighbours_kept(store, "ci")


def test_a_deep_field_inside_a_workflow_run_fails_its_delivery_alone(tmp_path: Path) -> None:
    bad = json.dumps(delivery(289785014)).replace('"conclusion": "success"',
                                                   f'"conclusion": "success", "deep": {nested(600)}', 1)
    report, store = ingest(tmp_path, "github", good_around("github", bad))
    assert problems(report) == [f"input.jsonl:2: nested deeper than {MAX_DEPTH} levels"]
    assert_neighbours_kept(store, "github")


@pytest.mark.parametrize("command", ["facts", "ci", "github", "calls"])
def test_a_record_at_the_depth_limit_is_stored_exactly(tmp_path: Path, command: str) -> None:
    record = RECORDS[command](2)
    inner = MAX_DEPTH - {"facts": 2, "ci": 2, "github": 3, "calls": 2}[command]  # levels above the value
    value: Any = []
    for _ in range(inner - 1):
        value = [value]
    if command in ("facts", "ci"):
        record["raw"] = {"deep": value}
    elif command == "github":
        record["payload"]["workflow_run"]["deep"] = value
    else:
        record["request"]["deep"] = value
    text = json.dumps(record)
    assert text.count("[[") > 0
    report, store = ingest(tmp_path, command, lines(text))
    assert problems(report) == []
    (fact,) = stored(store, TABLES[command])
    assert isinstance(fact, CIOutcome | InferenceCall)
    raw = {"facts": lambda: fact.raw["deep"], "ci": lambda: fact.raw["deep"],
           "github": lambda: fact.raw["deep"], "calls": lambda: fact.raw["request"]["deep"]}[command]()
    assert raw == value
    # one level deeper is refused
    deeper = text.replace("[[", "[[[", 1).replace("]]", "]]]", 1)
    report, _ = ingest(tmp_path, command, lines(deeper), name="deeper.jsonl")
    assert problems(report) == [f"deeper.jsonl:1: nested deeper than {MAX_DEPTH} levels"]


# --- 5. extreme timestamps ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["facts", "ci"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-10:00"])
def test_a_time_without_a_utc_equivalent_is_out_of_range(tmp_path: Path, command: str, value: str) -> None:
    report, store = ingest(tmp_path, command, good_around(command, json.dumps(RECORDS[command](2) | {"captured_at": value})))
    assert problems(report) == ["input.jsonl:2: captured_at: timestamp out of range"]
    assert_neighbours_kept(store, command)


def test_a_call_observed_out_of_range_is_refused(tmp_path: Path) -> None:
    bad = json.dumps(chat_record("s-2", observed_at="9999-12-31T23:59:59-10:00"))
    report, store = ingest(tmp_path, "calls", good_around("calls", bad))
    assert problems(report) == ["input.jsonl:2: observed_at: timestamp out of range"]
    assert_neighbours_kept(store, "calls")
    with pytest.raises(TranslationError, match=r"^observed_at: timestamp out of range$"):
        parse_timestamp("0001-01-01T00:00:00+14:00", "observed_at")


def test_the_extreme_times_that_exist_in_utc_are_kept(tmp_path: Path) -> None:
    text = lines(json.dumps(ci_record("b-1", captured_at="0001-01-01T00:00:00-14:00")),
                 json.dumps(ci_record("b-2", captured_at="9999-12-31T23:59:59.999999+10:00")))
    report, store = ingest(tmp_path, "ci", text)
    assert problems(report) == []
    times = sorted(o.captured_at for o in stored(store, "ci_outcomes") if isinstance(o, CIOutcome))
    assert times == [datetime(1, 1, 1, 14, tzinfo=UTC), datetime(9999, 12, 31, 13, 59, 59, 999999, tzinfo=UTC)]


# --- 6. line length ----------------------------------------------------------------------


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


NESTED = st.recursive(st.one_of(st.integers(), st.sampled_from(["[[[", "{", "]]", "x"])),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(st.sampled_from(["a", "[b", "{"]), inner, max_size=3)),
                      max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(NESTED, st.integers(min_value=0, max_value=4))
def test_a_value_is_refused_for_its_nesting_exactly_whatever_brackets_its_strings_hold(value: Any, depth: int) -> None:
    """Nesting beyond the limit is refused exactly when the value nests deeper than it; brackets
    inside strings count for nothing (they only make the reader look closer)."""
    text = json.dumps(value)
    if _depth(value) > depth:
        with pytest.raises(RecordProblem, match=f"^nested deeper than {depth} levels$"):
            JsonReader().value_at(text, 0, depth)
    else:
        assert JsonReader().value_at(text, 0, depth) == (value, len(text))


def _fill(content: bytes, cuts: list[int]) -> Callable[[memoryview], int]:
    """``content`` cut at ``cuts`` (positions, in any order), as a reader's fills: each gives at
    most the rest of its piece (less when the buffer has less room), as a pipe's reads do."""
    edges = sorted({0, len(content), *(cut % (len(content) + 1) for cut in cuts)})
    pieces = [content[a:b] for a, b in itertools.pairwise(edges)]

    def fill(buffer: memoryview) -> int:
        while pieces and not pieces[0]:
            pieces.pop(0)
        if not pieces:
            return 0
        taken, pieces[0] = pieces[0][:len(buffer)], pieces[0][len(buffer):]
        buffer[:len(taken)] = taken
        return len(taken)
    return fill


def _expected_lines(content: bytes, limit: int) -> list[tuple[int, bytes | None]]:
    """The lines a reader must give: split after each newline (a BOM at the start dropped), one
    whose bytes before its newline exceed ``limit`` given as None."""
    content = content.removeprefix(b"\xef\xbb\xbf")
    found = []
    while content:
        head, newline, content = content.partition(b"\n")
        found.append(head + newline)
    return [(number, None if len(line.removesuffix(b"\n")) > limit else line) for number, line in enumerate(found, 1)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"x", b"yy", b"z" * 7, b"\xef\xbb\xbf", b"\xef", b"\r", b" "]), max_size=30).map(b"".join),
       st.lists(st.integers(min_value=0, max_value=200), max_size=8), st.integers(min_value=0, max_value=9),
       st.integers(min_value=1, max_value=8), st.integers(min_value=0, max_value=40))
@example(b"\xef\xbb\xbfx\n", [1], 5, 64, 0)
@example(b"\xef\xbb\xbfx\n", [2], 5, 64, 0)
@example(b"\xef\xbb\xbfxyz\nab", [1, 2, 3], 2, 64, 0)
@example(b"\xef\xbb\xbfx\n", [], 5, 1, 0)
@example(b"xxxxxxxx\nyy\n", [], 9, 2, 2)
def test_lines_are_split_alike_however_the_pieces_cut_them(content: bytes, cuts: list[int], limit: int, first: int,
                                                           more: int) -> None:
    """Lines come out the same whatever pieces the content arrives in and whatever sizes the
    reader's buffer takes (from ``first`` bytes, doubling up to ``first + more`` while reads fill it,
    and beyond only for a line): numbered from 1, each with its newline, the last one without, a
    BOM dropped at the start only, and a line longer than the limit as None (its neighbours intact)."""
    found = list(_lines(_fill(content, cuts), limit, reads=(first, first + more)))
    assert found == _expected_lines(content, limit)


def test_a_line_over_the_limit_is_one_problem_and_the_next_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(lines(json.dumps(ci_record("b-1")), json.dumps(ci_record("b-2", reason="x" * 5000)),
                          json.dumps(ci_record("b-3"))))
    found = list(records(str(path), max_line=1024))
    assert [number for number, _ in found] == [1, 2, 3]
    assert str(found[1][1]) == "line longer than 1024 bytes"
    assert [r["run_id"] for _, r in (found[0], found[2])] == ["b-1", "b-3"]


def test_an_over_long_line_is_read_past_without_being_held() -> None:
    stream = io.BytesIO(b'{"a": 1}\n' + b"0" * 3 * READ_BUFFER + b'\n{"b": 2}\n')
    tracemalloc.start()
    try:
        found = [(n, line) for n, line in _lines(stream.readinto, 1024)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == [(1, b'{"a": 1}\n'), (2, None), (3, b'{"b": 2}\n')]
    assert peak < 2 * READ_BUFFER  # the buffer (and the half-size one it grew from), never the line (3 times it)


def test_a_document_over_the_limit_is_read_as_lines(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps([ci_record(f"b-{n}") for n in range(50)], indent=2))
    assert [n for n, r in records(str(path))][:3] == [1, 2, 3]  # within the limit: one document
    found = list(records(str(path), max_document=1024))
    assert "a JSON document spanning lines is read whole, up to 1024 bytes" in str(found[0][1])


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1536 * 1024 * 1024, 1536 * 1024 * 1024))


@pytest.mark.skipif(sys.platform != "linux", reason="needs /dev/zero and RLIMIT_AS")
def test_a_stream_of_zeros_is_one_problem_in_bounded_memory(tmp_path: Path) -> None:
    """2 GiB of NUL bytes without a newline, then a good record, on stdin, under a 1.5 GiB
    address-space limit: the long line is one problem and the record after it is stored."""
    env = {**os.environ, "SEDIMENT_HOME": str(tmp_path), "SEDIMENT_ORG_ID": ORG}
    good = json.dumps(fact_record("after-zeros"))
    feeder = subprocess.Popen(["sh", "-c", f"head -c 2147483648 /dev/zero; printf '\\n%s\\n' '{good}'"],
                              stdout=subprocess.PIPE)
    try:
        result = subprocess.run([sys.executable, "-m", "sediment", "ingest", "facts", "-", "--json"], env=env,
                                stdin=feeder.stdout, capture_output=True, text=True, timeout=300,
                                preexec_fn=_limit_memory, check=False)
    finally:
        assert feeder.stdout is not None
        feeder.stdout.close()
        feeder.wait()
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 8, result.stderr[-2000:]
    assert "-:1: line longer than 64 MiB" in result.stderr
    assert json.loads(result.stdout) | {"stored": None} == {"records": 2, "stored": None, "duplicates": {},
                                                            "skipped": {}, "warnings": {}, "failed": 1,
                                                            "redacted": {}}
    assert json.loads(result.stdout)["stored"] == {"ci_outcomes": 1}


# --- 7. a bug is a bug -------------------------------------------------------------------


@pytest.mark.parametrize("bug", [KeyError("workflow_run"), TypeError("unsupported operand"), ValueError("oops"),
                                 AttributeError("x")])
def test_a_bug_in_a_translator_propagates_instead_of_blaming_the_input(tmp_path: Path, bug: Exception) -> None:
    path = tmp_path / "input.jsonl"
    path.write_text(lines(json.dumps(ci_record())))

    def buggy(record: dict[str, Any]) -> Translation:
        raise bug

    with pytest.raises(type(bug)):
        ingest_files([str(path)], buggy, store_at(tmp_path))


def test_a_bug_shows_as_a_traceback_on_the_command_line(tmp_path: Path) -> None:
    """The CLI's error boundary keeps the traceback of anything that is not a SedimentError;
    here a translator raising KeyError on a good record (patched in through a sitecustomize)."""
    (tmp_path / "input.jsonl").write_text(lines(json.dumps(ci_record())))
    (tmp_path / "sitecustomize.py").write_text(
        "import sediment.ingest.ci.neutral as ci\n"
        "def _buggy(record, **_):\n    raise KeyError('oops')\n"
        "ci.translate_ci = _buggy\n")
    env = {**os.environ, "SEDIMENT_HOME": str(tmp_path), "SEDIMENT_ORG_ID": ORG,
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "sediment", "ingest", "ci", str(tmp_path / "input.jsonl")],
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" in result.stderr and "KeyError: 'oops'" in result.stderr
    assert result.returncode not in (0, 8)


# --- 8. the schema version each translator writes ---------------------------------------


def test_github_writes_the_current_identity_capable_version(tmp_path: Path) -> None:
    deliveries = ["workflow_run.completed.success.json", "push.json", "pull_request.closed.merged.json"]
    for name in deliveries:
        data = json.loads((GITHUB / name).read_text(encoding="utf-8"))
        (fact,) = translate_github(data, event=None, org_id=ORG, captured_at=T0).facts
        assert isinstance(fact, CIOutcome | Push | PullRequestMerge)
        assert fact.schema_version == 2 and fact.repository_id is not None, name  # repository.id


def test_records_read_from_documents_and_lines_number_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "blank-first.jsonl"
    path.write_text("\n\n" + lines(json.dumps(ci_record("b-1")), "{broken", json.dumps(ci_record("b-3"))))
    numbers = [(n, isinstance(r, Exception)) for n, r in records(str(path))]
    assert numbers == [(3, False), (4, True), (5, False)]


# --- JSON text inside a record (a call's body sent as text, SSE data) reads the same way --------


def test_deep_json_text_inside_a_call_is_refused(tmp_path: Path) -> None:
    record = chat_record("s-2")
    record["request"] = '{"model": "m", "messages": ' + nested(3000) + "}"
    report, store = ingest(tmp_path, "calls", good_around("calls", json.dumps(record)))
    assert [p.line for p in report.problems] == [2]
    assert_neighbours_kept(store, "calls")


def test_a_duplicate_key_in_json_text_inside_a_call_is_refused(tmp_path: Path) -> None:
    record = chat_record("s-2")
    record["request"] = '{"model": "gpt-4.1", "model": "other", "messages": []}'
    report, store = ingest(tmp_path, "calls", good_around("calls", json.dumps(record)))
    assert [p.line for p in report.problems] == [2]
    assert "duplicate key 'model'" in report.problems[0].message
    assert_neighbours_kept(store, "calls")


def test_store_time_columns_sort_as_times_for_early_years() -> None:
    from datetime import UTC, datetime

    from sediment.records import sortable_time

    moments = [datetime(5, 1, 1, tzinfo=UTC), datetime(999, 12, 31, tzinfo=UTC), datetime(1000, 1, 1, tzinfo=UTC),
               datetime(2026, 3, 2, 9, tzinfo=UTC)]
    texts = [sortable_time(m) for m in moments]
    assert texts[0] == "0005-01-01T00:00:00.000000Z" and texts == sorted(texts)
    assert {len(t) for t in texts} == {27}


def test_a_bad_record_is_kept_without_the_frames_that_read_it(tmp_path: Path) -> None:
    """A problem yielded as a value holds no traceback or replaced exception: those hold the
    reading frames (and the line) in a cycle that a batch command's seldom collector would keep."""
    from sediment.ingest.reading.files import parse_line

    path = tmp_path / "calls.jsonl"
    path.write_bytes(b'{"ok": 1}\n{"bad": \n{"dup": 1, "dup": 2}\n\xff\n')
    problems = [value for _, value in records(str(path)) if isinstance(value, Exception)]
    problems.append(parse_line(b"[1,"))
    assert len(problems) == 4
    for problem in problems:
        assert problem.__traceback__ is None and problem.__context__ is None


def test_a_reader_is_freed_as_soon_as_it_is_dropped() -> None:
    """A JsonReader (and a SpanReader, with everything it remembers) is in no reference cycle:
    dropping it frees it at once, not at a full collection, which a batch command runs seldom."""
    import contextlib
    import gc
    import weakref

    from sediment.ingest.calls.spans import SpanReader
    from sediment.ingest.reading.json_text import JsonReader

    enabled = gc.isenabled()
    gc.disable()
    try:
        for make in (JsonReader, lambda: JsonReader(keep_flaws=True), lambda: SpanReader(min_line=0)):
            reader = make()
            reader.parse(b'{"request": {"messages": [{"role": "user", "content": "hi"}]}, "a": 1}')
            with contextlib.suppress(TranslationError):  # a duplicate key: refused, or kept as a flaw
                reader.parse(b'{"a": 1, "a": 2}')
            with pytest.raises(TranslationError):
                reader.parse(b'{"a": [1, }')
            gone = weakref.ref(reader)
            del reader
            assert gone() is None
    finally:
        if enabled:
            gc.enable()
