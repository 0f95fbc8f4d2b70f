"""Profile ``harbor-tasks-v1``: canonical swe-bench task rows as Harbor task directories, one per
task, named by its ``instance_id`` (the files: :mod:`.harbor_files`; docs/harbor.md).

The profile writes directories (``ProfileInfo.writes_directories``): each kept row is one
directory beside ``data[.train|.eval].jsonl`` (one index row per directory: its name, where the
task came from, its test lists and every file's SHA-256), the evidence sidecar and
``compatibility.json``. A row is declined, with a counted reason, for what the gradable task
lacks (``environment_unconfigured``, per-test evidence, ``no_source_change`` for a
tests-only change), when the ``instance_id`` (it holds the Session id) is not a portable
directory name (``instance_id_not_a_directory_name``), when the configured log parser has no reading in the test script
(``log_parser_unsupported``) or cannot name one of the selected tests (``test_id_unnameable``),
when the mirror cannot give the repository at the base commit or the test files at the verified
one (``repository_unreadable``) and, with the ``check_reference`` setting, when the task's own
scripts do not score the unchanged repository 0 and the reference solution 1
(``reference_not_reproduced``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from sediment.plugin import (
    AdaptedRow,
    Dependency,
    MirrorReadError,
    PluginSettings,
    ProfileInfo,
    RolloutEvidence,
    TaskDirectory,
    hookimpl,
    tree_archive,
)

from .harbor_files import EXECUTABLE, SCRIPTED_PARSERS, TESTBED, TaskFiles, test_id_problem, toml_document
from .reference_check import reproduces
from .task import REMEDIES, TASK_SKIP_REASONS, GradableTask, TaskSettings, gradable_task
from .tasks import CANONICAL_SCHEMA

PROFILE_ID = "harbor-tasks-v1"
SKIP_REASONS: tuple[str, ...] = (*TASK_SKIP_REASONS, "instance_id_not_a_directory_name", "log_parser_unsupported",
                                 "test_id_unnameable", "repository_unreadable", "reference_not_reproduced")


class HarborSettings(TaskSettings):
    """The environments file (required, as for every swe-bench profile) and what task.toml says."""

    agent_timeout_sec: float = Field(default=3600.0, gt=0, description="task.toml [agent].timeout_sec")
    verifier_timeout_sec: float = Field(default=1800.0, gt=0, description="task.toml [verifier].timeout_sec")
    build_timeout_sec: float = Field(default=1800.0, gt=0, description="task.toml [environment].build_timeout_sec")
    built_image: str | None = Field(
        default=None, min_length=1,
        description="the image the operator built from each task's environment/ and pushed, with {instance_id} "
                    "(lower case) in it: task.toml [environment].docker_image (verifiers runs only such tasks)")
    check_reference: bool = Field(
        default=False,
        description="run each task's scripts here: the unchanged repository must score 0 and the reference 1, "
                    "else the row is declined reference_not_reproduced")
    check_path: str = Field(default="", description="folders put first on PATH for check_reference (os.pathsep)")


@hookimpl
def describe_profile() -> ProfileInfo:
    return ProfileInfo(
        consumer="harbor",
        version=1,
        target="swe-bench",
        population="tasks",
        canonical_schema=CANONICAL_SCHEMA,
        native_schema="https://sediment.so/schemas/training-rows/harbor-task-index/v1.json",
        validated_with=(Dependency("harbor", "0.25.0"), Dependency("verifiers", "0.4.0"),
                        Dependency("nemo-gym", "0.7.0")),
        validation=(
            "harbor.models.task.task.Task and harbor.lint.lint_task (default rules) on every directory; verifiers' "
            "HarborTaskset / parse_task (its harbor extra) on every directory; NeMo Gym's harbor_agent "
            "HarborAgentConfig, HarborRunRequest and _build_job_config (harbor's LocalDatasetConfig); tests/test.sh "
            "run in a real checkout: unchanged 0, after solution/solve.sh 1, with a PASS_TO_PASS test broken 0"
        ),
        support=(
            "Harbor task directories (instruction, task.toml, Dockerfile with the repository archived at the base "
            "commit, a verifier writing /logs/verifier/reward.txt, the reference solution) from CI-verified tasks "
            "with FAIL_TO_PASS / PASS_TO_PASS from recorded per-test results; pytest logs only "
            "(log_parser parse_log_pytest); the verifier shares the agent's container"
        ),
        skip_reasons=SKIP_REASONS,
        remedies={
            **REMEDIES,
            "log_parser_unsupported": "configure log_parser = \"parse_log_pytest\" for the repository (the only "
                                      "parser whose reading the Harbor test script carries)",
            "reference_not_reproduced": "run the check where the test command finds the repository's dependencies "
                                        "(setting check_path), or export without check_reference",
        },
        writes_directories=True,
        description="Harbor task directories (harbor 0.25, verifiers 0.4 Harbor taskset, NeMo Gym harbor_agent)",
    )


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return HarborSettings


def _task_files(task: GradableTask, evidence: RolloutEvidence) -> TaskFiles | str:
    """The inputs of the directory's files, or the reason the row is declined."""
    environment = task.environment
    if TaskDirectory(task.instance_id, {"task.toml": b""}).problem() is not None:  # the host's naming rule
        return "instance_id_not_a_directory_name"
    if environment.log_parser not in SCRIPTED_PARSERS:
        return "log_parser_unsupported"
    selected = [*task.transitions.fail_to_pass, *task.transitions.pass_to_pass]
    if any(test_id_problem(test, environment.log_parser) for test in selected):
        return "test_id_unnameable"
    resolution = evidence.reward_resolution
    mirror = None if resolution is None or evidence.mirrors is None else evidence.mirrors.open(
        evidence.rollout.org_id, resolution.repo, resolution.repository_identity)
    if resolution is None or mirror is None:
        return "repository_unreadable"
    verified = resolution.commit_key.commit_sha
    try:
        archive = tree_archive(mirror, task.base_commit)
        tests = {path: mirror.file_bytes(verified, path) for section in task.test_sections for path in section.paths}
    except MirrorReadError:
        return "repository_unreadable"
    return TaskFiles(
        instance_id=task.instance_id, repo=task.repo, base_commit=task.base_commit, verified_commit=verified,
        problem_statement=task.problem_statement, source_patch=task.patch,
        image=environment.image_for(task.instance_id), install=environment.install,
        test_command=environment.test_command, log_parser=environment.log_parser, selected_tests=selected,
        test_files=tests, archive=archive)


def task_config(task: GradableTask, files: TaskFiles, canonical: Mapping[str, Any], settings: HarborSettings) -> str:
    """The task.toml text."""
    identity = canonical.get("repository_identity")
    metadata = {
        "source": "sediment", "profile": PROFILE_ID, "instance_id": task.instance_id, "repo": task.repo,
        "repository_identity": dict(identity) if isinstance(identity, Mapping) else None,
        "base_commit": task.base_commit, "verified_commit": files.verified_commit, "split": canonical.get("split"),
        "created_at": task.created_at, "recipe_id": canonical.get("recipe_id"),
        "recipe_version": canonical.get("recipe_version"), "reward_source": canonical.get("reward_source"),
        "environment_version": task.environment.version, "log_parser": task.environment.log_parser,
        "fail_to_pass": list(task.transitions.fail_to_pass), "pass_to_pass": list(task.transitions.pass_to_pass),
        "fail_to_pass_result_ids": list(task.transitions.fail_to_pass_evidence),
        "pass_to_pass_result_ids": list(task.transitions.pass_to_pass_evidence),
    }
    environment = {
        "build_timeout_sec": settings.build_timeout_sec,
        "docker_image": settings.built_image.replace("{instance_id}", task.instance_id.lower())
        if settings.built_image else None,
        "workdir": TESTBED,
        **dict(task.environment.resources),
    }
    return toml_document({"source": "sediment"}, [
        ("metadata", metadata), ("verifier", {"timeout_sec": settings.verifier_timeout_sec}),
        ("agent", {"timeout_sec": settings.agent_timeout_sec}), ("environment", environment)])


@hookimpl
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, settings: HarborSettings) -> AdaptedRow | str:
    task = gradable_task(row, evidence, settings)
    if isinstance(task, str):
        return task
    files = _task_files(task, evidence)
    if isinstance(files, str):
        return files
    try:
        content = files.files(task_config(task, files, row["metadata"], settings))
    except UnicodeEncodeError:
        return "unrepresentable_unicode"
    if settings.check_reference and not reproduces(content, EXECUTABLE, path_prefix=settings.check_path,
                                                   timeout=settings.verifier_timeout_sec):
        return "reference_not_reproduced"
    body = {
        "task": task.instance_id,
        "instance_id": task.instance_id,
        "repo": task.repo,
        "base_commit": task.base_commit,
        "verified_commit": files.verified_commit,
        "FAIL_TO_PASS": list(task.transitions.fail_to_pass),
        "PASS_TO_PASS": list(task.transitions.pass_to_pass),
        "files": {path: hashlib.sha256(data).hexdigest() for path, data in sorted(content.items())},
        "metadata": task.metadata(row["metadata"]),
    }
    return AdaptedRow(body=body, prompt=task.problem_statement, evidence={
        "fail_to_pass": len(task.transitions.fail_to_pass),
        "pass_to_pass": len(task.transitions.pass_to_pass),
        "excluded_tests": task.transitions.excluded,
        "reference_checked": settings.check_reference,
    }, directory=TaskDirectory(task.instance_id, content, EXECUTABLE))
