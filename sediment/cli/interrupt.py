"""Ctrl-C (SIGINT) in a ``sediment`` process: one ``KeyboardInterrupt``, never lost.

The handler raises ``KeyboardInterrupt`` wherever the main thread stands, so each writer's
staged output is removed as it unwinds. Where it stands may be a finalizer: a weak reference's
callback or an object's ``__del__``, which SQLAlchemy runs when an engine's or a connection's
last reference goes. An exception there cannot propagate; the interpreter hands it to
``sys.unraisablehook`` and goes on, and the command would run to its end and publish. So
:func:`install` also sets a hook that takes such an interrupt and delivers SIGINT again, from a
helper thread a millisecond later, when the main thread has left the finalizer; the interrupt
then lands in ordinary code. Any other unraisable exception goes to the hook there was.

A library that logs the interrupt as an error on its way out (SQLAlchemy's pool, when it lands in
a connection's reset) is not shown: :func:`not_an_interrupt` filters the log handler. The
interrupt is reported once, as ``interrupted``.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

#: How long after an interrupt lost in a finalizer it is delivered again.
REDELIVERY_SECONDS: Final = 0.001

_interrupted: list[bool] = []


def interrupted() -> bool:
    """Whether Ctrl-C arrived in this process."""
    return bool(_interrupted)


def note() -> None:
    """Record an interrupt that arrived another way (a ``KeyboardInterrupt`` raised before the
    handler was set)."""
    _interrupted.append(True)


def install() -> None:
    """Handle SIGINT as this module says, unless it is ignored (then it stays ignored)."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return
    signal.signal(signal.SIGINT, _on_interrupt)
    sys.unraisablehook = _redelivering(sys.unraisablehook)


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    _interrupted.append(True)
    signal.default_int_handler(signum, frame)  # KeyboardInterrupt: staged output is removed as it unwinds


def _redelivering(previous: Callable[[Any], object]) -> Callable[[Any], None]:
    def hook(unraisable: Any) -> None:
        if _interrupted and isinstance(unraisable.exc_value, KeyboardInterrupt):
            threading.Thread(target=_deliver_again, name="sediment-interrupt", daemon=True).start()
            return
        previous(unraisable)

    return hook


def _deliver_again() -> None:
    time.sleep(REDELIVERY_SECONDS)
    signal.raise_signal(signal.SIGINT)


def not_an_interrupt(record: logging.LogRecord) -> bool:
    """A log filter: False for a record that logs a ``KeyboardInterrupt`` (reported once, as
    ``interrupted``, by the command line)."""
    return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))
