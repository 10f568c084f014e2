"""Same seed, same weights: the algorithms that learn from a replay buffer train bit for bit alike twice.

RLlib's episode replay buffers (rlb_sac's) sample with an unseeded generator, which the trainer seeds from the
experiment's seed; the transition replays (osml_dqn's, agents/rl/transition_replay.py) draw from the config's seed.
Each case trains past its first updates (learning starts early) and compares every weight exactly.
"""

from __future__ import annotations

import pytest
import torch

from dcgym.agents.algorithms import build_config
from dcgym.agents.training.experiment import load_experiment

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

CASES = {
    "osml_dqn": (
        "configs/experiments/osml_dqn_single.yaml",
        {"hyperparameters.learning_starts": 20, "hyperparameters.train_batch_size": 16},
        3,
    ),
    "osml_dqn_mixes": (  # three services sharing one Model-C: each one's transitions in the shared replay
        "configs/experiments/osml_dqn_mixes.yaml",
        {
            "hyperparameters.learning_starts": 20,
            "hyperparameters.steps_per_iteration": 40,
            "hyperparameters.train_batch_size": 16,
            "hyperparameters.target_sync": 40,
        },
        2,
    ),
    "rlb_sac": (
        "configs/experiments/rlb_sac_sim.yaml",
        {
            "hyperparameters.learning_starts": 20,
            "hyperparameters.train_batch_size": 16,
            "hyperparameters.hidden": [16],
            "hyperparameters.steps_per_iteration": 40,
            "hyperparameters.rollout_fragment_length": 8,
        },
        2,
    ),
}


def _weights_after_training(path: str, overrides: dict, iterations: int) -> dict[str, torch.Tensor]:
    exp = load_experiment(path, {"resources.num_env_runners": 0, **overrides})
    algo = build_config(exp).build_algo()
    try:
        for _ in range(iterations):
            result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] > 20  # past learning_starts: the buffer was sampled
        learner = algo.learner_group._learner
        return {
            f"{mid}.{name}": p.detach().clone()
            for mid, module in learner.module.items()
            for name, p in module.state_dict().items()
            if isinstance(p, torch.Tensor)
        }
    finally:
        algo.stop()


@pytest.mark.parametrize("algorithm", sorted(CASES))
def test_two_runs_of_one_seed_train_identical_weights(ray_session, storage, algorithm):
    path, overrides, iterations = CASES[algorithm]
    first = _weights_after_training(path, overrides, iterations)
    second = _weights_after_training(path, overrides, iterations)
    assert first.keys() == second.keys() and first
    for name in first:
        assert torch.equal(first[name], second[name]), name
