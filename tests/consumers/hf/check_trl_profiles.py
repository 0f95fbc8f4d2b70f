"""Run inside .venv-consumers/hf: load hf-trl-sft-v3 / hf-trl-dpo-v4 exports with the real
datasets and TRL.

Usage: python check_trl_profiles.py KIND=DIR...   (KIND is ``sft`` or ``dpo``)

For each export directory it prints one JSON line of facts about what the packages did:

- ``splits``: the splits and row counts ``datasets.load_dataset(DIR)`` returns through the
  directory's README.md card; ``columns``: each split's column names;
- ``card_equal`` / ``json_equal`` / ``from_list_equal``: per split, whether the rows after the
  Arrow round trip equal the JSONL rows strictly (types included: 1, 1.0 and True differ) when
  read through the card, through ``load_dataset("json", data_files=..., features=List(Json())
  columns)``, and through ``Dataset.from_list`` with the same features;
- ``conversational``: whether ``trl.data_utils.is_conversational`` holds on every row;
- ``rendered_keys``: the keys ``maybe_apply_chat_template`` returned (sorted, all rows);
- ``generation_prompt``: how many rendered prompts end with the template's generation prompt;
- ``missing``: recorded texts (message contents, reasoning, tool-call argument values, tool
  names) absent from the rendered text of their own column, as ``[row, column, text]``;
- ``render_arrow_equal``: whether rendering the Arrow rows gives the text of the JSON rows;
- ``tools_rendered``: how many declared tools (``row["tools"]``, passed to the template as
  ``DPOTrainer`` and ``SFTTrainer`` pass a row's ``tools``) were rendered into the prompt (absent
  when no row declares one), and ``tools_missing``: ``[row, tool name]`` for a tool whose name,
  description or parameters (as JSON text) are absent from the rendered prompt.

The tokenizer is built in memory (a word-level vocabulary with a chat template that renders
roles, ``reasoning_content``, content, tool calls with their argument objects, tool
messages, and the declared tools as JSON before the messages); nothing is downloaded. Run it with a fresh HF_HOME.
"""

import json
import sys
import tempfile
from pathlib import Path

import datasets
from datasets import Features, Json, List
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
from trl.data_utils import is_conversational, maybe_apply_chat_template

TEMPLATE = (
    "{% if tools %}<|tools|>{% for t in tools %}{{ t | tojson }}\n{% endfor %}{% endif %}"
    "{% for m in messages %}<|{{ m.role }}|>"
    "{% if m.name %}[{{ m.name }}]{% endif %}"
    "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<call id={{ c.id }}>{{ c.function.name }}("
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v }};{% endfor %})</call>{% endfor %}"
    "{% if m.tool_call_id %}[for {{ m.tool_call_id }}]{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
GENERATION_PROMPT = "<|assistant|>"
COLUMNS = {"sft": ("prompt", "completion", "tools"), "dpo": ("prompt", "chosen", "rejected", "tools")}


def tokenizer():
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                  unk_token="[UNK]", eos_token="[UNK]")
    tok.chat_template = TEMPLATE
    return tok


def typed_text(value):
    """A text form in which 1, 1.0 and True differ and dict key order does not matter."""
    return json.dumps(value, sort_keys=True)


def equal(loaded, rows):
    return [typed_text(r) for r in loaded] == [typed_text(r) for r in rows]


def texts(message):
    """What a renderer must show of one message."""
    found = [message.get("content"), message.get("reasoning_content"), message.get("name")]
    for call in message.get("tool_calls") or []:
        found.append(call["function"]["name"])
        found.extend(str(v) for v in call["function"]["arguments"].values())
    return [t for t in found if isinstance(t, str) and t]


def check(kind, directory, tok):
    directory = Path(directory)
    columns = COLUMNS[kind]
    features = Features({c: List(Json()) for c in columns})
    files = {side: directory / f"data.{side}.jsonl" for side in ("train", "eval")
             if (directory / f"data.{side}.jsonl").exists()}
    if not files:
        files = {"train": directory / "data.jsonl"}
    rows = {side: [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]
            for side, path in files.items()}
    card = datasets.load_dataset(str(directory), cache_dir=tempfile.mkdtemp(prefix="hf-cache-"))
    facts = {
        "kind": kind,
        "splits": {side: card[side].num_rows for side in card},
        "columns": {side: card[side].column_names for side in card},
        "card_equal": {side: equal(card[side].to_list(), rows[side]) for side in rows},
        "json_equal": {side: equal(datasets.load_dataset(
            "json", data_files=str(files[side]), split="train", features=features,
            cache_dir=tempfile.mkdtemp(prefix="hf-cache-")).to_list(), rows[side]) for side in rows},
        "from_list_equal": {side: equal(datasets.Dataset.from_list(rows[side], features=features).to_list(),
                                        rows[side]) for side in rows},
        "conversational": all(is_conversational(r) for side in rows for r in rows[side]),
        "rendered_keys": set(), "generation_prompt": 0, "missing": [], "rendered_rows": 0,
        "render_arrow_equal": True,
    }
    for side in rows:
        arrow = card[side].to_list()
        for index, row in enumerate(rows[side]):
            example = {c: row[c] for c in columns if c != "tools"}
            out = maybe_apply_chat_template(example, tok, tools=row["tools"])
            facts["rendered_rows"] += 1
            facts["rendered_keys"] |= set(out)
            facts["generation_prompt"] += out["prompt"].endswith(GENERATION_PROMPT)
            for column in example:
                for message in row[column]:
                    for text in texts(message):
                        if text not in out[column]:
                            facts["missing"].append([f"{side}:{index}", column, text])
            again = maybe_apply_chat_template({c: arrow[index][c] for c in example}, tok, tools=arrow[index]["tools"])
            facts["render_arrow_equal"] &= again == out
            for tool in row["tools"]:
                function = tool["function"]
                shown = [function["name"], function.get("description"), json.dumps(function["parameters"])]
                facts["tools_rendered"] = facts.get("tools_rendered", 0) + 1
                if not all(t is None or t in out["prompt"] for t in shown):
                    facts.setdefault("tools_missing", []).append([f"{side}:{index}", function["name"]])
    facts["rendered_keys"] = sorted(facts["rendered_keys"])
    return facts


def main(arguments):
    tok = tokenizer()
    for argument in arguments:
        kind, directory = argument.split("=", 1)
        print(json.dumps(check(kind, directory, tok)))


if __name__ == "__main__":
    main(sys.argv[1:])
