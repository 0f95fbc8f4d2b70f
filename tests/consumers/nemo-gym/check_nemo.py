"""Run inside .venv-consumers/nemo-gym: load exported NeMo Gym rows with nemo-gym's own code.

Usage: python check_nemo.py ROLLOUTS.jsonl...   Prints one JSON object per file with what
nemo-gym made of every row: the concrete class of every input and output item, the chat
messages its ResponsesConverter produced, what preprocess_examples and
compute_aggregate_metrics returned, and every null found where the model has a non-null default.
"""

import json
import sys

from nemo_gym.base_resources_server import BaseVerifyResponse
from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseCreateParamsNonStreaming
from nemo_gym.responses_converter import ResponsesConverter
from nemo_gym.reward_profile import compute_aggregate_metrics
from nemo_gym.rollout_collection import RolloutCollectionHelper
from nemo_gym.train_data_utils import compute_sample_metrics


def nulls_with_defaults(model, data, where):
    """Keys whose value is null although the model requires them or defaults them to non-null."""
    found = []
    for name, info in model.model_fields.items():
        if name in data and data[name] is None and (info.is_required() or info.default is not None):
            found.append(f"{where}.{name}")
    return found


def text_of(message):
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [part.get("text", "") for part in content or [] if isinstance(part, dict)]


converter = ResponsesConverter(return_token_id_information=False)
for path in sys.argv[1:]:
    with open(path, encoding="ascii") as handle:
        lines = handle.read().splitlines()
    rows = [json.loads(line) for line in lines]
    report = {"path": path, "rows": []}
    for row in rows:
        verified = BaseVerifyResponse.model_validate(row)
        params = NeMoGymResponseCreateParamsNonStreaming.model_validate(row["responses_create_params"])
        chat = converter.responses_to_chat_completion_create_params(params)
        chat = chat.model_dump(exclude_none=True) if hasattr(chat, "model_dump") else dict(chat)
        task_line = json.dumps({k: row[k] for k in ("responses_create_params", "agent_ref", "instance_id")})
        report["rows"].append({
            "input_classes": [type(i).__name__ for i in verified.responses_create_params.input],
            "output_classes": [type(i).__name__ for i in verified.response.output],
            "tool_names": [t["name"] if isinstance(t, dict) else t.name for t in verified.responses_create_params.tools],
            "response_tool_names": [t.name for t in verified.response.tools],
            "reward": verified.reward,
            "reward_type": type(verified.reward).__name__,
            "model": verified.response.model,
            "created_at": verified.response.created_at,
            "chat_texts": [t for m in chat["messages"] for t in text_of(m)],
            "chat_roles": [m["role"] for m in chat["messages"]],
            "chat_tool_names": [t["function"]["name"] for t in chat.get("tools", [])],
            "nulls": nulls_with_defaults(NeMoGymResponseCreateParamsNonStreaming, row["responses_create_params"],
                                         "responses_create_params")
            + nulls_with_defaults(NeMoGymResponse, row["response"], "response")
            + nulls_with_defaults(BaseVerifyResponse, row, "row"),
            "task_line_offending": compute_sample_metrics(task_line)[1],
        })
    prepared = RolloutCollectionHelper().preprocess_examples([dict(r) for r in rows])
    report["preprocessed_indices"] = [[r["_ng_task_index"], r["_ng_rollout_index"]] for r in prepared]
    report["preprocessed_agents"] = sorted({r["agent_ref"]["name"] for r in prepared})
    metrics = compute_aggregate_metrics([dict(r) for r in rows])
    report["key_metrics"] = metrics.key_metrics
    print(json.dumps(report))
