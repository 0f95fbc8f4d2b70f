"""`sediment policy show` prints the default derive policy as commented TOML; `derive --policy`
merges a partial file over the defaults (docs/policy.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from sediment.errors import ConfigurationError
from sediment.model.policy import DerivationPolicy, policy_digest
from sediment.model.policy_toml import policy_toml

DOCS = Path(__file__).resolve().parent.parent / "docs" / "policy.md"


def sediment(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": "acme"}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                          check=False, timeout=120)


def field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    found = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            found.extend(field_paths(kind, f"{prefix}{name}."))
        else:
            found.append(prefix + name)
    return found


def test_policy_show_fed_back_to_derive_gives_the_default_digest(tmp_path: Path) -> None:
    shown = sediment(tmp_path, "policy", "show")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == policy_toml()
    path = tmp_path / "policy.toml"
    path.write_text(shown.stdout)
    derived = sediment(tmp_path, "derive", "--out", str(tmp_path / "bundle"), "--policy", str(path), "--json")
    assert derived.returncode == 0, derived.stderr
    manifest = json.loads(derived.stdout)
    assert manifest["policy_digest"] == DerivationPolicy().digest
    assert manifest["policy"] == DerivationPolicy().model_dump(mode="json")


def test_policy_show_has_every_field_with_a_comment() -> None:
    text = policy_toml()
    lines = text.splitlines()
    parsed = tomllib.loads(text)
    for dotted in field_paths(DerivationPolicy):
        *tables, name = dotted.split(".")
        table = parsed
        for part in tables:
            table = table[part]
        assert name in table, dotted
        if tables:
            header = lines.index(f"[{'.'.join(tables)}]")
            at = next(i for i in range(header, len(lines)) if lines[i].startswith(f"{name} = "))
        else:
            at = next(i for i, line in enumerate(lines) if line.startswith(f"{name} = "))
        assert lines[at - 1].startswith("# "), dotted


def test_a_partial_file_changes_only_its_fields(tmp_path: Path) -> None:
    # a nested table named in part was refused before ("lookback_window_minutes: Field required")
    path = tmp_path / "partial.toml"
    path.write_text("[attribution.jaccard]\nmin_similarity = 0.5\n")
    policy = DerivationPolicy.from_toml(path)
    expected = DerivationPolicy().model_dump(mode="json")
    expected["attribution"]["jaccard"]["min_similarity"] = 0.5
    assert policy.model_dump(mode="json") == expected
    assert policy.digest == policy_digest(expected)
    shown = sediment(tmp_path, "policy", "show", "--policy", str(path), "--json")
    assert json.loads(shown.stdout) == {"policy": expected, "digest": policy_digest(expected)}


@pytest.mark.parametrize(("text", "key"), [
    ("[attribution]\nfoo = 1\n", "attribution.foo"),
    ("[attribution.jaccard]\nseed = 3\n", "attribution.jaccard.seed"),
    ("[reward]\nkind = 'ci'\n", "reward"),
])
def test_an_unknown_key_is_refused_in_one_line_naming_it(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=f"unknown field {key} "):
        DerivationPolicy.from_toml(path)
    refused = sediment(tmp_path, "derive", "--out", str(tmp_path / "bundle"), "--policy", str(path))
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [f"error: policy file {path}: unknown field {key} "
                                                   "(`sediment policy show` lists every field)"]
    assert not (tmp_path / "bundle").exists()


def test_a_changed_policy_renders_and_reads_back_the_same() -> None:
    changed = DerivationPolicy.model_validate({"split": {"eval_fraction": 0.25},
                                               "attribution": {"git_notes": {"min_similarity": 0.4,
                                                                             "lookback_window_minutes": 5}}})
    assert DerivationPolicy.model_validate(tomllib.loads(policy_toml(changed))) == changed


def test_every_field_is_documented() -> None:
    text = DOCS.read_text()
    for dotted in field_paths(DerivationPolicy):
        assert f"`{dotted}`" in text, dotted
