"""Target ``sediment``: the audit format, ``tasks.jsonl`` and ``rollouts.jsonl``."""

from .target import describe_target, eligible, project_row, register_schemas

__all__ = ["describe_target", "eligible", "project_row", "register_schemas"]
