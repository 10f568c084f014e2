"""Adding a learning system is a module of its own and one line in the registry: a toy one trains with train.py's
library, its checkpoint is evaluated against a heuristic and exported through the module's own capability."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dcgym.agents import algorithms
from dcgym.agents.export import export_policy, read_policy
from dcgym.agents.training import train
from dcgym.agents.training.experiment import load_experiment

HERE = Path(__file__).resolve().parent


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))  # the toy's module, importable as RLlib restores its modules
    import toy_system

    monkeypatch.setattr(algorithms, "LEARNING_SYSTEMS", [*algorithms.LEARNING_SYSTEMS, toy_system.TOY])  # the line
    yield toy_system
    sys.modules.pop("toy_system", None)


@pytest.mark.usefixtures("ray_session")
def test_a_toy_learning_system_trains_evaluates_and_exports(toy, tmp_path):
    experiment = load_experiment(
        {
            "env": "rack_v0",
            "scenario": "malcolm_homog_exp",
            "env_args": {"overrides": {"nodes.0.count": 2}, "load": 0.9, "max_steps": 50},
            "algorithm": "toy_ppo",
            "hyperparameters": {"train_batch_size": 100, "minibatch_size": 50, "num_epochs": 1, "hidden": [8]},
            "budget": {"iterations": 2},
            "evaluation": {"heuristics": ["po2"], "loads": [0.9], "tasks": 2000, "workers": 0},
        }
    )
    assert experiment.hyperparameters["lr"] == 3e-4  # its schema filled in the defaults
    result = train(experiment, out=tmp_path, progress=False)
    assert result.iteration == 2
    rows = {r["policy"]: r for r in result.evaluation["results"]}
    assert set(rows) == {"toy_ppo (trained)", "po2"}
    assert rows["toy_ppo (trained)"]["tasks_completed"] > 1000  # the same 2000 arrivals as po2, 10% warm-up
    assert rows["toy_ppo (trained)"]["tasks_warmup"] == rows["po2"]["tasks_warmup"] == 200

    policy = read_policy(export_policy(result.run_dir, tmp_path / "toy.dcpol"))
    assert toy.ToyModule.exported == 1  # the module said its own policy file: its spec names none
    assert policy.kind == "mlp" and policy.num_agents == 2
