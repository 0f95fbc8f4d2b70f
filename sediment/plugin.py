"""The one module a Sediment plugin imports (plugin contract version 2).

Everything an objective, a target, a consumer profile or a manifest writer needs is here: the
hook marker, the declarations, the evidence types and the helpers for building rows. Plugins
import nothing else from ``sediment``; tests use :mod:`sediment.testing` as well. See
``docs/plugins.md``.

A target::

    from sediment.plugin import PopulationInfo, ProjectedRow, TargetInfo, hookimpl

    @hookimpl
    def describe_target():
        return TargetInfo(populations={"rollouts": PopulationInfo(SCHEMA_ID, ("no_verdict",))},
                          needs_mirrors=False)
"""

from __future__ import annotations

from sediment.ci.resolution import (
    RESOLVER_SKIP_REASONS,
    CIResolution,
    CIResolutionResult,
    CIWorkflowResolution,
    CommitKey,
    resolve_ci,
)
from sediment.ci.times import finished_time
from sediment.ci.transitions import TRANSITION_SKIP_REASONS, TestTransitions
from sediment.derive.attributed_completions import (
    AttributedCompletion,
    CompletionCall,
    CompletionResolution,
    SessionAbandonment,
    SessionCompletions,
)
from sediment.derive.confidence import LabelConfidencePolicy, PairConfidence, label_confidence, pair_confidence
from sediment.evidence.attributed_calls import AttributedCall, CallRecord, CommitAttributions
from sediment.evidence.context import ExportContext
from sediment.evidence.recipe import Recipe
from sediment.evidence.reference_patch import PATCH_SKIP_REASONS, ReferencePatch
from sediment.evidence.representation import REPRESENTATION_REASONS, representation_problem
from sediment.evidence.rollout import RECIPE_ID, RECIPE_VERSION, RolloutEvidence, put_optional, reward_source
from sediment.evidence.tasks import (
    TASK_REMEDIES,
    TaskBasis,
    task_basis,
    task_ineligibility,
    task_instance_id,
    task_skip_reasons,
)
from sediment.evidence.trainer_messages import (
    TRAINER_SKIP_REASONS,
    TrainerConversation,
    TrainerDecline,
    TrainingProvenance,
    map_conversation,
    map_inference_prompt,
    strict_json,
)
from sediment.evidence.turns import (
    ROLLOUT_SKIP_REASONS,
    capture_row,
    decision_row,
    message_row,
    segment_instance_id,
    turn_row,
)
from sediment.export.writer import atomic_write_bytes
from sediment.git.mirror import Mirror, MirrorReadError
from sediment.host.declarations import (
    SPLIT_ORDER,
    AdaptedRow,
    Declined,
    Dependency,
    IncompatibleRow,
    ManifestInfo,
    NotDerived,
    ObjectiveInfo,
    Population,
    PopulationInfo,
    ProfileInfo,
    ProjectedRow,
    PublishedExport,
    TargetInfo,
)
from sediment.host.diagnosis import DiagnosedRow, FloorCandidate, PromptBucket, Stratum
from sediment.host.hookspecs import CONTRACT_VERSION, hookimpl
from sediment.identifiers import render_datetime
from sediment.model.facts import (
    CallCapture,
    CIOutcome,
    InferenceMessage,
    Part,
    ReasoningPart,
    TestCaseResult,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
)
from sediment.model.policy import Provenance
from sediment.model.rollout import Rollout, Turn
from sediment.records import canonical_digest, canonical_json, plain, sha256_hex, sortable_time
from sediment.settings import PluginSettings, ReadableFile
from sediment.split import Split
from sediment.validation import schemas_in

__all__ = [
    "CONTRACT_VERSION",
    "PATCH_SKIP_REASONS",
    "RECIPE_ID",
    "RECIPE_VERSION",
    "REPRESENTATION_REASONS",
    "RESOLVER_SKIP_REASONS",
    "ROLLOUT_SKIP_REASONS",
    "SPLIT_ORDER",
    "TASK_REMEDIES",
    "TRAINER_SKIP_REASONS",
    "TRANSITION_SKIP_REASONS",
    "AdaptedRow",
    "AttributedCall",
    "AttributedCompletion",
    "CIOutcome",
    "CIResolution",
    "CIResolutionResult",
    "CIWorkflowResolution",
    "CallCapture",
    "CallRecord",
    "CommitAttributions",
    "CommitKey",
    "CompletionCall",
    "CompletionResolution",
    "Declined",
    "Dependency",
    "DiagnosedRow",
    "ExportContext",
    "FloorCandidate",
    "IncompatibleRow",
    "InferenceMessage",
    "LabelConfidencePolicy",
    "ManifestInfo",
    "Mirror",
    "MirrorReadError",
    "NotDerived",
    "ObjectiveInfo",
    "PairConfidence",
    "Part",
    "PluginSettings",
    "Population",
    "PopulationInfo",
    "ProfileInfo",
    "ProjectedRow",
    "PromptBucket",
    "Provenance",
    "PublishedExport",
    "ReadableFile",
    "ReasoningPart",
    "Recipe",
    "ReferencePatch",
    "Rollout",
    "RolloutEvidence",
    "SessionAbandonment",
    "SessionCompletions",
    "Split",
    "Stratum",
    "TargetInfo",
    "TaskBasis",
    "TestCaseResult",
    "TestTransitions",
    "TextPart",
    "ToolCallPart",
    "ToolCallResponsePart",
    "ToolDefinition",
    "TrainerConversation",
    "TrainerDecline",
    "TrainingProvenance",
    "Turn",
    "atomic_write_bytes",
    "canonical_digest",
    "canonical_json",
    "capture_row",
    "decision_row",
    "finished_time",
    "hookimpl",
    "label_confidence",
    "map_conversation",
    "map_inference_prompt",
    "message_row",
    "pair_confidence",
    "plain",
    "put_optional",
    "render_datetime",
    "representation_problem",
    "resolve_ci",
    "reward_source",
    "schemas_in",
    "segment_instance_id",
    "sha256_hex",
    "sortable_time",
    "strict_json",
    "task_basis",
    "task_ineligibility",
    "task_instance_id",
    "task_skip_reasons",
    "turn_row",
]

# --- the trajectory library: importer plugins (``describe_importer`` / ``import_source``) -----
from sediment.host.declarations import ImporterInfo
from sediment.importing import kit as trajectory_kit
from sediment.trajectory.record import Trajectory
from sediment.trajectory.sources import ImportRefusal

__all__ += ["ImportRefusal", "ImporterInfo", "Trajectory", "trajectory_kit"]
