"""The derivation policy as a TOML file with a comment per field (``sediment policy show``).

Rendered from the policy model itself (its fields, their descriptions, and the values of the
policy given), so the file lists every field there is; read back with
:meth:`sediment.model.policy.DerivationPolicy.from_toml` it gives the same policy and digest.
"""

from __future__ import annotations

import json
import math
import textwrap

from pydantic import BaseModel

from sediment.model.policy import DerivationPolicy


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"a policy value is not finite: {value!r}")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: the JSON escapes are TOML's
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _comment(text: str | None, width: int = 96) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(text or "", width - 2)]


def _table(model: BaseModel, path: tuple[str, ...], lines: list[str]) -> None:
    fields = type(model).model_fields
    tables = []
    for name, info in fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            tables.append((name, info.description, value))
            continue
        lines.extend(_comment(info.description))
        lines.append(f"{name} = {_value(value)}")
    for name, description, value in tables:
        lines.append("")
        lines.extend(_comment(description))
        lines.append(f"[{'.'.join((*path, name))}]")
        _table(value, (*path, name), lines)


def policy_toml(policy: DerivationPolicy | None = None) -> str:
    """``policy`` (default: the default policy) as commented TOML."""
    resolved = policy if policy is not None else DerivationPolicy()
    lines = ["# Sediment derivation policy (`sediment derive --policy FILE`).",
             "# A file may name only the fields it changes: every other field keeps the default below.",
             f"# Digest of this policy: {resolved.digest}", ""]
    _table(resolved, (), lines)
    return "\n".join(lines) + "\n"
