"""The exported rows a leakage report reads (docs/leakage.md, Inputs).

Every ``*.jsonl`` file of an export directory is read line by line, whatever the objective, target
or profile that wrote it: canonical rows and a profile's data lines alike. A profile's data line
takes its row id from the line of the same number in its evidence sidecar
(``evidence.<split>.jsonl``), which is itself not read as rows. What a row says is looked up under
the names the row contracts use, at the top level and under ``metadata`` or ``sediment``; a row
that names nothing comparable still counts and is tagged. A line that is not a JSON object is
recorded as a problem (``FILE:LINE: why``) and every other line is still read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Where a row's parts may sit: the top level, then the envelopes rows use for provenance.
ENVELOPES = ("", "metadata", "sediment")
#: Default dotted paths of an external task identifier (``--task-id-field`` replaces them).
DEFAULT_TASK_ID_FIELDS = ("task_id", "external_task_id", "metadata.task_id", "metadata.external_task_id",
                          "sediment.task_id", "sediment.external_task_id")
_SPLIT_FILE = re.compile(r"^(?P<population>.+)\.(?P<split>[^.]+)\.jsonl$")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class ExportedRow:
    """One exported line, reduced to what the report compares."""

    row_id: str
    split: str
    source: str  #: ``DIR/FILE:LINE`` as given
    prompt: str  #: the problem statement or the user messages of the prompt, whitespace collapsed
    patch: str  #: the reference patch (``reference_patch``, ``patch``, ``recovery_diff``), or ""
    repo: str  #: ``owner/name`` lowercased, or ""
    repo_name: str  #: the repository as the row names it (how its mirror is found)
    org_id: str
    base_commit: str
    head_commits: tuple[str, ...]  #: the verified, fixed or attributed commits the row names
    task_ids: tuple[str, ...]  #: external task identifiers

    @property
    def commits(self) -> tuple[str, ...]:
        return tuple(sorted({c for c in (self.base_commit, *self.head_commits) if c}))


@dataclass
class ReadRows:
    rows: list[ExportedRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  #: directory -> files read


def normal_text(text: str) -> str:
    """Whitespace collapsed and case folded: the form exact duplicates are compared in."""
    return _WHITESPACE.sub(" ", text).strip().casefold()


def normal_repo(repo: str) -> str:
    """``owner/name`` from a name, a URL or a path, lowercased (hosts and ``.git`` dropped)."""
    text = repo.strip().lower().removesuffix("/").removesuffix(".git")
    for prefix in ("https://", "http://", "git@", "ssh://"):
        text = text.removeprefix(prefix)
    parts = [p for p in re.split(r"[/:]", text) if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else text


def _get(row: Mapping[str, Any], dotted: str) -> Any:
    value: Any = row
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _lookup(row: Mapping[str, Any], *names: str) -> Any:
    for envelope in ENVELOPES:
        for name in names:
            value = _get(row, f"{envelope}.{name}" if envelope else name)
            if value not in (None, "", [], {}):
                return value
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return _text(value.get("text") if "text" in value else value.get("content"))
    if isinstance(value, Sequence):
        return "\n".join(t for t in (_text(v) for v in value) if t)
    return ""


def _user_text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, Sequence):
        return ""
    texts = []
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "user":
            texts.append(_text(message.get("content") if "content" in message else message.get("parts")))
    return "\n".join(t for t in texts if t)


def _prompt(row: Mapping[str, Any]) -> str:
    statement = _lookup(row, "problem_statement")
    if isinstance(statement, str):
        return statement
    for dotted in ("prompt", "responses_create_params.input", "messages", "turns.0.new_messages",
                   "response.turns.0.new_messages"):
        value: Any = row
        for part in dotted.split("."):
            if isinstance(value, Mapping):
                value = value.get(part)
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                value = None
        text = _user_text(value)
        if text:
            return text
    return ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def row_id_of(row: Mapping[str, Any]) -> str:
    """The row's id in the export's own terms: an ``instance_id``, a completion id, a pair of
    completion ids (``chosen>rejected``), a transition of CI outcomes (``failed>fixed``); "" when
    the row names none."""
    found = _lookup(row, "instance_id", "completion_id")
    if isinstance(found, str):
        return found
    chosen, rejected = _lookup(row, "chosen_completion_id"), _lookup(row, "rejected_completion_id")
    if isinstance(chosen, str) and isinstance(rejected, str):
        return f"{chosen}>{rejected}"
    failed, fixed = _lookup(row, "failed_outcome_id"), _lookup(row, "fixed_outcome_id")
    if isinstance(failed, str) and isinstance(fixed, str):
        return f"{failed}>{fixed}"
    return ""


def exported_row(row: Mapping[str, Any], *, source: str, file_split: str, row_id: str = "",
                 task_id_fields: Sequence[str] = DEFAULT_TASK_ID_FIELDS) -> ExportedRow:
    """What the report compares of one parsed row."""
    resolution = _lookup(row, "ci_resolution")
    resolution = resolution if isinstance(resolution, Mapping) else {}
    repo = _lookup(row, "repo") or resolution.get("repo")
    heads = {_str(resolution.get("commit_sha")), _str(_lookup(row, "commit_sha")),
             _str(_lookup(row, "fixed_commit_sha"))}
    verifier = _lookup(row, "verifier_results")
    for result in verifier if isinstance(verifier, list) else ():
        if isinstance(result, Mapping):
            heads.add(_str(result.get("commit_sha")))
            repo = repo or result.get("repo")
    base = _str(_lookup(row, "base_commit")) or _str(_lookup(row, "failed_commit_sha"))
    task_ids = sorted({str(v) for f in task_id_fields if isinstance(v := _get(row, f), str | int) and str(v)})
    split = _lookup(row, "split")
    return ExportedRow(
        row_id=row_id or row_id_of(row) or source, split=split if isinstance(split, str) and split else file_split,
        source=source, prompt=_WHITESPACE.sub(" ", _prompt(row)).strip(),
        patch=_str(_lookup(row, "reference_patch", "patch", "recovery_diff")), repo=normal_repo(_str(repo)),
        repo_name=_str(repo).strip(),
        org_id=_str(_lookup(row, "org_id")), base_commit=base.lower(),
        head_commits=tuple(sorted(h.lower() for h in heads if h and h.lower() != base.lower())),
        task_ids=tuple(task_ids))


def _lines(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                yield number, None, f"not JSON ({exc.__class__.__name__}: {str(exc).splitlines()[0][:80]})"
                continue
            yield number, value, None if isinstance(value, dict) else "not a JSON object"


def _sidecar_ids(path: Path) -> dict[int, str]:
    ids: dict[int, str] = {}
    if path.is_file():
        for number, value, problem in _lines(path):
            if problem is None and isinstance(value.get("instance_id"), str):
                ids[number] = value["instance_id"]
    return ids


def read_export_dirs(dirs: Sequence[Path], *, task_id_fields: Sequence[str] = DEFAULT_TASK_ID_FIELDS) -> ReadRows:
    """Every row of every ``*.jsonl`` file of ``dirs`` (sorted by name; evidence sidecars name the
    rows of their data files and are not rows). A directory that does not exist is a problem."""
    read = ReadRows()
    for directory in dirs:
        if not directory.is_dir():
            read.problems.append(f"{directory}: not a directory")
            continue
        files = sorted(p for p in directory.glob("*.jsonl") if p.is_file() and not p.name.startswith("evidence."))
        read.files[str(directory)] = len(files)
        for path in files:
            match = _SPLIT_FILE.match(path.name)
            file_split = match.group("split") if match else "unsplit"
            ids = _sidecar_ids(directory / f"evidence.{file_split}.jsonl") if path.name.startswith("data.") else {}
            try:
                for number, value, problem in _lines(path):
                    source = f"{path}:{number}"
                    if problem is not None:
                        read.problems.append(f"{source}: {problem}")
                        continue
                    read.rows.append(exported_row(value, source=source, file_split=file_split,
                                                  row_id=ids.get(number, ""), task_id_fields=task_id_fields))
            except OSError as exc:
                read.problems.append(f"{path}: unreadable: {exc.strerror or exc}")
    return read
