"""Profile data files as Parquet (``--format parquet``), through pyarrow (the ``parquet`` extra).

A profile's data rows are staged as JSONL as always; at publication each staged data file is
encoded as one Parquet file (``data[.train|.eval].parquet``), all with one schema, so a
consumer reading the splits together gets one set of columns. Every top-level key of the rows
is a column, in row order; every row must have the same keys (a missing key would become a
null the row did not hold).

A column's type is what Arrow infers from its values, kept only when reading the column back
gives every value exactly (types included: ``1``, ``1.0`` and ``true`` differ; key order is
kept) and every chunk of rows infers the same type (an all-null or all-empty chunk fits any).
Any other column, typically nested values whose objects have different keys, where Arrow would
align the structs and insert nulls, or lists mixing types, is a **JSON text column**: each value
is its compact JSON text, typed with Arrow's canonical JSON extension type (Parquet's JSON
logical type), so ``datasets`` reads it as ``Json()`` and gives the values back, and any other
reader sees the text. The schema metadata lists those columns under ``sediment.json_columns``.

Text stays text: a timestamp-like string is a string column, never a timestamp.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sediment.errors import ConfigurationError, ProfileError

#: Rows per Arrow chunk (both when choosing the column types and when writing).
CHUNK_ROWS = 2048
#: The schema metadata key naming the JSON text columns (a JSON list of names).
JSON_COLUMNS_KEY = b"sediment.json_columns"
SUFFIX = ".parquet"


def _arrow() -> Any:
    try:
        import pyarrow  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        raise ConfigurationError("--format parquet needs the parquet extra: pip install 'sediment[parquet]'") from None
    if not hasattr(pyarrow, "json_"):
        raise ConfigurationError(f"--format parquet needs pyarrow 19 or newer (found {pyarrow.__version__}): "
                                 "pip install 'sediment[parquet]'")
    return pyarrow


def require_parquet() -> None:
    """Fail in one line (exit code 1) when pyarrow is not installed; called before any claim."""
    _arrow()


def _exact(value: Any) -> str:
    """A text in which two values are equal exactly when they are the same JSON value, types and
    key order included."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _chunks(path: Path) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    with path.open("rb") as handle:
        for line in handle:
            chunk.append(json.loads(line))
            if len(chunk) == CHUNK_ROWS:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _writable(pa: Any, kind: Any) -> bool:
    """False for a type Parquet cannot hold (a struct without fields, anywhere inside)."""
    if pa.types.is_struct(kind):
        return kind.num_fields > 0 and all(_writable(pa, kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return bool(_writable(pa, kind.value_type))
    return True


def _merge(pa: Any, a: Any, b: Any) -> Any | None:
    """The one type both chunks' values read back in, or ``None``."""
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if pa.types.is_list(a) and pa.types.is_list(b):
        inner = _merge(pa, a.value_type, b.value_type)
        return None if inner is None else pa.list_(inner)
    return None


def _native(pa: Any, values: list[Any], kind: Any | None = None) -> Any | None:
    """The Arrow array of ``values`` (of type ``kind``, else inferred) when it reads back exactly."""
    try:
        array = pa.array(values, type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
        return None
    if not _writable(pa, array.type):
        return None
    if [_exact(v) for v in array.to_pylist()] != [_exact(v) for v in values]:
        return None
    return array


class ParquetSchema:
    """The columns of a profile's data files and each one's type (``None``: JSON text)."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.types: dict[str, Any | None] = {}
        self.json: set[str] = set()

    def observe(self, pa: Any, rows: list[dict[str, Any]], where: str) -> None:
        for row in rows:
            if list(row) != self.columns:
                raise ProfileError(f"{where}: Parquet needs every row to have the same columns; a row has "
                                   f"{', '.join(row)} where the first had {', '.join(self.columns)}; nothing was "
                                   "published")
        for column in self.columns:
            if column in self.json:
                continue
            array = _native(pa, [row[column] for row in rows])
            merged = None if array is None else (
                array.type if column not in self.types else _merge(pa, self.types[column], array.type))
            if merged is None:
                self.json.add(column)
                self.types.pop(column, None)
            else:
                self.types[column] = merged

    def arrow(self, pa: Any) -> Any:
        fields = [pa.field(c, pa.json_() if c in self.json else self.types[c]) for c in self.columns]
        return pa.schema(fields, metadata={JSON_COLUMNS_KEY: json.dumps(sorted(self.json)).encode("ascii")})

    def table(self, pa: Any, schema: Any, rows: list[dict[str, Any]], where: str) -> Any:
        arrays = []
        for column in self.columns:
            values = [row[column] for row in rows]
            if column in self.json:
                storage = pa.array([_exact(v) for v in values], type=pa.string())
                arrays.append(pa.ExtensionArray.from_storage(pa.json_(), storage))
                continue
            array = _native(pa, values, self.types[column])
            if array is None:  # a chunk that inferred alone but not under the merged type
                raise ProfileError(f"{where}: column {column} does not read back exactly as "
                                   f"{self.types[column]}; nothing was published")
            arrays.append(array)
        return pa.Table.from_arrays(arrays, schema=schema)


def write_parquet(sources: Sequence[tuple[Path, Path]]) -> list[str]:
    """Encode each staged JSONL file of ``sources`` (``(jsonl, parquet)`` pairs) as Parquet with
    one shared schema; the JSON text columns, sorted."""
    pa = _arrow()
    import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]

    schema: ParquetSchema | None = None
    for source, _ in sources:
        for rows in _chunks(source):
            schema = schema or ParquetSchema(list(rows[0]))
            schema.observe(pa, rows, source.name)
    if schema is None:
        return []
    arrow_schema = schema.arrow(pa)
    for source, target in sources:
        with pq.ParquetWriter(target, arrow_schema, compression="zstd") as writer:
            for rows in _chunks(source):
                writer.write_table(schema.table(pa, arrow_schema, rows, source.name))
    return sorted(schema.json)


def parquet_json_columns(path: Path) -> list[str]:
    """The JSON text columns a Parquet data file declares (its schema metadata)."""
    _arrow()
    import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]

    metadata = pq.read_schema(path).metadata or {}
    return list(json.loads(metadata.get(JSON_COLUMNS_KEY, b"[]")))
