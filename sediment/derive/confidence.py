"""The Confidence ladder: how sure the evidence makes us that one recorded response is good.

:class:`LabelConfidencePolicy` (policy version ``"4"``) turns what a developer did with a
response (its decisions), what CI said about the commit it reached, and how the response was
bound to that commit into one number in ``[0, 1]``, or ``None`` when there is no signal at all.

1. The decision branch (:func:`decision_branch`, first match): ``abandoned`` (the evidence
   carries an abandonment), ``no_decision``, ``explicit_reject`` / ``explicit_accept`` (any
   explicit decision; a reject wins), ``implicit_reject`` (any implicit reject),
   ``implicit_accept_codex_neutral`` (every decision is Codex's, an accept-only harness),
   ``implicit_accept``.
2. Its factor: no decisions → ``baseline_confidence`` (an abandonment included); abandoned or
   explicit reject → ``explicit_reject_confidence``; explicit accept →
   ``explicit_accept_confidence``; implicit reject → baseline × ``implicit_reject_multiplier``;
   Codex → baseline; implicit accept → baseline × ``lerp(implicit_reject_multiplier,
   implicit_accept_multiplier, min(edit retention scores))`` when a decision has a score,
   else baseline × ``implicit_accept_multiplier`` (``lerp(lo, hi, t) = lo + (hi − lo)·t``).
3. The CI factor and reliability of the matching commit resolution: ``passed`` →
   (``ci_pass_multiplier``, its reliability), ``failed`` → (``ci_fail_multiplier``, its
   reliability), no verdict or no resolution → (1.0, 1.0).
4. The similarity discount: the ``similarity_score`` for a ``jaccard`` attribution, else 1.0.
5. ``final = clamp(decision × ci × reliability × similarity, 0, 1)``, multiplied left to right.

:meth:`LabelConfidencePolicy.steps` replays the ladder rung by rung (which rule applied, its
inputs, its value) for ``sediment explain``; its last step's value is :meth:`~LabelConfidencePolicy.confidence`.

The value is ``None`` only when the evidence has no abandonment, no decision and no CI
outcome. It is the confidence that the response is **good**; :func:`label_confidence` turns
it into the confidence in a label (its complement for a rejected response), and
:func:`pair_confidence` gives a preference pair's values (see ``docs/confidence.md``).

The ladder reads evidence through small protocols (:class:`DecisionEvidence`,
:class:`ResolutionEvidence`), so a DeveloperDecision Fact and a CI resolution are read as
they are. Knobs come from Python, or for the CLI from ``SEDIMENT_LABEL_CONFIDENCE_*``
variables and the ``[label-confidence]`` table of ``--config``
(:func:`label_confidence_policy`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeAlias

from sediment.ci.resolution import DEFAULT_CI_POLICY, CIResolutionPolicy
from sediment.errors import ConfigurationError
from sediment.records import canonical_digest

if TYPE_CHECKING:
    from sediment.settings import SettingsSources

__all__ = [
    "DECISION_BRANCHES",
    "LABEL_CONFIDENCE_ENV_PREFIX",
    "LABEL_CONFIDENCE_POLICY_VERSION",
    "LABEL_CONFIDENCE_SECTION",
    "LABEL_CONFIDENCE_SETTINGS",
    "ConfidenceBreakdown",
    "ConfidenceEvidence",
    "ConfidenceStep",
    "DecisionBranch",
    "DecisionEvidence",
    "Label",
    "LabelConfidencePolicy",
    "PairConfidence",
    "ResolutionEvidence",
    "decision_branch",
    "label_confidence",
    "label_confidence_policy",
    "pair_confidence",
]

LABEL_CONFIDENCE_POLICY_VERSION = "4"

DecisionBranch: TypeAlias = Literal[
    "abandoned", "no_decision", "explicit_reject", "explicit_accept", "implicit_reject",
    "implicit_accept_codex_neutral", "implicit_accept",
]
#: The branches, in the order they are tested.
DECISION_BRANCHES: tuple[DecisionBranch, ...] = (
    "abandoned", "no_decision", "explicit_reject", "explicit_accept", "implicit_reject",
    "implicit_accept_codex_neutral", "implicit_accept",
)
Label: TypeAlias = Literal["chosen", "rejected"]

_CODEX = "codex"


class DecisionEvidence(Protocol):
    """What the ladder reads of one developer decision (a DeveloperDecision Fact has it)."""

    @property
    def accepted(self) -> bool: ...
    @property
    def explicit(self) -> bool: ...
    @property
    def agent_harness(self) -> str: ...
    @property
    def edit_retention_score(self) -> float | None: ...


class ResolutionEvidence(Protocol):
    """What the ladder reads of the commit's CI resolution (a CIResolution has it)."""

    @property
    def verdict(self) -> Literal["passed", "failed"] | None: ...
    @property
    def reliability(self) -> float | None: ...


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_unit(owner: str, name: str, value: object) -> float:
    if not _is_real(value):
        raise TypeError(f"{owner}.{name} must be a real number (got {value!r})")
    number = float(value)  # type: ignore[arg-type]
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{owner}.{name} must be in [0.0, 1.0] (got {value!r})")
    return number


def _check_multiplier(owner: str, name: str, value: object) -> float:
    if not _is_real(value):
        raise TypeError(f"{owner}.{name} must be a real number (got {value!r})")
    number = float(value)  # type: ignore[arg-type]
    if not number >= 0.0:
        raise ValueError(f"{owner}.{name} must be >= 0.0 (got {value!r})")
    if math.isinf(number):
        raise ValueError(f"{owner}.{name} must be finite (got {value!r})")
    return number


@dataclass(frozen=True)
class ConfidenceEvidence:
    """The evidence behind one response, as the ladder reads it.

    ``decisions`` are the developer decisions joined to the response's call; ``abandoned``
    says the evidence carries an abandonment; ``has_ci_outcomes`` that it carries CI outcomes
    (whether or not they resolve to a verdict); ``ci_resolution`` is the resolution of the
    attributed commit, or ``None``; ``attribution_source`` and ``similarity_score`` how the
    response was bound to the commit (``None`` for abandonment evidence, which has no commit).
    """

    decisions: Sequence[DecisionEvidence] = ()
    abandoned: bool = False
    has_ci_outcomes: bool = False
    ci_resolution: ResolutionEvidence | None = None
    attribution_source: Literal["git_notes", "git_ai_notes", "jaccard"] | None = None
    similarity_score: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "decisions", tuple(self.decisions))
        for decision in self.decisions:
            if decision.edit_retention_score is not None:
                _check_unit("DeveloperDecision", "edit_retention_score", decision.edit_retention_score)
        if self.ci_resolution is not None:
            if not self.has_ci_outcomes:
                raise ValueError("a CI resolution needs the CI outcomes it resolved (has_ci_outcomes)")
            if self.ci_resolution.verdict is not None:
                _check_unit("CIResolution", "reliability", self.ci_resolution.reliability)
        if self.attribution_source == "jaccard":
            _check_unit("ConfidenceEvidence", "similarity_score", self.similarity_score)
        elif self.attribution_source not in (None, "git_notes", "git_ai_notes"):
            raise ValueError(f"unknown attribution_source {self.attribution_source!r}")


@dataclass(frozen=True)
class ConfidenceBreakdown:
    """Every factor of one Confidence, unclamped, and the clamped product ``final``."""

    decision_factor: float
    ci_factor: float
    ci_reliability: float
    similarity_discount: float
    final: float


@dataclass(frozen=True)
class ConfidenceStep:
    """One rung of the ladder as it applied to one piece of evidence: ``rung`` (``decision``,
    ``ci``, ``reliability``, ``similarity``, ``final``), the ``rule`` that applied (the decision
    branch, the CI verdict or ``no_verdict``, the attribution source, ``clamp``), the ``inputs``
    it read (knobs and evidence values, JSON data in a fixed key order) and its ``value``."""

    rung: str
    rule: str
    inputs: Mapping[str, Any]
    value: float


def decision_branch(evidence: ConfidenceEvidence) -> DecisionBranch:
    """The first branch of :data:`DECISION_BRANCHES` that ``evidence`` matches."""
    decisions = evidence.decisions
    if evidence.abandoned:
        return "abandoned"
    if not decisions:
        return "no_decision"
    explicit = [d for d in decisions if d.explicit]
    if explicit:
        return "explicit_reject" if any(not d.accepted for d in explicit) else "explicit_accept"
    if any(not d.accepted for d in decisions):
        return "implicit_reject"
    if all(d.agent_harness == _CODEX for d in decisions):
        return "implicit_accept_codex_neutral"
    return "implicit_accept"


def _lerp(low: float, high: float, t: float) -> float:
    return low + (high - low) * t


_UNIT_KNOBS = ("explicit_accept_confidence", "explicit_reject_confidence", "baseline_confidence")
_MULTIPLIER_KNOBS = ("implicit_accept_multiplier", "implicit_reject_multiplier", "ci_pass_multiplier",
                     "ci_fail_multiplier")
_RELIABILITY_KNOBS = ("clean_reliability", "suspected_flake_reliability", "non_verdict_reliability")


@dataclass(frozen=True)
class LabelConfidencePolicy:
    """The knobs of the ladder (defaults are policy version ``"4"``'s).

    Confidences and the CI reliabilities are in ``[0, 1]``, multipliers finite and ``>= 0``;
    anything else raises ``ValueError`` (``TypeError`` for a non-number) with one line such as
    ``LabelConfidencePolicy.baseline_confidence must be in [0.0, 1.0] (got 1.5)``.
    ``ci_resolution`` is the CI-resolution policy the evidence's outcomes are resolved with.
    """

    explicit_accept_confidence: float = 1.0
    explicit_reject_confidence: float = 0.0
    baseline_confidence: float = 0.6
    implicit_accept_multiplier: float = 1.1
    implicit_reject_multiplier: float = 0.9
    ci_pass_multiplier: float = 1.1
    ci_fail_multiplier: float = 0.7
    ci_resolution: CIResolutionPolicy = field(default=DEFAULT_CI_POLICY)

    policy_version: ClassVar[str] = LABEL_CONFIDENCE_POLICY_VERSION

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name in _UNIT_KNOBS:
            object.__setattr__(self, name, _check_unit(owner, name, getattr(self, name)))
        for name in _MULTIPLIER_KNOBS:
            object.__setattr__(self, name, _check_multiplier(owner, name, getattr(self, name)))
        if not isinstance(self.ci_resolution, CIResolutionPolicy):
            raise TypeError(f"{owner}.ci_resolution must be a CIResolutionPolicy (got {self.ci_resolution!r})")

    def resolved(self) -> dict[str, Any]:
        """Every knob and the version, as JSON data (what :attr:`digest` covers)."""
        values: dict[str, Any] = {name: getattr(self, name) for name in (*_UNIT_KNOBS, *_MULTIPLIER_KNOBS)}
        values["ci_resolution"] = self.ci_resolution.model_dump(mode="json")
        values["policy_version"] = self.policy_version
        return values

    @property
    def digest(self) -> str:
        """SHA-256 of :meth:`resolved` as sorted, compact, ASCII JSON: rows built with other
        knob values carry another digest."""
        return canonical_digest(self.resolved())

    def decision_factor(self, evidence: ConfidenceEvidence) -> float:
        """The factor of the evidence's decisions (step 2 of the module docstring)."""
        if not evidence.decisions:
            return self.baseline_confidence
        branch = decision_branch(evidence)
        if branch in ("abandoned", "explicit_reject"):
            return self.explicit_reject_confidence
        if branch == "explicit_accept":
            return self.explicit_accept_confidence
        if branch == "implicit_reject":
            return self.baseline_confidence * self.implicit_reject_multiplier
        if branch == "implicit_accept_codex_neutral":
            return self.baseline_confidence
        scores = [d.edit_retention_score for d in evidence.decisions if d.edit_retention_score is not None]
        if scores:
            return self.baseline_confidence * _lerp(self.implicit_reject_multiplier, self.implicit_accept_multiplier,
                                                    min(scores))
        return self.baseline_confidence * self.implicit_accept_multiplier

    def _ci(self, resolution: ResolutionEvidence | None) -> tuple[float, float]:
        if resolution is None or resolution.verdict is None:
            return 1.0, 1.0
        reliability = float(resolution.reliability)  # type: ignore[arg-type]  # checked by ConfidenceEvidence
        if resolution.verdict == "passed":
            return self.ci_pass_multiplier, reliability
        return self.ci_fail_multiplier, reliability

    def breakdown(self, evidence: ConfidenceEvidence) -> ConfidenceBreakdown | None:
        """Every factor of the evidence's Confidence, or ``None`` when it has no signal."""
        if not evidence.abandoned and not evidence.decisions and not evidence.has_ci_outcomes:
            return None
        decision = self.decision_factor(evidence)
        ci_factor, reliability = self._ci(evidence.ci_resolution)
        similarity = float(evidence.similarity_score) if evidence.attribution_source == "jaccard" else 1.0  # type: ignore[arg-type]
        product = decision * ci_factor * reliability * similarity
        return ConfidenceBreakdown(decision, ci_factor, reliability, similarity, min(max(product, 0.0), 1.0))

    def steps(self, evidence: ConfidenceEvidence) -> tuple[ConfidenceStep, ...]:
        """The ladder replayed on ``evidence`` rung by rung (module docstring, steps 1-5): the
        decision factor with its branch and the knobs it read, the CI factor, the reliability,
        the similarity discount, and the clamped product. Empty when the evidence has no signal
        (:meth:`confidence` is ``None``). Every value is the one :meth:`breakdown` computes."""
        found = self.breakdown(evidence)
        if found is None:
            return ()
        branch = decision_branch(evidence)
        return (
            ConfidenceStep("decision", branch, self._decision_inputs(evidence, branch), found.decision_factor),
            ConfidenceStep("ci", _verdict(evidence.ci_resolution) or "no_verdict",
                           self._ci_inputs(evidence.ci_resolution), found.ci_factor),
            ConfidenceStep("reliability", "resolution" if _verdict(evidence.ci_resolution) else "no_verdict",
                           {"reliability": None if evidence.ci_resolution is None
                            else evidence.ci_resolution.reliability}, found.ci_reliability),
            ConfidenceStep("similarity", evidence.attribution_source or "none",
                           {"similarity_score": evidence.similarity_score}, found.similarity_discount),
            ConfidenceStep("final", "clamp", {
                "product": found.decision_factor * found.ci_factor * found.ci_reliability * found.similarity_discount,
                "low": 0.0, "high": 1.0}, found.final),
        )

    def _decision_inputs(self, evidence: ConfidenceEvidence, branch: DecisionBranch) -> dict[str, Any]:
        decisions = evidence.decisions
        found: dict[str, Any] = {"decisions": len(decisions), "explicit": sum(1 for d in decisions if d.explicit),
                                 "accepted": sum(1 for d in decisions if d.accepted)}
        if not decisions:
            return found | {"baseline_confidence": self.baseline_confidence}
        if branch in ("abandoned", "explicit_reject"):
            return found | {"explicit_reject_confidence": self.explicit_reject_confidence}
        if branch == "explicit_accept":
            return found | {"explicit_accept_confidence": self.explicit_accept_confidence}
        if branch == "implicit_reject":
            return found | {"baseline_confidence": self.baseline_confidence,
                            "implicit_reject_multiplier": self.implicit_reject_multiplier}
        if branch == "implicit_accept_codex_neutral":
            return found | {"agent_harness": _CODEX, "baseline_confidence": self.baseline_confidence}
        scores = [d.edit_retention_score for d in decisions if d.edit_retention_score is not None]
        found |= {"baseline_confidence": self.baseline_confidence,
                  "implicit_accept_multiplier": self.implicit_accept_multiplier}
        if scores:
            found |= {"implicit_reject_multiplier": self.implicit_reject_multiplier,
                      "min_edit_retention": min(scores)}
        return found

    def _ci_inputs(self, resolution: ResolutionEvidence | None) -> dict[str, Any]:
        verdict = _verdict(resolution)
        if verdict == "passed":
            return {"verdict": verdict, "ci_pass_multiplier": self.ci_pass_multiplier}
        if verdict == "failed":
            return {"verdict": verdict, "ci_fail_multiplier": self.ci_fail_multiplier}
        return {"verdict": None, "resolution": resolution is not None}

    def confidence(self, evidence: ConfidenceEvidence) -> float | None:
        """The confidence that the response is good, in ``[0, 1]``; ``None`` without signal."""
        found = self.breakdown(evidence)
        return None if found is None else found.final


def _verdict(resolution: ResolutionEvidence | None) -> str | None:
    return None if resolution is None else resolution.verdict


def label_confidence(goodness: float | None, label: Label) -> float | None:
    """The confidence in a response's label, from the ladder's confidence that it is good:
    the value itself for a ``chosen`` response, its complement ``1 − goodness`` for a
    ``rejected`` one (an explicit reject, goodness 0.0, is a certain rejection: 1.0)."""
    if goodness is None:
        return None
    if label == "chosen":
        return goodness
    if label == "rejected":
        return 1.0 - goodness
    raise ValueError(f"label must be 'chosen' or 'rejected' (got {label!r})")


@dataclass(frozen=True)
class PairConfidence:
    """The Confidence values of a preference pair.

    ``label_confidence`` = min(chosen's label confidence, rejected's label confidence) =
    ``min(chosen, 1 − rejected)``: how sure the evidence makes the pair's direction at its
    weaker end. ``upstream_label_confidence`` = ``min(chosen, rejected)``, the value the
    upstream implementation writes (0.0 for every pair whose rejected member was explicitly
    rejected). ``confidence_margin`` = ``chosen − rejected``, in ``[−1, 1]``.
    """

    label_confidence: float
    upstream_label_confidence: float
    confidence_margin: float


def pair_confidence(chosen: float, rejected: float) -> PairConfidence:
    """The :class:`PairConfidence` of a pair whose members are good with confidence ``chosen``
    and ``rejected`` (each the ladder's value, in ``[0, 1]``)."""
    for name, value in (("chosen", chosen), ("rejected", rejected)):
        _check_unit("pair_confidence", name, value)
    return PairConfidence(
        label_confidence=min(chosen, 1.0 - rejected),
        upstream_label_confidence=min(chosen, rejected),
        confidence_margin=chosen - rejected,
    )


# --- settings: SEDIMENT_LABEL_CONFIDENCE_* and [label-confidence] --------------------------

#: The ``--config`` table of the ladder's knobs.
LABEL_CONFIDENCE_SECTION = "label-confidence"
LABEL_CONFIDENCE_ENV_PREFIX = "SEDIMENT_LABEL_CONFIDENCE_"
#: Every setting, in order: the policy's knobs, then the CI-resolution reliabilities.
LABEL_CONFIDENCE_SETTINGS: tuple[str, ...] = (*_UNIT_KNOBS, *_MULTIPLIER_KNOBS, *_RELIABILITY_KNOBS)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _env_name(setting: str) -> str:
    return LABEL_CONFIDENCE_ENV_PREFIX + setting.upper()


def _from_environment(environ: Mapping[str, str]) -> dict[str, tuple[float, str]]:
    known = {_env_name(s): s for s in LABEL_CONFIDENCE_SETTINGS}
    values: dict[str, tuple[float, str]] = {}
    for variable in sorted(environ):
        if not variable.startswith(LABEL_CONFIDENCE_ENV_PREFIX):
            continue
        raw = environ[variable].strip()
        if not raw:
            continue  # blank counts as unset
        if variable not in known:
            raise ConfigurationError(f"{variable} is not a label confidence setting; the variables are "
                                     f"{', '.join(known)}")
        if not _DECIMAL.fullmatch(raw):
            raise ConfigurationError(f"{variable} must be a decimal number, got {raw!r}")
        values[known[variable]] = (float(raw), variable)
    return values


def _from_section(section: Mapping[str, Any], path: str | None) -> dict[str, tuple[float, str]]:
    where = f"[{LABEL_CONFIDENCE_SECTION}] in {path}"
    values: dict[str, tuple[float, str]] = {}
    for key, value in section.items():
        if key not in LABEL_CONFIDENCE_SETTINGS:
            raise ConfigurationError(f"{where}: unknown setting {key!r}; the settings are "
                                     f"{', '.join(LABEL_CONFIDENCE_SETTINGS)}")
        if not _is_real(value):
            raise ConfigurationError(f"{where}: {key} must be a number, got {value!r}")
        values[key] = (float(value), f"{key} {where}")
    return values


def label_confidence_policy(sources: SettingsSources) -> LabelConfidencePolicy:
    """The ladder's policy from explicit configuration: ``SEDIMENT_LABEL_CONFIDENCE_<SETTING>``
    variables over the ``[label-confidence]`` table of the ``--config`` file over the defaults.

    Settings are :data:`LABEL_CONFIDENCE_SETTINGS` (``clean_reliability``,
    ``suspected_flake_reliability`` and ``non_verdict_reliability`` set the policy's CI
    resolution). A variable's value is a decimal number (``0.5``, ``1``, ``2e-1``; not
    ``nan``, ``inf`` or ``0x1``); blank counts as unset; a variable with the prefix that names
    no setting, a value out of range and a table key that is not a setting are errors: one
    :class:`~sediment.errors.ConfigurationError` line naming the variable or the table.
    """
    values = _from_section(sources.sections.get(LABEL_CONFIDENCE_SECTION, {}), sources.config_path)
    values.update(_from_environment(sources.environ))
    knobs: dict[str, Any] = {}
    reliabilities: dict[str, float] = {}
    for name, (number, source) in values.items():
        try:
            if name in _UNIT_KNOBS:
                knobs[name] = _check_unit("LabelConfidencePolicy", name, number)
            elif name in _MULTIPLIER_KNOBS:
                knobs[name] = _check_multiplier("LabelConfidencePolicy", name, number)
            else:
                reliabilities[name] = _check_unit("LabelConfidencePolicy.ci_resolution", name, number)
        except ValueError as exc:
            raise ConfigurationError(f"{source}: {exc}") from None
    if reliabilities:
        knobs["ci_resolution"] = CIResolutionPolicy(**{**DEFAULT_CI_POLICY.model_dump(), **reliabilities})
    return LabelConfidencePolicy(**knobs)
