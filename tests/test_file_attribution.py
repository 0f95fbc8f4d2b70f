"""File attribution (docs/attributed-completions.md): each code file of a Session's attributed
commits bound to the Session's best-matching call, on a real mirror."""

from __future__ import annotations

import random
from datetime import timedelta

from sediment.derive.attribution import CommitIndex, attribute_files
from sediment.git.mirror_root import MirrorRoot
from sediment.git.mirror_writer import MirrorWriter
from sediment.model.facts import InferenceCall, ToolCallPart
from sediment.model.policy import AttributionPolicy
from sediment.model.rollout import CommitRef
from sediment.testing import ORG, REPO, T0, call, message

ADD = "def add(a, b):\n    return a + b\n"
MUL = "def mul(x, y):\n    return x * y\n"


def writes(session: str, index: int, path: str, content: str, *, seconds: int | None = None) -> InferenceCall:
    output = message("assistant", ToolCallPart(id=f"{session}-t{index}", name="write_file",
                                               arguments={"path": path, "content": content}))
    made = call(session, index, [message("user", "go")], [output])
    if seconds is not None:
        made = made.model_copy(update={"observed_at": T0 + timedelta(seconds=seconds)})
    return made


def at(minutes: float) -> int:
    return int((T0 + timedelta(minutes=minutes)).timestamp())


def test_each_code_file_goes_to_its_best_call_within_the_window(mirror_root: MirrorRoot) -> None:
    origin = MirrorWriter(mirror_root.mirror_path(ORG, REPO))
    origin.commit({"README.md": "# x\n"}, "base", when=at(-600))
    sha = origin.commit({"calc.py": ADD, "mul.py": MUL, "notes.md": ADD, "empty.py": "\n"}, "work", when=at(30))
    index = CommitIndex(mirror_root, ORG)
    calls = [writes("s1", 0, "calc.py", ADD), writes("s1", 1, "mul.py", MUL + "# more words here\n"),
             writes("s1", 2, "mul.py", MUL),  # the closer match for mul.py
             writes("s1", 3, "calc.py", ADD, seconds=3600 * 24 * 8)]  # after the commit: outside the window
    ref = CommitRef(repo=REPO, commit_sha=sha)
    found = attribute_files(ORG, calls, [ref], "git_notes", index, AttributionPolicy())
    assert [(a.file_path, a.inference_call_id, round(a.similarity_score, 3)) for a in found.attributions] == [
        ("calc.py", "s1-c0", round(5 / 7, 3)), ("mul.py", "s1-c2", round(5 / 6, 3))]
    assert not found.skipped  # notes.md is not code; empty.py adds no token
    # the same evidence in any order gives the same attributions (ties: the earliest call)
    shuffled = list(calls)
    random.Random(3).shuffle(shuffled)
    twin = writes("s1", 9, "calc.py", ADD, seconds=-5)  # the same text, earlier: it wins the tie
    again = attribute_files(ORG, [*shuffled, twin], [ref], "git_notes", index, AttributionPolicy())
    assert [a.inference_call_id for a in again.attributions] == ["s1-c9", "s1-c2"]


def test_thresholds_follow_how_the_session_was_bound(mirror_root: MirrorRoot) -> None:
    origin = MirrorWriter(mirror_root.mirror_path(ORG, REPO))
    sha = origin.commit({"calc.py": ADD}, "work", when=at(1))
    index = CommitIndex(mirror_root, ORG)
    loose = [writes("s1", 0, "calc.py", "def add(a, b): pass  # some other words entirely")]
    ref = CommitRef(repo=REPO, commit_sha=sha)
    notes = attribute_files(ORG, loose, [ref], "git_notes", index, AttributionPolicy())  # 0.3 suffices
    assert [a.file_path for a in notes.attributions] == ["calc.py"]
    guess = attribute_files(ORG, loose, [ref], "jaccard", index, AttributionPolicy())  # 0.7 is needed
    assert (guess.attributions, guess.skipped) == ((), {"no_match": 1})


def test_a_commit_no_mirror_holds_is_counted(mirror_root: MirrorRoot) -> None:
    found = attribute_files(ORG, [writes("s1", 0, "calc.py", ADD)], [CommitRef(repo=REPO, commit_sha="c" * 40)],
                            "git_notes", CommitIndex(mirror_root, ORG), AttributionPolicy())
    assert (found.attributions, found.skipped) == ((), {"commit_unavailable": 1})
