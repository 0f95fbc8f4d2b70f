"""What both profiles build from one canonical swe-bench task row: the gradable task.

From the row (repository, base commit, reference patch, problem statement) and its Rollout's
evidence: the repository's configured environment, the FAIL_TO_PASS / PASS_TO_PASS that the
recorded per-test results give (``sediment.ci.transitions``), the patch split into source
and test files, ``created_at`` (when the Session's first call was made: when the task was
posed), and the eval script.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from sediment.plugin import (
    TRANSITION_SKIP_REASONS,
    PluginSettings,
    ReadableFile,
    RolloutEvidence,
    TestTransitions,
    render_datetime,
)

from .environments import Environment, load_environments, read_environments
from .patches import FileSection, split_patch

START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
#: Own reasons shared by both profiles, in the order they are checked.
TASK_SKIP_REASONS: tuple[str, ...] = ("environment_unconfigured", "call_context_absent", *TRANSITION_SKIP_REASONS,
                                      "no_source_change")


class TaskSettings(PluginSettings):
    """Where the per-repository evaluation environments are (docs/profiles.md).

    Required, and checked before an export claims its directory: without environments every row
    would be declined (``environment_unconfigured`` is the first check), so an export that
    cannot write a row is refused instead of claiming a directory to write nothing in."""

    environments: ReadableFile = Field(
        description="TOML file of per-repository evaluation environments (required)",
        json_schema_extra={"env": "SEDIMENT_SWE_BENCH_ENVIRONMENTS_FILE"})

    @field_validator("environments")
    @classmethod
    def _a_repos_table(cls, path: Path) -> Path:
        read_environments(path)  # EnvironmentsUnreadable is a ValueError: one line naming the file
        return path


@lru_cache(maxsize=8)
def _environments(path: str, mtime_ns: int) -> dict[str, Environment]:
    return load_environments(Path(path))


def environments(settings: TaskSettings) -> dict[str, Environment]:
    """The configured environments (read once per file version)."""
    path = settings.environments
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = -1
    return _environments(str(path), mtime)


#: What would change the main reasons (the summary's hint when every row is declined).
REMEDIES: dict[str, str] = {
    "environment_unconfigured": "add an entry [repos.\"OWNER/REPO\"] for the repository to the file the "
                                "environments setting names (docs/profiles.md)",
    "call_context_absent": "the Rollouts were derived by an older Sediment: derive them again (`sediment derive`)",
    "verified_test_results_absent": "no per-test results of the verified CI run: ingest its JUnit reports "
                                    "(`sediment ingest junit`)",
    "base_test_results_absent": "no per-test results on the base commit: ingest the JUnit reports of a CI run on it "
                                "(`sediment ingest junit`)",
}


@dataclass(frozen=True)
class GradableTask:
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    test_sections: list[FileSection]
    problem_statement: str
    created_at: str
    environment: Environment
    transitions: TestTransitions

    @property
    def fail_to_pass(self) -> str:
        return json.dumps(list(self.transitions.fail_to_pass))

    @property
    def pass_to_pass(self) -> str:
        return json.dumps(list(self.transitions.pass_to_pass))

    def eval_script(self) -> str:
        """Install steps, the test files reset to the base and the test patch applied, the test
        command between SWE-bench's output markers, and the test files reset again."""
        existing = [p for s in self.test_sections if not s.new_file for p in s.paths[:1]]
        reset = f"git checkout {self.base_commit} -- {' '.join(_quote(p) for p in existing)}" if existing else ""
        lines = ["#!/bin/bash", "set -uxo pipefail", "cd /testbed", *self.environment.install]
        if reset:
            lines.append(reset)
        if self.test_patch:
            delimiter = "EOF_SEDIMENT_TEST_PATCH"
            while delimiter in self.test_patch:
                delimiter += "_"
            lines += [f"git apply -v - <<'{delimiter}'", self.test_patch.rstrip("\n"), delimiter]
        lines += [f": '{START_TEST_OUTPUT}'", self.environment.test_command, f": '{END_TEST_OUTPUT}'"]
        if reset:
            lines.append(reset)
        return "\n".join(lines) + "\n"

    def metadata(self, canonical: Mapping[str, Any]) -> dict[str, Any]:
        """The canonical metadata, with the evidence behind both test lists, without the canonical
        row's ``schema_id``: a native row is not that row, and must not claim its schema."""
        kept = {key: value for key, value in canonical.items() if key != "schema_id"}
        return {**kept, "test_transitions": self.transitions.evidence()}


def _quote(path: str) -> str:
    return path if path.replace("/", "").replace(".", "").replace("_", "").replace("-", "").isalnum() \
        else "'" + path.replace("'", "'\\''") + "'"


def gradable_task(row: Mapping[str, Any], evidence: RolloutEvidence, settings: TaskSettings) -> GradableTask | str:
    """The gradable task of one canonical swe-bench row, or the reason it is declined."""
    environment = environments(settings).get(str(row["repo"]).lower())
    if environment is None:
        return "environment_unconfigured"
    first = evidence.rollout.segments[0][0] if evidence.rollout.segments else None
    if first is None or first.observed_at is None:
        return "call_context_absent"
    resolution = evidence.reward_resolution
    if resolution is None:  # a swe-bench task row always has one; never label without it
        return "verified_test_results_absent"
    transitions = evidence.test_transitions(resolution, row["base_commit"])
    if isinstance(transitions, str):
        return transitions
    patch, test_patch, test_sections = split_patch(row["patch"], environment.test_files)
    if not patch:  # a tests-only change: the test patch alone would pass every FAIL_TO_PASS test
        return "no_source_change"
    return GradableTask(
        instance_id=row["instance_id"], repo=row["repo"], base_commit=row["base_commit"], patch=patch,
        test_patch=test_patch, test_sections=test_sections, problem_statement=row["problem_statement"],
        created_at=render_datetime(first.observed_at), environment=environment, transitions=transitions,
    )
