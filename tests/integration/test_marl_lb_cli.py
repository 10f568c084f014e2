"""The multi-LB learners through train.py as users run them: a tiny run of each, its policy file evaluated, and
malformed experiments refused with one line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# One worker runs this module's trainings, so the Distr-LB run is trained once and shared.
pytestmark = pytest.mark.xdist_group("marl_lb_cli")

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


def cli(script: str, *args: str, timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**ENV, **env},
    )


def tiny_args(method: str, out: Path) -> list[str]:
    config, *sets = TINY[method]
    return ["--config", str(EXPERIMENTS / config), "--out", str(out), *COMMON, *(x for s in sets for x in ("--set", s))]


def tiny_run(method: str, out: Path) -> Path:
    """The run folder of ``method``'s tiny run under ``out``, trained by ``python train.py``."""
    proc = cli("train.py", *tiny_args(method, out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1].removeprefix("run folder: "))


@pytest.fixture(scope="module")
def distr_lb_run(tmp_path_factory) -> Path:
    """One tiny Distr-LB run for the tests of this module (with xdist, per worker)."""
    return tiny_run("distr_lb", tmp_path_factory.mktemp("distr_lb"))


@pytest.mark.parametrize("method", list(TINY))
def test_train_py_trains_checkpoints_and_evaluates_each_method(method, tmp_path, request, cli_here):
    """Distr-LB trained by ``python train.py``; the others by its command line in this process, on the session's
    Ray cluster (``cli_here``: starting Python, torch and Ray again costs about 15 s a run)."""
    if method == "distr_lb":
        run = request.getfixturevalue("distr_lb_run")
    else:
        request.getfixturevalue("ray_session")
        request.getfixturevalue("storage")
        proc = cli_here("train.py", *tiny_args(method, tmp_path))
        assert proc.returncode == 0, proc.stderr[-3000:]
        run = Path(proc.stdout.strip().splitlines()[-1].removeprefix("run folder: "))
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
    doc = json.loads((run / "evaluation/results.json").read_text())
    policies = {row["policy"] for row in doc["results"]}
    assert policies == {f"{method} (trained)", "sed"}  # (TINY's first --set algorithm=... names it)
    for row in doc["results"]:
        fct = row["fct_s"]
        assert 0 < fct["p50"] <= fct["p95"] <= fct["p99"], fct  # seconds, p95 between p50 and p99


def test_a_distr_lb_policy_file_acts_as_its_checkpoint(tmp_path, distr_lb_run, cli_here):
    """build_zoo.py and evaluate.py run in this process (``cli_here``); train.py ran as a command."""
    run = distr_lb_run
    exported = cli_here("benchmarks/build_zoo.py", str(run), "--out", str(tmp_path / "zoo"))
    assert exported.returncode == 0, exported.stderr[-2000:]
    card = (tmp_path / "zoo/distr_lb_sim.md").read_text()
    assert "mlp, 2 agents" in card and "--policy zoo:distr_lb_sim --scenario" in card
    from dcgym.agents.policy_format import read_policy

    assert read_policy(tmp_path / "zoo/distr_lb_sim.dcpol").settings == {"env": "lb_v0", "dispatch": "sed"}
    assert "scenario `lb_sim`, reward `fct`" in card  # the provenance names the reward
    assert "Trained with: `python train.py --config " in card and "--set env_args.max_steps=10" in card
    renamed = cli_here("benchmarks/build_zoo.py", str(run), "--out", str(tmp_path / "zoo"), "--name", "renamed")
    assert renamed.returncode == 0 and (tmp_path / "zoo/renamed.md").read_text().startswith("# renamed\n")
    assert "--policy zoo:renamed --scenario" in (tmp_path / "zoo/renamed.md").read_text()
    two = cli_here("benchmarks/build_zoo.py", str(run), str(run), "--out", str(tmp_path / "zoo"), "--name", "x")
    assert two.returncode == 2 and two.stderr.startswith("error: --name: got")
    results = {}
    specs = (
        ("file", str(tmp_path / "zoo/distr_lb_sim.dcpol")),  # the file records dispatch=sed
        ("checkpoint", str(run)),
        ("zoo", "zoo:distr_lb_sim"),
    )
    for name, spec in specs:
        out = tmp_path / name
        proc = cli_here(
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
            env={"DCGYM_ZOO": str(tmp_path / "zoo")},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        results[name] = json.loads((out / "results.json").read_text())["results"][0]
    assert results["file"]["policy"] == "distr_lb_sim (file)"
    assert results["file"]["fct_s"] == results["checkpoint"]["fct_s"]  # the C++ runtime acts as the torch module
    assert results["zoo"]["fct_s"] == results["file"]["fct_s"]


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


def test_the_multi_lb_zoo_entries_are_small_and_say_how_they_were_made():
    from dcgym.agents.policies.zoo import list_zoo, zoo_dir
    from dcgym.agents.policy_format import read_policy

    names = [n for n in list_zoo() if n.startswith("multilb_")]
    assert names, "no multi-LB zoo entries"
    for name in names:
        card = (zoo_dir() / f"{name}.md").read_text()
        assert (zoo_dir() / f"{name}.dcpol").stat().st_size < 300_000, name  # no large data in git
        assert "Trained with: `python train.py --config configs/experiments/" in card, name
        assert "seed " in card and "budget " in card and "± " in card, name
        assert read_policy(zoo_dir() / f"{name}.dcpol").settings["dispatch"] == "sed", name  # as trained
        assert f"--policy zoo:{name} --scenario" in card, name  # no compensating options
