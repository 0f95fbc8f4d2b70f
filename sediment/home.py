"""Where the embedded defaults live: ``SEDIMENT_HOME`` (default ``~/.sediment``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sediment.errors import ConfigurationError

DEFAULT_HOME = Path("~/.sediment")
HOME_ENV = "SEDIMENT_HOME"


def sediment_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get(HOME_ENV) or DEFAULT_HOME).expanduser()


def ensure_directory(path: Path, what: str = HOME_ENV) -> Path:
    """``path``, created with its parents if missing; a :class:`ConfigurationError` naming it (and
    ``what`` it is) when it cannot be: under a regular file, in a read-only directory, …"""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigurationError(f"{what} {path} is not a directory") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot create {what} {path}: {exc.strerror or exc}") from None
    return path


def ensure_home(environ: Mapping[str, str] | None = None) -> Path:
    """:func:`sediment_home`, created if missing (one line naming the path when it cannot be)."""
    return ensure_directory(sediment_home(environ))
