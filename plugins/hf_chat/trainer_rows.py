"""What both TRL trainer profiles (``hf-trl-sft-v2``, ``hf-trl-dpo-v3``) do to a canonical
SFT sample or DPO pair: the message transform, the evidence and the dataset card columns.

The canonical rows already hold TRL's conversational shape (trainer messages, ``tools: []``).
The one change is a rename: an assistant message's ``thinking`` becomes ``reasoning_content``,
the key chat templates read reasoning from (``sediment.plugin.TrainerConversation``). Tool-call
``arguments`` stay JSON objects (templates iterate them). Nothing is dropped or invented.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from . import card

#: Every canonical message column is a list of ``json`` values: datasets keeps each message
#: verbatim (no struct inference adding null keys), and ``load_dataset(DIR)`` reads the card.
TRL_VALIDATED_WITH = card.VALIDATED_WITH
#: The datasets version of upstream's profiles (trl 1.13.0, datasets 5.0.1, transformers 5.17.0).
UPSTREAM_VERSIONS = "trl 1.13.0, datasets 5.0.1, transformers 5.17.0"


def trainer_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of one trainer message with ``thinking`` renamed ``reasoning_content`` (in
    place: the key order is otherwise kept)."""
    return {("reasoning_content" if key == "thinking" else key): copy.deepcopy(value)
            for key, value in message.items()}


def trainer_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [trainer_message(m) for m in messages]


def evidence(row: Mapping[str, Any]) -> dict[str, Any]:
    """The profile evidence of a data row: the canonical metadata, and that the canonical rows
    declare no tools (``tools`` is always ``[]``: recorded calls' tools are not inferred)."""
    return {"metadata": copy.deepcopy(dict(row["metadata"])), "tool_definitions": "absent"}


def features(columns: Sequence[str]) -> list[card.Feature]:
    """The card's columns: each a list of ``json`` values."""
    return [card.json_list(name) for name in columns]
