"""The RLVR export framework: plugin contract, registry, pipeline and writer."""

from sediment.export.hookspecs import hookimpl
from sediment.export.rows import Population, ProjectedRow, TargetInfo

__all__ = ["Population", "ProjectedRow", "TargetInfo", "hookimpl"]
