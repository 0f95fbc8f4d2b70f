"""What both TRL trainer profiles (``hf-trl-sft-v3``, ``hf-trl-dpo-v4``) do to a canonical
SFT sample or DPO pair: the message transform, the evidence and the dataset card columns.

The canonical rows already hold TRL's conversational shape (trainer messages, and ``tools``:
the recorded tool definitions of the call, or of both calls of a pair, in chat-template shape).
The one change is a rename: an assistant message's ``thinking`` becomes ``reasoning_content``,
the key chat templates read reasoning from (``sediment.plugin.TrainerConversation``). Tool-call
``arguments`` stay JSON objects (templates iterate them). Nothing is dropped or invented.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from sediment.plugin import tools_state

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


#: The skip reason of a row whose call declared a tool that is not a function (a provider's
#: built-in tool): a chat template has no schema to render for it.
NON_FUNCTION_TOOL = "non_function_tool"
#: Where a canonical row's metadata keeps a call's transcript capture (SFT: ``capture``; DPO:
#: one per side).
CAPTURE_KEYS = ("capture", "chosen_capture", "rejected_capture")


def evidence(row: Mapping[str, Any], tools: str) -> dict[str, Any]:
    """The profile evidence of a data row: the canonical metadata, and what its ``tools`` are
    (:func:`tool_definitions`)."""
    return {"metadata": copy.deepcopy(dict(row["metadata"])), "tool_definitions": tools}


def function_tools_only(row: Mapping[str, Any]) -> bool:
    """Whether every declared tool of ``row`` is a function tool a chat template renders."""
    return all(tool.get("type") == "function" for tool in row["tools"])


def tool_definitions(row: Mapping[str, Any]) -> str:
    """What a row's ``tools`` hold: ``declared`` (the request's tool definitions),
    ``not_recorded`` (a call of the row was rebuilt from a transcript that does not record
    them) or ``none_declared`` (the request declared none)."""
    return tools_state(row["tools"], (row["metadata"].get(key) for key in CAPTURE_KEYS))


def features(columns: Sequence[str]) -> list[card.Feature]:
    """The card's columns: each a list of ``json`` values."""
    return [card.json_list(name) for name in columns]
