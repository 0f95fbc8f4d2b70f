"""Target ``swe-bench``: SWE-bench-shaped task rows, ``tasks.jsonl``."""

from .target import describe_target, eligible, project_row, register_schemas

__all__ = ["describe_target", "eligible", "project_row", "register_schemas"]
