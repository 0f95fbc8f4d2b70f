"""The dataset card (``README.md``) of an hf-chat profile export, and what ``datasets`` needs.

``datasets`` 5.2.0 reads a directory through its card: the ``configs:`` block names one data
file per split (without it the evidence sidecar is taken for data), and ``dataset_info:
features:`` declares every column, which both fixes the Arrow types and turns off the JSON
loader's agent-trace sniffing. Columns typed ``json`` keep free-form values verbatim.

Parquet data files (``--format parquet``) store their own schema, so the card then declares no
features, only the files; its body names the JSON text columns (values whose nested shapes
differ, which Arrow would otherwise align into structs with nulls inserted).

One hazard remains that a card cannot fix: pyarrow's JSON reader turns ISO-8601 strings with
whole seconds (or a bare date) into timestamps, even in a column declared ``string``, when a
read chunk holds nothing else at that field. :func:`retyped_text` finds a row that would be
rewritten that way, so the profile declines it (``timestamp_like_text``) instead of
publishing a value the consumer would not read back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from sediment.plugin import (
    Dependency,
    ManifestInfo,
    ProfileInfo,
    PublishedExport,
    atomic_write_bytes,
    parquet_json_columns,
)

FILE_NAME = "README.md"
#: The consumer releases both profiles' rows are checked against (tests/consumers/hf).
VALIDATED_WITH = (Dependency("datasets", "5.2.0"), Dependency("trl", "1.16.0"), Dependency("transformers", "5.24.0"))

#: What pyarrow's JSON reader infers as ``timestamp[s]`` (a superset: ranges are not checked).
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}(?::\d{2}(?::\d{2})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?")

Feature = dict[str, Any]


def string(name: str) -> Feature:
    """A ``string`` column or field (nulls allowed)."""
    return {"name": name, "dtype": "string"}


def int64(name: str) -> Feature:
    """An ``int64`` column or field."""
    return {"name": name, "dtype": "int64"}


def json_value(name: str) -> Feature:
    """A ``json`` column: any JSON value, kept verbatim."""
    return {"name": name, "dtype": "json"}


def json_list(name: str) -> Feature:
    """A list of ``json`` values."""
    return {"name": name, "list": "json"}


def struct_list(name: str, fields: Sequence[Feature]) -> Feature:
    """A list of structs with ``fields``."""
    return {"name": name, "list": list(fields)}


def struct(name: str, fields: Sequence[Feature]) -> Feature:
    """A struct with ``fields``."""
    return {"name": name, "struct": list(fields)}


def json_columns(features: Iterable[Feature]) -> frozenset[str]:
    """The top-level columns whose values are stored as ``json``."""
    return frozenset(f["name"] for f in features if f.get("dtype") == "json" or f.get("list") == "json")


def _string_leaves(value: Any, path: str, found: dict[str, list[str]]) -> None:
    if isinstance(value, str):
        found.setdefault(path, []).append(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _string_leaves(item, f"{path}.{key}", found)
    elif isinstance(value, list):
        for item in value:
            _string_leaves(item, f"{path}[]", found)


def retyped_text(row: Mapping[str, Any], skip: Iterable[str]) -> str | None:
    """The first field path (outside the ``skip`` columns) whose every string value in ``row``
    reads as an ISO-8601 timestamp, so that a chunk of such rows would come back rewritten;
    ``None`` when there is none. A path that also holds other text is safe (read as string)."""
    skipped = set(skip)
    found: dict[str, list[str]] = {}
    for key, value in row.items():
        if key not in skipped:
            _string_leaves(value, key, found)
    for path, values in found.items():
        if all(_TIMESTAMP.fullmatch(v) for v in values):
            return path
    return None


def manifest(profile_id: str) -> ManifestInfo:
    """The manifest declaration of the card written beside ``profile_id`` exports."""
    return ManifestInfo(files=(FILE_NAME,), description=f"dataset card (datasets configs and features) beside "
                        f"{profile_id} exports")


def data_files(published: PublishedExport) -> list[dict[str, str]]:
    """One ``{split, path}`` per published data file, train first; an unsplit file is ``train``."""
    files = published.files.get("data", {})
    if None in files:
        return [{"split": "train", "path": files[None][0].name}]
    return [{"split": side, "path": files[side][0].name} for side in published.sides("data")]


def parquet_files(published: PublishedExport) -> list[Path]:
    """The published Parquet data files (none for a JSONL export)."""
    return [path for path, _ in published.files.get("data", {}).values() if path.suffix == ".parquet"]


def front_matter(published: PublishedExport, features: Sequence[Feature]) -> dict[str, Any]:
    """The card's YAML front matter: the ``default`` config's data files and every feature (JSONL;
    Parquet files carry their schema)."""
    matter: dict[str, Any] = {"configs": [{"config_name": "default", "data_files": data_files(published)}]}
    if not parquet_files(published):
        matter["dataset_info"] = {"features": list(features)}
    return matter


def _format_lines(published: PublishedExport) -> list[str]:
    parquet = parquet_files(published)
    if not parquet:
        return ["Load it with `datasets.load_dataset(\"<this directory>\")`; the splits and column types come from "
                "this card."]
    lines = ["Load it with `datasets.load_dataset(\"<this directory>\")`; the splits come from this card, the "
             "column types from the Parquet files, which share one schema."]
    columns = parquet_json_columns(parquet[0])
    if columns:
        lines += ["", "JSON text columns: " + ", ".join(f"`{c}`" for c in columns) + ". Their values are nested "
                  "objects whose keys or types differ from row to row, which Arrow would align into one struct "
                  "type, inserting nulls for the keys a value lacks; instead each value is stored as its JSON text "
                  "(Parquet's JSON logical type, Arrow's `arrow.json` extension). `datasets` reads these columns as "
                  "`Json()` and gives back the values exactly; other readers get the JSON text."]
    return lines


def _rows(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _file_lines(published: PublishedExport) -> list[str]:
    lines = []
    for side, (path, rows) in published.files.get("data", {}).items():
        lines.append(f"- `{path.name}`: split `{side or 'train'}`, {_rows(rows, 'row')}")
    for path, rows in published.files.get("evidence", {}).values():
        lines.append(f"- `{path.name}`: the evidence sidecar, {_rows(rows, 'line')}; line N describes data line N "
                     "(the canonical row's SHA-256 and schema, the instance id, the prompt digest)")
    lines.append("- `compatibility.json`: the profile record, row and skip counts, and every data and evidence "
                 "file's SHA-256")
    return lines


def render(profile_id: str, info: ProfileInfo, published: PublishedExport, features: Sequence[Feature],
           title: str) -> bytes:
    """The whole card: front matter, then a short body naming the profile, the consumer
    versions, the support claim and the files."""
    header = yaml.safe_dump(front_matter(published, features), sort_keys=False, default_flow_style=False)
    versions = ", ".join(f"{d.package} {d.version}" for d in info.validated_with)
    body = [
        f"# {title}",
        "",
        f"Exported by Sediment profile `{profile_id}` (version {info.version}) from the `{info.population}` "
        f"rows of `{info.target}` (`{info.canonical_schema}`).",
        "",
        f"Validated with {versions}: {info.validation}.",
        "",
        f"Support: {info.support}.",
        "",
        *_format_lines(published),
        "",
        "## Files",
        "",
        *_file_lines(published),
    ]
    return ("---\n" + header + "---\n" + "\n".join(body) + "\n").encode("utf-8")


def write_card(published: PublishedExport, profile_id: str, info: ProfileInfo, features: Sequence[Feature],
               title: str) -> Path | None:
    """Write ``README.md`` into the export directory when ``published`` is a ``profile_id``
    export that published rows; the path, else ``None``."""
    if published.profile != profile_id or published.rows("data") == 0:
        return None
    path = published.out_dir / FILE_NAME
    atomic_write_bytes(path, render(profile_id, info, published, features, title))
    return path
