"""Task directories of a profile that writes directories: what a declaration may hold, staging,
the budget, and publication into the output directory (sediment.export.task_directories)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.errors import CapacityError, OutputDirectoryError, PluginError
from sediment.export.task_directories import tree_record
from sediment.export.writer import StagingStore
from sediment.host.declarations import ProfileInfo, TaskDirectory


def directory(name: str = "task-1", **files: bytes) -> TaskDirectory:
    return TaskDirectory(name, files or {"task.toml": b"x = 1\n", "tests/test.sh": b"#!/bin/bash\n"},
                         frozenset({"tests/test.sh"}) if not files else frozenset())


@pytest.mark.parametrize(("declared", "problem"), [
    (TaskDirectory("../up", {"a": b""}), "not one portable path component"),
    (TaskDirectory(".hidden", {"a": b""}), "not one portable path component"),
    (TaskDirectory("a/b", {"a": b""}), "not one portable path component"),
    (TaskDirectory("ok", {}), "has no files"),
    (TaskDirectory("ok", {"/etc/passwd": b""}), "not a relative POSIX path"),
    (TaskDirectory("ok", {"a/../../b": b""}), "not a relative POSIX path"),
    (TaskDirectory("ok", {"a//b": b""}), "not a relative POSIX path"),
    (TaskDirectory("ok", {"a": "text"}), "is not bytes"),  # type: ignore[dict-item]
    (TaskDirectory("ok", {"a": b"", "a/b": b""}), "both a file and a directory"),
    (TaskDirectory("ok", {"a": b""}, frozenset({"b"})), "is not one of its files"),
])
def test_a_declaration_that_cannot_be_published_says_why(declared: TaskDirectory, problem: str) -> None:
    assert problem in (declared.problem() or "")


def test_staged_directories_publish_per_side_with_modes(tmp_path: Path) -> None:
    stage = StagingStore(tmp_path, split_enabled=True)
    try:
        stage.prepared.add_directory("p", "train", directory("task-1"))
        stage.prepared.add_directory("p", "eval", directory("task-2"))
        stage.prepared.add("data", "train", {"task": "task-1"})
        stage.prepared.add("data", "eval", {"task": "task-2"})
        published = stage.publish(("data",), target="t", profile="p")
    finally:
        stage.close()
    assert published.directories == [tmp_path / "train" / "task-1", tmp_path / "eval" / "task-2"]
    assert (tmp_path / "train" / "task-1" / "task.toml").read_bytes() == b"x = 1\n"
    assert (tmp_path / "train" / "task-1" / "tests" / "test.sh").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "train" / "task-1" / "task.toml").stat().st_mode & 0o777 == 0o644
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".sediment-training-")]  # stage removed
    record = tree_record(tmp_path / "train" / "task-1")
    assert (record["files"], record["bytes"]) == (2, 18) and record == tree_record(tmp_path / "eval" / "task-2")


def test_a_repeated_or_invalid_directory_is_a_plugin_error(tmp_path: Path) -> None:
    stage = StagingStore(tmp_path, split_enabled=False)
    try:
        stage.prepared.add_directory("p", "train", directory("task-1"))
        with pytest.raises(PluginError, match="wrote task directory 'task-1' twice"):
            stage.prepared.add_directory("p", "eval", directory("task-1"))
        with pytest.raises(PluginError, match="invalid task directory: directory name '..'"):
            stage.prepared.add_directory("p", "train", TaskDirectory("..", {"a": b""}))
    finally:
        stage.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing published


def test_a_name_already_in_the_output_directory_publishes_nothing(tmp_path: Path) -> None:
    (tmp_path / "task-2").mkdir()
    stage = StagingStore(tmp_path, split_enabled=False)
    try:
        stage.prepared.add_directory("p", "train", directory("task-1"))
        stage.prepared.add_directory("p", "train", directory("task-2"))
        stage.prepared.add("data", "train", {"task": "task-1"})
        with pytest.raises(OutputDirectoryError, match="already contains task-2"):
            stage.publish(("data",), target="t", profile="p")
    finally:
        stage.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task-2"]


def test_directory_bytes_count_against_the_budgets(tmp_path: Path) -> None:
    stage = StagingStore(tmp_path, split_enabled=False, max_record_bytes=10, max_stage_bytes=25)
    try:
        with pytest.raises(CapacityError, match="task directory 'big' holds 11 bytes"):
            stage.prepared.add_directory("p", "train", TaskDirectory("big", {"a": b"x" * 11}))
        stage.prepared.add_directory("p", "train", TaskDirectory("one", {"a": b"x" * 10}))
        stage.prepared.add_directory("p", "train", TaskDirectory("two", {"a": b"x" * 10}))
        with pytest.raises(CapacityError, match="exceeds 25 encoded bytes"):
            stage.prepared.add_directory("p", "train", TaskDirectory("three", {"a": b"x" * 6}))
    finally:
        stage.close()


def test_a_profile_that_writes_directories_keeps_export_order() -> None:
    with pytest.raises(ValueError, match="writes directories keeps row_order 'export'"):
        ProfileInfo(consumer="c", version=1, target="t", population="tasks", canonical_schema="s",
                    validated_with=(), validation="", support="", writes_directories=True, row_order="row_sha256")
