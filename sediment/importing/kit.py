"""Everything an importer plugin uses, in one namespace: ``sediment.plugin.trajectory_kit``.

Sediment's own bundles are read with :func:`open_bundle` and their CI resolved with
:func:`sediment.plugin.resolve_ci` and :func:`select_reward_resolution`.

The record models (:class:`Trajectory`, :class:`Event`, :class:`TrajectoryToolCall`, ...), the builder
(:func:`build`), streaming reading (:func:`read_units`; gzip and Zstandard files are inflated as
they are read, :func:`read_input` for a small file read whole, :func:`logical_name` for a file's
name without its compression suffix), strict parsing, the raw record with
secrets redacted, task/attempt splitting, call-id namespacing, and the refusal type.

``ToolCall``, ``ToolDefinition``, ``Provenance`` and ``Evidence`` are kept as the old names of
:class:`TrajectoryToolCall`, :class:`TrajectoryToolDefinition`, :class:`TrajectoryProvenance`
and :class:`TrajectoryEvidence` (the same classes), so an importer written before the rename
still works; new code uses the ``Trajectory`` names, which no other Sediment model shares.
"""

from __future__ import annotations

from sediment.bundle.format import ROLLOUTS as BUNDLE_ROLLOUTS
from sediment.bundle.read import open_bundle
from sediment.ci.resolution import select_reward_resolution
from sediment.errors import BundleError
from sediment.host.declarations import ImporterInfo
from sediment.ingest.reading.compressed import logical_name
from sediment.ingest.reading.compressed import read_all as read_input
from sediment.trajectory.record import (
    SCHEMA_VERSION,
    Artifact,
    Completeness,
    Demonstrator,
    Event,
    MissingField,
    Outcome,
    RawRecord,
    Role,
    Source,
    Trajectory,
    TrajectoryError,
    TrajectoryEvidence,
    TrajectoryProvenance,
    TrajectoryToolCall,
    TrajectoryToolDefinition,
    Transformation,
    Verification,
    build,
)
from sediment.trajectory.sources import (
    TOOLKIT_VERSION,
    CallIds,
    ImportRefusal,
    SourceUnit,
    UnitError,
    describe_json_error,
    file_sha256,
    parse_json,
    raw_record_of,
    read_units,
    redact_text,
    split_attempt,
)
from sediment.trajectory.store_source import StoreSource

# the names these models had before the rename (the same classes; see the module)
ToolCall = TrajectoryToolCall
ToolDefinition = TrajectoryToolDefinition
Provenance = TrajectoryProvenance
Evidence = TrajectoryEvidence

__all__ = [
    "BUNDLE_ROLLOUTS",
    "SCHEMA_VERSION",
    "TOOLKIT_VERSION",
    "Artifact",
    "BundleError",
    "CallIds",
    "Completeness",
    "Demonstrator",
    "Event",
    "Evidence",
    "ImportRefusal",
    "ImporterInfo",
    "MissingField",
    "Outcome",
    "Provenance",
    "RawRecord",
    "Role",
    "Source",
    "SourceUnit",
    "StoreSource",
    "ToolCall",
    "ToolDefinition",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryEvidence",
    "TrajectoryProvenance",
    "TrajectoryToolCall",
    "TrajectoryToolDefinition",
    "Transformation",
    "UnitError",
    "Verification",
    "build",
    "describe_json_error",
    "file_sha256",
    "logical_name",
    "open_bundle",
    "parse_json",
    "raw_record_of",
    "read_input",
    "read_units",
    "redact_text",
    "select_reward_resolution",
    "split_attempt",
]
