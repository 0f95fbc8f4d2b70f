"""Run inside .venv-consumers/hf: load trajectory-library view files with the real packages.

Usage: python check_library_views.py KIND=FILE...   (KIND: ``arrow`` rows, ``chat`` messages, or
``raw`` view samples as they are)

For each file it prints one JSON line of facts: the row count, whether ``Dataset.from_list``
followed by an Arrow round trip (``to_list`` after writing and reading the table back from an
Arrow file) gives rows equal to the JSON rows strictly (types included), the Arrow column names,
and for chat files whether TRL's ``is_conversational`` holds on every row.
"""

import json
import sys
import tempfile

import datasets
from trl.data_utils import is_conversational


def typed(value):
    return json.dumps(value, sort_keys=True)


def main():
    for argument in sys.argv[1:]:
        kind, path = argument.split("=", 1)
        with open(path, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle]
        try:
            dataset = datasets.Dataset.from_list(rows)
        except Exception as exc:  # what Arrow makes of the samples as they are is a fact to report
            print(json.dumps({"kind": kind, "rows": len(rows), "error": type(exc).__name__}))
            continue
        with tempfile.TemporaryDirectory() as directory:
            dataset.save_to_disk(directory)
            reloaded = datasets.load_from_disk(directory)
            back = reloaded.to_list()
        facts = {"kind": kind, "rows": len(rows), "columns": sorted(reloaded.column_names),
                 "arrow_equal": [typed(r) for r in back] == [typed(r) for r in rows]}
        if kind == "chat":
            facts["conversational"] = all(is_conversational(r) for r in back)
        print(json.dumps(facts))


if __name__ == "__main__":
    main()
