"""Target ``swe-bench``: SWE-bench-shaped task rows, ``tasks.jsonl``."""

from sediment_swe_bench.target import describe_target, eligible, project_row, skip_reasons

__all__ = ["describe_target", "eligible", "project_row", "skip_reasons"]
