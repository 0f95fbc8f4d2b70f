"""The Confidence ladder (sediment.derive.confidence): knobs and their validation, the decision branch,
the product, the edge cases and every reference value docs/confidence.md gives, read from
real DeveloperDecision Facts and CI resolutions of recorded CIOutcome Facts; label and pair
confidence; settings from SEDIMENT_LABEL_CONFIDENCE_* and ``[label-confidence]``;
the versions stamped into TrainingProvenance; determinism and hypothesis properties."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sediment.ci.resolution import DEFAULT_CI_POLICY, CIResolution, CIResolutionPolicy, resolve_ci
from sediment.derive.confidence import (
    DECISION_BRANCHES,
    LABEL_CONFIDENCE_SETTINGS,
    ConfidenceBreakdown,
    ConfidenceEvidence,
    ConfidenceStep,
    LabelConfidencePolicy,
    decision_branch,
    label_confidence,
    label_confidence_policy,
    pair_confidence,
)
from sediment.errors import ConfigurationError
from sediment.evidence.trainer_messages import TRAINER_MESSAGES_VERSION, TrainingProvenance
from sediment.model.facts import DeveloperDecision
from sediment.model.policy import Provenance
from sediment.records import plain
from sediment.settings import SettingsSources
from sediment.testing import ORG, T0, outcome
from sediment.validation import SchemaSet, core_schemas

SHA = "0123456789abcdef0123456789abcdef01234567"
POLICY = LabelConfidencePolicy()
_ids = itertools.count()


def decision(accepted: bool, explicit: bool, harness: str = "claude-code",
             score: float | None = None) -> DeveloperDecision:
    n = next(_ids)
    return DeveloperDecision(
        decision_id=f"d-{n}", org_id=ORG, session_id="s1", agent_harness=harness, file_path="calc.py",
        accepted=accepted, explicit=explicit, interaction_mode="agent", call_id="call-1",
        edit_retention_score=score, occurred_at=T0 + timedelta(seconds=n), captured_at=T0,
    )


def resolution(*results: str, policy: CIResolutionPolicy = DEFAULT_CI_POLICY) -> CIResolution:
    """The resolution of one run's attempts (in order) on SHA, by the real CI resolver."""
    outcomes = [outcome(f"o-{i}", SHA, r, attempt=i + 1, minutes=i) for i, r in enumerate(results)]
    (found,) = resolve_ci(outcomes, quarantine_revision=0, policy=policy).resolutions
    return found


def evidence(*decisions: DeveloperDecision, ci: Sequence[str] = (), abandoned: bool = False,
             jaccard: float | None = None) -> ConfidenceEvidence:
    return ConfidenceEvidence(
        decisions=decisions, abandoned=abandoned, has_ci_outcomes=bool(ci),
        ci_resolution=resolution(*ci) if ci else None,
        attribution_source=None if abandoned else ("jaccard" if jaccard is not None else "git_notes"),
        similarity_score=jaccard if jaccard is not None else (None if abandoned else 1.0),
    )


EXPLICIT_ACCEPT = decision(True, True)
EXPLICIT_REJECT = decision(False, True)
IMPLICIT_ACCEPT = decision(True, False)
IMPLICIT_REJECT = decision(False, False)
CODEX_ACCEPT = decision(True, False, "codex")


# --- knobs -----------------------------------------------------------------------------------


def test_defaults_are_policy_version_4s() -> None:
    assert POLICY.policy_version == "4"
    assert POLICY.resolved() == {
        "explicit_accept_confidence": 1.0, "explicit_reject_confidence": 0.0, "baseline_confidence": 0.6,
        "implicit_accept_multiplier": 1.1, "implicit_reject_multiplier": 0.9, "ci_pass_multiplier": 1.1,
        "ci_fail_multiplier": 0.7,
        "ci_resolution": {"clean_reliability": 1.0, "suspected_flake_reliability": 0.0,
                          "non_verdict_reliability": 1.0, "policy_version": "2"},
        "policy_version": "4",
    }
    assert POLICY.ci_resolution == CIResolutionPolicy()
    assert LabelConfidencePolicy(baseline_confidence=1).baseline_confidence == 1.0  # an int is a number
    assert type(LabelConfidencePolicy(ci_fail_multiplier=0).ci_fail_multiplier) is float


@pytest.mark.parametrize("name", ["explicit_accept_confidence", "explicit_reject_confidence", "baseline_confidence"])
@pytest.mark.parametrize("value", [1.5, -0.1, math.nan, math.inf, 2])
def test_confidence_knobs_must_be_in_the_unit_interval(name: str, value: float) -> None:
    with pytest.raises(ValueError) as raised:
        LabelConfidencePolicy(**{name: value})
    assert str(raised.value) == f"LabelConfidencePolicy.{name} must be in [0.0, 1.0] (got {value!r})"


@pytest.mark.parametrize("name", ["implicit_accept_multiplier", "implicit_reject_multiplier", "ci_pass_multiplier",
                                  "ci_fail_multiplier"])
def test_multipliers_must_be_finite_and_not_negative(name: str) -> None:
    for value in (-0.1, -math.inf, math.nan):
        with pytest.raises(ValueError) as raised:
            LabelConfidencePolicy(**{name: value})
        assert str(raised.value) == f"LabelConfidencePolicy.{name} must be >= 0.0 (got {value!r})"
    with pytest.raises(ValueError) as raised:
        LabelConfidencePolicy(**{name: math.inf})
    assert str(raised.value) == f"LabelConfidencePolicy.{name} must be finite (got inf)"
    assert getattr(LabelConfidencePolicy(**{name: 0.0}), name) == 0.0
    assert getattr(LabelConfidencePolicy(**{name: 25}), name) == 25.0


@pytest.mark.parametrize("value", [True, "0.5", None])
def test_knobs_must_be_real_numbers(value: Any) -> None:
    with pytest.raises(TypeError, match=r"^LabelConfidencePolicy.baseline_confidence must be a real number"):
        LabelConfidencePolicy(baseline_confidence=value)
    with pytest.raises(TypeError, match=r"^LabelConfidencePolicy.ci_pass_multiplier must be a real number"):
        LabelConfidencePolicy(ci_pass_multiplier=value)
    with pytest.raises(TypeError, match=r"^LabelConfidencePolicy.ci_resolution must be a CIResolutionPolicy"):
        LabelConfidencePolicy(ci_resolution=value)


def test_the_digest_follows_every_knob() -> None:
    digests = {POLICY.digest, LabelConfidencePolicy().digest}
    assert len(digests) == 1
    variants = [LabelConfidencePolicy(**{f.name: 0.5}) for f in dataclasses.fields(POLICY) if f.name != "ci_resolution"]
    variants.append(LabelConfidencePolicy(ci_resolution=CIResolutionPolicy(suspected_flake_reliability=0.5)))
    assert len({POLICY.digest, *(v.digest for v in variants)}) == len(variants) + 1


# --- the decision branch ------------------------------------------------------------------------


@pytest.mark.parametrize(("decisions", "abandoned", "branch"), [
    ((), True, "abandoned"),
    ((EXPLICIT_ACCEPT,), True, "abandoned"),
    ((), False, "no_decision"),
    ((EXPLICIT_ACCEPT, EXPLICIT_REJECT), False, "explicit_reject"),       # reject wins
    ((EXPLICIT_REJECT, IMPLICIT_ACCEPT), False, "explicit_reject"),
    ((EXPLICIT_ACCEPT, IMPLICIT_REJECT), False, "explicit_accept"),       # any explicit decision first
    ((decision(True, True, "codex"),), False, "explicit_accept"),
    ((IMPLICIT_ACCEPT, IMPLICIT_REJECT), False, "implicit_reject"),       # reject wins at this tier too
    ((CODEX_ACCEPT, decision(False, False, "codex")), False, "implicit_reject"),
    ((CODEX_ACCEPT, decision(True, False, "codex", 0.2)), False, "implicit_accept_codex_neutral"),
    ((CODEX_ACCEPT, IMPLICIT_ACCEPT), False, "implicit_accept"),
    ((IMPLICIT_ACCEPT,), False, "implicit_accept"),
])
def test_the_first_matching_branch_decides(decisions: tuple[DeveloperDecision, ...], abandoned: bool,
                                           branch: str) -> None:
    assert decision_branch(evidence(*decisions, abandoned=abandoned)) == branch
    assert branch in DECISION_BRANCHES


def test_branches_are_tested_in_contract_order() -> None:
    assert DECISION_BRANCHES == ("abandoned", "no_decision", "explicit_reject", "explicit_accept",
                                 "implicit_reject", "implicit_accept_codex_neutral", "implicit_accept")


def test_retention_interpolates_between_the_implicit_multipliers_with_the_lowest_score() -> None:
    def factor(*scores: float | None) -> float:
        return POLICY.decision_factor(evidence(*(decision(True, False, score=s) for s in scores)))

    assert factor(None) == pytest.approx(0.66)
    assert factor(1.0) == pytest.approx(0.66)
    assert factor(0.0) == pytest.approx(0.54)
    assert factor(0.5) == pytest.approx(0.6)
    assert factor(0.9, None, 0.8) == pytest.approx(0.636)  # the minimum of the scores present
    # lerp is not clamped: inverted multipliers invert the interpolation.
    inverted = LabelConfidencePolicy(implicit_accept_multiplier=0.5, implicit_reject_multiplier=1.5)
    assert inverted.decision_factor(evidence(decision(True, False, score=0.25))) == pytest.approx(0.6 * 1.25)
    # Codex decisions are neutral even with a score; a rejected decision's score is never read.
    assert POLICY.decision_factor(evidence(decision(True, False, "codex", 0.0))) == 0.6
    assert POLICY.decision_factor(evidence(decision(False, False, score=1.0))) == pytest.approx(0.54)


# --- the reference values (git_notes, clean CI) ---------------------------------------------------

REFERENCE = [
    ("explicit accept", evidence(EXPLICIT_ACCEPT), 1.0),
    ("explicit accept + pass (1.1 clamped)", evidence(EXPLICIT_ACCEPT, ci=["passed"]), 1.0),
    ("explicit accept + fail", evidence(EXPLICIT_ACCEPT, ci=["failed"]), 0.7),
    ("implicit accept", evidence(IMPLICIT_ACCEPT), 0.66),
    ("implicit accept + pass", evidence(IMPLICIT_ACCEPT, ci=["passed"]), 0.726),
    ("implicit accept, retention 0.8", evidence(decision(True, False, score=0.8)), 0.636),
    ("implicit reject", evidence(IMPLICIT_REJECT), 0.54),
    ("implicit reject + pass", evidence(IMPLICIT_REJECT, ci=["passed"]), 0.594),
    ("codex implicit accept", evidence(CODEX_ACCEPT), 0.6),
    ("no decision + pass", evidence(ci=["passed"]), 0.66),
    ("no decision + fail", evidence(ci=["failed"]), 0.42),
    ("suspected flake (fail then pass)", evidence(EXPLICIT_ACCEPT, ci=["failed", "passed"]), 0.0),
    ("suspected flake (pass then fail)", evidence(ci=["passed", "failed"]), 0.0),
    ("explicit reject", evidence(EXPLICIT_REJECT), 0.0),
    ("explicit reject + pass", evidence(EXPLICIT_REJECT, ci=["passed"]), 0.0),
    ("cancelled-only CI, no decision", evidence(ci=["cancelled"]), 0.6),
    ("abandoned with its explicit accept", evidence(EXPLICIT_ACCEPT, abandoned=True), 0.0),
]


@pytest.mark.parametrize(("case", "expected"), [(r[1], r[2]) for r in REFERENCE], ids=[r[0] for r in REFERENCE])
def test_reference_values(case: ConfidenceEvidence, expected: float) -> None:
    assert POLICY.confidence(case) == pytest.approx(expected, abs=1e-12)


def test_values_multiply_left_to_right_as_upstream_writes_them() -> None:
    # The exact floats a row carries: decision × ci × reliability × similarity, in that order.
    assert repr(POLICY.confidence(evidence(IMPLICIT_ACCEPT))) == "0.66"
    assert repr(POLICY.confidence(evidence(IMPLICIT_ACCEPT, ci=["passed"]))) == "0.7260000000000001"
    assert repr(POLICY.confidence(evidence(decision(True, False, score=0.8)))) == "0.636"
    assert repr(POLICY.confidence(evidence(ci=["failed"]))) == "0.42"
    assert repr(POLICY.confidence(evidence(IMPLICIT_REJECT, ci=["passed"], jaccard=0.9))) == "0.5346000000000001"


def test_the_breakdown_keeps_the_unclamped_factors() -> None:
    assert POLICY.breakdown(evidence(EXPLICIT_ACCEPT, ci=["passed"])) == ConfidenceBreakdown(
        decision_factor=1.0, ci_factor=1.1, ci_reliability=1.0, similarity_discount=1.0, final=1.0)
    flaky = POLICY.breakdown(evidence(IMPLICIT_ACCEPT, ci=["failed", "passed"], jaccard=0.8))
    assert flaky is not None
    assert (flaky.ci_factor, flaky.ci_reliability, flaky.similarity_discount, flaky.final) == (1.1, 0.0, 0.8, 0.0)
    assert flaky.decision_factor == pytest.approx(0.66)
    generous = LabelConfidencePolicy(ci_pass_multiplier=3.0).breakdown(evidence(ci=["passed"]))
    assert generous is not None and generous.final == 1.0
    assert generous.decision_factor * generous.ci_factor == pytest.approx(1.8)


def test_jaccard_discounts_and_git_notes_does_not() -> None:
    assert POLICY.confidence(evidence(EXPLICIT_ACCEPT, jaccard=0.75)) == 0.75
    notes = ConfidenceEvidence(decisions=(EXPLICIT_ACCEPT,), attribution_source="git_notes", similarity_score=0.3)
    assert POLICY.confidence(notes) == 1.0


# --- edge cases ------------------------------------------------------------------------------------


def test_no_signal_is_none_and_any_signal_is_a_number() -> None:
    assert POLICY.confidence(ConfidenceEvidence()) is None
    assert POLICY.breakdown(evidence()) is None
    # CI outcomes that resolve to nothing still give the baseline.
    assert POLICY.confidence(ConfidenceEvidence(has_ci_outcomes=True)) == 0.6
    # An abandonment without decisions falls back to the baseline (unreachable by construction).
    assert POLICY.confidence(ConfidenceEvidence(abandoned=True)) == 0.6
    assert decision_branch(ConfidenceEvidence(abandoned=True)) == "abandoned"


def test_malformed_evidence_is_refused() -> None:
    with pytest.raises(ValueError, match="has_ci_outcomes"):
        ConfidenceEvidence(ci_resolution=resolution("passed"))
    with pytest.raises(TypeError, match="similarity_score must be a real number"):
        ConfidenceEvidence(attribution_source="jaccard")
    with pytest.raises(ValueError, match=r"similarity_score must be in \[0.0, 1.0\] \(got nan\)"):
        ConfidenceEvidence(attribution_source="jaccard", similarity_score=math.nan)
    with pytest.raises(ValueError, match="unknown attribution_source"):
        ConfidenceEvidence(attribution_source="notes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"DeveloperDecision.edit_retention_score must be in \[0.0, 1.0\]"):
        ConfidenceEvidence(decisions=(Decision(True, False, "cursor", 1.5),))  # a reader beyond the Fact's range


# --- label and pair confidence ----------------------------------------------------------------------


def test_a_rejected_label_is_as_sure_as_the_response_is_bad() -> None:
    assert label_confidence(0.9, "chosen") == 0.9
    assert label_confidence(0.0, "rejected") == 1.0
    assert label_confidence(0.42, "rejected") == pytest.approx(0.58)
    assert label_confidence(None, "rejected") is None
    with pytest.raises(ValueError, match="label must be"):
        label_confidence(0.5, "good")  # type: ignore[arg-type]


def test_pair_confidence_for_the_two_dpo_recipes() -> None:
    human = pair_confidence(POLICY.confidence(evidence(EXPLICIT_ACCEPT)) or 0.0,
                            POLICY.confidence(evidence(EXPLICIT_REJECT)) or 0.0)
    assert (human.label_confidence, human.upstream_label_confidence, human.confidence_margin) == (1.0, 0.0, 1.0)
    outcome_pair = pair_confidence(POLICY.confidence(evidence(ci=["passed"])) or 0.0,
                                   POLICY.confidence(evidence(ci=["failed"])) or 0.0)
    assert outcome_pair.label_confidence == pytest.approx(0.58)
    assert outcome_pair.upstream_label_confidence == pytest.approx(0.42)
    assert outcome_pair.confidence_margin == pytest.approx(0.24)
    with pytest.raises(ValueError, match=r"pair_confidence.rejected must be in \[0.0, 1.0\]"):
        pair_confidence(0.5, 1.2)


# --- settings -----------------------------------------------------------------------------------------


def env(**values: str) -> dict[str, str]:
    return {f"SEDIMENT_LABEL_CONFIDENCE_{k.upper()}": v for k, v in values.items()}


def load(environ: dict[str, str], config: str | None = None, tmp_path: Path | None = None) -> LabelConfidencePolicy:
    path = None
    if config is not None:
        assert tmp_path is not None
        path = tmp_path / "sediment.toml"
        path.write_text(config, encoding="utf-8")
    return label_confidence_policy(SettingsSources.load(config_file=path, environ=environ))


def test_settings_default_to_the_policy_defaults() -> None:
    assert load({}) == POLICY
    assert load({"SEDIMENT_LABEL_CONFIDENCE_BASELINE_CONFIDENCE": "  ", "SEDIMENT_ORG_ID": "acme"}) == POLICY
    assert label_confidence_policy(SettingsSources.empty()) == POLICY


def test_every_setting_has_its_variable() -> None:
    values = {name: f"0.{i + 1}" for i, name in enumerate(LABEL_CONFIDENCE_SETTINGS)}
    policy = load(env(**values))
    assert policy.resolved() == {
        "explicit_accept_confidence": 0.1, "explicit_reject_confidence": 0.2, "baseline_confidence": 0.3,
        "implicit_accept_multiplier": 0.4, "implicit_reject_multiplier": 0.5, "ci_pass_multiplier": 0.6,
        "ci_fail_multiplier": 0.7,
        "ci_resolution": {"clean_reliability": 0.8, "suspected_flake_reliability": 0.9,
                          "non_verdict_reliability": 0.1, "policy_version": "2"},
        "policy_version": "4",
    }
    assert policy.digest != POLICY.digest


@pytest.mark.parametrize(("raw", "number"), [("0.5", 0.5), (" 1 ", 1.0), ("+.25", 0.25), ("2e-1", 0.2),
                                             ("0.", 0.0), ("5E-1", 0.5)])
def test_decimal_values_are_read(raw: str, number: float) -> None:
    assert load(env(baseline_confidence=raw)).baseline_confidence == number


@pytest.mark.parametrize("raw", ["abc", "nan", "NaN", "inf", "-Infinity", "0x1", "1_0", "1,5", "0.5.1", "true",
                                 "½", "٠.5"])
def test_a_value_that_is_not_a_decimal_number_is_one_line_naming_the_variable(raw: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        load(env(ci_pass_multiplier=raw))
    assert str(raised.value) == f"SEDIMENT_LABEL_CONFIDENCE_CI_PASS_MULTIPLIER must be a decimal number, got {raw!r}"


@pytest.mark.parametrize(("setting", "raw", "message"), [
    ("baseline_confidence", "1.5",
     "SEDIMENT_LABEL_CONFIDENCE_BASELINE_CONFIDENCE: LabelConfidencePolicy.baseline_confidence must be in "
     "[0.0, 1.0] (got 1.5)"),
    ("ci_fail_multiplier", "-0.1",
     "SEDIMENT_LABEL_CONFIDENCE_CI_FAIL_MULTIPLIER: LabelConfidencePolicy.ci_fail_multiplier must be >= 0.0 "
     "(got -0.1)"),
    ("implicit_accept_multiplier", "1e400",
     "SEDIMENT_LABEL_CONFIDENCE_IMPLICIT_ACCEPT_MULTIPLIER: LabelConfidencePolicy.implicit_accept_multiplier "
     "must be finite (got inf)"),
    ("suspected_flake_reliability", "2",
     "SEDIMENT_LABEL_CONFIDENCE_SUSPECTED_FLAKE_RELIABILITY: LabelConfidencePolicy.ci_resolution."
     "suspected_flake_reliability must be in [0.0, 1.0] (got 2.0)"),
])
def test_a_value_out_of_range_is_one_line_naming_the_variable(setting: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        load(env(**{setting: raw}))
    assert str(raised.value) == message


def test_a_misspelt_variable_is_refused_not_ignored() -> None:
    with pytest.raises(ConfigurationError) as raised:
        load({"SEDIMENT_LABEL_CONFIDENCE_BASELINE": "0.5"})
    message = str(raised.value)
    assert message.startswith("SEDIMENT_LABEL_CONFIDENCE_BASELINE is not a label confidence setting; the variables "
                              "are SEDIMENT_LABEL_CONFIDENCE_EXPLICIT_ACCEPT_CONFIDENCE, ")
    assert "\n" not in message


def test_the_config_table_sets_knobs_and_the_environment_wins(tmp_path: Path) -> None:
    config = "[label-confidence]\nbaseline_confidence = 0.5\nci_pass_multiplier = 2\nclean_reliability = 0.9\n"
    from_file = load({}, config, tmp_path)
    assert (from_file.baseline_confidence, from_file.ci_pass_multiplier) == (0.5, 2.0)
    assert from_file.ci_resolution.clean_reliability == 0.9
    both = load(env(baseline_confidence="0.4"), config, tmp_path)
    assert (both.baseline_confidence, both.ci_pass_multiplier) == (0.4, 2.0)
    # Plugin tables sit beside it in the same file.
    assert load({}, '[plugins.openenv]\nimage = "x"\n' + config, tmp_path) == from_file


@pytest.mark.parametrize(("config", "message"), [
    ("[label-confidence]\nbaseline = 0.5\n", "[label-confidence] in {path}: unknown setting 'baseline'; the settings "
     "are explicit_accept_confidence, explicit_reject_confidence, baseline_confidence, implicit_accept_multiplier, "
     "implicit_reject_multiplier, ci_pass_multiplier, ci_fail_multiplier, clean_reliability, "
     "suspected_flake_reliability, non_verdict_reliability"),
    ("[label-confidence]\nbaseline_confidence = true\n",
     "[label-confidence] in {path}: baseline_confidence must be a number, got True"),
    ('[label-confidence]\nbaseline_confidence = "0.5"\n',
     "[label-confidence] in {path}: baseline_confidence must be a number, got '0.5'"),
    ("[label-confidence]\nbaseline_confidence = 1.5\n",
     "baseline_confidence [label-confidence] in {path}: LabelConfidencePolicy.baseline_confidence must be in "
     "[0.0, 1.0] (got 1.5)"),
    ("label-confidence = 1\n", "{path}: label-confidence must be a table ([label-confidence])"),
    ("[confidence]\nx = 1\n", "{path}: unknown top-level table(s) ['confidence']; plugin settings go in "
     "[plugins.NAME], core settings in [label-confidence]"),
])
def test_config_table_problems_are_one_line(tmp_path: Path, config: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        load({}, config, tmp_path)
    assert str(raised.value) == message.format(path=tmp_path / "sediment.toml")


# --- provenance -----------------------------------------------------------------------------------------


def test_training_provenance_stamps_both_policy_versions() -> None:
    base = Provenance(policy_version="5", quarantine_revision=3, policy_digest="a" * 64)
    stamped = TrainingProvenance.of(base, POLICY)
    assert plain(stamped) == {
        "policy_version": "5", "quarantine_revision": 3, "policy_digest": "a" * 64,
        "label_confidence_policy_version": "4", "label_confidence_policy_digest": POLICY.digest,
        "trainer_messages_version": TRAINER_MESSAGES_VERSION,
    }
    other = TrainingProvenance.of(base, LabelConfidencePolicy(baseline_confidence=0.5))
    assert other.label_confidence_policy_digest != stamped.label_confidence_policy_digest
    schema_id = "https://sediment.so/schemas/training-rows/training-provenance/v1.json"
    schemas = SchemaSet(core_schemas())
    assert schemas.errors(plain(stamped), schema_id) == []
    assert schemas.errors(plain(TrainingProvenance.of(Provenance(policy_version="5", quarantine_revision=0), POLICY)),
                          schema_id) == []
    assert schemas.errors(plain(base), schema_id)  # plain Provenance lacks the policy versions
    # RLVR's Provenance is unchanged: three keys.
    assert list(Provenance.model_fields) == ["policy_version", "quarantine_revision", "policy_digest"]


# --- determinism -------------------------------------------------------------------------------------------


def test_decision_order_never_changes_the_result() -> None:
    pool = [EXPLICIT_ACCEPT, IMPLICIT_ACCEPT, decision(True, False, score=0.3), decision(True, False, score=0.7),
            CODEX_ACCEPT, IMPLICIT_REJECT, EXPLICIT_REJECT]
    rng = random.Random(7)
    for size in range(len(pool) + 1):
        for chosen in itertools.combinations(pool, size):
            expected = POLICY.breakdown(evidence(*chosen, ci=["passed"]))
            shuffled = list(chosen)
            rng.shuffle(shuffled)
            assert POLICY.breakdown(evidence(*shuffled, ci=["passed"])) == expected
            assert POLICY.breakdown(evidence(*chosen, ci=["passed"])) == expected


# --- properties ----------------------------------------------------------------------------------------------

_unit = st.floats(0.0, 1.0)
_multiplier = st.floats(0.0, 10.0)
_policies = st.builds(
    LabelConfidencePolicy,
    explicit_accept_confidence=_unit, explicit_reject_confidence=_unit, baseline_confidence=_unit,
    implicit_accept_multiplier=_multiplier, implicit_reject_multiplier=_multiplier,
    ci_pass_multiplier=_multiplier, ci_fail_multiplier=_multiplier,
    ci_resolution=st.builds(CIResolutionPolicy, clean_reliability=_unit, suspected_flake_reliability=_unit,
                            non_verdict_reliability=_unit),
)


@dataclasses.dataclass(frozen=True)
class Decision:
    """A protocol reader of a decision (what the ladder reads, nothing more)."""

    accepted: bool
    explicit: bool
    agent_harness: str
    edit_retention_score: float | None


@dataclasses.dataclass(frozen=True)
class Resolution:
    verdict: Any
    reliability: float | None


_decisions = st.builds(Decision, st.booleans(), st.booleans(), st.sampled_from(["codex", "claude-code", "cursor"]),
                       st.none() | _unit)
_resolutions = st.none() | st.builds(Resolution, st.sampled_from(["passed", "failed"]), _unit) | st.just(
    Resolution(None, None))


@st.composite
def _evidence(draw: st.DrawFn) -> ConfidenceEvidence:
    resolution_ = draw(_resolutions)
    abandoned = draw(st.booleans())
    source = None if abandoned else draw(st.sampled_from(["git_notes", "jaccard"]))
    return ConfidenceEvidence(
        decisions=draw(st.lists(_decisions, max_size=4)), abandoned=abandoned,
        has_ci_outcomes=resolution_ is not None or draw(st.booleans()), ci_resolution=resolution_,
        attribution_source=source, similarity_score=draw(_unit) if source else None,
    )


@settings(max_examples=500, deadline=None)
@given(policy=_policies, case=_evidence())
def test_confidence_is_in_the_unit_interval_or_none_without_signal(policy: LabelConfidencePolicy,
                                                                   case: ConfidenceEvidence) -> None:
    value = policy.confidence(case)
    no_signal = not case.abandoned and not case.decisions and not case.has_ci_outcomes
    assert (value is None) == no_signal
    if value is not None:
        assert 0.0 <= value <= 1.0
        assert label_confidence(value, "rejected") is not None
        assert 0.0 <= (label_confidence(value, "rejected") or 0.0) <= 1.0


@settings(max_examples=300, deadline=None)
@given(policy=_policies, case=_evidence(), data=st.data())
def test_raising_any_knob_never_lowers_the_confidence(policy: LabelConfidencePolicy, case: ConfidenceEvidence,
                                                      data: st.DataObject) -> None:
    name = data.draw(st.sampled_from([f.name for f in dataclasses.fields(policy) if f.name != "ci_resolution"]))
    current = getattr(policy, name)
    upper = 1.0 if name.endswith("_confidence") else 10.0
    raised = dataclasses.replace(policy, **{name: data.draw(st.floats(current, upper))})
    before, after = policy.confidence(case), raised.confidence(case)
    if before is None:
        assert after is None
    else:
        assert after is not None and after >= before - 1e-12


@settings(max_examples=300, deadline=None)
@given(policy=_policies, case=_evidence(), data=st.data())
def test_more_similarity_or_reliability_never_lowers_the_confidence(policy: LabelConfidencePolicy,
                                                                    case: ConfidenceEvidence,
                                                                    data: st.DataObject) -> None:
    before = policy.confidence(case)
    if case.attribution_source == "jaccard":
        more = dataclasses.replace(case, similarity_score=data.draw(st.floats(case.similarity_score or 0.0, 1.0)))
        assert (policy.confidence(more) or 0.0) >= (before or 0.0)
    resolution_ = case.ci_resolution
    if resolution_ is not None and resolution_.verdict is not None:
        reliable = Resolution(resolution_.verdict, data.draw(st.floats(resolution_.reliability or 0.0, 1.0)))
        assert (policy.confidence(dataclasses.replace(case, ci_resolution=reliable)) or 0.0) >= (before or 0.0)


@settings(max_examples=300, deadline=None)
@given(policy=_policies, scores=st.lists(_unit, min_size=1, max_size=3), data=st.data())
def test_better_retention_never_lowers_an_implicit_accept(policy: LabelConfidencePolicy, scores: list[float],
                                                          data: st.DataObject) -> None:
    if policy.implicit_accept_multiplier < policy.implicit_reject_multiplier:
        policy = dataclasses.replace(policy, implicit_accept_multiplier=policy.implicit_reject_multiplier)
    lower = [Decision(True, False, "cursor", s) for s in scores]
    higher = [Decision(True, False, "cursor", data.draw(st.floats(s, 1.0))) for s in scores]
    assert policy.confidence(ConfidenceEvidence(decisions=higher)) >= policy.confidence(  # type: ignore[operator]
        ConfidenceEvidence(decisions=lower))


@settings(max_examples=300, deadline=None)
@given(policy=_policies, case=_evidence(), data=st.data())
def test_an_explicit_reject_always_wins_over_other_decisions(policy: LabelConfidencePolicy,
                                                             case: ConfidenceEvidence, data: st.DataObject) -> None:
    assume(not case.abandoned)  # an abandoned session has no decision branch (tested on its own)
    reject = Decision(False, True, data.draw(st.sampled_from(["codex", "cursor"])), None)
    decisions = list(case.decisions)
    decisions.insert(data.draw(st.integers(0, len(decisions))), reject)
    with_reject = dataclasses.replace(case, decisions=decisions)
    assert decision_branch(with_reject) == "explicit_reject"
    assert policy.confidence(with_reject) == policy.confidence(dataclasses.replace(case, decisions=[reject]))


@settings(max_examples=300, deadline=None)
@given(chosen=_unit, rejected=_unit)
def test_pair_confidence_properties(chosen: float, rejected: float) -> None:
    pair = pair_confidence(chosen, rejected)
    assert pair.label_confidence == min(label_confidence(chosen, "chosen") or 0.0,
                                        label_confidence(rejected, "rejected") or 0.0)
    assert pair.upstream_label_confidence == min(chosen, rejected)
    assert 0.0 <= pair.label_confidence <= 1.0
    assert -1.0 <= pair.confidence_margin <= 1.0
    assert pair.confidence_margin == chosen - rejected


def test_the_docs_name_every_setting_and_the_reference_values() -> None:
    text = (Path(__file__).parents[1] / "docs" / "confidence.md").read_text(encoding="utf-8")
    for name in LABEL_CONFIDENCE_SETTINGS:
        assert f"`SEDIMENT_LABEL_CONFIDENCE_{name.upper()}`" in text, name
    for value in ("0.66", "0.726", "0.636", "0.54", "0.594", "0.42"):
        assert f" {value}" in text


# --- steps: the ladder replayed rung by rung (sediment explain) ------------------------------


@pytest.mark.parametrize("found", [
    evidence(EXPLICIT_ACCEPT, ci=["passed"]),
    evidence(EXPLICIT_REJECT, ci=["failed"]),
    evidence(IMPLICIT_REJECT),
    evidence(CODEX_ACCEPT, ci=["failed", "passed"]),
    evidence(decision(True, False, score=0.25), decision(True, False, score=0.75), jaccard=0.5),
    evidence(IMPLICIT_ACCEPT),
    evidence(ci=["passed"]),
    evidence(EXPLICIT_ACCEPT, abandoned=True),
])
def test_steps_replay_every_rung_and_end_at_the_confidence(found: ConfidenceEvidence) -> None:
    steps = POLICY.steps(found)
    breakdown = POLICY.breakdown(found)
    assert breakdown is not None
    assert [s.rung for s in steps] == ["decision", "ci", "reliability", "similarity", "final"]
    assert [s.value for s in steps] == [breakdown.decision_factor, breakdown.ci_factor, breakdown.ci_reliability,
                                        breakdown.similarity_discount, breakdown.final]
    assert steps[0].rule == decision_branch(found)
    assert steps[-1].value == POLICY.confidence(found)
    assert POLICY.steps(found) == steps  # repeat


def test_steps_name_the_knobs_and_evidence_they_read() -> None:
    policy = LabelConfidencePolicy(baseline_confidence=0.5)
    found = evidence(decision(True, False, score=0.5), ci=["failed", "passed"], jaccard=0.8)
    decision_step, ci, reliability, similarity, final = policy.steps(found)
    assert isinstance(decision_step, ConfidenceStep) and decision_step.rule == "implicit_accept"
    assert decision_step.inputs == {"decisions": 1, "explicit": 0, "accepted": 1, "baseline_confidence": 0.5,
                                    "implicit_accept_multiplier": 1.1, "implicit_reject_multiplier": 0.9,
                                    "min_edit_retention": 0.5}
    assert decision_step.value == pytest.approx(0.5 * (0.9 + (1.1 - 0.9) * 0.5))
    assert (ci.rule, ci.inputs, ci.value) == ("passed", {"verdict": "passed", "ci_pass_multiplier": 1.1}, 1.1)
    assert (reliability.rule, reliability.value) == ("resolution", 0.0)  # a flaky pass: suspected flake
    assert (similarity.rule, similarity.inputs, similarity.value) == ("jaccard", {"similarity_score": 0.8}, 0.8)
    assert final.rule == "clamp" and final.value == 0.0


def test_no_signal_has_no_steps() -> None:
    assert POLICY.steps(evidence()) == ()
    assert POLICY.confidence(evidence()) is None
