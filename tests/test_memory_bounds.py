"""The ingest's remembered texts are bounded in bytes as the strings take them in memory, not in
characters: a text holding one four-byte character takes four bytes for each of its characters,
so a bound in characters let text in such characters take four times what it named (measured
on the bench's input with one letter turned into an emoji: 1.14 GB peak instead of 0.52 GB)."""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import tracemalloc

from sediment.ingest.calls import spans
from sediment.ingest.calls.spans import SpanReader, value_size
from sediment.ingest.reading.json_text import JsonReader, RecordProblem
from sediment.ingest.redaction import secret_patterns
from sediment.store.interning import StringDigests

WIDE = "\U0001F600"  # outside the Basic Multilingual Plane: the whole string takes 4 bytes a character


def test_a_wide_text_counts_its_bytes_in_the_secret_scans_memory() -> None:
    narrow = [f"narrow {n} " + "y" * 300 for n in range(6)]
    wide = [f"wide {n} {WIDE}" + "y" * 300 for n in range(6)]
    assert all(sys.getsizeof(text) > 4 * 300 for text in wide)
    for texts in (narrow, wide):
        seen = secret_patterns._Seen(2_500)
        for text in texts:
            seen.redact(text)
        assert seen._size <= 2_500
        held = sum(sys.getsizeof(text) for text in seen._texts)
        assert held <= 2_500
    narrow_seen, wide_seen = secret_patterns._Seen(2_500), secret_patterns._Seen(2_500)
    for a, b in zip(narrow, wide, strict=True):
        narrow_seen.redact(a)
        wide_seen.redact(b)
    assert len(narrow_seen._texts) >= 4 * len(wide_seen._texts) >= 4  # the same characters, a quarter as many


def test_a_wide_string_counts_its_bytes_in_the_string_digests() -> None:
    digests = StringDigests(limit=2_000)
    narrow, wide = "a" * 600, WIDE + "a" * 599
    digests.put(narrow, "n")
    assert digests.get(narrow) == "n"
    digests.put(wide, "w")  # 600 characters, 2,400 bytes and more: past the bound on its own
    assert digests.get(wide) is None and digests.get(narrow) == "n"


def test_the_span_readers_memory_counts_bytes_and_reads_exactly() -> None:
    history: list[dict[str, str]] = []
    lines = []
    for call in range(8):
        history.append({"role": "user", "content": f"turn {call} {WIDE} " + "x" * 300})
        lines.append(json.dumps({"session_id": "s", "request": {"model": "m", "messages": list(history)},
                                 "response": {"id": f"r{call}"}}, ensure_ascii=False))
        history.append({"role": "assistant", "content": f"answer {call}"})
    reader = SpanReader(min_line=0, memory_bytes=4_000)
    for line in lines:
        assert reader.parse(line) == JsonReader().parse(line)
        assert reader._size <= 4_000
        assert sum(sys.getsizeof(span) + value_size(element.value) + spans._ENTRY
                   for span, element in reader._seen.items()) == reader._size
        assert sum(listed.size for listed in reader._lists) == reader._lists_size


def test_value_size_counts_every_container_and_scalar() -> None:
    assert value_size({}) == sys.getsizeof({})
    assert value_size([1.5, "ab"]) == sys.getsizeof([1.5, "ab"]) + sys.getsizeof(1.5) + sys.getsizeof("ab")
    nested = {"a": [{}, {}]}
    assert value_size(nested) == (sys.getsizeof(nested) + sys.getsizeof("a") + sys.getsizeof(nested["a"])
                                  + 2 * sys.getsizeof({}))


def test_the_span_readers_memory_counts_the_values_of_dense_elements() -> None:
    """A dense element text (``{"content": [{}, {}, …]}``) parses to some twenty times its size: the
    reader's bound counts the parsed values with the texts, so what it keeps stays within its
    bound for elements (and as much again for whole lists), where counting only the texts kept
    some twenty times that."""
    limit = 200_000
    lines = []
    for call in range(40):
        dense = {"role": "user", "content": [{} for _ in range(2_000)], "turn": call}  # 8 KB of text
        messages = [dense, {"role": "user", "content": f"turn {call} " + "x" * 300}]
        lines.append(json.dumps({"session_id": f"s{call}", "request": {"model": "m", "messages": messages},
                                 "response": {"id": f"r{call}"}}))
    gc.collect()
    tracemalloc.start()
    try:
        reader = SpanReader(min_line=0, memory_bytes=limit)
        before = tracemalloc.get_traced_memory()[0]
        for line in lines:
            assert reader.parse(line) == JsonReader().parse(line)
            assert reader._size <= limit and reader._lists_size <= limit
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert reader._seen and reader._lists  # it still remembers what fits
    assert held <= 2 * limit, f"the reader keeps {held:,} bytes for a bound of {limit:,}"


#: The reader's maps' own hash tables, which the bound does not count (they do not shrink as
#: entries go).
TABLES = 8_192


def _call_line(session: str, messages: list[dict[str, object]]) -> str:
    return json.dumps({"session_id": session, "request": {"model": "m", "messages": messages},
                       "response": {"id": f"r-{session}"}})


def _held_by(reader: SpanReader, lines: list[str]) -> int:
    """The bytes ``reader`` keeps once it has read ``lines`` (refused ones too), whole lists aside."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for line in lines:
            with contextlib.suppress(RecordProblem):  # a refused line: what it remembered stays bounded
                reader.parse(line)
            assert reader._size <= reader._limit
        reader._lists.clear()
        reader._lists_size = 0
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_line_refused_halfway_leaves_the_span_readers_memory_bounded() -> None:
    """Elements read before a bad one are remembered; the bound holds without the line's end."""
    limit = 50_000
    lines = [_call_line(f"s{n}", [{"role": "user", "content": f"turn {n} " + "x" * 2_000}]).replace(
        '"}]', '"}, {"a": 1, "a": 2}]') for n in range(200)]  # a key given twice: the line is refused
    reader = SpanReader(min_line=0, memory_bytes=limit)
    held = _held_by(reader, lines)
    assert reader.parsed >= 200 and held <= limit + TABLES, f"{held:,} bytes kept for a bound of {limit:,}"


def test_an_element_in_use_keeps_no_forgotten_text_alive() -> None:
    """Each small element was once followed by a large one; read again as the last element of
    later lines, it stays recently used while the large ones are forgotten, and its link to what
    followed it must not keep their texts."""
    limit = 200_000
    small = [{"role": "user", "content": f"small {n} " + "s" * 500} for n in range(20)]
    lines = []
    for n in range(20):
        lines.append(_call_line(f"a{n}", [small[n], {"role": "tool", "content": f"large {n} " + "L" * 60_000}]))
        lines += [_call_line(f"b{n}-{k}", [{"role": "user", "content": f"new {n} {k} " + "y" * 200}, small[k]])
                  for k in range(n + 1)]  # every small one used again, as the last element
    reader = SpanReader(min_line=0, memory_bytes=limit)
    held = _held_by(reader, lines)
    assert reader.reused >= 190 and held <= limit + TABLES, f"{held:,} bytes kept for a bound of {limit:,}"
