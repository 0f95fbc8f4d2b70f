"""Profile ``nemo-gym-swebench-tasks-v1``: canonical swe-bench task rows as task rows for the
``swebench`` resources server that ships in nemo-gym 0.7.0.

The server's ``TaskData`` fields, every one a string (``FAIL_TO_PASS`` / ``PASS_TO_PASS``
JSON-encoded), beside ``responses_create_params`` (the problem statement as the user message),
``agent_ref`` and the canonical evidence under ``sediment``. ``difficulty`` says ``unknown``
unless configured: nothing recorded measures it. That server grades with swebench 4.1.0,
which knows only its own 66 repositories; these rows validate against its task schema, and
grade where the repository is one of them or the operator's server is newer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from sediment.plugin import AdaptedRow, Dependency, PluginSettings, ProfileInfo, RolloutEvidence, hookimpl

from .task import REMEDIES, TASK_SKIP_REASONS, TaskSettings, gradable_task
from .tasks import CANONICAL_SCHEMA


class NemoSwebenchSettings(TaskSettings):
    agent_name: str = Field(default="swebench_agent", min_length=1, description="agent_ref.name of every row")
    difficulty: str = Field(default="unknown", description="TaskData.difficulty of every row")
    subset: str = Field(default="sediment", description="TaskData.subset of every row")


@hookimpl
def describe_profile() -> ProfileInfo:
    return ProfileInfo(
        consumer="nemo-gym",
        version=1,
        target="swe-bench",
        population="tasks",
        canonical_schema=CANONICAL_SCHEMA,
        native_schema="https://sediment.so/schemas/training-rows/nemo-gym-swebench-task/v1.json",
        validated_with=(Dependency("nemo-gym", "0.7.0"),),
        validation=("nemo_gym.task_data.validate_jsonl_rows('swebench', ...) with the swebench resources "
                    "server's TaskData (zero error rows); BaseRunRequest on every row"),
        support=("task rows for NeMo Gym's swebench resources server: its TaskData fields as strings with "
                 "FAIL_TO_PASS / PASS_TO_PASS from recorded per-test results; that server grades with "
                 "swebench 4.1.0, which refuses repositories outside its table of 66"),
        skip_reasons=TASK_SKIP_REASONS,
        remedies=REMEDIES,
        description="NeMo Gym 0.7.0 swebench resources-server task rows",
    )


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return NemoSwebenchSettings


@hookimpl
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, settings: NemoSwebenchSettings) -> AdaptedRow | str:
    task = gradable_task(row, evidence, settings)
    if isinstance(task, str):
        return task
    body = {
        "responses_create_params": {"input": [{"role": "user", "content": task.problem_statement}]},
        "agent_ref": {"name": settings.agent_name},
        "repo": task.repo,
        "instance_id": task.instance_id,
        "base_commit": task.base_commit,
        "patch": task.patch,
        "test_patch": task.test_patch,
        "problem_statement": task.problem_statement,
        "hints_text": "",
        "created_at": task.created_at,
        "version": task.environment.version,
        "FAIL_TO_PASS": task.fail_to_pass,
        "PASS_TO_PASS": task.pass_to_pass,
        "environment_setup_commit": task.base_commit,
        "difficulty": settings.difficulty,
        "subset": settings.subset,
        "split": row["metadata"]["split"],
        "sediment": task.metadata(row["metadata"]),
    }
    return AdaptedRow(body=body, prompt=task.problem_statement, evidence={
        "fail_to_pass": len(task.transitions.fail_to_pass),
        "pass_to_pass": len(task.transitions.pass_to_pass),
    })
