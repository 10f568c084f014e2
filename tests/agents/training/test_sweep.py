"""The sweep's parts without Ray: grids, the trials' experiments, their values, the table; bad input in-process."""

from __future__ import annotations

import json

import pytest

from dcgym import sweep as sweep_cli
from dcgym.agents.evaluation.stats import mean_ci
from dcgym.agents.training.sweep import SweepSpec, make_table, parse_grid, run_metric, trial_metric
from dcgym.envs.error import InvalidConfigError

TINY = {"budget.iterations": 1, "evaluation.loads": [0.9]}


def test_grid_values_are_yaml_lists_and_the_points_their_product():
    grid = parse_grid(["hyperparameters.lr=1e-4,3e-4", "hyperparameters.hidden=[16],[32,32]"])
    assert grid == {"hyperparameters.lr": [1e-4, 3e-4], "hyperparameters.hidden": [[16], [32, 32]]}
    spec = SweepSpec.make("smoke", grid, [1, 2], TINY)
    assert spec.points() == [
        {"hyperparameters.lr": 1e-4, "hyperparameters.hidden": [16]},
        {"hyperparameters.lr": 1e-4, "hyperparameters.hidden": [32, 32]},
        {"hyperparameters.lr": 3e-4, "hyperparameters.hidden": [16]},
        {"hyperparameters.lr": 3e-4, "hyperparameters.hidden": [32, 32]},
    ]
    trial = spec.trial_experiment(3, 2)
    assert (trial.seed, trial.hyperparameters["lr"], trial.hyperparameters["hidden"]) == (2, 3e-4, [32, 32])
    assert trial.budget.iterations == 1 and trial.evaluation.workers == 0  # serial in the trial: trials are parallel
    assert SweepSpec.make("smoke", {}, [1], TINY).points() == [{}]  # seeds alone


@pytest.mark.parametrize(
    "items", [["lr"], ["=1,2"], ["a..b=1"], ["seed=1,2"], ["x=1", "x=2"], ["hyperparameters.lr="], ["k=[1"]]
)
def test_a_bad_grid_names_what_is_allowed(items):
    with pytest.raises(InvalidConfigError):
        parse_grid(items)


def test_every_trial_is_checked_as_train_py_checks_it():
    with pytest.raises(InvalidConfigError, match="hyperparameters.lr"):  # the second value is bad
        SweepSpec.make("smoke", {"hyperparameters.lr": [1e-4, -1]}, [1], TINY)
    with pytest.raises(InvalidConfigError, match="--seeds"):
        SweepSpec.make("smoke", {}, [1, 1], TINY)


def test_a_run_s_value_is_the_trained_policy_s_headline_over_loads_or_the_last_return(tmp_path):
    spec = SweepSpec.make("smoke", {}, [1], TINY)
    experiment = spec.trial_experiment(0, 1)
    assert trial_metric(experiment)["name"] == "latency_us.p99"
    (tmp_path / "evaluation").mkdir()
    cell = lambda policy, p99: {"policy": policy, "latency_us": {"p99": {"mean": p99}}}  # noqa: E731
    summary = [cell("ppo (trained)", 100.0), cell("po2", 1.0), cell("ppo (trained)", 300.0)]
    (tmp_path / "evaluation/results.json").write_text(json.dumps({"summary": summary}))
    assert run_metric(tmp_path, experiment) == 200.0
    no_eval = experiment.model_copy(update={"evaluation": experiment.evaluation.model_copy(update={"enabled": False})})
    (tmp_path / "metrics.csv").write_text("iteration,charts/return\n1,-5.0\n2,-3.5\n")
    assert trial_metric(no_eval)["higher_is_better"] and run_metric(tmp_path, no_eval) == -3.5


def test_the_table_has_a_row_per_point_with_mean_interval_and_seeds():
    spec = SweepSpec.make("smoke", {"hyperparameters.lr": [1e-4, 3e-4]}, [1, 2, 3], TINY)
    reports = {(0, s): {"value": v, "node_id": "n", "run": f"runs/point0_seed{s}"} for s, v in ((1, 2.0), (2, 4.0))}
    reports |= {(1, 3): {"value": 7.0, "node_id": "n", "run": "runs/point1_seed3"}}
    table = make_table(spec, reports)
    assert (table.trials, table.finished, table.complete) == (6, 3, False)
    first, second = table.rows
    assert first["mean"] == 3.0 and first["ci95"] == mean_ci([2.0, 4.0])["ci95"] and first["n"] == 2
    assert list(first["seeds"]) == ["1", "2"] and second["n"] == 1 and second["ci95"] is None
    md = table.markdown()
    assert "| hyperparameters.lr=0.0001 | 3 | 12.71 | 2 | 1: 2, 2: 4 |" in md and "(lower is better)" in md


BAD = {
    "unknown grid key": ["--config", "smoke", "--grid", "hyperparameters.lrr=1e-4,3e-4"],
    "bad grid value": ["--config", "smoke", "--grid", "hyperparameters.lr=1e-4,-1"],
    "malformed grid": ["--config", "smoke", "--grid", "hyperparameters.lr"],
    "bad seeds": ["--config", "smoke", "--seeds", "1,x"],
    "bad set": ["--config", "smoke", "--set", "budget.iteratons=3"],
    "no config": ["--seeds", "1"],
    "resume a non-sweep folder": ["--resume", "no_such_sweep"],
    "resume with a grid": ["--resume", "no_such_sweep", "--grid", "seed=1"],
}


@pytest.mark.parametrize("args", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_error_line_and_status_2_before_ray_starts(tmp_path, monkeypatch, capsys, args):
    monkeypatch.chdir(tmp_path)
    status = sweep_cli.run([*args, *(["--out", "s"] if "--resume" not in args else [])], prog="sweep.py")
    out, err = capsys.readouterr()
    assert status == 2 and out == "", err
    (line,) = err.splitlines()
    assert line.startswith("error: "), err
    assert not (tmp_path / "s").exists()
