"""Run inside .venv-consumers/hf: load trainer-message rows with the real datasets and TRL.

Usage: python check_trainer_messages.py ROWS.jsonl

ROWS.jsonl holds ``{"prompt", "completion", "tools"}`` rows as the trainer message mapper
emits them. Prints one JSON line of facts: whether TRL's ``is_conversational`` holds on every
row; whether the rows survive ``datasets.Dataset.from_list`` exactly (types included) with
``List(Json())`` features, and what happens without them (``from_list`` inferring Arrow
structs, and ``load_dataset("json")``); and what ``maybe_apply_chat_template`` rendered with an
in-memory tokenizer whose template reads ``thinking``, ``content``, ``tool_calls`` (iterating
the argument object), tool messages' ``name`` / ``tool_call_id`` and the declared ``tools`` (as
JSON, before the messages; check_dpo.py reuses it): the recorded texts it
failed to render, and whether rendering the loaded rows gives the text of the JSON rows.
Run it with a fresh HF_HOME.
"""

import json
import sys
import tempfile

import datasets
from datasets import Features, Json, List
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
from trl.data_utils import is_conversational, maybe_apply_chat_template

TEMPLATE = (
    "{% if tools %}<|tools|>{% for t in tools %}{{ t | tojson }}\n{% endfor %}{% endif %}"
    "{% for m in messages %}<|{{ m.role }}|>"
    "{% if m.name %}[{{ m.name }}]{% endif %}"
    "{% if m.thinking is defined %}<think>{{ m.thinking }}</think>{% endif %}"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<call id={{ c.id }}>{{ c.function.name }}("
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }};{% endfor %})</call>{% endfor %}"
    "{% if m.tool_call_id %}[for {{ m.tool_call_id }}]{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
FEATURES = Features({"prompt": List(Json()), "completion": List(Json()), "tools": List(Json())})


def tokenizer():
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                  unk_token="[UNK]", eos_token="[UNK]")
    tok.chat_template = TEMPLATE
    return tok


def typed_text(value):
    """A text form in which 1, 1.0 and True differ and dict key order does not matter."""
    return json.dumps(value, sort_keys=True)


def same(loaded, rows):
    return [typed_text(r) for r in loaded] == [typed_text(r) for r in rows]


def outcome(load, rows):
    try:
        loaded = load()
    except Exception as exc:  # what the consumer does with the rows is the fact reported
        return f"error: {type(exc).__name__}"
    return "equal" if same(loaded, rows) else "changed"


def rendered(row, tok):
    out = maybe_apply_chat_template(row, tok, tools=row["tools"])
    return out["prompt"] + out["completion"]


def snippets(row):
    """(what, text) pairs a faithful rendering must contain."""
    found = []
    for m in row["prompt"] + row["completion"]:
        if m.get("content"):
            found.append((f"{m['role']}_content", m["content"]))
        if "thinking" in m:
            found.append(("thinking", f"<think>{m['thinking']}</think>"))
        for c in m.get("tool_calls", []):
            # transformers' tojson filter: json.dumps with non-ASCII kept, keys in their order
            arguments = "".join(f"{k}={json.dumps(v, ensure_ascii=False)};" for k, v in c["function"]["arguments"].items())
            found.append(("tool_call", f"<call id={c['id']}>{c['function']['name']}("))
            found.append(("tool_call_arguments", arguments))
        if m["role"] == "tool":
            found.append(("tool_result", f"<|tool|>[{m['name']}]{m['content']}[for {m['tool_call_id']}]"))
    return found


def main(path):
    with open(path, encoding="ascii") as handle:
        rows = [json.loads(line) for line in handle]
    tok = tokenizer()
    with_features = datasets.Dataset.from_list(rows, features=FEATURES).to_list()
    facts = {
        "rows": len(rows),
        "conversational": all(is_conversational(r) for r in rows) and all(is_conversational(r) for r in with_features),
        "json_features_equal": same(with_features, rows),
        "plain_from_list": outcome(lambda: datasets.Dataset.from_list(rows).to_list(), rows),
        "load_json": outcome(lambda: datasets.load_dataset("json", data_files=path, split="train",
                                                           cache_dir=tempfile.mkdtemp(prefix="hf-cache-")).to_list(),
                             rows),
        "rendered": 0, "render_missing": [], "render_arrow_equal": True,
        "counts": {"thinking": 0, "tool_calls": 0, "tool_messages": 0},
    }
    for index, (row, loaded) in enumerate(zip(rows, with_features, strict=True)):
        text = rendered(loaded, tok)
        facts["rendered"] += 1
        facts["render_arrow_equal"] &= text == rendered(row, tok)
        for what, snippet in snippets(row):
            if snippet not in text:
                facts["render_missing"].append([index, what])
        for m in row["prompt"] + row["completion"]:
            facts["counts"]["thinking"] += "thinking" in m
            facts["counts"]["tool_calls"] += len(m.get("tool_calls", []))
            facts["counts"]["tool_messages"] += m["role"] == "tool"
    print(json.dumps(facts))


if __name__ == "__main__":
    main(sys.argv[1])
