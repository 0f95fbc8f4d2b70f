"""Splitting reference patches into source and test files; the per-repository environments file."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sediment_swe_bench_profiles.environments import Environment, load_environments
from sediment_swe_bench_profiles.patches import DEFAULT_TEST_FILES, is_test_file, sections, split_patch

PATCH = (
    "diff --git a/calc.py b/calc.py\nindex 1..2 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\n"
    "diff --git a/tests/test_ops.py b/tests/test_ops.py\nindex 3..4 100644\n--- a/tests/test_ops.py\n"
    "+++ b/tests/test_ops.py\n@@ -1 +1,2 @@\n x\n+y\n"
    "diff --git a/pkg/new_test.go b/pkg/new_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/new_test.go\n"
    "@@ -0,0 +1 @@\n+package pkg\n"
    "diff --git a/old name.py b/src/test_moved.py\nsimilarity index 100%\nrename from old name.py\n"
    "rename to src/test_moved.py\n"
    "diff --git a/bin/tool b/bin/tool\nold mode 100644\nnew mode 100755\n"
)


@pytest.mark.parametrize(("path", "expected"), [
    ("tests/test_ops.py", True), ("test/x.js", True), ("a/b/tests/c/d.rs", True), ("src/test/java/FooTest.java", True),
    ("test_calc.py", True), ("pkg/calc_test.py", True), ("conftest.py", True), ("pkg/x_test.go", True),
    ("web/app.test.tsx", True), ("web/app.spec.js", True), ("web/__tests__/a.js", True),
    ("calc.py", False), ("testing.py", False), ("src/contest.py", False), ("docs/tests.md", False),
    ("latest/x.py", False), ("web/app.test.css", False),
])
def test_default_test_file_globs(path: str, expected: bool) -> None:
    assert is_test_file(path, DEFAULT_TEST_FILES) is expected


def test_split_keeps_every_section_once_in_order() -> None:
    source, tests, test_sections = split_patch(PATCH, DEFAULT_TEST_FILES)
    assert source + tests != PATCH  # reordered: sources first
    assert sorted((source + tests).splitlines()) == sorted(PATCH.splitlines())
    assert [s.paths for s in sections(source)] == [("calc.py",), ("bin/tool",)]
    assert [s.paths for s in test_sections] == [("tests/test_ops.py",), ("pkg/new_test.go",),
                                                ("old name.py", "src/test_moved.py")]
    assert [s.new_file for s in test_sections] == [False, True, False]
    assert split_patch("", DEFAULT_TEST_FILES)[:2] == ("", "")


def test_repository_globs_replace_the_defaults() -> None:
    source, tests, _ = split_patch(PATCH, ("bin/**",))
    assert [s.paths for s in sections(tests)] == [("bin/tool",)]
    assert "calc.py" in source and "tests/test_ops.py" in source


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "environments.toml"
    path.write_text(text)
    return path


def test_environments_load_and_name_per_instance_images(tmp_path: Path) -> None:
    path = write(tmp_path, '[repos."Acme/Calc"]\nversion = "0.1"\nimage_per_instance = true\n'
                           'test_command = "python -m pytest -rA"\nlog_parser = "parse_log_pytest"\n'
                           'install = ["pip install -e ."]\n'
                           '[repos."acme/web"]\nversion = "2"\nimage = "ghcr.io/acme/web:2"\n'
                           'test_command = "npx jest"\nlog_parser = "parse_log_jest"\ntest_files = ["spec/**"]\n')
    loaded = load_environments(path)
    assert loaded["acme/calc"] == Environment(version="0.1", test_command="python -m pytest -rA",
                                              log_parser="parse_log_pytest", image_per_instance=True,
                                              install=("pip install -e .",))
    assert loaded["acme/calc"].image_for("Acme__Calc-42") == "swebench/sweb.eval.x86_64.acme_1776_calc-42:latest"
    assert loaded["acme/web"].image_for("x") == "ghcr.io/acme/web:2"
    assert loaded["acme/web"].test_files == ("spec/**",)


@pytest.mark.parametrize(("entry", "problem"), [
    ('version = "1"\ntest_command = "t"\nlog_parser = "parse_log_nope"\nimage = "i"', "is not a SWE-bench 5.x parser"),
    ('version = "1"\ntest_command = "t"\nlog_parser = "parse_log_pytest"', "exactly one of image and image_per_instance"),
    ('version = "1"\ntest_command = "t"\nlog_parser = "parse_log_pytest"\nimage = "i"\nimage_per_instance = true',
     "exactly one of image"),
    ('test_command = "t"\nlog_parser = "parse_log_pytest"\nimage = "i"', "version must be a non-empty string"),
    ('version = "1"\ntest_command = "t"\nlog_parser = "parse_log_pytest"\nimage = "i"\ncmd = 1', "unknown keys ['cmd']"),
    ('version = "1"\ntest_command = "t"\nlog_parser = "parse_log_pytest"\nimage = "i"\ninstall = "pip"',
     "install and test_files must be lists"),
])
def test_a_bad_entry_is_logged_and_left_out(tmp_path: Path, caplog: pytest.LogCaptureFixture, entry: str,
                                            problem: str) -> None:
    path = write(tmp_path, f'[repos."acme/calc"]\n{entry}\n[repos."acme/ok"]\nversion = "1"\ntest_command = "t"\n'
                           'log_parser = "parse_log_pytest"\nimage = "i"\n')
    with caplog.at_level(logging.WARNING):
        loaded = load_environments(path)
    assert set(loaded) == {"acme/ok"}
    assert "swe_bench_environment_invalid repo=acme/calc" in caplog.text and problem in caplog.text


def test_an_unreadable_file_configures_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert load_environments(write(tmp_path, "[repos\n")) == {}
        assert load_environments(tmp_path / "absent.toml") == {}
    assert caplog.text.count("swe_bench_environments_unreadable") == 2
