"""Opening an input file: plain, gzip or Zstandard, told apart by its first bytes.

Every ingest path opens the files an operator hands in with :func:`open_input`, so a gateway's
rotated, compressed logs are read as they are. The format is detected by magic bytes (gzip
``1f 8b``, RFC 1952; Zstandard ``28 b5 2f fd``, RFC 8878), never by the file's suffix, and a
compressed file is inflated as it is read, never whole. A plain file is returned as an
ordinary buffered file, so a reader may still seek or measure it.

Hostile input is bounded: memory holds a bounded piece of the inflated stream whatever it
inflates to, and past :data:`INFLATION_FLOOR` bytes a stream may inflate to at most
:data:`MAX_INFLATION` times the compressed bytes read so far (by format); beyond that it is a
decompression bomb (a reader may pass its own bound). That, a truncated stream and corrupt data all raise
:class:`InputUnreadable` (an :class:`OSError`, one line) from the read that meets them, so the
records read before it are kept by the reader.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Final, cast

import zstandard

MIB: Final = 1 << 20
READ_BUFFER: Final = 4 * MIB
"""The read buffer of every input (agent call logs have lines of megabytes)."""
MAX_INFLATION: Final = {"gzip": 200, "zstd": 4096}
"""How many times the compressed bytes read so far a compressed input may inflate to (once past
:data:`INFLATION_FLOOR`), by format: beyond it the file is a decompression bomb, refused in one
line. gzip's window is 32 KiB, so a gateway log compresses by a few times and 200 (the library
import's bound) is far above it. Zstandard's window reaches the previous call, which a call log
replays whole, so it legitimately compresses by hundreds (the bench's 100-call Sessions: about
130 times; the ratio grows with the calls per Session): 4096. Memory is bounded either way;
the bound caps the time a bomb can waste."""
INFLATION_FLOOR: Final = 64 * MIB
"""Inflated bytes always allowed, whatever the ratio (the longest line an ingest reads)."""
GZIP_MAGIC: Final = b"\x1f\x8b"
ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
COMPRESSED_SUFFIXES: Final = (".gz", ".zst", ".zstd")
#: Compressed bytes the Zstandard decoder reads from the file at a time. What it inflates them to
#: is bounded by the reader's buffer, into which it decodes (never more than that buffer at once).
_ZSTD_STEP: Final = 4096


class InputUnreadable(OSError):
    """The rest of an input cannot be read: corrupt or truncated compressed data, or a bomb.
    The message is one line; ``line`` is set by a reader that knows which line it reached."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.line: int | None = None

    def __str__(self) -> str:
        return self.message


def compression_of(head: bytes) -> str | None:
    """``gzip``, ``zstd`` or None (plain), from a file's first bytes."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


def logical_name(name: str) -> str:
    """A file's name without a compression suffix (``calls.jsonl.zst`` → ``calls.jsonl``): the
    name that says what the content is, the same for a log before and after rotation."""
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def open_input(path: str | Path, *, max_inflation: int | None = None,
               floor: int = INFLATION_FLOOR) -> BinaryIO:
    """A buffered binary reader of ``path``'s content (``-``: stdin, never closed), inflated when
    the file is gzip or Zstandard. Close it when done (``with open_input(path) as handle``)."""
    if str(path) == "-":
        source: BinaryIO = io.BufferedReader(_Borrowed(sys.stdin.buffer), READ_BUFFER)
    else:
        source = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 - returned to the caller
    try:
        kind = compression_of(source.peek(4)[:4])  # type: ignore[attr-defined]
    except BaseException:
        source.close()
        raise
    if kind is None:
        return source
    bound = MAX_INFLATION[kind] if max_inflation is None else max_inflation
    return io.BufferedReader(_Inflating(source, kind, bound, floor), READ_BUFFER)


@contextmanager
def open_filling(path: str | Path) -> Iterator[Callable[[memoryview], int]]:
    """The content of ``path`` (``-``: stdin) as :func:`open_input` reads it, as a function that
    fills a buffer with the next bytes and says how many (0: the end), for a reader that keeps its
    own buffer and splits it itself: an inflated input is decoded straight into that buffer (never
    into a piece copied there after). A compressed input's errors are raised by the fill that
    meets them, as :func:`open_input`'s reads raise them."""
    with open_input(path) as handle:
        raw = getattr(handle, "raw", None)
        if isinstance(raw, _Inflating):  # nothing was read through the buffer: the raw stream stands at the start
            yield raw.readinto
        else:  # what is there, not a full buffer: a pipe's lines are read as they come
            yield handle.readinto1  # type: ignore[attr-defined]


def is_compressed(path: str | Path) -> bool:
    """Whether ``path`` starts with a gzip or Zstandard magic number."""
    with open(path, "rb") as handle:
        return compression_of(handle.read(4)) is not None


def content_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's content (inflated when compressed, so a log keeps its digest
    when it is rotated and compressed)."""
    digest = hashlib.sha256()
    with open_input(path) as handle:
        while chunk := handle.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


def read_all(path: str | Path, *, limit: int | None = None) -> bytes:
    """A whole (small) input's content; with ``limit``, at most ``limit + 1`` bytes are read, so
    the caller can tell a larger one and refuse it."""
    with open_input(path) as handle:
        return handle.read() if limit is None else handle.read(limit + 1)


class _Borrowed(io.RawIOBase):
    """Reads a stream it does not own (stdin): closing this leaves the stream open."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        read1: Callable[[int], bytes] = getattr(self._stream, "read1", self._stream.read)
        data = read1(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Counted(io.RawIOBase):
    """The compressed source, counting the bytes the decoder has taken (and showing them to
    ``frames``, when given)."""

    def __init__(self, source: BinaryIO, frames: _Frames | None = None) -> None:
        self._source = source
        self._frames = frames
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size)
        self.count += len(data)
        if self._frames is not None:
            self._frames.feed(data)
        return data

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._source.close()
        super().close()


class _Frames:
    """Where the compressed bytes read so far stand in Zstandard's layout of frames (RFC 8878,
    section 3): between two frames, or inside one. The decoder reads frame after frame and ends
    quietly where the bytes end, inside a frame or not, so this tells a file cut short from a
    whole one. Only the headers are read (the frame's, then each block's three bytes); a block's
    content is skipped by its size, never decoded. Where the bytes do not follow the layout (no
    frame's magic number, a reserved block type), the decoder refuses them itself: the walk stops
    there and says nothing more."""

    __slots__ = ("_checksum", "_head", "_need", "_skip", "_state")

    _MAGIC, _DESCRIPTOR, _BLOCK, _SKIPPABLE, _LOST = range(5)
    _DICTIONARY_ID: Final = (0, 1, 2, 4)

    def __init__(self) -> None:
        self._state = self._MAGIC
        self._need = 4  # the bytes the header being read takes
        self._head = b""  # what has been read of it
        self._skip = 0  # the bytes to pass before the next header
        self._checksum = False  # the frame ends with a four-byte checksum

    @property
    def between(self) -> bool:
        """Whether the bytes read so far end where a frame ended (or where the walk stopped)."""
        return self._state == self._LOST or (self._state == self._MAGIC and not self._head and not self._skip)

    def feed(self, data: bytes) -> None:
        position, size = 0, len(data)
        while position < size and self._state != self._LOST:
            if self._skip:
                taken = min(self._skip, size - position)
                self._skip -= taken
                position += taken
                continue
            if self._state == self._BLOCK and not self._head:
                position = self._blocks(data, position)  # the usual run: block after block in one piece
                continue
            taken = min(self._need - len(self._head), size - position)
            self._head += data[position:position + taken]
            position += taken
            if len(self._head) == self._need:
                head, self._head = self._head, b""
                self._header(head)

    def _blocks(self, data: bytes, position: int) -> int:
        """Pass the blocks whose headers stand whole in ``data`` from ``position``, up to the
        frame's last block or the first header cut by the piece's end; where the walk stands then."""
        size = len(data)
        while position + 3 <= size:
            header = data[position] | data[position + 1] << 8 | data[position + 2] << 16
            kind = (header >> 1) & 0x03
            if kind == 3 or header & 0x01:  # reserved, or the frame's last block: the general step
                break
            position += 3 + _content(header)
            if position > size:
                self._skip = position - size
                return size
        if position + 3 > size:  # a header cut by the piece's end
            self._head = data[position:]
            return size
        self._header(data[position:position + 3])
        return position + 3

    def _header(self, head: bytes) -> None:
        """The next step once a header of ``self._need`` bytes is read whole."""
        if self._state == self._MAGIC:
            if head == ZSTD_MAGIC:
                self._state, self._need = self._DESCRIPTOR, 1
            elif head[0] & 0xF0 == 0x50 and head[1:] == b"\x2a\x4d\x18":  # a skippable frame
                self._state, self._need = self._SKIPPABLE, 4
            else:
                self._state = self._LOST
        elif self._state == self._DESCRIPTOR:
            descriptor = head[0]
            if descriptor & 0x08:  # the reserved bit
                self._state = self._LOST
                return
            single_segment = bool(descriptor & 0x20)
            content_size = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
            window = 0 if single_segment else 1
            self._skip = window + self._DICTIONARY_ID[descriptor & 0x03] + content_size
            self._checksum = bool(descriptor & 0x04)
            self._state, self._need = self._BLOCK, 3
        elif self._state == self._BLOCK:
            header = int.from_bytes(head, "little")
            if (header >> 1) & 0x03 == 3:  # reserved
                self._state = self._LOST
                return
            self._skip = _content(header)
            if header & 0x01:  # the frame's last block
                self._skip += 4 if self._checksum else 0
                self._state, self._need = self._MAGIC, 4
        else:  # a skippable frame's size
            self._skip = int.from_bytes(head, "little")
            self._state, self._need = self._MAGIC, 4


#: How each decoder words a checksum that does not match (CPython's gzip at a member's end: its
#: CRC-32 or its length; libzstd at a frame's end, for a frame that carries one).
_CHECKSUM_FAILURES: Final = ("CRC check failed", "Incorrect length of data produced", "doesn't match checksum")


#: How every refusal of an input that cannot be read on ends (the records before it are kept).
_UNREAD: Final = "the rest of the file is not read"


def _checksum_note(kind: str, problem: Exception) -> str:
    """What a corrupt file's refusal says of the records read before it, when ``problem`` is a
    checksum that does not match (else nothing). A checksum is checked at the end of what it
    covers (a gzip member, a Zstandard frame), after its lines were read: those records came from
    bytes that failed the check."""
    if not any(failure in str(problem) for failure in _CHECKSUM_FAILURES):
        return ""
    covered = "member" if kind == "gzip" else "frame"
    return (f"the checksum at the end of its {covered} does not match, so the records read before this line "
            "may differ from what was written; ")


def _content(header: int) -> int:
    """The bytes a Zstandard block's content takes after its header: an RLE block (type 1) holds
    one byte, whatever size it stands for; a raw or compressed one, its size."""
    return 1 if (header >> 1) & 0x03 == 1 else header >> 3


class _Inflating(io.RawIOBase):
    """A compressed source's content, inflated straight into the reader's buffer (so at most that
    buffer at a time) and watched for bombs."""

    def __init__(self, source: BinaryIO, kind: str, max_inflation: int, floor: int) -> None:
        self.kind, self.max_inflation, self.floor = kind, max_inflation, floor
        self._frames = _Frames() if kind == "zstd" else None
        self.source = _Counted(source, self._frames)
        self._gzip = gzip.GzipFile(fileobj=self.source, mode="rb") if kind == "gzip" else None
        self._zstd = None if kind == "gzip" else zstandard.ZstdDecompressor().stream_reader(
            cast(BinaryIO, self.source), read_size=_ZSTD_STEP, read_across_frames=True, closefd=False)
        self.inflated = 0
        self._bomb = False  # the bound was reached: the next read refuses the rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        """The next inflated bytes, decoded into ``buffer``: how many (0 at the end)."""
        if not len(buffer):
            return 0  # no room: nothing read, and nothing said of the stream's end
        if self._bomb:
            raise InputUnreadable(f"{self.kind} data inflates to more than {self.max_inflation} times its "
                                  f"compressed size (a decompression bomb); {_UNREAD}")
        try:
            count = self._gzip_into(buffer) if self._zstd is None else self._zstd.readinto(buffer)
            if count == 0 and self._frames is not None and not self._frames.between:
                raise EOFError
        except InputUnreadable:
            raise
        except EOFError:
            raise InputUnreadable(f"unreadable: truncated {self.kind} data: the compressed stream ends early; "
                                  f"{_UNREAD}") from None
        except (gzip.BadGzipFile, zlib.error, zstandard.ZstdError) as exc:
            raise InputUnreadable(f"unreadable: corrupt {self.kind} data ({exc}); "
                                  f"{_checksum_note(self.kind, exc)}{_UNREAD}") from None
        allowed = max(self.floor, self.max_inflation * self.source.count) - self.inflated
        if count > allowed:  # what is within the bound is still read; the next read refuses
            count, self._bomb = max(allowed, 0), True
            if not count:
                return self.readinto(buffer)
        self.inflated += count
        return count

    def _gzip_into(self, buffer: memoryview) -> int:
        assert self._gzip is not None
        data = self._gzip.read1(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            if self._gzip is not None:
                self._gzip.close()
            if self._zstd is not None:
                self._zstd.close()  # type: ignore[no-untyped-call]
        finally:
            self.source.close()
            super().close()
