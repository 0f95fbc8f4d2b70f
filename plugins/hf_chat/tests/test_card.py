"""The README.md dataset card of both hf-chat profiles: configs per published split, every
column's feature, the prose, and when it is not written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sediment_hf_chat import card, messages, prompts

from sediment.plugin import PublishedExport, Split
from sediment.testing import MirrorRoot, conversation, rollout, run_export

MESSAGES = "hf-chat-messages-v1"


def front_matter(out: Path) -> dict[str, Any]:
    text = (out / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    loaded: dict[str, Any] = yaml.safe_load(text.split("---\n")[1])
    return loaded


def export(out: Path, mirrors: MirrorRoot, *, split: bool, sessions: dict[str, Split]) -> dict[str, Any]:
    rollouts = [rollout(s, calls=conversation(s, f"task {s}"), split=side) for s, side in sessions.items()]
    return run_export(rollouts, out, target="sediment", profile=MESSAGES, mirrors=mirrors, split_enabled=split).summary


@pytest.mark.parametrize(("split", "sessions", "files"), [
    (True, {"s1": "train", "s2": "eval", "s3": "train"},
     [{"split": "train", "path": "data.train.jsonl"}, {"split": "eval", "path": "data.eval.jsonl"}]),
    (True, {"s1": "train"}, [{"split": "train", "path": "data.train.jsonl"}]),
    (True, {"s2": "eval"}, [{"split": "eval", "path": "data.eval.jsonl"}]),
    (False, {"s1": "train", "s2": "eval"}, [{"split": "train", "path": "data.jsonl"}]),
])
def test_configs_name_one_data_file_per_published_split(tmp_path: Path, mirror_root: MirrorRoot, split: bool,
                                                        sessions: dict[str, Split], files: list[dict[str, str]]) -> None:
    summary = export(tmp_path / "out", mirror_root, split=split, sessions=sessions)
    assert summary["manifests"] == {MESSAGES: [str(tmp_path / "out" / "README.md")]}
    meta = front_matter(tmp_path / "out")
    assert meta["configs"] == [{"config_name": "default", "data_files": files}]
    assert meta["dataset_info"]["features"] == messages.FEATURES
    for entry in files:
        assert (tmp_path / "out" / entry["path"]).exists()


def test_the_features_declare_every_column_with_its_type() -> None:
    assert [f["name"] for f in messages.FEATURES] == ["messages", "tools", "instance_id", "session_id",
                                                      "segment_index", "split", "reward_source", "sediment"]
    assert card.json_columns(messages.FEATURES) == {"tools", "sediment"}
    assert messages.FEATURES[0]["list"][2] == {"name": "tool_calls", "list": [
        {"name": "id", "dtype": "string"}, {"name": "type", "dtype": "string"},
        {"name": "function", "struct": [{"name": "name", "dtype": "string"},
                                        {"name": "arguments", "dtype": "string"}]}]}
    assert prompts.FEATURES[0] == {"name": "prompt", "list": [{"name": "role", "dtype": "string"},
                                                              {"name": "content", "dtype": "string"}]}
    assert card.json_columns(prompts.FEATURES) == set()


def test_the_body_names_profile_versions_claim_and_files(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    export(tmp_path / "out", mirror_root, split=True, sessions={"s1": "train", "s2": "eval"})
    body = (tmp_path / "out" / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    for text in ("`hf-chat-messages-v1` (version 1)", "datasets 5.2.0, trl 1.16.0, transformers 5.24.0",
                 messages.INFO.support, messages.INFO.validation, "`data.train.jsonl`: split `train`, 1 row\n",
                 "`evidence.eval.jsonl`: the evidence sidecar, 1 line;", "`compatibility.json`"):
        assert text in body


def test_no_card_for_a_target_export(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    summary = run_export([rollout("s1")], tmp_path / "out", target="sediment", mirrors=mirror_root).summary
    assert summary["manifests"] == {}
    assert not (tmp_path / "out" / "README.md").exists()


def test_no_card_for_another_profile_or_an_export_without_rows(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("{}\n")
    other = PublishedExport(tmp_path, False, target="sediment", profile="hf-chat-prompts-v1",
                            files={"data": {None: (data, 1)}})
    assert messages.write_manifest(other) is None
    empty = PublishedExport(tmp_path, False, target="sediment", profile=MESSAGES, files={})
    assert messages.write_manifest(empty) is None
    mine = PublishedExport(tmp_path, False, target="sediment", profile="hf-chat-prompts-v1",
                           files={"data": {None: (data, 1)}})
    assert prompts.write_manifest(mine) == tmp_path / "README.md"
    assert front_matter(tmp_path)["dataset_info"]["features"] == prompts.FEATURES


def test_no_prompts_card_without_task_rows(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    summary = run_export([rollout("s1")], tmp_path / "out", target="sediment", profile="hf-chat-prompts-v1",
                         mirrors=mirror_root).summary
    assert summary["rows"] == 0 and summary["manifests"] == {}
    assert not (tmp_path / "out" / "README.md").exists()


@pytest.mark.parametrize(("row", "path"), [
    ({"a": "2026-03-02T09:00:00Z"}, "a"),
    ({"a": "2026-03-02"}, "a"),
    ({"a": "2026-03-02T09:00:00+01:00"}, "a"),
    ({"a": "2026-03-02 09:00"}, "a"),
    ({"m": [{"c": "2026-03-02"}, {"c": "2026-03-03"}]}, "m[].c"),
    ({"m": [{"c": "2026-03-02"}, {"c": None}]}, "m[].c"),
    ({"m": [{"c": "2026-03-02"}, {"c": "text"}]}, None),
    ({"a": "2026-03-02T09:00:00.000Z"}, None),
    ({"a": "20260302"}, None),
    ({"j": "2026-03-02"}, None),
])
def test_retyped_text_finds_paths_datasets_would_read_as_timestamps(row: dict[str, Any], path: str | None) -> None:
    assert card.retyped_text(row, {"j"}) == path
