"""The receiver's durable queue: a delivery is acknowledged only once it is on disk.

A delivery is one file: a JSON header line (the route, the capture source, the headers that
matter, the receive time) followed by the request body exactly as it arrived. It is written to
``tmp/``, flushed and ``fsync``'d, then hard-linked into ``pending/`` under its delivery key and
the directory is ``fsync``'d: only then does the receiver answer 2xx. The link is the
idempotency check: a second delivery with the same key (a forge's redelivery, a sender's
retry) finds the name taken in ``pending/`` or already ``done/`` and is answered as a
duplicate without being stored again.

The ingest worker takes ``pending/`` in arrival order, translates and stores each delivery,
then marks it ``done/`` (an empty file of the same name) and removes it from ``pending/``; a
delivery the translators refuse goes to ``refused/`` with the reason in a ``.reason`` file
beside it. A crash between storing and marking is harmless: on restart the delivery is
processed again and the store's natural keys make the second write store nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from sediment.errors import ConfigurationError

_KEY_CHARS: Final = frozenset("0123456789abcdef")
_STATES: Final = ("tmp", "pending", "done", "refused")


@dataclass(frozen=True)
class Delivery:
    """One spooled delivery: what arrived, where and when."""

    key: str
    route: str
    source: str
    headers: Mapping[str, str]
    received_at: datetime
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def delivery_key(route: str, identity: str) -> str:
    """The spool name of a delivery: a digest of its route and its idempotency identity (a
    delivery id header, or the body's digest when the sender gives none)."""
    return hashlib.sha256(f"{route}\x00{identity}".encode()).hexdigest()


def body_digest(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class Spool:
    """A directory of deliveries: ``tmp/``, ``pending/``, ``done/``, ``refused/``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            for state in _STATES:
                (path / state).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the receiver spool {path}: {exc.strerror or exc}") from None
        self._counter = 0
        self._lock = threading.Lock()
        for leftover in (path / "tmp").iterdir():  # a write the process died in; never acknowledged
            leftover.unlink(missing_ok=True)

    def _state(self, state: str, key: str) -> Path:
        return self.path / state / key

    def seen(self, key: str) -> bool:
        return any(self._state(state, key).exists() for state in ("pending", "done", "refused"))

    def accept(self, key: str, *, route: str, source: str, headers: Mapping[str, str], received_at: datetime,
               body: bytes) -> bool:
        """Store the delivery durably under ``key``; False when that key was already stored
        (a duplicate, nothing written). Raises OSError when the disk refuses: then nothing is
        acknowledged."""
        if set(key) - _KEY_CHARS or len(key) != 64:
            raise ValueError(f"not a delivery key: {key!r}")
        if self.seen(key):
            return False
        header = json.dumps({"route": route, "source": source, "headers": dict(sorted(headers.items())),
                             "received_at": received_at.isoformat()}, ensure_ascii=True)
        with self._lock:
            self._counter += 1
            temporary = self._state("tmp", f"{key}.{os.getpid()}.{self._counter}")
        try:
            with temporary.open("xb") as handle:
                handle.write(header.encode("ascii") + b"\n" + body)
                handle.flush()
                os.fsync(handle.fileno())
            if self.seen(key):
                return False
            try:
                os.link(temporary, self._state("pending", key))
            except FileExistsError:
                return False
            _fsync_directory(self.path / "pending")
            return True
        finally:
            temporary.unlink(missing_ok=True)

    def pending(self) -> list[str]:
        """Keys waiting to be ingested, oldest first (by arrival, then name)."""
        entries = []
        for entry in os.scandir(self.path / "pending"):
            try:
                entries.append((entry.stat().st_mtime_ns, entry.name))
            except FileNotFoundError:
                continue
        return [name for _, name in sorted(entries)]

    def read(self, key: str) -> Delivery:
        data = self._state("pending", key).read_bytes()
        header_line, _, body = data.partition(b"\n")
        header: dict[str, Any] = json.loads(header_line)
        return Delivery(key=key, route=header["route"], source=header["source"], headers=header["headers"],
                        received_at=datetime.fromisoformat(header["received_at"]), body=body)

    def mark_done(self, key: str) -> None:
        self._state("done", key).touch()
        _fsync_directory(self.path / "done")
        self._state("pending", key).unlink(missing_ok=True)

    def mark_refused(self, key: str, reason: str) -> None:
        refused = self._state("refused", key)
        os.replace(self._state("pending", key), refused)
        refused.with_name(f"{key}.reason").write_text(reason + "\n", encoding="utf-8")
        _fsync_directory(self.path / "refused")

    def counts(self) -> dict[str, int]:
        return {"pending": _count(self.path / "pending"), "done": _count(self.path / "done"),
                "refused": sum(1 for name in _names(self.path / "refused") if not name.endswith(".reason"))}

    def refusals(self) -> Iterator[tuple[str, str]]:
        for name in sorted(_names(self.path / "refused")):
            if name.endswith(".reason"):
                yield name.removesuffix(".reason"), (self.path / "refused" / name).read_text(encoding="utf-8").strip()


def _names(path: Path) -> Iterator[str]:
    with os.scandir(path) as entries:
        for entry in entries:
            yield entry.name


def _count(path: Path) -> int:
    return sum(1 for _ in _names(path))
