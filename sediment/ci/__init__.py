"""CI rules: jobs, re-run lineages, resolution per commit, test transitions."""
