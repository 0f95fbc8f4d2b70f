"""A file in another format given to a JSON-Lines reader is one problem line, not one per line
(issue 25): a YAML cassette handed to `ingest calls` says it is not JSON Lines and what it looks
like. A file where some line is JSON keeps its per-line problems and every good record."""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import pytest

from sediment.importing.inputs import read_canonical
from sediment.ingest import Translation
from sediment.ingest.reading.files import EMPTY, ingest_files
from sediment.ingest.reading.wrong_format import looks_like, not_json_lines
from sediment.store import FactStore

#: The shape of a VCR.py / pytest-recording cassette (a recorded HTTP exchange), in YAML.
CASSETTE = b"""interactions:
- request:
    body: '{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}'
    headers:
      Content-Type:
      - application/json
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: '{"id": "chatcmpl-1", "choices": []}'
    status:
      code: 200
      message: OK
version: 1
"""
WRONG = "not JSON Lines (it looks like YAML): no line of it is JSON"


@pytest.mark.parametrize(("head", "kind"), [
    (b"interactions:\n", "YAML"), (b"---\n", "YAML"), (b"- request:\n", "YAML"), (b"%YAML 1.2\n", "YAML"),
    (b"  version: 1\n", "YAML"), (b'<?xml version="1.0"?>\n', "XML or HTML"), (b"<!DOCTYPE html>\n", "XML or HTML"),
    (b"\x00\xff<not json>\n", "binary data"), (b"PK\x03\x04\x14\x00", "binary data"),
    (b"hello world\n", None), (b"1,2,3\n", None), (b"caf\xc3", None),  # a character cut by the kept head
])
def test_what_a_file_looks_like(head: bytes, kind: str | None) -> None:
    assert looks_like(head) == kind


def test_the_one_line_says_what_it_looks_like_when_that_is_clear() -> None:
    assert not_json_lines(b"interactions:\n") == WRONG
    assert not_json_lines(b"hello\n") == "not JSON Lines: no line of it is JSON"


def _ingest(tmp_path: Path, *files: tuple[str, bytes]) -> tuple[list[str], int, list[Any]]:
    seen: list[Any] = []

    def translate(record: Any) -> Translation:
        seen.append(record)
        return Translation()

    paths = []
    for name, data in files:
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    report = ingest_files(paths, translate, FactStore(f"sqlite:///{tmp_path / 'facts.db'}"))
    return [str(problem) for problem in report.problems], report.records, seen


def test_a_yaml_file_is_one_problem_naming_the_file(tmp_path: Path) -> None:
    problems, records, seen = _ingest(tmp_path, ("cassette.yaml", CASSETTE))
    assert problems == [f"{tmp_path / 'cassette.yaml'}: {WRONG}"]
    assert records == 0 and seen == []


def test_a_compressed_yaml_file_is_one_problem_too(tmp_path: Path) -> None:
    problems, _, _ = _ingest(tmp_path, ("cassette.yaml.gz", gzip.compress(CASSETTE)))
    assert problems == [f"{tmp_path / 'cassette.yaml.gz'}: {WRONG}"]


def test_good_records_around_bad_lines_are_kept_with_per_line_problems(tmp_path: Path) -> None:
    # The first line is not JSON, but a later one is: per-line problems, and the record is read.
    data = b'interactions:\n{"a": 1}\n- request:\n'
    problems, records, seen = _ingest(tmp_path, ("mixed.jsonl", data))
    path = tmp_path / "mixed.jsonl"
    assert [problem.split(": not JSON")[0] for problem in problems] == [f"{path}:1", f"{path}:3"]
    assert records == 3 and seen == [{"a": 1}]


def test_a_broken_first_record_keeps_its_own_problem(tmp_path: Path) -> None:
    # Starts like a JSON record: a truncated log, not another format; the column says what broke.
    problems, _, _ = _ingest(tmp_path, ("cut.jsonl", b'{"a": 1, "b\n{"a": \n'))
    assert len(problems) == 2 and all(": not JSON: " in problem for problem in problems), problems


def test_empty_and_other_files_are_told_apart_and_other_files_still_read(tmp_path: Path) -> None:
    problems, records, seen = _ingest(tmp_path, ("a.yaml", CASSETTE), ("b.jsonl", b"\n\n"),
                                      ("c.jsonl", b'{"ok": true}\n'), ("d.xml", b"<testsuite/>\n"))
    assert problems == [f"{tmp_path / 'a.yaml'}: {WRONG}", f"{tmp_path / 'b.jsonl'}: {EMPTY}",
                        f"{tmp_path / 'd.xml'}: not JSON Lines (it looks like XML or HTML): no line of it is JSON"]
    assert records == 1 and seen == [{"ok": True}]


def test_the_verdict_is_deterministic_whatever_the_line_order(tmp_path: Path) -> None:
    lines = CASSETTE.splitlines(keepends=True)
    first = _ingest(tmp_path, ("cassette.yaml", CASSETTE))
    assert _ingest(tmp_path, ("cassette.yaml", CASSETTE)) == first
    rng = random.Random(25)
    for _ in range(5):
        rng.shuffle(lines)  # any order of YAML lines: still no JSON line, so still one problem
        problems, records, _ = _ingest(tmp_path, ("cassette.yaml", b"".join(lines)))
        assert len(problems) == 1 and problems[0].startswith(f"{tmp_path / 'cassette.yaml'}: not JSON Lines")
        assert records == 0


def test_canonical_import_refuses_a_yaml_file_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "cassette.jsonl").write_bytes(CASSETTE)
    problems: list[str] = []
    assert list(read_canonical([tmp_path / "cassette.jsonl"], problems)) == []
    assert problems == [f"{tmp_path / 'cassette.jsonl'}: {WRONG}"]
