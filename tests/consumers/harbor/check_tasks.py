"""Load every Harbor task directory of a dataset folder with harbor's own code, offline.

Usage: check_tasks.py DATASET_DIR. For each task directory (sorted): harbor.models.task.task.Task
(task.toml through TaskConfig, the instruction, the verifier-script checks), Task.is_valid_dir,
harbor.lint.lint_task with the rules `harbor lint` selects by default, and the dataset resolved as
`harbor run --path DATASET_DIR` resolves a local dataset (DatasetConfig.get_task_configs). Prints
one JSON line.
"""

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path

from harbor.lint import lint_task
from harbor.lint.models import DEFAULT_RULES
from harbor.models.job.config import DatasetConfig
from harbor.models.task.task import Task
from harbor.models.trial.paths import EnvironmentPaths

root = Path(sys.argv[1])
tasks = []
for directory in sorted(p for p in root.iterdir() if (p / "task.toml").is_file()):
    task = Task(directory)
    config = task.config
    tasks.append({
        "directory": directory.name,
        "name": task.name,
        "instruction": task.instruction,
        "valid_dir": Task.is_valid_dir(directory),
        "test_script": str(task.paths.discovered_test_path.relative_to(directory)),
        "solve_script": str(task.paths.discovered_solve_path.relative_to(directory)),
        "dockerfile": (task.paths.environment_dir / "Dockerfile").is_file(),
        "verifier_timeout_sec": config.verifier.timeout_sec,
        "agent_timeout_sec": config.agent.timeout_sec,
        "environment": config.environment.model_dump(mode="json", include={
            "build_timeout_sec", "docker_image", "workdir", "cpus", "memory_mb", "storage_mb"}),
        "metadata": config.metadata,
        "source": config.source,
        "lint": [{"rule": str(f.rule), "path": Path(f.path).relative_to(directory).as_posix(), "message": f.message}
                 for f in lint_task(directory, selected_rules=set(DEFAULT_RULES))],
    })
resolved = asyncio.run(DatasetConfig(path=root).get_task_configs())
print(json.dumps({
    "harbor": version("harbor"),
    "reward_text_path": str(EnvironmentPaths.reward_text_path),
    "tests_dir": str(EnvironmentPaths.tests_dir),
    "tasks": tasks,
    "dataset": sorted(Path(c.path).name for c in resolved),
}))
