"""CountingEnvRunner logs RLlib's sample counters once per sample() call: same counts, same training, bit for bit."""

from __future__ import annotations

import pytest
import torch

from dcgym.agents.algorithms import build_config
from dcgym.agents.training.experiment import load_experiment

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

COUNTERS = ("num_env_steps_sampled_lifetime", "num_agent_steps_sampled_lifetime", "num_episodes_lifetime")


def _train(runner_cls) -> tuple[dict, dict]:
    """Weights and sample counters after 3 iterations of a small OSML DQN (learning starts in the second)."""
    exp = load_experiment(
        "configs/experiments/osml_dqn_single.yaml",
        {
            "resources.num_env_runners": 0,
            "hyperparameters.learning_starts": 20,
            "hyperparameters.train_batch_size": 16,
            "hyperparameters.steps_per_iteration": 24,
        },
    )
    config = build_config(exp)
    assert config.is_multi_agent
    if runner_cls is not None:
        config.env_runners(env_runner_cls=runner_cls)
    algo = config.build_algo()
    try:
        for _ in range(3):
            result = algo.train()["env_runners"]
        learner = algo.learner_group._learner
        weights = {
            f"{mid}.{name}": p.detach().clone()
            for mid, module in learner.module.items()
            for name, p in module.state_dict().items()
            if isinstance(p, torch.Tensor)
        }
        return weights, {key: result[key] for key in COUNTERS}
    finally:
        algo.stop()


def test_counting_env_runner_trains_and_counts_as_rllibs_own(ray_session, storage):
    from dcgym.agents.rl.env_runner import CountingEnvRunner

    weights, counts = _train(CountingEnvRunner)
    reference_weights, reference_counts = _train(None)
    assert counts == reference_counts and counts["num_env_steps_sampled_lifetime"] >= 72
    assert counts["num_episodes_lifetime"] >= 3  # 20-step episodes: some ended, and were counted alike
    assert weights.keys() == reference_weights.keys() and weights
    for name, value in weights.items():
        assert torch.equal(value, reference_weights[name]), name
