"""Build verifiers 0.4.0 Harbor tasks from local task directories, offline.

Usage: check_tasks.py DATASET_DIR. HarborTaskset.load() downloads its dataset with the Harbor
CLI (dataset_dir); here it is pointed at DATASET_DIR instead, and does the rest as it would:
every task.toml found, parse_task on its directory, a HarborTask built from it. A directory it
refuses is reported with the reason. Prints one JSON line.
"""

import json
import sys
from importlib.metadata import version
from pathlib import Path

from verifiers.v1.tasksets.harbor import taskset as harbor_taskset
from verifiers.v1.tasksets.harbor.taskset import HarborConfig, HarborTaskset, parse_task

root = Path(sys.argv[1])
config = HarborConfig(ignore_timeouts=False)
refused = {}
for index, directory in enumerate(sorted(p.parent for p in root.rglob("task.toml"))):
    try:
        parse_task(directory, index, config)
    except ValueError as problem:
        refused[directory.name] = str(problem)
tasks = []
if not refused:
    harbor_taskset.dataset_dir = lambda _config: root  # the local folder instead of a Harbor Hub download
    for task in HarborTaskset(config).load():
        data = task.data
        tasks.append({"name": data.name, "prompt": data.prompt, "image": data.image,
                      "task_dir": Path(data.task_dir).name, "upload_environment": data.upload_environment,
                      "agent_timeout": data.timeout.agent, "scoring_timeout": data.timeout.scoring,
                      "shared_verifier": data.verifier is None, "workdir": data.workdir})
print(json.dumps({"verifiers": version("verifiers"), "harbor": version("harbor"), "refused": refused,
                  "tasks": tasks}))
