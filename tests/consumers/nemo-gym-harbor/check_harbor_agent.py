"""NeMo Gym 0.7.0's harbor_agent configuration and requests, for a local Harbor dataset, offline.

Usage: check_harbor_agent.py DATASET_DIR. HarborAgentConfig validates a configuration whose
harbor_datasets alias "sediment" is DATASET_DIR (local_dataset_path); for each task directory, the
request row {"instance_id": "sediment::<task>", ...} validates as HarborRunRequest and as the
agent's TaskData, the agent splits its instance_id into (alias, task), and harbor resolves the
alias's path filtered to that task name, as a Harbor job over a local dataset does (harbor's
DatasetConfig: the agent's _build_job_config imports LocalDatasetConfig, which the pinned harbor
git commit has and harbor 0.25.0 no longer does). Prints one JSON line.
"""

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path

from harbor.models.job.config import DatasetConfig
from responses_api_agents.harbor_agent.app import HarborAgent, HarborAgentConfig, HarborRunRequest
from responses_api_agents.harbor_agent.task_data import TaskData

root = Path(sys.argv[1])
config = HarborAgentConfig.model_validate({
    "name": "harbor_agent", "entrypoint": "app.py", "host": "127.0.0.1", "port": 8000, "concurrency": 1,
    "harbor_datasets": {"sediment": {"local_dataset_path": str(root), "workdir": "/testbed"}},
    "harbor_environment_type": "docker", "harbor_jobs_dir": "jobs",
    "model_server": {"type": "responses_api_models", "name": "policy_model"},
})
rows = []
for directory in sorted(p for p in root.iterdir() if (p / "task.toml").is_file()):
    row = {"instance_id": f"sediment::{directory.name}", "responses_create_params": {"input": []},
           "agent_ref": {"name": "harbor_agent"}}
    request = HarborRunRequest.model_validate(row)
    TaskData.model_validate(row)
    alias, task = HarborAgent._parse_instance_id(request.instance_id)
    source = config.harbor_datasets[alias]
    resolved = asyncio.run(DatasetConfig(path=Path(source.local_dataset_path), task_names=[task]).get_task_configs())
    rows.append({"instance_id": request.instance_id, "alias": alias, "task": task,
                 "resolved": [Path(c.path).name for c in resolved]})
print(json.dumps({"nemo_gym": version("nemo-gym"), "harbor": version("harbor"),
                  "datasets": sorted(config.harbor_datasets), "rows": rows}))
