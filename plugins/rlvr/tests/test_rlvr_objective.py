"""Objective rlvr: the built-in objective plugin whose targets are the three built-in ones (and
any contract-v2 third party's); its declaration drives `sediment export rlvr` exactly as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sediment_rlvr import RECIPE_ID, RECIPE_VERSION

from sediment.testing import ORG, POLICY, load_registry, outcome, rollout, snapshot, write_bundle


def sediment(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=120, check=False)


def test_the_declaration() -> None:
    rlvr = load_registry().objectives["rlvr"]
    info = rlvr.info
    assert (info.title, info.unit, info.units) == ("RLVR", "Rollout", "rollouts")
    assert [(r.name, r.version) for r in info.recipes] == [(RECIPE_ID, RECIPE_VERSION)] == [("rlvr_ci", 1)]
    assert info.target_populations == {"tasks": "task", "rollouts": "rollout"} and rlvr.populations == ()
    assert (info.direct_needs_mirrors, info.from_needs_mirrors, info.supports_from, info.default_objective) == (
        True, False, True, True)
    assert rlvr.targets == ("nemo-gym", "sediment", "swe-bench") and rlvr.claim_file == ".sediment-rlvr-target"


def test_export_help_lists_it_with_its_unit_and_recipe() -> None:
    listing = sediment("export", "--help")
    assert listing.returncode == 0, listing.stderr
    flat = " ".join(listing.stdout.split())
    assert ("rlvr Project Rollouts into RLVR rows for one target, or for one consumer profile of it. "
            "Unit of evidence: Rollout. Recipes: rlvr_ci v1 (default).") in flat
    own = sediment("export", "rlvr", "--help")
    assert own.returncode == 0, own.stderr
    for flag in ("--target", "--out", "--recipe", "--from", "--org", "--mirrors", "--profile", "--config", "--set",
                 "--json", "--workers"):
        assert flag in own.stdout, flag
    # its examples are printed as written, not rewrapped
    assert "    sediment export rlvr --target nemo-gym --profile nemo-gym-rollouts-v2 --from bundle \\\n" in own.stdout


def test_the_recipe_flag_names_its_only_recipe(tmp_path: Path) -> None:
    sha = "a" * 40
    source = write_bundle([rollout("s1", commits=[sha], outcomes=[outcome("o1", sha)]), rollout("s2")],
                          tmp_path / "bundle", org_id=ORG, policy=POLICY, quarantine_revision=0)
    plain = sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(source), "--out", str(tmp_path / "a"))
    named = sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(source), "--out", str(tmp_path / "b"),
                     "--recipe", "rlvr_ci", "--json")
    assert plain.returncode == 0 and named.returncode == 0, plain.stderr + named.stderr
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert json.loads(named.stdout)["rollout_rows"] == 2
    other = sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(source), "--out", str(tmp_path / "c"),
                     "--recipe", "sft_curated")
    assert other.returncode == 2 and "Invalid value for '--recipe'" in other.stderr
