"""Edit retention (docs/attributed-completions.md) and repository-relative edit paths."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sediment.derive.edit_retention import (
    SCORER_NON_FINITE,
    fill_edit_retention,
    four_gram_containment,
    observation_of,
    retention_figures,
)
from sediment.git.edit_paths import match_repository_path, repository_relative_path
from sediment.model.facts import DeveloperDecision, EditObservation
from sediment.records import encode_record

T0 = datetime(2026, 7, 7, 19, 57, tzinfo=UTC)


# --- four_gram_containment: the contract's rules, values worked out by hand ------------------


@pytest.mark.parametrize(
    ("applied", "observed", "score"),
    [
        ("", "", 1.0),  # nothing applied: nothing to lose (checked before the file is)
        ("", "anything", 1.0),
        ("abc", "", 0.0),  # the file is gone
        ("some surviving text", "", 0.0),
        ("abc", "xxabcxx", 1.0),  # shorter than one gram: a substring test
        ("abc", "xxxxxxx", 0.0),
        ("abc", "ab", 0.0),
        ("abcd", "abc", 0.0),  # an observed text shorter than one gram holds none
        ("abcd", "abcd", 1.0),
        ("abcdef", "UVWXYZ", 0.0),
        # grams of "abcde": abcd, bcde; "abcdxx" holds abcd only
        ("abcde", "abcdxx", 0.5),
        # "aaaaa" has the gram aaaa twice; "aaaa" holds it once: multiplicity counts
        ("aaaaa", "aaaa", 0.5),
        # abcd ×2, bcda, cdab, dabc: all held (more copies in the file do not count more)
        ("abcdabcd", "abcdabcdabcdabcdabcd", 1.0),
        # 'hel hell ello llo' against 'Hel Hell ello llo': two of four (Copilot's own reference case)
        ("'hello'", "'Hello'", 0.5),
        # code points, not bytes: 🙂 is one character
        ("a🙂bc", "xa🙂bcx", 1.0),
        ("a🙂bcd", "a🙂bc!", 0.5),
    ],
)
def test_four_gram_containment(applied: str, observed: str, score: float) -> None:
    assert four_gram_containment(applied, observed) == score


def test_a_snippet_kept_in_a_large_file_scores_one() -> None:
    snippet = "def compute_total(a, b):\n    return a + b\n" * 3
    assert four_gram_containment(snippet, "x" * 30_000 + snippet + "y" * 5_000) == 1.0


def test_a_half_rewritten_snippet_scores_the_grams_it_kept() -> None:
    """42 characters, 39 grams. The file keeps ``def compute_total(a, b):\\n    return `` (36
    characters, 33 grams) and rewrites the rest (no gram of ``a + b`` is in ``subtract(a, b)``)."""
    snippet = "def compute_total(a, b):\n    return a + b\n"
    file = "x" * 30_000 + "def compute_total(a, b):\n" + "    return subtract(a, b)\n" + "y" * 5_000
    assert four_gram_containment(snippet, file) == 33 / 39


def test_containment_is_directional() -> None:
    assert four_gram_containment("abcd", "abcdefgh") == 1.0
    assert four_gram_containment("abcdefgh", "abcd") == 1 / 5


def test_containment_stays_in_range_on_random_text() -> None:
    rng = random.Random(7)
    for _ in range(300):
        applied = "".join(rng.choice("ab\n🙂") for _ in range(rng.randint(0, 12)))
        observed = "".join(rng.choice("ab\n🙂") for _ in range(rng.randint(0, 12)))
        score = four_gram_containment(applied, observed)
        assert 0.0 <= score <= 1.0 and math.isfinite(score)
        assert four_gram_containment(applied, observed + applied) == 1.0  # kept whole: all of it


# --- the derived fill -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("applied", "observed", "rule", "grams", "kept"),
    [
        ("", "x", "nothing_applied", 0, 0),
        ("abcd", "", "file_gone", 0, 0),
        ("abc", "xxabcxx", "short_applied", 0, 0),
        ("abcd", "abc", "short_observed", 0, 0),
        ("abcde", "abcdxx", "containment", 2, 1),
        ("aaaaa", "aaaa", "containment", 2, 1),
        ("'hello'", "'Hello'", "containment", 4, 2),
    ],
)
def test_retention_figures_explain_the_containment(applied: str, observed: str, rule: str, grams: int,
                                                     kept: int) -> None:
    figures = retention_figures(applied, observed)
    assert (figures.rule, figures.applied_grams, figures.kept_grams) == (rule, grams, kept)
    assert figures.score == four_gram_containment(applied, observed)


def test_observation_of_is_the_one_the_fill_reads_whatever_the_order() -> None:
    early = observation("o-b", "t1", "abcd", "abcd", occurred_at=T0)
    late = observation("o-a", "t1", "abcd", "", occurred_at=T0 + timedelta(seconds=1))
    other = observation("o-c", "t2", "abcd", "", occurred_at=T0 - timedelta(seconds=1))
    for observations in ([early, late, other], [other, late, early]):
        assert observation_of(decision("d1", "t1"), observations) == early
    assert observation_of(decision("d1", None), [early]) is None
    assert observation_of(decision("d1", "t9"), [early]) is None


def decision(did: str, call_id: str | None, **fields: Any) -> DeveloperDecision:
    return DeveloperDecision(**{"decision_id": did, "org_id": "acme", "session_id": "s1", "agent_harness": "claude-code",
                                "accepted": True, "explicit": True, "interaction_mode": "agent", "call_id": call_id,
                                "occurred_at": T0, "captured_at": T0} | fields)


def observation(oid: str, call_id: str, applied: str, observed: str, **fields: Any) -> EditObservation:
    return EditObservation(**{"observation_id": oid, "org_id": "acme", "session_id": "s1",
                              "agent_harness": "claude-code", "file_path": "/repo/a.py", "call_id": call_id,
                              "applied_text": applied, "observed_file_text": observed, "occurred_at": T0,
                              "captured_at": T0} | fields)


def test_a_decision_without_a_score_takes_its_edits_containment() -> None:
    decisions = [decision("d1", "t1"), decision("d2", "t2"), decision("d3", None), decision("d4", "t4")]
    observations = [observation("o1", "t1", "abcde", "abcdxx"), observation("o2", "t2", "kept", "still kept")]
    fill = fill_edit_retention(decisions, observations)
    assert [d.edit_retention_score for d in fill.decisions] == [0.5, 1.0, None, None]
    assert fill.filled == 2 and not fill.warnings
    assert [d.decision_id for d in fill.decisions] == ["d1", "d2", "d3", "d4"]
    assert decisions[0].edit_retention_score is None  # the Facts themselves never change


def test_the_vendors_score_is_never_overwritten() -> None:
    graded = decision("d1", "t1", agent_harness="copilot", edit_retention_score=0.25)
    fill = fill_edit_retention([graded], [observation("o1", "t1", "abcd", "abcd", agent_harness="copilot")])
    assert fill.decisions == (graded,) and fill.filled == 0


def test_only_the_same_edit_fills_a_decision() -> None:
    """(org, harness, session, call_id) must all match."""
    wanted = decision("d1", "t1")
    others = [observation("o1", "t1", "abcd", "", agent_harness="pi"), observation("o2", "t1", "abcd", "",
              session_id="s2"), observation("o3", "t1", "abcd", "", org_id="other"), observation("o4", "t9", "abcd", "")]
    assert fill_edit_retention([wanted], others).decisions == (wanted,)


def test_every_decision_of_one_edit_gets_its_score() -> None:
    """An explicit accept and a later implicit one of one call both read the one observation."""
    decisions = [decision("d1", "t1"), decision("d2", "t1", explicit=False, occurred_at=T0 + timedelta(seconds=1))]
    fill = fill_edit_retention(decisions, [observation("o1", "t1", "aaaaa", "aaaa")])
    assert [d.edit_retention_score for d in fill.decisions] == [0.5, 0.5]


def test_of_two_observations_of_one_edit_the_earliest_wins_whatever_the_order() -> None:
    early = observation("o-b", "t1", "abcd", "abcd", occurred_at=T0)
    late = observation("o-a", "t1", "abcd", "", occurred_at=T0 + timedelta(seconds=1))
    tie = observation("o-0", "t1", "abcde", "abcdxx", occurred_at=T0)  # same time as `early`: the smaller id
    for observations in ([early, late], [late, early]):
        assert fill_edit_retention([decision("d1", "t1")], observations).decisions[0].edit_retention_score == 1.0
    assert fill_edit_retention([decision("d1", "t1")], [late, early, tie]).decisions[0].edit_retention_score == 0.5


@pytest.mark.parametrize("result", [math.nan, math.inf, -math.inf, "0.5", None, True, object()])
def test_a_scorer_that_gives_no_finite_number_leaves_the_decision_unfilled(result: Any) -> None:
    fill = fill_edit_retention([decision("d1", "t1")], [observation("o1", "t1", "a", "a")],
                               scorer=lambda applied, observed: result)
    assert fill.decisions[0].edit_retention_score is None
    assert fill.warnings == {SCORER_NON_FINITE: 1} and fill.filled == 0


def test_a_scorer_result_is_clamped() -> None:
    for raw, clamped in ((1.7, 1.0), (-0.2, 0.0), (1, 1.0), (0, 0.0)):
        fill = fill_edit_retention([decision("d1", "t1")], [observation("o1", "t1", "a", "a")],
                                   scorer=lambda applied, observed, value=raw: value)
        assert fill.decisions[0].edit_retention_score == clamped
        assert type(fill.decisions[0].edit_retention_score) is float


def test_the_fill_is_deterministic_under_repetition_and_shuffling() -> None:
    rng = random.Random(11)
    decisions = [decision(f"d{i}", f"t{i % 7}", explicit=i % 2 == 0, occurred_at=T0 + timedelta(seconds=i))
                 for i in range(20)]
    observations = [observation(f"o{i}", f"t{i % 9}", "abcdef"[: i % 6] * 3, "abcdxx" * (i % 3),
                                occurred_at=T0 + timedelta(seconds=i % 4)) for i in range(30)]
    reference = fill_edit_retention(decisions, observations)
    assert reference.filled > 0
    for _ in range(10):
        shuffled = observations[:]
        rng.shuffle(shuffled)
        again = fill_edit_retention(decisions, shuffled)
        assert [encode_record(d) for d in again.decisions] == [encode_record(d) for d in reference.decisions]
        order = list(range(len(decisions)))
        rng.shuffle(order)
        moved = fill_edit_retention([decisions[i] for i in order], shuffled)
        by_id = {d.decision_id: d for d in reference.decisions}
        assert list(moved.decisions) == [by_id[decisions[i].decision_id] for i in order]


# --- repository-relative paths -------------------------------------------------------------


@pytest.mark.parametrize(
    ("file_path", "checkout", "relative"),
    [
        ("/checkout/project/src/app.py", "/checkout/project", "src/app.py"),
        ("/checkout/project/src/app.py", "/checkout/project/", "src/app.py"),
        ("/checkout/project/./src//app.py", "/checkout/project", "src/app.py"),
        ("/checkout/project/src/../README.md", "/checkout/project", "README.md"),
        ("src/app.py", "/checkout/project", "src/app.py"),  # relative already
        ("/srv/app.py", "/", "srv/app.py"),
        ("/checkout/project-2/app.py", "/checkout/project", None),  # a sibling, not inside
        ("/checkout/project", "/checkout/project", None),  # the checkout itself is no file
        ("/checkout/other/app.py", "/checkout/project", None),
        ("../outside.py", "/checkout/project", None),
        ("/checkout/project/../project-2/x.py", "/checkout/project", None),
        ("", "/checkout/project", None),
        ("/checkout/project/a\x00b", "/checkout/project", None),
        ("C:\\Users\\dev\\project\\app.py", "C:\\Users\\dev\\project", None),  # not resolved
        ("/checkout/project/app.py", "project", None),  # the checkout must be absolute
    ],
)
def test_repository_relative_path(file_path: str, checkout: str, relative: str | None) -> None:
    assert repository_relative_path(file_path, checkout) == relative


@pytest.mark.parametrize(
    ("file_path", "candidates", "match"),
    [
        ("/checkout/project/src/app.py", ["src/app.py", "src/other.py"], "src/app.py"),
        ("/checkout/project/src/app.py", ["src/app.py", "app.py"], None),  # the checkout could be at src/
        ("/checkout/project/src/app.py", ["pp.py", "rc/app.py"], None),  # whole components only
        ("/checkout/project/src/app.py", [], None),
        ("src/app.py", ["src/app.py", "lib/src/app.py"], None),
        ("app.py", ["sub/app.py"], "sub/app.py"),  # the client ran in sub/
        ("example.md", ["example.md", "docs/guide.md"], "example.md"),
        ("/x/app.py", ["/x/app.py", "../app.py", "."], None),  # candidates are repository paths
    ],
)
def test_match_repository_path(file_path: str, candidates: list[str], match: str | None) -> None:
    assert match_repository_path(file_path, candidates) == match
    assert match_repository_path(file_path, list(reversed(candidates))) == match
