"""Where the embedded defaults live: ``SEDIMENT_HOME`` (default ``~/.sediment``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DEFAULT_HOME = Path("~/.sediment")


def sediment_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("SEDIMENT_HOME") or DEFAULT_HOME).expanduser()
