"""How a content blob's canonical record text is compressed in the ``blobs`` table.

A blob is written as a Zstandard frame (level 1, with its content size): it compresses the
small records a call log is made of about five times faster than zlib, and reads back about
three times faster, at a slightly smaller size. Stores written before hold zlib streams, and
they read as they always did: :func:`unpack` tells the two apart by their first bytes (a
Zstandard frame starts with its magic number, a zlib stream never does).

The record's hash is taken over the uncompressed text, so how a blob is compressed never
changes its key, a Fact, or anything derived from the store.
"""

from __future__ import annotations

import threading
import zlib
from typing import Final

import zstandard

#: The first four bytes of every Zstandard frame.
ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
#: The compression level: the fastest that still compresses records below zlib's size.
LEVEL: Final = 1

_local = threading.local()  # one (de)compression context per thread: they are not thread-safe


def _compressor() -> zstandard.ZstdCompressor:
    compressor = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstandard.ZstdCompressor(level=LEVEL, write_content_size=True)
    return compressor


def _decompressor() -> zstandard.ZstdDecompressor:
    decompressor = getattr(_local, "decompressor", None)
    if decompressor is None:
        decompressor = _local.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def pack(record: bytes) -> bytes:
    """``record`` as stored in ``blobs.content``."""
    return _compressor().compress(record)


def unpack(content: bytes) -> bytes:
    """The record text of a stored blob, written by :func:`pack` or by a store before it (zlib)."""
    if content[:4] == ZSTD_MAGIC:
        return _decompressor().decompress(content)
    return zlib.decompress(content)
