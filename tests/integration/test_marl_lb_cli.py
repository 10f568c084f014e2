"""The multi-LB learners through train.py as users run them: a tiny run of each, its policy file evaluated, and
malformed experiments refused with one line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
EXPERIMENTS = ROOT / "configs/experiments"

# Each method's smallest run on lb_sim: 2 iterations of short episodes, a 300-flow evaluation against SED.
COMMON = [
    "--set",
    "env_args.max_steps=10",
    "--set",
    "resources.num_envs_per_env_runner=1",
    "--set",
    "evaluation.tasks=300",
    "--set",
    "evaluation.seeds=[1]",
    "--set",
    "evaluation.heuristics=[sed]",
    "--set",
    "evaluation.workers=0",
    "--set",
    "checkpoint_every=1",
    "--iterations",
    "2",
]
TINY = {
    "distr_lb": [
        "distr_lb_sim.yaml",
        "hyperparameters.learning_starts=1",
        "hyperparameters.batch_episodes=2",
        "hyperparameters.updates_per_episode=2",
        "hyperparameters.fc_hidden=8",
    ],
    "centr_lb": [
        "centr_lb_sim.yaml",
        "hyperparameters.learning_starts=1",
        "hyperparameters.batch_episodes=2",
        "hyperparameters.updates_per_episode=2",
        "hyperparameters.fc_hidden=8",
    ],
    "distr_lb_ppo": [
        "distr_lb_sim.yaml",
        "algorithm=distr_lb_ppo",
        "hyperparameters={train_batch_size: 20, minibatch_size: 10, num_epochs: 1, hidden: [8]}",
    ],
    "qmix_lb": [
        "qmix_lb_sim.yaml",
        "hyperparameters.learning_starts=1",
        "hyperparameters.batch_episodes=2",
        "hyperparameters.updates_per_episode=2",
        "hyperparameters.gru_hidden=8",
    ],
    "rlb_sac": [
        "rlb_sac_sim.yaml",
        "hyperparameters.learning_starts=4",
        "hyperparameters.steps_per_iteration=10",
        "hyperparameters.hidden=[16]",
    ],
}


def cli(script: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / script), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=ENV
    )


def tiny_args(method: str, out: Path) -> list[str]:
    config, *sets = TINY[method]
    return ["--config", str(EXPERIMENTS / config), "--out", str(out), *COMMON, *(x for s in sets for x in ("--set", s))]


@pytest.mark.parametrize("method", list(TINY))
def test_train_py_trains_checkpoints_and_evaluates_each_method(method, tmp_path):
    proc = cli("train.py", *tiny_args(method, tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = Path(proc.stdout.strip().splitlines()[-1].removeprefix("run folder: "))
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
    doc = json.loads((run / "evaluation/results.json").read_text())
    policies = {row["policy"] for row in doc["results"]}
    assert policies == {f"{method} (trained)", "sed"}  # (TINY's first --set algorithm=... names it)
    for row in doc["results"]:
        fct = row["fct_s"]
        assert 0 < fct["p50"] <= fct["p95"] <= fct["p99"], fct  # seconds, p95 between p50 and p99


def test_a_distr_lb_policy_file_acts_as_its_checkpoint(tmp_path):
    proc = cli("train.py", *tiny_args("distr_lb", tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = Path(proc.stdout.strip().splitlines()[-1].removeprefix("run folder: "))
    exported = cli("benchmarks/build_zoo.py", str(run), "--out", str(tmp_path / "zoo"))
    assert exported.returncode == 0, exported.stderr[-2000:]
    card = (tmp_path / "zoo/distr_lb_sim.md").read_text()
    assert "mlp, 2 agents" in card and "zoo:distr_lb_sim:dispatch=sed" in card
    results = {}
    for name, spec in (("file", str(tmp_path / "zoo/distr_lb_sim.dcpol") + ":dispatch=sed"), ("checkpoint", str(run))):
        out = tmp_path / name
        proc = cli(
            "evaluate.py",
            "--policy",
            spec,
            "--scenario",
            "lb_sim",
            "--loads",
            "0.845",
            "--tasks",
            "300",
            "--workers",
            "0",
            "--out",
            str(out),
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        results[name] = json.loads((out / "results.json").read_text())["results"][0]
    assert results["file"]["policy"] == "distr_lb_sim (file)"
    assert results["file"]["fct_s"] == results["checkpoint"]["fct_s"]  # the C++ runtime acts as the torch module


@pytest.mark.parametrize(
    "config,sets,message",
    [
        ("qmix_lb_sim.yaml", ["hyperparameters.td_lamda=0.5"], 'did you mean "td_lambda"'),
        ("qmix_lb_sim.yaml", ["hyperparameters.td_lambda=1.5"], "hyperparameters.td_lambda: got 1.5"),
        ("distr_lb_sim.yaml", ["env_args.action_type=continuous"], "distr_lb has one head per server"),
        ("distr_lb_sim.yaml", ["env_args.dispatch=jsq"], 'dispatch: got "jsq"'),
        ("centr_lb_sim.yaml", ["env=lb_v0"], "lb_central_v0 (where centr_lb trains)"),
        ("rlb_sac_sim.yaml", ["env_args.action_type=discrete"], "rlb_sac needs them"),
        ("distr_lb_sim.yaml", ["hyperparameters.policy_sharing=shared"], "hyperparameters.policy_sharing"),
        (
            "distr_lb_sim.yaml",
            ["env_args.overrides={capacity_changes: [{at_us: 0, group: 3, speed: 0.5}]}"],
            "capacity_changes.0.group: got 3",
        ),
    ],
)
def test_malformed_experiments_exit_2_with_one_line(config, sets, message, tmp_path, capsys):
    from dcgym.train import run

    status = run(
        ["--config", str(EXPERIMENTS / config), "--out", str(tmp_path), *(x for s in sets for x in ("--set", s))]
    )
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and message in err, err
    assert not list(tmp_path.iterdir())  # no run folder
