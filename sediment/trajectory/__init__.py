"""The canonical trajectory library's record and importers.

:mod:`sediment.trajectory.record` defines the canonical :class:`Trajectory` (schema ``1.0``);
:mod:`sediment.importing.run` reads source files into records through importer plugins.
See ``docs/trajectories.md``.
"""

from __future__ import annotations

from sediment.trajectory.record import (
    SCHEMA_ID,
    SCHEMA_VERSION,
    VERIFICATION_STRENGTHS,
    Artifact,
    Completeness,
    Event,
    MissingField,
    Outcome,
    RawRecord,
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
    content_id,
    from_json,
    from_plain,
    outcome_category,
    problems,
    to_json,
    validated,
    verification_strength,
)

__all__ = [
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "VERIFICATION_STRENGTHS",
    "Artifact",
    "Completeness",
    "Event",
    "MissingField",
    "Outcome",
    "RawRecord",
    "Source",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryEvidence",
    "TrajectoryProvenance",
    "TrajectoryToolCall",
    "TrajectoryToolDefinition",
    "Transformation",
    "Verification",
    "build",
    "content_id",
    "from_json",
    "from_plain",
    "outcome_category",
    "problems",
    "to_json",
    "validated",
    "verification_strength",
]
