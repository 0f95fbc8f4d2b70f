"""The permission bits of the files Sediment publishes.

A published file (an export's rows and evidence sidecar, its ``compatibility.json``, a
dataset card, a report, the trajectory library's records, manifest and gallery pages) gets the
mode any ordinary program gives a new file: ``0666`` less the process umask, so a shared
``umask 002`` makes it group-writable and ``umask 077`` keeps it private. Files are still
staged privately (a ``0600`` temporary, or a ``0700`` staging directory) until they are renamed
into place.

The one documented exception is a derived-evidence bundle (docs/bundle.md): it stays ``0600``
in a ``0700`` directory whatever the umask, because it holds the org's whole evidence.
"""

from __future__ import annotations

import os


def current_umask() -> int:
    """The process umask, read without changing it where the platform allows (Linux's
    ``/proc/self/status``); elsewhere set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def published_mode() -> int:
    """``0666`` less the umask: the mode of a published file."""
    return 0o666 & ~current_umask()


def publish_mode(fd: int) -> None:
    """Give the open (privately created) file ``fd`` the published mode before it is renamed
    into place."""
    os.fchmod(fd, published_mode())
