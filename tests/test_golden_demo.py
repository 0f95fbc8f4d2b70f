"""The demo's canonical rows are pinned byte for byte: a redesign of the plugin framework,
the store or the bundle must not change one exported byte. A deliberate change to a row
updates the golden files in tests/golden/demo/ in the same commit, and says why."""

from __future__ import annotations

from pathlib import Path

from sediment.demo import run_demo
from sediment.testing import snapshot

GOLDEN = Path(__file__).parent / "golden" / "demo"


def test_demo_exports_equal_the_golden_files(tmp_path: Path) -> None:
    run_demo(tmp_path / "demo")
    exported = snapshot(tmp_path / "demo" / "exports")
    golden = snapshot(GOLDEN)
    assert sorted(exported) == sorted(golden)
    for name, data in golden.items():
        assert exported[name] == data, f"{name} differs from the golden export"
