"""Manifests: an evaluation rerun bit for bit, a tampered number or policy file named as the first difference."""

from __future__ import annotations

import json
import shutil

from dcgym.__main__ import main as dcgym
from dcgym.agents.evaluation.manifest import first_difference, make_manifest, verify
from dcgym.agents.policies.zoo import zoo_dir


def test_a_manifest_reruns_bit_for_bit_and_names_a_tampered_number(tmp_path, capsys):
    path = tmp_path / "m.json"
    argv = ["verify", str(path), "--make", "--scenario", "single_link_websearch", "--policy", "fair"]
    assert dcgym([*argv, "--policy", "srpt", "--loads", "0.5", "--seeds", "1", "--tasks", "400"]) == 0
    assert dcgym(["verify", str(path)]) == 0
    assert "2 rows identical" in capsys.readouterr().out
    manifest = json.loads(path.read_text())
    manifest["results"][1]["fct_ms"]["p99"] = manifest["results"][1]["fct_ms"]["p99"] * (1 + 2**-52)
    path.write_text(json.dumps(manifest))
    assert dcgym(["verify", str(path)]) == 1
    assert "differs: results[1] (policy srpt, load 0.5, seed 1).fct_ms.p99: manifest" in capsys.readouterr().out


def test_a_changed_policy_file_is_named_before_anything_runs(tmp_path):
    policy = tmp_path / "p.dcpol"
    shutil.copyfile(zoo_dir() / "malcolm_homog_exp.dcpol", policy)
    manifest = make_manifest("malcolm_homog_exp", [str(policy)], [0.5], [1], 300)
    assert verify(manifest) is None
    data = bytearray(policy.read_bytes())
    data[-1] ^= 1
    policy.write_bytes(bytes(data))
    assert verify(manifest).startswith(f"policy_files.{policy}: manifest ")


def test_first_difference_tells_types_and_missing_keys_apart():
    assert first_difference({"a": [1, 2.0]}, {"a": [1, 2.0]}) is None
    assert first_difference({"a": [1, 2.0]}, {"a": [1, 2]}) == ".a[1]: manifest 2.0, rerun 2"
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == ".b: in the rerun only"
    assert first_difference([1], [1, 2]) == ": 1 items in the manifest, 2 now"


def test_bad_manifests_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    assert dcgym(["verify", str(bad)]) == 2
    assert dcgym(["verify", str(tmp_path / "none.json")]) == 2
    bad.write_text('{"scenario": "mm1"}')
    assert dcgym(["verify", str(bad)]) == 2
    assert "error: manifest" in capsys.readouterr().err
