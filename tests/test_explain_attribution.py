"""`derive --explain-attribution SESSION`: the candidate commits of a Session, each code file's
best Jaccard score against the threshold, and whether a note bound it (docs/operate.md, "Git
notes"), from the same evidence and code derive uses."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from sediment.derive.attribution import CommitIndex, attribute, explain_attribution
from sediment.git.mirror_root import MirrorRoot
from sediment.git.mirror_writer import MirrorWriter
from sediment.ingest.facts_jsonl import PENDING_ID, with_natural_id
from sediment.model.facts import InferenceCall, SessionCommitObservation, ToolCallPart
from sediment.model.policy import AttributionPolicy
from sediment.store import FactStore
from sediment.testing import ORG, REPO, T0, call, message

ADD = "def add(a, b):\n    return a + b\n"
MUL = "def mul(x, y):\n    return x * y\n"


def writes(session: str, index: int, path: str, content: str) -> InferenceCall:
    output = message("assistant", ToolCallPart(id=f"{session}-t{index}", name="write_file",
                                               arguments={"path": path, "content": content}))
    return call(session, index, [message("user", "go")], [output])


def at(minutes: float) -> int:
    return int((T0 + timedelta(minutes=minutes)).timestamp())


def noted(session: str, sha: str) -> SessionCommitObservation:
    fact = SessionCommitObservation(observation_id=PENDING_ID, org_id=ORG, repo=REPO, commit_sha=sha,
                                    session_id=session, captured_at=T0, attribution_source="git_notes")
    return with_natural_id(fact, "observation_id")


def history(root: MirrorRoot) -> dict[str, str]:
    origin = MirrorWriter(root.mirror_path(ORG, REPO))
    origin.commit({"README.md": "# calc\n"}, "base", when=at(-600))
    return {"add": origin.commit({"calc.py": ADD, "notes.md": ADD}, "add", when=at(30)),
            "mul": origin.commit({"mul.py": MUL}, "mul", when=at(40)),
            "other": origin.commit({"other.py": "print('unrelated words only')\n"}, "other", when=at(50))}


SESSION_CALLS = [writes("s1", 0, "calc.py", ADD), writes("s1", 1, "mul.py", MUL)]


def test_scores_against_the_threshold_and_the_commits_other_sessions_noted(mirror_root: MirrorRoot) -> None:
    shas = history(mirror_root)
    index = CommitIndex(mirror_root, ORG)
    policy = AttributionPolicy()
    noted_shas = frozenset({shas["mul"]})  # another Session's note holds the mul commit
    found = explain_attribution(ORG, "s1", SESSION_CALLS, [], index, policy, noted=noted_shas)
    assert found.result == attribute(ORG, SESSION_CALLS, [], index, policy, noted=noted_shas)
    assert [c.commit_sha for c in found.result.commits] == [shas["add"]] and found.result.source == "jaccard"
    assert found.notes == () and found.threshold == 0.7 and found.calls == 2
    assert found.window == (T0, T0 + timedelta(seconds=1, minutes=60))  # the calls are 1 s apart
    table = [(c.commit.commit_sha, c.noted_elsewhere, c.matched,
              [(f.path, round(f.score, 3), f.call_id) for f in c.files]) for c in found.candidates]
    assert table == [
        (shas["add"], False, True, [("calc.py", round(5 / 7, 3), "s1-c0")]),  # notes.md is not code
        (shas["mul"], True, False, [("mul.py", round(5 / 6, 3), "s1-c1")]),  # similar, but another's work
        (shas["other"], False, False, [("other.py", 0.0, "s1-c0")]),
    ]
    # repeat and shuffle: the same figures
    shuffled = list(SESSION_CALLS)
    random.Random(7).shuffle(shuffled)
    assert explain_attribution(ORG, "s1", shuffled, [], index, policy, noted=noted_shas) == found


def test_a_session_left_unbound_shows_why(mirror_root: MirrorRoot) -> None:
    shas = history(mirror_root)
    index = CommitIndex(mirror_root, ORG)
    loose = [call("s3", 0, [message("user", "go")], [message("assistant", "def add(a, b): pass  # other words")])]
    found = explain_attribution(ORG, "s3", loose, [], index, AttributionPolicy())
    assert found.result.unbound == "jaccard_no_match" and not found.result.commits
    add = next(c for c in found.candidates if c.commit.commit_sha == shas["add"])
    assert not add.matched and 0 < add.files[0].score < found.threshold
    as_json = found.as_json()
    assert as_json["unbound"] == "jaccard_no_match" and as_json["bound_by_notes"] is False
    assert json.loads(json.dumps(as_json)) == as_json


def test_a_session_bound_by_its_note_says_so(mirror_root: MirrorRoot) -> None:
    shas = history(mirror_root)
    index = CommitIndex(mirror_root, ORG)
    observation = noted("s1", shas["mul"])
    found = explain_attribution(ORG, "s1", SESSION_CALLS, [observation], index, AttributionPolicy(),
                                noted=frozenset({shas["mul"]}))
    assert found.result.source == "git_notes" and [c.commit_sha for c in found.result.commits] == [shas["mul"]]
    assert [(n.commit_sha, n.source, n.declined) for n in found.notes] == [(shas["mul"], "git_notes", None)]
    assert not any(c.noted_elsewhere for c in found.candidates)  # its own note is not another's
    assert found.as_json()["bound_by_notes"] is True


def test_the_cli_explains_from_the_store_and_mirrors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "mirrors").mkdir(parents=True)
    root = MirrorRoot(home / "mirrors")
    shas = history(root)
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    try:
        store.append([*SESSION_CALLS, noted("s2", shas["mul"]), writes("s2", 0, "mul.py", MUL)])
    finally:
        store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": ORG}

    def sediment(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                              check=False, timeout=120)

    shown = sediment("derive", "--explain-attribution", "s1", "--json")
    assert shown.returncode == 0, shown.stderr
    figures = json.loads(shown.stdout)
    assert [c["commit_sha"] for c in figures["commits"]] == [shas["add"]]
    assert [(c["commit"]["commit_sha"], c["noted_elsewhere"], c["matched"]) for c in figures["candidates"]] == [
        (shas["add"], False, True), (shas["mul"], True, False), (shas["other"], False, False)]
    human = sediment("derive", "--explain-attribution", "s1")
    assert human.returncode == 0, human.stderr
    assert f"calc.py: {5 / 7:.3f} >= 0.7 (best call s1-c0)" in human.stdout
    assert "noted for another Session: never a candidate" in human.stdout
    unknown = sediment("derive", "--explain-attribution", "nope")
    assert unknown.returncode == 2 and "no Session 'nope'" in unknown.stderr
    both = sediment("derive", "--explain-attribution", "s1", "--out", str(tmp_path / "b"))
    assert both.returncode == 2 and not (tmp_path / "b").exists()
    neither = sediment("derive")
    assert neither.returncode == 2 and "--out" in neither.stderr
