"""git-ai authorship notes (``refs/notes/ai``) → SessionCommitObservation.

Every real note of ``../shared/fixtures/inputs/git_ai_notes/`` has its own test; the mirror tests
write those notes onto commits of a real repository built with pygit2, add a real mirror of it and
observe the notes.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest

from sediment.derive.attribution import attribute
from sediment.git.ai_notes import (
    GitAiNote,
    GitAiNoteError,
    human_key,
    legacy_key,
    parse_note,
    session_key,
)
from sediment.git.mirror_root import FETCH_REFSPECS, MirrorRoot
from sediment.git.mirror_writer import MirrorWriter
from sediment.ingest.facts_jsonl import PENDING_ID, with_natural_id
from sediment.ingest.git_notes import observe_notes
from sediment.model.facts import SessionCommitObservation
from sediment.model.policy import AttributionPolicy
from sediment.store import FactStore
from sediment.testing import require_path

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
NOTES = REPOSITORY_ROOT.parent / "shared" / "fixtures" / "inputs" / "git_ai_notes"
ORG = "acme"
REPO = "acme/widget"
T0 = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


def notes() -> Path:
    """The real notes' folder: a test reading them skips without it (fails under CI); the tests
    of made-up notes run either way."""
    return require_path(NOTES, "the shared git-ai note fixtures")


def note(prefix: str) -> str:
    (path,) = notes().glob(f"{prefix}.*")
    return path.read_text(encoding="utf-8")


def parsed(prefix: str) -> GitAiNote:
    return parse_note(note(prefix))


def sessions(n: GitAiNote) -> list[tuple[str | None, str | None, str | None]]:
    return [(a.tool, a.session_id, a.model) for a in n.sessions]


def keys_are_derived_from_their_agents(n: GitAiNote) -> None:
    """session = s_ + sha256("<tool>:<id>")[:14], legacy = [:16], human = h_ + sha256(author)[:14]."""
    for key, agent in n.agents:
        assert agent.tool is not None and agent.session_id is not None
        expected = session_key(agent.tool, agent.session_id) if key.startswith("s_") else legacy_key(
            agent.tool, agent.session_id)
        assert key == expected
    for key, author in n.humans:
        assert author is not None and key == human_key(author)


# --- one test per real note --------------------------------------------------------------


def test_sessions_claude() -> None:
    n = parsed("sessions_claude")
    assert sessions(n) == [("claude", "4349e36c-64eb-4ec7-8bd9-7ee125b24d2e", "claude-opus-4-6")]
    assert [(a.file_path, a.line_ranges, a.trace_id) for a in n.attestations] == [
        ("src/transcripts/agents/copilot_otel.rs", ((308, 555),), "t_f6f4089fdb9820"),
        ("src/transcripts/agents/copilot_otel.rs", ((101, 102),), "t_7292b5c484b399"),
        ("src/transcripts/agents/copilot_otel.rs", ((201, 201),), "t_9bf26494430a79"),
    ]
    assert {a.human_author for a in n.attestations} == {"Sasha Varlamov <sasha@sashavarlamov.com>"}
    keys_are_derived_from_their_agents(n)


def test_sessions_codex_with_an_unused_human() -> None:
    n = parsed("sessions_codex_with_human")
    assert sessions(n) == [("codex", "019e9556-aadc-7dd0-ba50-a033b13e7727", "gpt-5.5")]
    assert n.humans == (("h_5e32efc4aad69a", "Lincoln de Sousa <lincoln@clarete.li>"),)
    assert all(a.author_kind == "ai" for a in n.attestations)  # no line uses the human
    assert n.attestations[0].line_ranges[:3] == ((13, 16), (34, 35), (37, 37))
    keys_are_derived_from_their_agents(n)


def test_sessions_devin() -> None:
    n = parsed("sessions_devin")
    assert sessions(n) == [("devin", "devin-4b55dc2043024ab6bc29e720cb8ea328", "unknown")]
    assert [(a.file_path, a.line_ranges) for a in n.attestations] == [("Cargo.lock", ((3547, 3547),))]
    keys_are_derived_from_their_agents(n)


def test_sessions_multi_agent_claude_codex() -> None:
    n = parsed("sessions_multi_agent_claude_codex")
    assert sessions(n) == [
        ("codex", "019fa51d-4cb8-7471-ad38-ead1f195155b", "gpt-5.6-sol"),
        ("codex", "019fabf9-ca63-7101-9454-7282f9548df6", "gpt-5.6-sol"),
        ("claude", "5cfa7295-9712-4163-91b1-ddf8644413a9", "claude-fable-5"),
    ]
    by_agent = Counter(a.agent.session_id for a in n.attestations if a.agent)
    assert by_agent == {"019fabf9-ca63-7101-9454-7282f9548df6": 7, "5cfa7295-9712-4163-91b1-ddf8644413a9": 4,
                        "019fa51d-4cb8-7471-ad38-ead1f195155b": 1}
    assert {a.human_author for a in n.attestations if a.agent and a.agent.tool == "codex"} == {None}
    keys_are_derived_from_their_agents(n)


def test_dangling_session_keys_without_a_sessions_map_stay_ai_lines_of_an_unknown_agent() -> None:
    n = parsed("dangling_session_keys_no_sessions_map")
    assert n.sessions == () and len(n.attestations) == 8
    assert all(a.author_kind == "ai" and a.agent is None for a in n.attestations)
    assert len(n.dangling_keys) == 8
    unsorted = n.attestations[1].line_ranges
    assert unsorted[-2:] == ((131, 144), (111, 111))  # kept as written, not sorted


def test_empty_attestations_and_a_base_commit_that_differs() -> None:
    n = parsed("empty_base_commit_differs")
    assert (n.attestations, n.agents, n.humans) == ((), (), ())
    assert n.base_commit_sha == "ecef137899032b5931ca3359b4591ea213a21966"  # not the annotated 01cf4557…


def test_humans_only_with_a_bare_name() -> None:
    n = parsed("humans_only")
    assert n.sessions == ()
    (line,) = n.attestations
    assert (line.author_kind, line.key_kind, line.human_author, line.line_ranges) == (
        "human", "human", "Aidan Cunniffe", ((230, 230),))
    keys_are_derived_from_their_agents(n)


def test_legacy_prompts_cursor() -> None:
    n = parsed("legacy_prompts_cursor")
    assert sessions(n) == [("cursor", "42293c61-55d4-4d2e-a17e-f33ed15319d8", "claude-4.5-opus-high-thinking")]
    (line,) = n.attestations
    assert (line.key_kind, line.line_ranges, line.trace_id) == ("legacy", ((40, 41), (43, 45)), None)
    keys_are_derived_from_their_agents(n)


def test_legacy_prompts_pi_without_attestations_still_names_its_session() -> None:
    n = parsed("legacy_prompts_pi")
    assert n.attestations == ()
    assert sessions(n) == [("pi", "9d85bfac-3b2a-42cc-b402-408ae7319812", "openai-codex/gpt-5.4")]


def test_legacy_prompts_with_messages_a_human_key_and_a_dangling_hash() -> None:
    n = parsed("legacy_prompts_with_messages_human_key_dangling_hash")
    assert [(a.file_path, a.key_kind, a.author_kind, a.agent) for a in n.attestations] == [
        ("src/commands/hooks/push_hooks.rs", "human_literal", "human", None),
        ("src/commands/hooks/push_hooks.rs", "legacy", "ai", None),  # 35eb637 is not the prompt key dea3b6d
        ("src/commands/git_handlers.rs", "legacy", "ai", None),
    ]
    assert n.dangling_keys == ("35eb637",)
    assert sessions(n) == [("cursor", "3710ba64-1632-4ca1-b73a-b667b0628e07", "claude-4.5-sonnet-thinking")]


def test_legacy_prompts_with_messages_and_no_attestations() -> None:
    n = parsed("legacy_prompts_with_messages_no_attestations")
    assert n.attestations == ()
    assert sessions(n) == [("cursor", "5c03fdba-624f-431f-bc43-27f8a24cdd88", "default")]


def test_mixed_prompts_and_sessions_name_one_session_once() -> None:
    n = parsed("mixed_prompts_sessions")
    assert [k for k, _ in n.agents] == ["760c5cdc0bd01352", "s_760c5cdc0bd013"]
    assert sessions(n) == [("claude", "4d6297b8-9b0f-403f-8196-c564a24d1982", "claude-opus-4-6")]
    assert [a.key_kind for a in n.attestations] == ["legacy", "legacy", "session", "legacy"]
    assert n.attestations[2].human_author is None  # human_author: null on the session entry
    assert n.attestations[0].human_author == "Sasha Varlamov"
    keys_are_derived_from_their_agents(n)


def test_mixed_prompts_sessions_and_humans_with_an_unresolvable_messages_url() -> None:
    n = parsed("mixed_prompts_sessions_humans")
    assert len(n.sessions) == 4 and {a.tool for a in n.sessions} == {"claude"}
    assert [a.author_kind for a in n.attestations] == ["human", "ai", "ai", "ai", "ai", "ai"]
    assert n.attestations[0].human_author == "Aidan Cunniffe <acunniffe@gmail.com>"
    assert n.dangling_keys == ()
    keys_are_derived_from_their_agents(n)


def test_old_ref_format_is_refused_with_its_reason() -> None:
    with pytest.raises(GitAiNoteError, match=r"schema_version authorship/0\.0\.1: the old per-commit format"):
        parse_note(note("old_ref_format_authorship_0.0.1"))


def test_every_fixture_note_has_a_test() -> None:
    prefixes = {p.name.split(".")[0] for p in notes().iterdir() if p.name != "index.jsonl"}
    tested = {"sessions_claude", "sessions_codex_with_human", "sessions_devin", "sessions_multi_agent_claude_codex",
              "dangling_session_keys_no_sessions_map", "empty_base_commit_differs", "humans_only",
              "legacy_prompts_cursor", "legacy_prompts_pi", "legacy_prompts_with_messages_human_key_dangling_hash",
              "legacy_prompts_with_messages_no_attestations", "mixed_prompts_sessions",
              "mixed_prompts_sessions_humans", "old_ref_format_authorship_0"}
    assert prefixes == tested


META = '{"schema_version": "authorship/3.0.0", "base_commit_sha": "ab", "prompts": {}}'


@pytest.mark.parametrize(("text", "message"), [
    ("a.py\n  s_0123456789abcd::t_0123456789abcd 1-x\n---\n" + META, "not a line or a range"),
    ("---\n{\"schema_version\": \"authorship/3.0.0\", \"base_commit_sha\": \"ab\"}", "metadata.prompts: missing"),
    ("---\n{\"schema_version\": \"authorship/2.0.0\"}", "is not 'authorship/3.0.0'"),
    ("a.py\n  zz 1\n---\n{\"schema_version\": \"authorship/3.0.0\", \"base_commit_sha\": \"ab\", \"prompts\": {}}",
     "'zz' is not a session, human or legacy key"),
    ("  s_0123456789abcd::t_0123456789abcd 1\n---\n" + META, "an entry must follow a file path"),
    ("no divider", "no '---' line"),
    ("---\n{", "metadata: not JSON"),
    ("a.py\n  h_0123456789abcd 5-3\n---\n{\"schema_version\": \"authorship/3.0.0\", \"base_commit_sha\": \"ab\", "
     "\"prompts\": {}}", "ends before it starts"),
])
def test_unreadable_notes_are_refused_naming_why(text: str, message: str) -> None:
    with pytest.raises(GitAiNoteError, match=message):
        parse_note(text)


def test_quoted_paths_are_unquoted() -> None:
    text = ('"docs/a file.md"\n  h_0123456789abcd 2\n---\n'
            '{"schema_version": "authorship/3.0.0", "base_commit_sha": "ab", "prompts": {}}')
    assert parse_note(text).attestations[0].file_path == "docs/a file.md"


# --- through a real mirror ---------------------------------------------------------------

NOTED = ["sessions_claude", "sessions_multi_agent_claude_codex", "dangling_session_keys_no_sessions_map",
         "humans_only", "legacy_prompts_pi", "mixed_prompts_sessions", "old_ref_format_authorship_0.0.1"]


def build_source(path: Path) -> tuple[MirrorWriter, list[str]]:
    writer = MirrorWriter(path)
    shas = [writer.commit({f"f{i}.txt": f"line {i}\n"}, f"commit {i}", when=1_700_000_000 + i * 60)
            for i in range(len(NOTED) + 1)]
    return writer, shas


def mirror_root(path: Path) -> MirrorRoot:
    path.mkdir()
    return MirrorRoot(path)


def observations(store: FactStore) -> list[SessionCommitObservation]:
    return sorted((o for o in store.facts("session_commit_observations", ORG)
                   if isinstance(o, SessionCommitObservation)), key=lambda o: (o.commit_sha, o.session_id))


def test_mirror_fetches_git_ai_notes_and_observes_their_sessions(tmp_path: Path) -> None:
    writer, shas = build_source(tmp_path / "source.git")
    for sha, prefix in zip(shas, NOTED, strict=False):
        writer.add_git_ai_note(sha, note(prefix))
    claude = "4349e36c-64eb-4ec7-8bd9-7ee125b24d2e"
    writer.add_note(shas[0], [{"tool": "claude-code", "session_id": claude, "stamped_at": "2026-03-01T10:00:00Z"}])
    mirrors = mirror_root(tmp_path / "mirrors")
    mirror_path = mirrors.add(ORG, REPO, str(tmp_path / "source.git"))
    assert pygit2.Repository(str(mirror_path)).references.get("refs/notes/ai") is not None
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    try:
        result = observe_notes(mirrors, store, ORG, REPO, T0)
        assert result.git_ai_notes == 7
        assert result.problems == [f"git-ai note on {shas[6]}: schema_version authorship/0.0.1: the old "
                                   "per-commit format (refs/ai/authorship/<sha>) names authors, not Sessions; not read"]
        assert result.unbound_attestations == {"dangling_key": 8, "human": 1}
        found = [(o.commit_sha, o.session_id, o.attribution_source) for o in observations(store)]
        assert sorted(found) == sorted([
            (shas[0], claude, "git_notes"),  # our note names it too, and is read first
            (shas[1], "019fa51d-4cb8-7471-ad38-ead1f195155b", "git_ai_notes"),
            (shas[1], "019fabf9-ca63-7101-9454-7282f9548df6", "git_ai_notes"),
            (shas[1], "5cfa7295-9712-4163-91b1-ddf8644413a9", "git_ai_notes"),
            (shas[4], "9d85bfac-3b2a-42cc-b402-408ae7319812", "git_ai_notes"),
            (shas[5], "4d6297b8-9b0f-403f-8196-c564a24d1982", "git_ai_notes"),
        ])
        assert result.stored == 6
        again = observe_notes(mirrors, store, ORG, REPO, T0)
        assert (again.stored, again.already_seen) == (0, 6)
        # a note added upstream later arrives with the next fetch
        writer.add_git_ai_note(shas[7], note("sessions_devin"))
        mirrors.fetch(ORG, REPO)
        later = observe_notes(mirrors, store, ORG, REPO, T0)
        assert later.stored == 1
        (devin,) = [o for o in observations(store) if o.commit_sha == shas[7]]
        assert (devin.session_id, devin.attribution_source) == ("devin-4b55dc2043024ab6bc29e720cb8ea328",
                                                                "git_ai_notes")
    finally:
        store.close()


def test_a_mirror_added_before_git_ai_notes_gains_their_refspec_on_fetch(tmp_path: Path) -> None:
    writer, shas = build_source(tmp_path / "source.git")
    mirrors = mirror_root(tmp_path / "mirrors")
    path = mirrors.add(ORG, REPO, str(tmp_path / "source.git"))
    repository = pygit2.Repository(str(path))
    repository.config.delete_multivar("remote.origin.fetch", r"notes/ai")  # as mirrors were made before
    assert "+refs/notes/ai*:refs/notes/ai*" not in repository.remotes["origin"].fetch_refspecs
    writer.add_git_ai_note(shas[0], note("sessions_claude"))
    mirrors.fetch(ORG, REPO)
    assert pygit2.Repository(str(path)).remotes["origin"].fetch_refspecs == list(FETCH_REFSPECS)
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    try:
        assert observe_notes(mirrors, store, ORG, REPO, T0).stored == 1
    finally:
        store.close()


def test_observations_are_the_same_whatever_the_note_order(tmp_path: Path) -> None:
    results = []
    for attempt in range(2):
        writer, shas = build_source(tmp_path / f"source-{attempt}.git")
        pairs = list(zip(shas, NOTED, strict=False))
        random.Random(attempt).shuffle(pairs)
        for sha, prefix in pairs:
            writer.add_git_ai_note(sha, note(prefix))
        mirrors = mirror_root(tmp_path / f"mirrors-{attempt}")
        mirrors.add(ORG, REPO, str(tmp_path / f"source-{attempt}.git"))
        store = FactStore(f"sqlite:///{tmp_path / f'facts-{attempt}.db'}")
        try:
            observe_notes(mirrors, store, ORG, REPO, T0)
            results.append([o.model_dump(mode="json") for o in observations(store)])
        finally:
            store.close()
    assert results[0] == results[1] and len(results[0]) == 6


def _observation(session: str, source: str) -> SessionCommitObservation:
    fact = SessionCommitObservation(observation_id=PENDING_ID, org_id=ORG, repo=REPO, commit_sha="a" * 40,
                                    session_id=session, captured_at=T0, attribution_source=source)  # type: ignore[arg-type]
    return with_natural_id(fact, "observation_id")


class _NoCommits:
    def committer_time(self, ref: object) -> int:
        return 0

    def candidates(self, start: object, end: object) -> list[object]:
        return []


def test_a_session_bound_only_by_git_ai_notes_says_so() -> None:
    policy = AttributionPolicy()
    only_git_ai = attribute(ORG, [], [_observation("s1", "git_ai_notes")], _NoCommits(), policy)  # type: ignore[arg-type]
    assert (only_git_ai.source, [c.commit_sha for c in only_git_ai.commits]) == ("git_ai_notes", ["a" * 40])
    both = attribute(ORG, [], [_observation("s1", "git_ai_notes"), _observation("s1", "git_notes")],
                     _NoCommits(), policy)  # type: ignore[arg-type]
    assert both.source == "git_notes"


def test_mirror_add_reports_git_ai_notes_and_their_refused_ones(tmp_path: Path) -> None:
    import subprocess
    import sys

    writer, shas = build_source(tmp_path / "source.git")
    writer.add_git_ai_note(shas[0], note("sessions_multi_agent_claude_codex"))
    writer.add_git_ai_note(shas[1], note("humans_only"))
    writer.add_git_ai_note(shas[2], note("old_ref_format_authorship_0.0.1"))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG,
                "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z", "SEDIMENT_LOAD_PLUGINS": ""}
    result = subprocess.run([sys.executable, "-m", "sediment", "mirror", "add", REPO, str(tmp_path / "source.git")],
                            capture_output=True, text=True, env=environ, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"mirrored {REPO} into ")
    assert lines[1:] == [
        f"warning: git-ai note on {shas[2]}: schema_version authorship/0.0.1: the old per-commit format "
        "(refs/ai/authorship/<sha>) names authors, not Sessions; not read",
        f"{REPO}: 3 new session-commit observation(s), 0 already seen",
        f"{REPO}: 3 git-ai note(s) read; attestation lines binding no Session: human: 1",
    ]
