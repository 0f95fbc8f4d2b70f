"""Compressed inputs (issue 22 item 1): every ingest path reads gzip and Zstandard files, told by
their magic bytes, inflated as they stream, and refuses a corrupt, truncated or bomb file in one
line naming the file and line, keeping the records before it.

The inputs are real: the demo's generated inputs, the repository's fixtures (tests/fixtures) and
the shared transcript fixtures beside the repository (skipped, saying why, without them).
"""

from __future__ import annotations

import ast
import gzip
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zstandard
from typer.testing import CliRunner

from sediment.cli import app
from sediment.demo import write_inputs
from sediment.errors import SedimentError
from sediment.ingest.reading.compressed import InputUnreadable, compression_of, content_sha256, logical_name, open_input
from sediment.ingest.reading.files import records
from sediment.testing import unavailable

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(os.environ.get("SEDIMENT_INPUT_FIXTURES") or ROOT.parent / "shared" / "fixtures" / "inputs")
MIB = 1 << 20


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def zst(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {"plain": lambda data: data, "gz": gz, "zst": zst}


def copies(sources: list[Path], directory: Path, kind: str) -> list[Path]:
    """``sources`` written under ``directory`` as ``kind`` (``NAME.gz``, ``NAME.zst`` or as is)."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for source in sources:
        suffix = "" if kind == "plain" else f".{kind}"
        target = directory / f"{source.name}{suffix}"
        target.write_bytes(COMPRESSORS[kind](source.read_bytes()))
        out.append(target)
    return out


def store_content(home: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the store (in a fixed order)."""
    with sqlite3.connect(home / "facts.db") as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {table: sorted(db.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr) for table in tables}


@dataclass
class Ran:
    exit_code: int
    output: str


def ingest(home: Path, *args: str) -> Ran:
    """``sediment ingest ARGS`` in process, with the CLI's error boundary (a SedimentError is its
    exit code; any other exception propagates, failing the test)."""
    env = {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": "org", "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
    result = CliRunner().invoke(app, ["ingest", *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        if not isinstance(result.exception, SedimentError):
            raise result.exception
        return Ran(int(result.exception.exit_code), result.output)
    return Ran(result.exit_code, result.output)


def demo_inputs(tmp_path: Path) -> Any:
    return write_inputs(tmp_path / "demo")


def _commands(tmp_path: Path) -> dict[str, tuple[list[str], list[Path]]]:
    demo = demo_inputs(tmp_path)
    github = sorted((FIXTURES / "github").glob("*.json")) + sorted((FIXTURES / "ci" / "github").glob("*.json"))
    junit = demo.junit[0]
    return {
        "calls": (["calls", "--format", "openai-chat"], [demo.calls]),
        "calls-litellm": (["calls", "--format", "litellm"], [FIXTURES / "litellm" / "standard_logging_payload.json"]),
        "github": (["github"], [*demo.webhooks, *github]),
        "gitlab": (["gitlab"], sorted((FIXTURES / "ci" / "gitlab").glob("*.json"))),
        "circleci": (["circleci"], sorted((FIXTURES / "ci" / "circleci").glob("*.json"))),
        "buildkite": (["buildkite"], sorted((FIXTURES / "ci" / "buildkite").glob("*.json"))),
        "ci": (["ci"], [FIXTURES / "ci" / "jenkins_notification.json"]),
        "otlp": (["otlp"], [demo.decisions, *sorted((FIXTURES / "otlp").glob("*.json*"))]),
        "junit": (["junit", "--provider", "github_actions", "--run-id", str(junit.run_id), "--run-attempt",
                   str(junit.attempt), "--repo", "acme/calc", "--commit", junit.commit],
                  [junit.path, *sorted((FIXTURES / "junit").glob("*.xml"))]),
    }


COMMANDS = ["calls", "calls-litellm", "github", "gitlab", "circleci", "buildkite", "ci", "otlp", "junit"]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_ingest_command_stores_the_same_facts_from_plain_gz_and_zst(tmp_path: Path, command: str) -> None:
    args, sources = _commands(tmp_path)[command]
    contents = {}
    for kind in COMPRESSORS:
        files = copies(sources, tmp_path / f"in-{kind}", kind)
        home = tmp_path / f"home-{kind}"
        result = ingest(home, *args, *map(str, files))
        assert "Traceback" not in result.output
        contents[kind] = (result.exit_code, store_content(home))
    assert sum(len(rows) for rows in contents["plain"][1].values()) > 0
    assert contents["gz"] == contents["plain"]
    assert contents["zst"] == contents["plain"]


@pytest.mark.parametrize("client,folder", [("claude-code", "claude_code"), ("codex", "codex_rollout")])
def test_transcripts_read_compressed_files_and_folders_alike(tmp_path: Path, client: str, folder: str) -> None:
    sources = sorted((SHARED / folder).glob("*.jsonl"))
    if not sources:
        unavailable(f"the shared transcript fixtures not found under {SHARED} (set SEDIMENT_INPUT_FIXTURES)")
    contents = {}
    for kind in COMPRESSORS:
        files = copies(sources, tmp_path / f"in-{kind}", kind)
        home = tmp_path / f"home-{kind}"
        result = ingest(home, "transcripts", client, str(tmp_path / f"in-{kind}"))  # a folder: *.jsonl.gz too
        assert result.exit_code == 0, result.output
        contents[kind] = store_content(home)
        assert files
    assert contents["plain"]["inference_calls"]
    assert contents["gz"] == contents["plain"] and contents["zst"] == contents["plain"]


def test_a_compressed_file_is_told_by_its_bytes_not_its_name(tmp_path: Path) -> None:
    demo = demo_inputs(tmp_path)
    plain = tmp_path / "plain"
    assert ingest(plain, "calls", "--format", "openai-chat", str(demo.calls)).exit_code == 0
    data = demo.calls.read_bytes()
    misnamed = [tmp_path / "calls.jsonl", tmp_path / "calls", tmp_path / "calls.zst", tmp_path / "calls.txt.gz"]
    misnamed[0].write_bytes(gz(data))  # gzip under a plain name
    misnamed[1].write_bytes(zst(data))  # no suffix at all
    misnamed[2].write_bytes(gz(data))  # gzip named as Zstandard
    misnamed[3].write_bytes(data)  # plain named as gzip
    for path in misnamed:
        home = tmp_path / f"home-{path.name}"
        result = ingest(home, "calls", "--format", "openai-chat", str(path))
        assert result.exit_code == 0, result.output
        assert store_content(home) == store_content(plain), path.name


def test_concatenated_members_and_frames_read_as_one_stream(tmp_path: Path) -> None:
    """A rotated log appended to (gzip members or Zstandard frames one after another) is one file."""
    first, second = b'{"a": 1}\n', b'{"a": 2}\n'
    for kind, compress in (("gz", gz), ("zst", zst)):
        path = tmp_path / f"log.{kind}"
        path.write_bytes(compress(first) + compress(second))
        assert [value for _, value in records(str(path))] == [{"a": 1}, {"a": 2}]


def test_opener_helpers(tmp_path: Path) -> None:
    assert compression_of(gz(b"x")[:4]) == "gzip" and compression_of(zst(b"x")[:4]) == "zstd"
    assert compression_of(b"{\"a\"") is None
    assert logical_name("calls.jsonl.zst") == "calls.jsonl" and logical_name("run.json.gz") == "run.json"
    assert logical_name("calls.jsonl") == "calls.jsonl" and logical_name(".gz") == ".gz"
    plain, packed = tmp_path / "a.jsonl", tmp_path / "a.jsonl.zst"
    plain.write_bytes(b"{}\n" * 1000)
    packed.write_bytes(zst(plain.read_bytes()))
    assert content_sha256(packed) == content_sha256(plain)
    with open_input(plain) as handle:
        assert handle.seekable()  # a plain file keeps random access
    with open_input(packed) as handle:
        assert not handle.seekable() and handle.read() == plain.read_bytes()


# --- hostile compressed input: one line, the records before it kept -----------------------


def _lines(count: int) -> bytes:
    return b"".join(b'{"fact_type": "nothing", "n": %d}\n' % n for n in range(count))


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_truncated_file_is_one_line_naming_file_and_line_and_earlier_records_are_read(tmp_path: Path,
                                                                                       kind: str) -> None:
    data = _lines(20_000)
    whole = COMPRESSORS[kind](data)
    path = tmp_path / f"cut.{kind}"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    got: list[Any] = []
    with pytest.raises(InputUnreadable) as raised:
        got.extend(value for _, value in records(str(path)))
    assert raised.value.line == len(got) + 1 and 0 < len(got) < 20_000
    assert got == [{"fact_type": "nothing", "n": n} for n in range(len(got))]
    assert "\n" not in str(raised.value) and "truncated" in str(raised.value)


@pytest.mark.parametrize("content", [b"1\n", b"\n", b"{}\n", b"\xef\xbb\xbf1\n", b"\xef"])
def test_a_file_cut_after_its_first_few_bytes_keeps_the_lines_before_the_cut(tmp_path: Path, content: bytes) -> None:
    """A gzip file cut short after a first line of a byte or two (its first piece, too short to
    tell a byte order mark by) keeps that line, and the error names the line after it."""
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(content)[:-8])  # the trailer gone: truncated after the data
    got: list[Any] = []
    with pytest.raises(InputUnreadable) as raised:
        got.extend(records(str(path)))
    complete = content.removeprefix(b"\xef\xbb\xbf").count(b"\n")
    assert raised.value.line == complete + 1
    assert [number for number, _ in got] == ([1] if content.strip(b"\n") and complete else [])


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_truncated_and_corrupt_files_are_one_refusal_through_the_cli(tmp_path: Path, kind: str) -> None:
    demo = demo_inputs(tmp_path)
    whole = COMPRESSORS[kind](demo.calls.read_bytes())
    truncated, corrupt = tmp_path / f"truncated.{kind}", tmp_path / f"corrupt.{kind}"
    truncated.write_bytes(whole[:-9])
    corrupt.write_bytes(whole[:40] + bytes(b ^ 0x5A for b in whole[40:80]) + whole[80:])
    good = copies([demo.calls], tmp_path / "good", kind)[0]
    home = tmp_path / "home"
    result = ingest(home, "calls", "--format", "openai-chat", str(truncated), str(corrupt), str(good))
    assert result.exit_code == 8 and "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len([e for e in errors if str(truncated) in e]) == 1, result.output
    assert len([e for e in errors if str(corrupt) in e]) == 1, result.output
    assert any(f"{truncated}:" in e and "truncated" in e for e in errors), result.output
    plain = tmp_path / "plain"
    ingest(plain, "calls", "--format", "openai-chat", str(demo.calls))
    assert store_content(home)["inference_calls"] == store_content(plain)["inference_calls"]  # the good file


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_bad_checksum_says_the_records_read_before_it_may_differ(tmp_path: Path, kind: str) -> None:
    """A checksum is checked at the end of what it covers (a gzip member's CRC-32, a Zstandard
    frame's checksum), after its lines were read: the refusal is one line naming the line reached,
    and it says the records read before it came from bytes that failed the check. A file whose
    compressed blocks cannot be decoded says nothing of the kind."""
    name, covered = ("gzip", "member") if kind == "gz" else ("zstd", "frame")
    whole = COMPRESSORS[kind](_lines(2000))
    at = len(whole) - (8 if kind == "gz" else 4)  # gzip: CRC-32, then the length; zstd: the checksum
    sentence = f"the checksum at the end of its {covered} does not match, so the records read before this line may differ"
    damages = [
        ("checksum", whole[:at] + bytes(b ^ 0xFF for b in whole[at:at + 4]) + whole[at + 4:], True),
        ("blocks", whole[:20] + bytes(b ^ 0x5A for b in whole[20:60]) + whole[60:], False),
    ]
    if kind == "gz":  # a member's length is checked with its CRC-32
        damages.append(("length", whole[:-4] + bytes(b ^ 0xFF for b in whole[-4:]), True))
    for damage, data, says in damages:
        path = tmp_path / f"{damage}.{kind}"
        path.write_bytes(data)
        got: list[Any] = []
        with pytest.raises(InputUnreadable) as raised:
            got.extend(records(str(path)))
        message = str(raised.value)
        assert message.startswith(f"unreadable: corrupt {name} data (") and "\n" not in message, message
        assert message.endswith("the rest of the file is not read"), message
        assert (sentence in message) is says, (damage, message)
        assert raised.value.line == len(got) + 1


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_bomb_is_refused_in_one_line_and_the_records_before_it_are_kept(tmp_path: Path, kind: str) -> None:
    head = _lines(3)
    path = tmp_path / f"bomb.{kind}"
    if kind == "gz":
        with gzip.open(path, "wb", compresslevel=9) as handle:
            handle.write(head)
            for _ in range(96):
                handle.write(b" " * MIB)
    else:
        with zstandard.ZstdCompressor(level=19).stream_writer(path.open("wb")) as writer:
            writer.write(head)
            for _ in range(96):
                writer.write(b" " * MIB)
    got: list[Any] = []
    with pytest.raises(InputUnreadable) as raised:
        got.extend(value for _, value in records(str(path), max_line=MIB))
    assert len(got) == 3 and raised.value.line == 4
    assert "decompression bomb" in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_junit_report_reads_compressed_and_a_bomb_is_refused_unparsed(tmp_path: Path, kind: str) -> None:
    from sediment.ingest.junit.parse import ReportError, read_report

    report = FIXTURES / "junit" / "pytest-xunit2.xml"
    path = tmp_path / f"report.xml.{kind}"
    path.write_bytes(COMPRESSORS[kind](report.read_bytes()))
    assert read_report(str(path)) == report.read_bytes()
    big = tmp_path / f"big.{kind}"
    big.write_bytes(COMPRESSORS[kind](b"<testsuites>" + b" " * (2 * MIB)))
    with pytest.raises(ReportError, match="larger than the limit"):
        read_report(str(big), limit=MIB)


def test_library_import_reads_zstandard_too(tmp_path: Path) -> None:
    import orjson

    from sediment.importing.inputs import read_canonical
    from sediment.trajectory import synthetic

    wanted = synthetic.records(2, 2)
    raw = b"".join(orjson.dumps(r) + b"\n" for r in wanted)
    for kind, compress in COMPRESSORS.items():
        path = tmp_path / f"records.{kind}"
        path.write_bytes(compress(raw))
        problems: list[str] = []
        got = [r.trajectory_id for r in read_canonical([path], problems)]
        assert problems == [] and got == [r["trajectory_id"] for r in wanted], kind


# --- one opener, everywhere ---------------------------------------------------------------

#: Where operator-handed input is read, and the files allowed to open files another way (the
#: shared opener itself; the library's own shards and lock; our own bundle format, hashed).
INGEST_PACKAGES = ["sediment/ingest", "sediment/importing", "sediment/trajectory", "plugins/importers"]
ALLOWED = {
    "sediment/ingest/reading/compressed.py",
    "sediment/ingest/reading/files.py",  # spills and reloads its own pickled batches
    "sediment/trajectory/library.py",  # the library's own shards, manifest and lock
    "plugins/importers/rollouts.py",  # Sediment's own bundle: hashed, read by position
    "sediment/ingest/git_notes.py",  # opens a mirror repository (MirrorRoot.open), not a file
}
OPENERS = {"open", "read_bytes", "read_text", "mmap", "GzipFile"}


def test_every_ingest_path_opens_input_through_the_shared_opener() -> None:
    """Fails when a module that reads input opens a file another way (use open_input)."""
    offenders = []
    for package in INGEST_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            if relative in ALLOWED or "/tests/" in relative:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                    if name in OPENERS and not _writes(node):
                        offenders.append(f"{relative}:{node.lineno}: {name}(...)")
    assert offenders == []


def _writes(call: ast.Call) -> bool:
    """A call that opens for writing (a mode with w, x or a)."""
    modes = [a.value for a in [*call.args, *(k.value for k in call.keywords)]
             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return any(set(mode) & set("wxa") and set(mode) <= set("rwxab+t") for mode in modes)


def _frames() -> list[bytes]:
    """Zstandard frames of every layout the format allows a writer to choose: a one-shot frame
    (its content size in a single segment), a streamed one (a window descriptor, no content size),
    with and without a checksum, empty, of raw (incompressible) and RLE blocks, several blocks
    long, and skippable frames (RFC 8878 section 3.1.2) between them."""
    import random

    noise = random.Random(22).randbytes(300_000)  # incompressible: raw blocks
    text = _lines(30_000)  # several 128 KiB blocks
    streamed = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    return [
        zstandard.ZstdCompressor(write_checksum=True).compress(text),
        b"\x50\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"skip!",
        streamed.compress(_lines(2_000)) + streamed.flush(),
        zstandard.ZstdCompressor(write_content_size=False).compress(b"\n" * 400_000),  # RLE blocks, last or not
        zstandard.ZstdCompressor().compress(b""),
        b"\x5f\x2a\x4d\x18" + (0).to_bytes(4, "little"),
        zstandard.ZstdCompressor(level=-5).compress(noise + b"\n"),
    ]


def test_the_frame_walk_ends_between_frames_exactly_at_their_ends() -> None:
    """The decoder ends quietly wherever its bytes end, so a Zstandard file cut short is told by
    where its bytes stand in the layout of frames: fed in pieces of any size, the walk is between
    frames at each frame's end and nowhere inside one."""
    from sediment.ingest.reading.compressed import _Frames

    frames = _frames()
    stream = b"".join(frames)
    ends = {sum(map(len, frames[:count])) for count in range(1, len(frames) + 1)}
    for piece in (1, 3, 4096, len(stream)):
        walk = _Frames()
        for start in range(0, len(stream), piece):
            walk.feed(stream[start:start + piece])
            position = min(start + piece, len(stream))
            if piece <= 4 or position in ends:
                assert walk.between == (position in ends), (piece, position)
    for cut in sorted({*ends, *(end - 1 for end in ends), *(end + 1 for end in ends if end < len(stream)), 4, 5, 9, 13, 777, 5000}):
        walk = _Frames()
        walk.feed(stream[:cut])
        assert walk.between == (cut in ends), cut


def test_a_zstandard_file_cut_anywhere_inside_a_frame_is_refused_as_truncated(tmp_path: Path) -> None:
    """Cut at a frame's end, a file of several frames is whole (its records are every frame's);
    cut anywhere else, the records before the cut are read and the rest is one refusal naming the
    line reached, whatever frame layout the cut falls in."""
    frames = _frames()
    stream = b"".join(frames)
    content = zstandard.ZstdDecompressor().decompressobj().decompress(frames[0])
    ends = [sum(map(len, frames[:count])) for count in range(1, len(frames) + 1)]
    path = tmp_path / "cut.jsonl.zst"
    for cut in sorted({*ends, 4, 5, 6, 8, 200, ends[0] - 1, ends[0] + 3, ends[1] + 2, ends[2] - 4, ends[3] - 1,
                       ends[4] - 2, ends[5] + 6, len(stream) - 1}):
        path.write_bytes(stream[:cut])
        got: list[Any] = []
        try:
            got.extend(value for _, value in records(str(path)))
        except InputUnreadable as refused:
            assert cut not in ends, f"a whole file cut at {cut} refused: {refused}"
            assert "truncated" in str(refused) and "\n" not in str(refused)
            assert refused.line is not None and refused.line >= len(got) + 1
        else:
            assert cut in ends, f"a file cut inside a frame at {cut} read as whole"
        records_in_first = content.count(b"\n")
        assert got[:records_in_first] == [{"fact_type": "nothing", "n": n} for n in range(min(len(got), records_in_first))]


def test_a_read_with_no_room_reads_nothing_and_says_nothing_of_the_end(tmp_path: Path) -> None:
    """A read into an empty buffer is not taken for the stream's end (nor for a file cut short
    inside its frame): the next reads give the whole content."""
    data = _lines(1_000)
    path = tmp_path / "whole.jsonl.zst"
    path.write_bytes(zst(data))
    with open_input(path) as handle:
        raw = handle.raw  # type: ignore[attr-defined]
        assert raw.readinto(memoryview(bytearray(0))) == 0
        buffer, got = memoryview(bytearray(4096)), b""
        while count := raw.readinto(buffer):
            got += bytes(buffer[:count])
    assert got == data
