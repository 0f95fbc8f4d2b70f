"""Run inside .venv-consumers/hf: read Parquet profile exports with the real datasets and
compare them with the JSONL exports of the same evidence.

Usage: python check_parquet.py JSONL_DIR=PARQUET_DIR...

For each pair it prints one JSON line of facts:

- ``splits``: the splits and row counts ``datasets.load_dataset(PARQUET_DIR)`` returns through
  the directory's README.md card (or, without a card, through ``load_dataset("parquet",
  data_files=...)``), and ``columns`` each split's column names;
- ``equal``: per split, whether every row read from Parquet equals the JSONL row exactly: the
  same keys in the same order, the same values with the same JSON types (1, 1.0 and True
  differ; a null the JSONL row does not hold is a difference);
- ``features``: the ``datasets`` feature of each column, as text (``Json(...)`` for a JSON text
  column);
- ``version``: the datasets version.
"""

import json
import sys
import tempfile
from pathlib import Path

import datasets


def exact(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check(jsonl_dir, parquet_dir):
    jsonl_dir, parquet_dir = Path(jsonl_dir), Path(parquet_dir)
    sides = [s for s in ("train", "eval") if (jsonl_dir / f"data.{s}.jsonl").exists()]
    files = {s: f"data.{s}" for s in sides} or {"train": "data"}
    rows = {side: [json.loads(line) for line in (jsonl_dir / f"{stem}.jsonl").read_text(encoding="ascii").splitlines()]
            for side, stem in files.items()}
    cache = tempfile.mkdtemp(prefix="hf-cache-")
    if (parquet_dir / "README.md").exists():
        loaded = datasets.load_dataset(str(parquet_dir), cache_dir=cache)
    else:
        loaded = datasets.load_dataset("parquet", data_files={s: str(parquet_dir / f"{stem}.parquet")
                                                              for s, stem in files.items()}, cache_dir=cache)
    return {
        "splits": {side: loaded[side].num_rows for side in loaded},
        "columns": {side: loaded[side].column_names for side in loaded},
        "equal": {side: [exact(r) for r in loaded[side].to_list()] == [exact(r) for r in rows[side]]
                  for side in rows},
        "features": {name: str(feature) for name, feature in next(iter(loaded.values())).features.items()},
        "version": datasets.__version__,
    }


def main(arguments):
    for argument in arguments:
        jsonl_dir, parquet_dir = argument.split("=", 1)
        print(json.dumps(check(jsonl_dir, parquet_dir)))


if __name__ == "__main__":
    main(sys.argv[1:])
