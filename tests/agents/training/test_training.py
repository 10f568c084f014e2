"""The training library's parts: experiment files, --set parsing, the algorithm registry, metrics, W&B."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from dcgym.agents.algorithms import LEARNING_SYSTEMS, algorithm, algorithms
from dcgym.agents.rl.baselines import PPOHyperparameters, SACHyperparameters
from dcgym.agents.training.experiment import list_experiments, load_experiment, parse_assignments
from dcgym.agents.training.logs import MetricsCsv, iteration_metrics
from dcgym.envs.error import InvalidConfigError

ROOT = Path(__file__).resolve().parents[3]
SMOKE = ROOT / "configs/experiments/smoke.yaml"
MINIMAL = {"env": "rack_v0", "scenario": "malcolm_homog_exp", "algorithm": "ppo"}


def test_set_values_are_yaml_and_keys_dotted():
    assert parse_assignments(
        [
            "budget.iterations=5",
            "env_args.obs_extras=[rank, capacity]",
            "seed=7",
            "evaluation.enabled=false",
            "hyperparameters.grad_clip=null",
            "description=a=b",
        ]
    ) == {
        "budget.iterations": 5,
        "env_args.obs_extras": ["rank", "capacity"],
        "seed": 7,
        "evaluation.enabled": False,
        "hyperparameters.grad_clip": None,
        "description": "a=b",
    }
    for bad in ("budget.iterations", "=3", "budget..iterations=3"):
        with pytest.raises(InvalidConfigError, match=r"^--set: got"):
            parse_assignments([bad])


def test_experiment_defaults_are_filled_in_and_the_resolved_yaml_loads_back(tmp_path):
    experiment = load_experiment(MINIMAL)
    assert experiment.hyperparameters == PPOHyperparameters().model_dump(mode="json")
    assert experiment.budget.iterations == 100 and experiment.evaluation.tasks == 200_000
    assert experiment.evaluation.heuristics == ["po2", "jsq", "sed"]  # the rack family's baselines
    assert experiment.scenario_name == "malcolm_homog_exp"
    (tmp_path / "config.yaml").write_text(experiment.to_yaml())
    assert load_experiment(tmp_path / "config.yaml").model_dump() == experiment.model_dump()


@pytest.mark.parametrize(
    "name,heuristics",
    [
        ("smoke", ["po2", "jsq"]),  # named in the file
        ("osml_dqn_single", ["parties"]),  # left out: the env's family's baselines
    ],
)
def test_the_final_evaluation_compares_with_the_experiments_or_its_familys_baselines(name, heuristics):
    experiment = load_experiment(name)
    assert experiment.evaluation.heuristics == heuristics
    assert f"heuristics:\n{''.join(f'  - {h}' + chr(10) for h in heuristics)}" in experiment.to_yaml()


def test_experiment_errors_name_the_field():
    cases = {
        "algorithm": ({"algorithm": "ppp"}, 'algorithm: got "ppp"; did you mean "ppo"?'),
        "hyperparameter": ({"hyperparameters": {"lrr": 1}}, 'hyperparameters.lrr: got 1; did you mean "lr"?'),
        "budget": ({"budget": {}}, "budget: got no limit; allowed: at least one of iterations, timesteps"),
        "env": ({"env": "lb_v0", "algorithm": "malcolm"}, 'env: got "lb_v0"; allowed: rack_v0'),
        "scenario twice": ({"env_args": {"scenario": "mm16"}}, "env_args.scenario: got"),
        "sharing": ({"hyperparameters": {"policy_sharing": "some"}}, "hyperparameters.policy_sharing: got"),
    }
    for name, (change, message) in cases.items():
        with pytest.raises(InvalidConfigError) as info:
            load_experiment({**MINIMAL, **change})
        assert str(info.value).startswith(message), name


def test_registry_has_every_learning_systems_algorithms_once_and_schemas_for_the_baselines():
    names = [spec.name for system in LEARNING_SYSTEMS for spec in system.algorithms]
    assert len(names) == len(set(names)) == len(algorithms())
    assert set(names) >= {"malcolm", "ppo", "sac", "auto_srla", "auto_lrla", "osml_dqn", "distr_lb", "qmix_lb"}
    assert algorithm("ppo").hyperparameters is PPOHyperparameters
    assert algorithm("sac").hyperparameters is SACHyperparameters
    for schema in (PPOHyperparameters, SACHyperparameters):  # CleanRL style: every field documented
        assert all(field.description for field in schema.model_fields.values()), schema.__name__
    assert "smoke" in list_experiments() and "malcolm_hetero_exp" in list_experiments()


def test_iteration_metrics_names_and_averages_learner_stats():
    result = {
        "training_iteration": 3,
        "num_env_steps_sampled_lifetime": 300.0,
        "time_total_s": 1.5,
        "time_this_iter_s": 0.5,
        "env_runners": {
            "num_episodes_lifetime": 6.0,
            "agent_episode_returns_mean": {"a": -1.0, "b": -3.0},
            "episode_return_mean": -4.0,
            "episode_len_mean": 50.0,
            "num_env_steps_sampled": 100,
            "dcgym_imbalance": 0.25,
            "dcgym_p99_us": 400.0,
        },
        "learners": {
            "__all_modules__": {"num_env_steps_trained": 100},
            "a": {"policy_loss": 1.0, "vf_loss": 2.0, "num_module_steps_trained": 50, "weights_seq_no": 3.0},
            "b": {"policy_loss": 3.0, "vf_loss": float("nan")},
        },
    }
    assert iteration_metrics(result) == {
        "iteration": 3.0,
        "timesteps": 300.0,
        "episodes": 6.0,
        "time_s": 1.5,
        "charts/return": -2.0,
        "charts/team_return": -4.0,
        "charts/episode_length": 50.0,
        "charts/imbalance": 0.25,
        "charts/p99_us": 400.0,
        "charts/env_steps_per_s": 200.0,
        "losses/policy_loss": 2.0,
        "losses/vf_loss": 2.0,
    }


def test_metrics_csv_widens_its_header_and_drops_rows_after_a_resume_point(tmp_path):
    path = tmp_path / "metrics.csv"
    log = MetricsCsv(path)
    log.append({"iteration": 1, "timesteps": 10})
    log.append({"iteration": 2, "timesteps": 20, "charts/return": -1.5})
    log.append({"iteration": 3, "timesteps": 30, "charts/return": -1.0})
    assert path.read_text().splitlines() == [
        "iteration,timesteps,episodes,time_s,charts/return",
        "1,10,,,",
        "2,20,,,-1.5",
        "3,30,,,-1.0",
    ]
    resumed = MetricsCsv(path, keep_through=2)
    assert [r["iteration"] for r in resumed.rows] == [1.0, 2.0]
    assert len(path.read_text().splitlines()) == 3


def test_wandb_logs_every_iteration_offline_without_an_account(ray_session, tmp_path, monkeypatch):
    from dcgym.agents.training import train

    calls: dict = {"log": []}

    class FakeRun:
        id = "run123"

        def log(self, metrics, step):
            calls["log"].append((step, metrics))

        def finish(self):
            calls["finished"] = True

    def init(**kwargs):
        calls["init"] = kwargs
        return FakeRun()

    def no_account():
        raise RuntimeError("api_key not configured")

    fake = types.SimpleNamespace(init=init, util=types.SimpleNamespace(generate_id=lambda: "run123"), Api=no_account)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    experiment = load_experiment(SMOKE, {"evaluation.enabled": False, "budget.iterations": 1})
    result = train(experiment, out=tmp_path, use_wandb=True, progress=False)
    assert calls["init"]["mode"] == "offline" and calls["init"]["dir"] == str(result.run_dir)
    assert (calls["init"]["project"], calls["init"]["name"], calls["init"]["id"]) == (
        "dcgym",
        result.run_dir.name,
        "run123",
    )
    assert [step for step, _ in calls["log"]] == [1] and "charts/return" in calls["log"][0][1]
    assert calls["finished"] and (result.run_dir / "wandb_id.txt").read_text().strip() == "run123"


def test_deterministic_actions_are_the_modes_squashed_like_the_samples():
    import torch
    from ray.rllib.core.distribution.torch.torch_distribution import TorchDiagGaussian, TorchSquashedGaussian

    from dcgym.agents.policies.checkpoints import deterministic_action

    inputs = torch.tensor([[2.0, -0.5, -30.0, -30.0]])  # means (2, -0.5), tiny log stds (RLlib clamps them)
    squashed = TorchSquashedGaussian.from_logits(inputs)
    mode = deterministic_action(squashed)
    assert torch.allclose(mode, torch.tanh(torch.tensor([[2.0, -0.5]])))  # not the raw mean 2.0
    assert torch.allclose(mode, squashed.sample(), atol=0.01)  # the samples gather around it
    assert torch.equal(deterministic_action(TorchDiagGaussian.from_logits(inputs)), torch.tensor([[2.0, -0.5]]))


def test_a_learning_curve_without_an_ended_episode_says_so_instead_of_empty_axes(tmp_path, monkeypatch):
    from dcgym.agents.training import plots

    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or Path(path))
    rows = [{"iteration": 1.0, "timesteps": 100.0}, {"iteration": 2.0, "timesteps": 200.0}]
    plots.plot_learning_curve(rows, tmp_path / "curve.png")
    notes = [t.get_text() for ax in figures[0].axes for t in ax.texts]
    assert notes[0] == "no return per agent yet:\nno episode ended\nin 2 iterations" and len(notes) == 3


def test_the_learning_curves_top_axis_reads_wall_time_at_each_rows_env_steps():
    """The top axis maps a row's env steps to its time_s exactly (and back), in minutes past 10 minutes; rows that
    do not both rise get no axis."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from dcgym.agents.training.plots import wall_time_axis

    rows = [{"timesteps": 100.0 * i, "time_s": 7.0 * i + (i > 5) * 3.0} for i in range(1, 11)]
    top = wall_time_axis(Figure().subplots(), rows)
    forward, inverse = top._functions
    steps = np.array([r["timesteps"] for r in rows])
    assert np.allclose(forward(steps), [r["time_s"] for r in rows])
    assert np.allclose(inverse(forward(np.array([50.0, 555.0, 1200.0]))), [50.0, 555.0, 1200.0])  # beyond too
    assert top.get_xlabel() == "training wall time (s)"
    long = [{"timesteps": r["timesteps"], "time_s": 100.0 * r["time_s"]} for r in rows]
    top = wall_time_axis(Figure().subplots(), long)
    assert top.get_xlabel() == "training wall time (min)" and np.isclose(top._functions[0](1000.0), 7300 / 60)
    assert wall_time_axis(Figure().subplots(), [*rows[:3], rows[1]]) is None  # env steps going back
    assert wall_time_axis(Figure().subplots(), [{"timesteps": 1.0, "time_s": None}, rows[0]]) is None
