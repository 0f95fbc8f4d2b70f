"""Run inside .venv-consumers/hf: load hf-chat profile exports with the real packages.

Usage: python check_hf.py KIND=DIR...   (KIND is ``messages`` or ``prompts``)

For each export directory it prints one JSON line of facts: the splits and row counts
``datasets.load_dataset(DIR)`` returns through the directory's README.md card, whether the
Arrow features are exactly the card's, whether every split's rows equal the JSONL rows after
the Arrow round trip (strictly: types included), whether TRL's ``is_conversational`` holds
on every row, and what
``maybe_apply_chat_template`` rendered with an in-memory tokenizer (no hub download): the
recorded texts it failed to render, and whether rendering the Arrow rows gives the same text
as rendering the JSON rows. Run it with a fresh HF_HOME; every load uses a fresh cache.
"""

import json
import sys
import tempfile
from pathlib import Path

import datasets
import yaml
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
from trl.data_utils import is_conversational, maybe_apply_chat_template

TEMPLATE = (
    "{% if tools %}<tools>{% for t in tools %}{{ t.function.name }}:{{ t.function.parameters | tojson }};"
    "{% endfor %}</tools>\n{% endif %}"
    "{% for m in messages %}<|{{ m.role }}|>"
    "{% if m.name %}[{{ m.name }}]{% endif %}"
    "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<call id={{ c.id }}>{{ c.function.name }}({{ c.function.arguments }})</call>"
    "{% endfor %}"
    "{% if m.tool_call_id %}[for {{ m.tool_call_id }}]{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def tokenizer():
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                  unk_token="[UNK]", eos_token="[UNK]")
    tok.chat_template = TEMPLATE
    return tok


def typed_text(value):
    """A text form in which 1, 1.0 and True differ and dict key order does not matter."""
    return json.dumps(value, sort_keys=True)


def jsonl(path):
    with open(path, encoding="ascii") as handle:
        return [json.loads(line) for line in handle]


def card_features(directory):
    front_matter = (directory / "README.md").read_text(encoding="utf-8").split("---\n")[1]
    return yaml.safe_load(front_matter)["dataset_info"]["features"]


def data_file(directory, split, splits):
    unsplit = directory / "data.jsonl"
    return unsplit if unsplit.exists() and list(splits) == ["train"] else directory / f"data.{split}.jsonl"


def expected_snippets(kind, row):
    """The recorded texts a faithful rendering must contain: (what, text) pairs."""
    if kind == "prompts":
        return [("prompt", m["content"]) for m in row["prompt"]]
    snippets = [("tool", f"{t['function']['name']}:{json.dumps(t['function']['parameters'], ensure_ascii=False)};")
                for t in row["tools"]]
    for m in row["messages"]:
        if m["content"]:
            snippets.append((f"{m['role']}_content", m["content"]))
        if m["reasoning_content"]:
            snippets.append(("reasoning", m["reasoning_content"]))
        for c in m["tool_calls"]:
            snippets.append(("tool_call_arguments", f"{c['function']['name']}({c['function']['arguments']})"))
    return snippets


def render(kind, row, tok):
    if kind == "prompts":
        return maybe_apply_chat_template(row, tok)["prompt"]
    return maybe_apply_chat_template(row, tok, tools=row["tools"])["text"]


def check(kind, directory, tok):
    loaded = datasets.load_dataset(str(directory), cache_dir=tempfile.mkdtemp(prefix="hf-cache-"))
    facts = {"kind": kind, "dir": str(directory), "splits": {s: d.num_rows for s, d in loaded.items()},
             "columns": {s: d.column_names for s, d in loaded.items()},
             "features_as_declared": all(d.features._to_yaml_list() == card_features(directory) for d in loaded.values()),
             "rows_equal": {}, "conversational": {},
             "rendered_rows": 0, "render_missing": [], "render_arrow_equal": True, "render_ends": [],
             "counts": {"tool_calls": 0, "tool_messages": 0, "reasoning": 0, "tools": 0}}
    for split, dataset in loaded.items():
        rows = jsonl(data_file(directory, split, loaded))
        arrow_rows = dataset.to_list()
        facts["rows_equal"][split] = [typed_text(r) for r in arrow_rows] == [typed_text(r) for r in rows]
        facts["conversational"][split] = all(is_conversational(r) for r in arrow_rows)
        for row, arrow_row in zip(rows, arrow_rows, strict=False):  # a length mismatch is in rows_equal
            text = render(kind, arrow_row, tok)
            facts["rendered_rows"] += 1
            facts["render_arrow_equal"] &= text == render(kind, row, tok)
            if kind == "prompts":
                facts["render_ends"].append(text[-len("<|assistant|>"):])
            facts["render_missing"] += [[row["instance_id"], what] for what, snippet in expected_snippets(kind, row)
                                        if snippet not in text]
            if kind == "messages":
                facts["counts"]["tools"] += len(row["tools"])
                for m in row["messages"]:
                    facts["counts"]["tool_calls"] += len(m["tool_calls"])
                    facts["counts"]["tool_messages"] += m["role"] == "tool"
                    facts["counts"]["reasoning"] += m["reasoning_content"] is not None
                    if m["role"] == "tool" and f"<|tool|>[{m['name']}]{m['content']}[for {m['tool_call_id']}]" not in text:
                        facts["render_missing"].append([row["instance_id"], "tool_result"])
    return facts


def main(arguments):
    tok = tokenizer()
    for argument in arguments:
        kind, _, directory = argument.partition("=")
        print(json.dumps(check(kind, Path(directory), tok)))


if __name__ == "__main__":
    main(sys.argv[1:])
