"""Profile ``swe-bench-tasks-v2``: canonical swe-bench task rows as swebench 5.x task instances
that SWE-bench can grade.

Every ``SWEbenchInstance`` key, as the strings SWE-bench expects (``FAIL_TO_PASS`` /
``PASS_TO_PASS`` JSON-encoded), then what swebench 5.x reads (``image``, ``eval_script``,
``log_parser``, ``eval_type``), then ``metadata``: the canonical evidence and the
TestCaseResult ids behind both test lists. The reference patch splits into ``patch`` (source
files) and ``test_patch`` (test files, by the repository's globs); ``environment_setup_commit``
is the base commit; ``hints_text`` is empty (nothing recorded holds hints). ``metadata`` holds
the canonical metadata without its ``schema_id``: the row obeys its own schema
(:data:`NATIVE_SCHEMA`), not the canonical row's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sediment.plugin import AdaptedRow, Dependency, PluginSettings, ProfileInfo, RolloutEvidence, hookimpl

from .task import REMEDIES, TASK_SKIP_REASONS, TaskSettings, gradable_task

CANONICAL_SCHEMA = "https://sediment.so/schemas/training-rows/swe-bench-task/v3.json"
#: The schema of the rows this profile writes (registered by the swe-bench target plugin).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/swe-bench-instance/v2.json"


@hookimpl
def describe_profile() -> ProfileInfo:
    return ProfileInfo(
        consumer="swe-bench",
        version=2,
        target="swe-bench",
        population="tasks",
        canonical_schema=CANONICAL_SCHEMA,
        native_schema=NATIVE_SCHEMA,
        validated_with=(Dependency("swebench", "5.0.2"),),
        validation=(
            "swebench.harness.utils.make_test_spec and load_swebench_dataset on every row; "
            "swebench.harness.grading.get_eval_report on logs of the row's test command run in a real checkout "
            "(reference patch: resolved; empty patch, or one breaking a PASS_TO_PASS test: unresolved); "
            "swebench.task.checks.check_task_repo on a task-repo layout written from a row"
        ),
        support=(
            "gradable SWE-bench 5.x instances: FAIL_TO_PASS / PASS_TO_PASS derived from recorded, attributed, "
            "per-attempt test results (flaky tests excluded), never empty; the image, test command and log "
            "parser come from the operator's per-repository environments; Sediment runs nothing"
        ),
        skip_reasons=TASK_SKIP_REASONS,
        remedies=REMEDIES,
        retires=("swe-bench-tasks-v1",),
        description="swebench 5.x task instances with FAIL_TO_PASS / PASS_TO_PASS from recorded test results",
    )


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return TaskSettings


@hookimpl
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, settings: TaskSettings) -> AdaptedRow | str:
    task = gradable_task(row, evidence, settings)
    if isinstance(task, str):
        return task
    body = {
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
        "image": task.environment.image_for(task.instance_id),
        "eval_script": task.eval_script(),
        "log_parser": task.environment.log_parser,
        "eval_type": "pass_and_fail",
        "metadata": task.metadata(row["metadata"]),
    }
    return AdaptedRow(body=body, prompt=task.problem_statement, evidence={
        "fail_to_pass": len(task.transitions.fail_to_pass),
        "pass_to_pass": len(task.transitions.pass_to_pass),
        "excluded_tests": task.transitions.excluded,
    })
