"""Run inside .venv-consumers/hf: load exported SFT rows (sft-sample v4) with the real datasets and TRL.

Usage: python check_sft_rows.py TRAIN.jsonl EVAL.jsonl

Prints one JSON line of facts: the rows of each file; whether ``datasets.load_dataset("json")``
gives each file back exactly on its own (types included, metadata too); what loading both as
one dataset (``data_files={"train": ..., "eval": ...}``) does without features (the error's
name: the JSON builder casts every split to the features it inferred from the first file), with
the messages as ``List(Json())`` and ``metadata`` as one ``Json()`` or typed per sft-metadata v4
(whether the messages come back exactly, and which metadata keys come back altered); whether TRL's ``is_conversational`` holds on every loaded row; what
``maybe_apply_chat_template`` returns (its keys, text ``prompt`` and ``completion``) and how
many recorded contents, tool calls and tool results the rendered texts miss. Run it with a
fresh HF_HOME.
"""

import json
import sys
import tempfile

import datasets
from datasets import Features, Json, List, Value
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
from trl.data_utils import is_conversational, maybe_apply_chat_template

TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>"
    "{% if m.name %}[{{ m.name }}]{% endif %}"
    "{% if m.thinking is defined %}<think>{{ m.thinking }}</think>{% endif %}"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<call id={{ c.id }}>{{ c.function.name }}("
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }};{% endfor %})</call>{% endfor %}"
    "{% if m.tool_call_id %}[for {{ m.tool_call_id }}]{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def tokenizer():
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                  unk_token="[UNK]", eos_token="[UNK]")
    tok.chat_template = TEMPLATE
    return tok


def typed_text(value):
    return json.dumps(value, sort_keys=True)


def snippets(row):
    found = []
    for m in row["prompt"] + row["completion"]:
        if m.get("content") and m["role"] != "tool":
            found.append(m["content"])
        for c in m.get("tool_calls", []):
            found.append(f"<call id={c['id']}>{c['function']['name']}(")
        if m["role"] == "tool":
            found.append(f"<|tool|>[{m['name']}]{m['content']}[for {m['tool_call_id']}]")
    return found


MESSAGES = {"prompt": List(Json()), "completion": List(Json()), "tools": List(Json())}
#: metadata as one Json value: its floats come back altered (the fact reported)
JSON_METADATA = Features({**MESSAGES, "metadata": Json()})
TEXT = Value("string")
#: metadata with its sft-metadata v4 types
TYPED_METADATA = Features({**MESSAGES, "metadata": {
    "org_id": TEXT, "source_model": TEXT, "completion_id": TEXT, "recipe_id": TEXT,
    "recipe_version": Value("int64"), "eligibility_source": TEXT, "label_confidence": Value("float64"),
    "ci_reliability": Value("float64"),
    "provenance": {"policy_version": TEXT, "quarantine_revision": Value("int64"), "policy_digest": TEXT,
                   "label_confidence_policy_version": TEXT, "label_confidence_policy_digest": TEXT,
                   "trainer_messages_version": TEXT},
    "split": TEXT, "repository_identity": {"provider": TEXT, "host": TEXT, "repository_id": TEXT},
    "attribution_source": TEXT, "session_commit_observation_ids": List(TEXT), "schema_id": TEXT,
    "schema_version": Value("int64")}})


def read(path):
    with open(path, encoding="ascii") as handle:
        return [json.loads(line) for line in handle]


def load(files, **kwargs):
    return datasets.load_dataset("json", data_files=files, cache_dir=tempfile.mkdtemp(prefix="hf-cache-"), **kwargs)


def equal(loaded, rows):
    return [typed_text(r) for r in loaded] == [typed_text(r) for r in rows]


def changed(loaded, rows):
    """The metadata keys whose values came back altered, over both splits."""
    return sorted({key for side in rows for found, row in zip(loaded[side].to_list(), rows[side], strict=True)
                   for key in row["metadata"]
                   if typed_text(found["metadata"][key]) != typed_text(row["metadata"][key])})


def main(train, evaluation):
    rows = {"train": read(train), "eval": read(evaluation)}
    files = {"train": train, "eval": evaluation}
    alone = {side: load(path, split="train").to_list() for side, path in files.items()}
    try:
        load(files)
        unfeatured = "loaded"
    except Exception as exc:  # what the consumer does with the rows is the fact reported
        unfeatured = f"error: {type(exc).__name__}"
    as_json = load(files, features=JSON_METADATA)
    featured = load(files, features=TYPED_METADATA)
    tok = tokenizer()
    facts = {
        "rows": {side: len(found) for side, found in rows.items()},
        "columns": sorted(featured["train"].column_names),
        "alone_equal": all(equal(alone[side], rows[side]) for side in rows),
        "splits_without_features": unfeatured,
        "json_metadata_changed": changed(as_json, rows),
        "typed_metadata_changed": changed(featured, rows),
        "messages_equal_with_features": all(equal([{k: r[k] for k in MESSAGES} for r in found[side].to_list()],
                                                  [{k: r[k] for k in MESSAGES} for r in rows[side]])
                                            for found in (as_json, featured) for side in rows),
        "conversational": all(is_conversational(r) for side in rows for r in featured[side].to_list()),
        "template_keys": [], "rendered_text": True, "render_missing": 0,
    }
    for side in rows:
        for row in featured[side].to_list():
            out = maybe_apply_chat_template(row, tok)
            facts["template_keys"] = sorted(out)
            facts["rendered_text"] &= isinstance(out.get("prompt"), str) and isinstance(out.get("completion"), str)
            text = out.get("prompt", "") + out.get("completion", "")
            facts["render_missing"] += sum(1 for s in snippets(row) if s not in text)
    print(json.dumps(facts))


if __name__ == "__main__":
    main(*sys.argv[1:3])
