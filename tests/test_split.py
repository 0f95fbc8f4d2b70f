"""Session-grained eval split and the derivation policy (docs/exports.md, docs/bundle.md)."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from sediment.errors import ConfigurationError
from sediment.model.policy import DerivationPolicy, SplitPolicy, policy_digest
from sediment.split import assign_split, split_score, validate_eval_fraction

DEFAULT_POLICY_DIGEST = "dd6ddc485bcd1dfcdc4e70edea79f71fc5413c984642b1188d3d9087b33fd2d0"
DEFAULT_POLICY_DICT = {
    "attribution": {
        "git_notes": {"lookback_window_minutes": 10080, "min_similarity": 0.3},
        "jaccard": {"lookback_window_minutes": 60, "min_similarity": 0.7},
        "max_commits_per_push": 20,
        "post_push_grace_period_minutes": 10,
    },
    "schema_version": 1,
    "split": {"eval_fraction": 0.1},
}
DEFAULT_POLICY_TOML = """\
schema_version = 1

[attribution]
post_push_grace_period_minutes = 10
max_commits_per_push = 20

[attribution.git_notes]
min_similarity = 0.3
lookback_window_minutes = 10080

[attribution.jaccard]
min_similarity = 0.7
lookback_window_minutes = 60

[split]
eval_fraction = 0.1
"""

SESSION_IDS = [f"session-{i:04d}" for i in range(1000)]


def reference_score(session_id: str) -> float:
    """The contract formula, computed independently of the library."""
    digest = hashlib.sha256(session_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def write_policy(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


# --- score ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("session_id", "expected"),
    [("s1", 0.90912), ("sess-1", 0.67148), ("session-0000", 0.49435), ("", 0.88942)],
)
def test_contract_check_values(session_id: str, expected: float) -> None:
    assert round(split_score(session_id), 5) == expected
    assert assign_split(session_id, 0.1) == "train"


@pytest.mark.parametrize("session_id", ["s1", "", "sess-ü-日本", "🙂", "a" * 1000, *SESSION_IDS[:50]])
def test_score_is_first_eight_sha256_bytes_big_endian_over_two_to_the_64(session_id: str) -> None:
    score = split_score(session_id)
    assert score == reference_score(session_id)
    assert 0.0 <= score < 1.0


def test_score_is_a_pure_function_of_the_session_id() -> None:
    assert [split_score(s) for s in SESSION_IDS[:20]] == [split_score(s) for s in SESSION_IDS[:20]]
    assert split_score("s1") != split_score("s2")


def test_eval_iff_score_strictly_below_fraction() -> None:
    score = split_score("session-0000")  # ≈ 0.49435, inside the allowed range
    assert assign_split("session-0000", score) == "train"
    assert assign_split("session-0000", 0.5) == "eval"
    assert assign_split("session-0000", 0.49) == "train"
    for session_id in SESSION_IDS[:200]:
        expected = "eval" if reference_score(session_id) < 0.3 else "train"
        assert assign_split(session_id, 0.3) == expected


# --- holdout properties --------------------------------------------------------------


def test_zero_fraction_puts_everything_in_train() -> None:
    assert {assign_split(s, 0.0) for s in SESSION_IDS} == {"train"}
    assert assign_split("", 0.0) == "train"


def test_holdouts_are_nested_as_the_fraction_grows() -> None:
    fractions = [0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.45, 0.5]
    eval_sets = [{s for s in SESSION_IDS if assign_split(s, f) == "eval"} for f in fractions]
    for smaller, larger in itertools.pairwise(eval_sets):
        assert smaller <= larger
    assert eval_sets[0] == set()
    assert len(eval_sets[-1]) > len(eval_sets[3]) > 0


def test_about_ten_percent_eval_at_point_one() -> None:
    eval_count = sum(assign_split(s, 0.1) == "eval" for s in SESSION_IDS)
    assert 70 <= eval_count <= 130


def test_about_half_eval_at_the_maximum_fraction() -> None:
    eval_count = sum(assign_split(s, 0.5) == "eval" for s in SESSION_IDS)
    assert 440 <= eval_count <= 560


# --- range validation ----------------------------------------------------------------


@pytest.mark.parametrize("value", [0.0, 0, 0.1, 0.25, 0.5])
def test_valid_fractions(value: float) -> None:
    result = validate_eval_fraction(value)
    assert result == float(value)
    assert isinstance(result, float)


@pytest.mark.parametrize(
    "value", [-0.1, 0.6, 0.5000001, 1.0, float("nan"), float("inf"), True, "0.1", None]
)
def test_invalid_fractions_are_rejected(value: object) -> None:
    with pytest.raises(ValueError):
        validate_eval_fraction(value)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        assign_split("s1", value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0.6, -0.1])
def test_split_policy_rejects_out_of_range(value: float) -> None:
    with pytest.raises(ValidationError):
        SplitPolicy(eval_fraction=value)
    with pytest.raises(ValidationError):
        DerivationPolicy(split={"eval_fraction": value})  # type: ignore[arg-type]


def test_split_policy_allows_half() -> None:
    assert SplitPolicy(eval_fraction=0.5).eval_fraction == 0.5
    assert DerivationPolicy(split=SplitPolicy(eval_fraction=0.5)).split.eval_fraction == 0.5
    assert SplitPolicy().eval_fraction == 0.1


# --- derivation policy ---------------------------------------------------------------


def test_default_derivation_policy_digest() -> None:
    policy = DerivationPolicy()
    assert policy.model_dump(mode="json") == DEFAULT_POLICY_DICT
    assert policy.digest == DEFAULT_POLICY_DIGEST
    canonical = json.dumps(DEFAULT_POLICY_DICT, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode("ascii")).hexdigest() == DEFAULT_POLICY_DIGEST
    assert policy_digest(DEFAULT_POLICY_DICT) == DEFAULT_POLICY_DIGEST


def test_digest_changes_with_the_policy() -> None:
    changed = DerivationPolicy(split=SplitPolicy(eval_fraction=0.2))
    assert changed.digest != DEFAULT_POLICY_DIGEST
    assert len(changed.digest) == 64
    assert changed.digest == policy_digest(
        {**DEFAULT_POLICY_DICT, "split": {"eval_fraction": 0.2}}
    )


def test_policy_digest_rejects_non_finite_values() -> None:
    with pytest.raises(ValueError):
        policy_digest({"x": float("nan")})


def test_from_toml_full_default_file(tmp_path: Path) -> None:
    policy = DerivationPolicy.from_toml(write_policy(tmp_path, DEFAULT_POLICY_TOML))
    assert policy == DerivationPolicy()
    assert policy.digest == DEFAULT_POLICY_DIGEST


def test_from_toml_empty_file_is_the_default(tmp_path: Path) -> None:
    assert DerivationPolicy.from_toml(write_policy(tmp_path, "")).digest == DEFAULT_POLICY_DIGEST


def test_from_toml_partial_file_keeps_other_defaults(tmp_path: Path) -> None:
    policy = DerivationPolicy.from_toml(write_policy(tmp_path, "[split]\neval_fraction = 0.25\n"))
    assert policy.split.eval_fraction == 0.25
    assert policy.attribution == DerivationPolicy().attribution
    assert policy.digest == policy_digest({**DEFAULT_POLICY_DICT, "split": {"eval_fraction": 0.25}})


def test_from_toml_zero_fraction(tmp_path: Path) -> None:
    policy = DerivationPolicy.from_toml(write_policy(tmp_path, "[split]\neval_fraction = 0.0\n"))
    assert policy.split.eval_fraction == 0.0


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('[split]\nmode = "session"\n', id="split.mode"),
        pytest.param('[split]\neval_fraction = 0.1\nmode = "random"\n', id="split.mode-with-fraction"),
        pytest.param("unknown = 1\n", id="top-level-unknown"),
        pytest.param("[attribution]\nfoo = 1\n", id="attribution-unknown"),
        pytest.param("[attribution.jaccard]\nseed = 3\n", id="jaccard-unknown"),
        pytest.param("[reward]\nkind = 'ci'\n", id="unknown-table"),
        pytest.param("[split]\neval_fraction = 0.6\n", id="fraction-too-high"),
        pytest.param("[split]\neval_fraction = -0.1\n", id="fraction-negative"),
        pytest.param("schema_version = 2\n", id="schema-version"),
        pytest.param("[attribution.git_notes]\nmin_similarity = 1.5\n", id="similarity-range"),
        pytest.param("[attribution]\nmax_commits_per_push = 0\n", id="max-commits"),
        pytest.param("[split\neval_fraction = \n", id="malformed-toml"),
    ],
)
def test_from_toml_rejects_unknown_fields_invalid_values_and_bad_toml(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigurationError):
        DerivationPolicy.from_toml(write_policy(tmp_path, text))


def test_from_toml_error_names_the_offending_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="mode"):
        DerivationPolicy.from_toml(write_policy(tmp_path, '[split]\nmode = "session"\n'))


def test_from_toml_rejects_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        DerivationPolicy.from_toml(tmp_path / "absent.toml")


@pytest.mark.parametrize("value", [False, True, "0.1", None])
def test_split_policy_rejects_non_numbers(value: object) -> None:
    from pydantic import ValidationError

    from sediment.model.policy import SplitPolicy

    with pytest.raises(ValidationError):
        SplitPolicy(eval_fraction=value)  # type: ignore[arg-type]
