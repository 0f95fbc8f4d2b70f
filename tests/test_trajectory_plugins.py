"""A third party adds a source format: an importer plugin that imports only ``sediment.plugin``,
registered beside the built-ins; a broken one is refused at start-up; import streams."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from sediment.errors import PluginError
from sediment.importing.run import import_records, import_results
from sediment.plugin import ImporterInfo, hookimpl
from sediment.plugin import trajectory_kit as kit
from sediment.testing import plugin_registry
from sediment.trajectory import outcome_category


class CsvishImporter:
    """Each line ``task<TAB>question<TAB>answer<TAB>passed`` is one two-event attempt."""

    @hookimpl
    def describe_importer(self) -> ImporterInfo:
        return ImporterInfo(description="tab-separated toy attempts", patterns=("*.tsv",), source_id="toy")

    @hookimpl
    def import_source(self, path: Path) -> Any:
        digest = kit.file_sha256(path)
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                data = line.rstrip(b"\n")
                fields = data.decode("utf-8").split("\t")
                if len(fields) != 4 or fields[3] not in ("yes", "no", "?"):
                    yield kit.ImportRefusal(path, number, "passed", "expected yes, no or ?")
                    continue
                raw, redactions = kit.raw_record_of(data, "text/tab-separated-values")
                yield kit.build(
                    task_id=fields[0], task_key=f"toy:{fields[0]}",
                    source=kit.Source(source_id="toy", locator=f"{path.name}:{number}", file_sha256=digest),
                    events=[kit.Event(event_id="event:0", role="user", text=fields[1]),
                            kit.Event(event_id="event:1", role="assistant", text=fields[2], supervised=True)],
                    tools=[], provenance=kit.TrajectoryProvenance(demonstrator="expert"),
                    outcome=kit.Outcome(success={"yes": True, "no": False, "?": None}[fields[3]]),
                    verification=kit.Verification(method="toy"), completeness="complete",
                    transformations=redactions, raw_record=raw)


def test_a_third_party_importer_is_discovered_and_dispatched_alone(tmp_path: Path) -> None:
    registry = plugin_registry(("toy-tsv", CsvishImporter()))
    assert "toy-tsv" in registry.importers and "swe-gym-sampled" in registry.importers
    assert registry.importers["toy-tsv"].as_json()["patterns"] == ["*.tsv"]
    (tmp_path / "a.tsv").write_text("t1\twhat?\tthis\tyes\nt2\tq\ta\tmaybe\nt3\tq\ta\t?\n", encoding="utf-8")
    (tmp_path / "ignored.txt").write_text("not mine\n", encoding="utf-8")
    results = list(import_results("toy-tsv", [tmp_path], registry=registry))
    assert [str(r) for r in results if isinstance(r, kit.ImportRefusal)] == [
        f"{tmp_path / 'a.tsv'}:2: passed: expected yes, no or ?"]
    records = [r for r in results if isinstance(r, kit.Trajectory)]
    assert [(r.task_key, outcome_category(r)) for r in records] == [("toy:t1", "success"), ("toy:t3", "unknown")]


def test_an_importer_without_import_source_is_a_plugin_error() -> None:
    class Half:
        @hookimpl
        def describe_importer(self) -> ImporterInfo:
            return ImporterInfo(description="x", patterns=("*",), source_id="x")

    with pytest.raises(PluginError, match=r"implements describe_importer but not \['import_source'\]"):
        plugin_registry(("half", Half()))


def test_an_unknown_format_names_the_installed_ones() -> None:
    with pytest.raises(PluginError, match=r"no importer for source format 'nope' \(installed: atif-v1, "):
        list(import_records("nope", []))


def test_import_memory_stays_flat_as_the_input_grows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sediment.trajectory import sources

    monkeypatch.setattr(sources, "CHUNK", 1 << 16)  # both inputs span many reads
    row = {"instance_id": "o__r-1_0", "model_name": "m", "target": True, "exit_status": "submitted",
           "generated_patch": "diff", "eval_logs": "All tests passed.",
           "trajectory": [{"role": "system", "text": None, "mask": False, "system_prompt": "be good",
                           "cutoff_date": None},
                          *({"role": r, "text": "x" * 1000, "mask": r == "ai", "system_prompt": None,
                             "cutoff_date": None} for r in ("user", "ai") * 20)]}
    from sediment.host.registry import load_registry

    registry = load_registry()
    peaks = []
    for count in (5, 10, 60):  # the first run warms caches up
        path = tmp_path / f"rows{count}.json"
        with path.open("w", encoding="utf-8") as handle:
            handle.write("[\n")
            handle.write(",\n".join(json.dumps(dict(row, instance_id=f"o__r-{i}_0")) for i in range(count)))
            handle.write("\n]\n")
        tracemalloc.start()
        imported = sum(1 for _ in import_records("nebius-swe-agent", [path], registry=registry))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert imported == count
    assert peaks[2] < peaks[1] * 1.5, peaks  # six times the input, not six times the memory
