"""Run inside .venv-consumers/hf: load canonical DPO pairs with the real datasets and TRL.

Usage: python check_dpo.py ROWS.jsonl

ROWS.jsonl holds ``dpo-pair`` v5 rows (``prompt``, ``chosen``, ``rejected``, ``tools``,
``metadata``). Prints one JSON line of facts: whether TRL's ``is_conversational`` holds on the
preference columns of every row; whether the rows survive ``datasets.load_dataset("json")`` and
``Dataset.from_list`` with ``List(Json())`` message columns exactly (types included); and what
``maybe_apply_chat_template`` made of ``{prompt, chosen, rejected}`` with the in-memory
tokenizer of check_trainer_messages.py, given the row's ``tools`` as ``DPOTrainer`` passes them:
the keys it returned, whether the rendered prompt ends with the generation prompt, the recorded
texts missing from the rendered chosen and rejected completions, how many declared tools were
rendered (``tools_rendered``) and ``[row, tool name]`` for each whose name, description or
parameters (JSON text) are absent from the rendered prompt (``tools_missing``). Run it with a
fresh HF_HOME.
"""

import json
import sys
import tempfile

import datasets
from check_trainer_messages import tokenizer
from datasets import Features, Json, List
from trl.data_utils import is_conversational, maybe_apply_chat_template

COLUMNS = ("prompt", "chosen", "rejected", "tools")
FEATURES = Features({**{c: List(Json()) for c in COLUMNS}, "metadata": Json()})


def typed_text(value):
    return json.dumps(value, sort_keys=True)


def outcome(load, rows):
    try:
        loaded = load()
    except Exception as exc:  # what the consumer does with the rows is the fact reported
        return f"error: {type(exc).__name__}"
    return "equal" if [typed_text(r) for r in loaded] == [typed_text(r) for r in rows] else "changed"


def main(path):
    with open(path, encoding="ascii") as handle:
        rows = [json.loads(line) for line in handle]
    tok = tokenizer()
    preference = [{k: r[k] for k in ("prompt", "chosen", "rejected")} for r in rows]
    facts = {
        "rows": len(rows),
        "conversational": all(is_conversational(p) for p in preference),
        "load_json": outcome(lambda: datasets.load_dataset("json", data_files=path, split="train",
                                                           cache_dir=tempfile.mkdtemp(prefix="hf-cache-")).to_list(),
                             rows),
        "json_features": outcome(lambda: datasets.Dataset.from_list(rows, features=FEATURES).to_list(), rows),
        "rendered_keys": [], "generation_prompt": True, "missing": [], "tools_rendered": 0, "tools_missing": [],
    }
    for index, pair in enumerate(preference):
        out = maybe_apply_chat_template(pair, tok, tools=rows[index]["tools"])
        for tool in rows[index]["tools"]:
            function = tool["function"]
            facts["tools_rendered"] += 1
            shown = [function["name"], function.get("description"), json.dumps(function["parameters"])]
            if not all(t is None or t in out["prompt"] for t in shown):
                facts["tools_missing"].append([index, function["name"]])
        facts["rendered_keys"] = sorted(out)
        facts["generation_prompt"] &= out["prompt"].endswith("<|assistant|>")
        for side in ("chosen", "rejected"):
            for m in pair[side]:
                if m.get("content") and m["content"] not in out[side]:
                    facts["missing"].append([index, side])
            if pair["prompt"][0].get("content") and pair["prompt"][0]["content"] in out[side]:
                facts["missing"].append([index, f"{side}_repeats_prompt"])
    print(json.dumps(facts))


if __name__ == "__main__":
    main(sys.argv[1])
