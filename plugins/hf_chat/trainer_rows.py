"""What both TRL trainer profiles (``hf-trl-sft-v2``, ``hf-trl-dpo-v3``) do to a canonical
SFT sample or DPO pair: the message transform, the evidence and the dataset card columns.

The canonical rows already hold TRL's conversational shape (trainer messages, and ``tools``:
the recorded tool definitions of an SFT sample, ``[]`` in a DPO pair).
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


def evidence(row: Mapping[str, Any], tools: str = "absent") -> dict[str, Any]:
    """The profile evidence of a data row: the canonical metadata, and what its ``tools`` are
    (:func:`tool_definitions`; ``absent`` for a DPO pair, whose canonical rows hold none)."""
    return {"metadata": copy.deepcopy(dict(row["metadata"])), "tool_definitions": tools}


def tool_definitions(row: Mapping[str, Any]) -> str:
    """What an SFT sample's ``tools`` hold: ``declared`` (the request's tool definitions),
    ``not_recorded`` (the call was rebuilt from a transcript that does not record them) or
    ``none_declared`` (the request declared none)."""
    if row["tools"]:
        return "declared"
    if "tool_definitions" in row["metadata"].get("capture", {}).get("lacks", ()):
        return "not_recorded"
    return "none_declared"


def features(columns: Sequence[str]) -> list[card.Feature]:
    """The card's columns: each a list of ``json`` values."""
    return [card.json_list(name) for name in columns]
