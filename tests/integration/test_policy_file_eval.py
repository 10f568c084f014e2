"""evaluate.py --policy FILE / zoo:NAME: exported Malcolm policies evaluated inside the engine (RackController).

A tiny Malcolm run (tests/agents/test_export.py's, with its final evaluation)
is exported; its policy file, evaluated in the engine, must give the numbers
its checkpoint gives through rack_v0. That the controller's tables equal
rack_v0 + MalcolmRLModule's to 1e-5 on the same observations is
tests/runtime/test_controller.py's; that the exported file's probabilities
equal the modules' is tests/agents/test_export.py's.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dcgym.agents.evaluation import evaluate
from dcgym.agents.export import Layer, MlpPolicy, demo_policy, export_policy, write_policy
from dcgym.agents.policies.rack import safe_heartbeats
from dcgym.agents.policies.zoo import ZOO_ENV, list_zoo, zoo_dir
from dcgym.agents.training.experiment import load_experiment
from dcgym.envs.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs/experiments/smoke.yaml"
TASKS = "5000"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


evaluate_cli = _load("dcgym_test_evaluate_cli", ROOT / "evaluate.py")
build_zoo_cli = _load("dcgym_test_build_zoo", ROOT / "benchmarks/build_zoo.py")


@pytest.fixture(scope="module")
def malcolm_run(ray_session, tmp_path_factory):
    """One iteration of Malcolm on smoke.yaml's 4-node rack, with its final evaluation (po2, jsq, loads 0.7, 0.9)."""
    from dcgym.agents.training import train

    experiment = load_experiment(
        SMOKE, {"budget.iterations": 1, "algorithm": "malcolm", "hyperparameters": {}, "env_args.max_steps": 20}
    )
    return train(experiment, out=tmp_path_factory.mktemp("malcolm"), progress=False).run_dir


@pytest.fixture(scope="module")
def policy_file(malcolm_run, tmp_path_factory):
    return export_policy(malcolm_run, tmp_path_factory.mktemp("policy") / "tiny_malcolm.dcpol")


@pytest.fixture(scope="module")
def scenario():
    return load_scenario("malcolm_homog_exp", {"nodes.0.count": 4})  # the run's rack


def cli(capsys, *args: str) -> tuple[int, str, str]:
    status = evaluate_cli.run(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def without_wall_time(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("wall_s", "policy")} for r in rows]


def test_policy_file_in_the_engine_gives_its_checkpoints_results(capsys, malcolm_run, policy_file, tmp_path):
    status, out, err = cli(
        capsys,
        "--policy",
        str(malcolm_run),
        "--policy",
        str(policy_file),
        "--policy",
        "po2",
        "--loads",
        "0.7,0.9",
        "--tasks",
        TASKS,
        "--seeds",
        "2",
        "--workers",
        "0",
        "--json",
        "--out",
        str(tmp_path),
    )
    assert status == 0, err
    doc = json.loads(out)
    assert doc["scenario"] == "malcolm_homog_exp"  # the trained policy's, with its 4-node override
    by_policy: dict[str, list[dict]] = {}
    for r in doc["results"]:
        by_policy.setdefault(r["policy"], []).append(r)
    assert list(by_policy) == ["malcolm (trained)", "tiny_malcolm (file)", "po2"]
    trained, in_engine, po2 = by_policy.values()
    assert [(r["load"], r["seed"]) for r in in_engine] == [(0.7, 1), (0.7, 2), (0.9, 1), (0.9, 2)]
    # The same columns as the heuristics and the checkpoint, the warm-up excluded alike.
    assert all(r.keys() == po2[0].keys() for r in in_engine)
    assert {r["tasks_warmup"] for r in in_engine + trained + po2} == {500}
    assert all(r["tasks_completed"] > 4000 and r["migrations"] > 0 and r["steals"] > 0 for r in in_engine)
    # The checkpoint through rack_v0 and its file in the engine: the same tasks, the same decisions. Their tables
    # agree to float32 rounding (~1e-7), so a uniform draw could fall between them and flip one decision; on
    # these runs none does, and every statistic is the same bit for bit.
    assert without_wall_time(in_engine) == without_wall_time(trained)
    assert [s["policy"] for s in doc["summary"]][2:4] == ["tiny_malcolm (file)"] * 2
    assert (tmp_path / "results.csv").read_text().count("tiny_malcolm (file)") == 4


def test_ray_runs_are_bit_identical_to_serial_and_seeds_repeat(ray_session, policy_file, scenario):
    def run(seeds, workers):
        return evaluate(
            scenario, [str(policy_file), "jsq"], [0.9], tasks=int(TASKS), seeds=seeds, workers=workers, progress=False
        )["results"]

    serial, parallel = run([1, 2], 0), run([1, 2], 2)
    assert without_wall_time(parallel) == without_wall_time(serial)
    assert without_wall_time(run([1], 0)) == without_wall_time([serial[0], serial[2]])  # seed 1 again: identical
    assert serial[0]["latency_us"] != serial[1]["latency_us"]  # another seed, other tasks


def test_zoo_names_resolve_in_the_zoo_folder(policy_file, scenario, tmp_path, monkeypatch):
    monkeypatch.delenv(ZOO_ENV, raising=False)
    assert zoo_dir() == ROOT / "zoo"  # the checkout's (or editable install's) top-level zoo/
    monkeypatch.setenv(ZOO_ENV, str(tmp_path))
    shutil.copy(policy_file, tmp_path / "tiny.dcpol")
    assert list_zoo() == ["tiny"]
    doc = evaluate(scenario, ["zoo:tiny", str(policy_file)], [0.9], tasks=int(TASKS), workers=0, progress=False)
    zoo, file = doc["results"]
    assert (zoo["policy"], file["policy"]) == ("tiny (zoo)", "tiny_malcolm (file)")
    assert without_wall_time([zoo]) == without_wall_time([file])


def test_build_zoo_exports_the_final_checkpoint_with_its_card(
    capsys, malcolm_run, policy_file, scenario, tmp_path, monkeypatch
):
    zoo = tmp_path / "zoo"
    assert build_zoo_cli.run([str(malcolm_run), "--out", str(zoo), "--commit", "0123abc"]) == 0
    name = "malcolm_homog_exp__malcolm"  # trained from Python: no --config to name it after
    assert capsys.readouterr().out.strip() == f"wrote {zoo / name}.dcpol and {zoo / name}.md"
    assert (zoo / f"{name}.dcpol").read_bytes() == policy_file.read_bytes()
    card = (zoo / f"{name}.md").read_text()
    provenance = next(line for line in card.splitlines() if line.startswith("Provenance: "))
    for part in (
        "malcolm on rack_v0",
        '`malcolm_homog_exp` with overrides `{"nodes.0.count": 4}`',
        "seed 1",
        "commit 0123abc",
        "budget 1 iterations",
        "checkpoint `iter_000001`",
        "status finished",
    ):
        assert part in provenance, part
    assert "| policy | load 0.7 | load 0.9 |" in card
    trained = json.loads((malcolm_run / "evaluation/results.json").read_text())["summary"][0]
    assert f"| malcolm (trained) | {trained['latency_us']['p99']['mean']:,.1f} |" in card
    assert "| po2 |" in card and "| jsq |" in card

    monkeypatch.setenv(ZOO_ENV, str(zoo))
    doc = evaluate(scenario, [f"zoo:{name}"], [0.7], tasks=int(TASKS), workers=0, progress=False)
    assert doc["results"][0]["policy"] == f"{name} (zoo)"
    # Two runs of one experiment would overwrite each other.
    assert build_zoo_cli.run([str(malcolm_run), str(malcolm_run), "--out", str(zoo)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: RUN: got [") and "one run per experiment name" in line
    # An entry already there is not overwritten (a zoo entry may have been made another way), unless --replace.
    card_before = (zoo / f"{name}.md").read_bytes()
    assert build_zoo_cli.run([str(malcolm_run), "--out", str(zoo), "--commit", "4567def"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: name: got {name!r}".replace("'", '"')) and "--replace overwrites it" in line, line
    assert (zoo / f"{name}.md").read_bytes() == card_before
    assert build_zoo_cli.run([str(malcolm_run), "--out", str(zoo), "--commit", "4567def", "--replace"]) == 0
    assert "commit 4567def" in (zoo / f"{name}.md").read_text()


def _mlp_file(path: Path) -> Path:
    layer = Layer(np.ones((2, 5)), np.zeros(2))
    return write_policy(MlpPolicy(5, [[layer]], [0, 0, 0, 0], "identity"), path)


@pytest.mark.parametrize("case", ["corrupt", "nodes", "mlp", "zoo", "option", "missing"])
def test_bad_policy_files_are_one_line_and_status_2(case, capsys, policy_file, tmp_path, monkeypatch):
    monkeypatch.setenv(ZOO_ENV, str(tmp_path))
    write_policy(demo_policy(4), tmp_path / "malcolm_small.dcpol")
    bad = tmp_path / "bad.dcpol"
    if case == "corrupt":
        data = bytearray(policy_file.read_bytes())
        data[100] ^= 0xFF
        bad.write_bytes(bytes(data))
        spec, want = str(bad), f"error: {bad}: checksum: got 0x"
    elif case == "nodes":  # a 4-node policy on the default 14-node scenario
        spec, want = (
            str(policy_file),
            (
                f"error: {policy_file}: a policy for 4 nodes; the scenario "
                "malcolm_hetero_paper_exp has 14 (give --scenario the rack it was trained on)"
            ),
        )
    elif case == "mlp":
        spec, want = (
            str(_mlp_file(bad)),
            (f"error: {bad}: a mlp policy; only linear_pair and fill policies (Malcolm's) run in the engine"),
        )
    elif case == "zoo":
        spec, want = (
            "zoo:malcolm_smal",
            (
                'error: policy: got "zoo:malcolm_smal"; did you mean "zoo:malcolm_small"?; '
                f"allowed: a zoo policy, one of zoo:malcolm_small (zoo folder {tmp_path}"
            ),
        )
    elif case == "option":
        spec, want = (
            f"{policy_file}:heartbeat=50",
            (f'error: {policy_file}: option: got "heartbeat"; did you mean "heartbeat_us"?'),
        )
    else:
        spec, want = str(tmp_path / "none.dcpol"), f"error: {tmp_path / 'none.dcpol'}: no such policy file"
    status, out, err = cli(
        capsys, "--policy", spec, "--policy", "po2", "--tasks", "1000", "--workers", "0", "--out", str(tmp_path / "out")
    )
    assert status == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(want), line


def test_the_command_line_refuses_a_bad_file_in_one_line(tmp_path):
    """The same as a real process: exit status 2, one line on stderr, nothing run."""
    bad = tmp_path / "short.dcpol"
    bad.write_bytes(write_policy(demo_policy(14), tmp_path / "x.dcpol").read_bytes()[:100])
    proc = subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), "--policy", str(bad), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"error: {bad}: file size: got 100 bytes; expected 53792 + 36 "
        "(header.body_size + header and checksum): the file is truncated"
    ]


def test_heartbeat_chunks_stay_ten_sigmas_below_the_threshold():
    assert safe_heartbeats(5, 100.0) == 1 and safe_heartbeats(10**6, 0.0) == 1
    for remaining, per in ((10**6, 100.0), (5000, 3.0), (300, 50.0), (40, 0.5)):
        mu = safe_heartbeats(remaining, per) * per
        assert mu + 10 * mu**0.5 + 10 <= remaining or safe_heartbeats(remaining, per) == 1
        assert mu >= 0.9 * (remaining - 10 * remaining**0.5 - 10) - per  # and not much below it
