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

import functools
import gzip
import hashlib
import io
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Final

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
#: Compressed bytes handed to the Zstandard decoder at a time: one call's output is at most
#: about 32 thousand times its input, so this bounds what a hostile frame inflates to at once.
_ZSTD_STEP: Final = 4096
#: The Zstandard decoder's output buffer: a step's output (about a call's replayed history) comes
#: in a few pieces joined once, rather than in many of the decoder's default 128 KiB.
_ZSTD_OUT: Final = MIB


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
def open_pieces(path: str | Path, size: int = READ_BUFFER) -> Iterator[Iterator[bytes]]:
    """The content of ``path`` (``-``: stdin) as :func:`open_input` reads it, in pieces of at
    most ``size`` bytes, for a reader that splits it itself: an inflated input's pieces are the
    decoder's own (not copied into a buffer first), any other's are its reads. A compressed
    input's errors are raised by the piece that meets them, as :func:`open_input`'s reads raise them."""
    with open_input(path) as handle:
        raw = getattr(handle, "raw", None)
        if isinstance(raw, _Inflating):  # nothing was read through the buffer: the raw stream stands at the start
            yield iter(functools.partial(raw.piece, size), b"")
        else:
            yield iter(functools.partial(handle.read1, size), b"")  # type: ignore[attr-defined]


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
    """The compressed source, counting the bytes the decoder has taken."""

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size)
        self.count += len(data)
        return data

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._source.close()
        super().close()


class _Inflating(io.RawIOBase):
    """A compressed source's content, inflated a bounded piece at a time and watched for bombs."""

    def __init__(self, source: BinaryIO, kind: str, max_inflation: int, floor: int) -> None:
        self.kind, self.max_inflation, self.floor = kind, max_inflation, floor
        self.source = _Counted(source)
        self.inflated = 0
        self._gzip = gzip.GzipFile(fileobj=self.source, mode="rb") if kind == "gzip" else None
        self._zstd = zstandard.ZstdDecompressor()
        self._frame = self._zstd.decompressobj(write_size=_ZSTD_OUT)
        self._in_frame = False  # bytes of the current Zstandard frame have been read
        self._pending = b""
        self._bomb = False  # the bound was reached: the next read refuses the rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.piece(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def piece(self, size: int) -> bytes:
        """The next at most ``size`` inflated bytes, as the decoder gave them (empty at the end);
        a reader that takes them whole (:func:`open_pieces`) saves :meth:`readinto`'s copy."""
        if self._bomb:
            raise InputUnreadable(f"{self.kind} data inflates to more than {self.max_inflation} times its "
                                  "compressed size (a decompression bomb); the rest of the file is not read")
        try:
            data = self._gzip_read(size) if self._gzip is not None else self._zstd_read(size)
        except InputUnreadable:
            raise
        except EOFError:
            raise InputUnreadable(f"unreadable: truncated {self.kind} data: the compressed stream ends early; "
                                  "the rest of the file is not read") from None
        except (gzip.BadGzipFile, zlib.error, zstandard.ZstdError) as exc:
            raise InputUnreadable(f"unreadable: corrupt {self.kind} data ({exc}); "
                                  "the rest of the file is not read") from None
        allowed = max(self.floor, self.max_inflation * self.source.count) - self.inflated
        if len(data) > allowed:  # what is within the bound is still read; the next read refuses
            data, self._bomb = data[:max(allowed, 0)], True
            if not data:
                return self.piece(size)
        self.inflated += len(data)
        return data

    def _gzip_read(self, size: int) -> bytes:
        assert self._gzip is not None
        return self._gzip.read1(size)

    def _zstd_read(self, size: int) -> bytes:
        while not self._pending:
            if self._frame.eof:  # a frame ended: what followed it starts the next one
                rest = self._frame.unused_data
                self._frame, self._in_frame = self._zstd.decompressobj(write_size=_ZSTD_OUT), False
                if rest:
                    self._in_frame = True
                    self._pending = self._frame.decompress(rest)
                    continue
            chunk = self.source.read(_ZSTD_STEP)
            if not chunk:
                if self._in_frame:
                    raise EOFError
                return b""
            self._in_frame = True
            self._pending = self._frame.decompress(chunk)
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def close(self) -> None:
        try:
            if self._gzip is not None:
                self._gzip.close()
        finally:
            self.source.close()
            super().close()
