"""Distr-LB learns: two LBs, a skewed two-server cluster, weights that beat equal weights (fixed seed, stated margin).

Each LB's independent Q-learner, on its own reward (its flows' mean FCT), must end up putting
more weight on the 3-worker server than on the 1-worker one in most decision
periods, and its greedy policy must halve the mean FCT of equal weights on
other seeds' flows.
"""

from __future__ import annotations

import numpy as np
import yaml

from dcgym.agents.policies.checkpoints import TrainedPolicy
from dcgym.agents.training import train
from dcgym.agents.training.experiment import load_experiment
from dcgym.envs import lb_v0

# One 1-worker and one 3-worker server, Exp(20 ms) flows at load 0.6 of the 4 workers: equal weights send half
# the traffic (1.2 x its capacity) to the small server; weights 1.0 and 2.0 send it a third (0.8 x). The flows
# are short next to the 1 s decision period, so a period's reward answers mostly to that period's weights: a
# test of the learning machinery, sized to run in well under a minute.
SKEWED = {
    "kind": "lb",
    "description": "Test: App. C.1 model, 2 LBs over a 1-worker and a 3-worker server",
    "servers": [{"count": 1, "workers": 1}, {"count": 1, "workers": 3}],
    "application": {"stages": 1, "cpu": {"dist": "exp", "mean_us": 20_000}},
    "lbs": 2,
    "decision_period_us": 1_000_000,
    "observation": {"fd_min_us": 0},
    "loads": [0.6],
    "episode_us": 20_000_000,
}
MARGIN = 0.5  # the learned weights' mean FCT must be below half of equal weights' (measured: 1.5%: 0.054 s vs 3.66 s)


def mean_fct(scenario: str, actions: dict[str, np.ndarray], seeds=(101, 102, 103)) -> float:
    """Mean FCT (s) of 60 s runs with fixed actions, weighted-random dispatch."""
    fcts = []
    for seed in seeds:
        env = lb_v0.parallel_env(scenario=scenario, max_steps=60)
        env.reset(seed=seed)
        while env.agents:
            _, _, _, _, infos = env.step(actions)
        fcts.append(infos["lb_0"]["fct_us"]["mean"] / 1e6)
    return float(np.mean(fcts))


def test_two_lbs_learn_weights_that_beat_equal_weights_on_a_skewed_pair(ray_session, tmp_path):
    scenario = tmp_path / "skewed.yaml"
    scenario.write_text(yaml.safe_dump(SKEWED))
    experiment = load_experiment(
        {
            "env": "lb_v0",
            "scenario": str(scenario),
            # fct, the experiments' reward: each LB's own mean FCT. With VBF (the paper's) and episodes that are new
            # every iteration, 2 of 4 training seeds left one LB at equal weights after 60 iterations (measured; the
            # same trace every iteration, before the runners seeded once, hid it); with fct, 6 of 6 learn here.
            "env_args": {"action_type": "discrete", "dispatch": "weights", "reward": "fct"},
            "algorithm": "distr_lb",
            "hyperparameters": {  # a small, fast Distr-LB: one episode of 20 steps per iteration
                "fc_hidden": 32,
                "lr": 1e-3,
                "gamma": 0.5,
                "batch_episodes": 16,
                "learning_starts": 4,
                "updates_per_episode": 5,
                "target_update_interval": 50,
                "epsilon_timesteps": 3000,
            },
            "seed": 1,
            "budget": {"iterations": 60},
            "checkpoint_every": 0,
            "evaluation": {"enabled": False},
        }
    )
    result = train(experiment, out=tmp_path / "runs", progress=False)
    policy = TrainedPolicy(result.run_dir)
    learned_fct, shares = [], []
    for seed in (101, 102, 103):  # the greedy policy acting each period on other seeds' flows
        env = lb_v0.parallel_env(scenario=str(scenario), max_steps=60)
        obs, _ = env.reset(seed=seed)
        policy.reset()
        while env.agents:
            actions = policy.act(obs, {a: env.action_space(a) for a in env.agents})
            shares.append([lb_v0.WEIGHT_LEVELS[x[1]] > lb_v0.WEIGHT_LEVELS[x[0]] for x in actions.values()])
            obs, _, _, _, infos = env.step(actions)
        learned_fct.append(infos["lb_0"]["fct_us"]["mean"] / 1e6)
    # more weight on the 3-worker server in most periods, per LB (a single state's argmax can be a tie)
    assert (np.mean(shares, axis=0) > 0.5).all(), np.mean(shares, axis=0)
    equal = {a: np.zeros(2, np.int64) for a in env.possible_agents}
    assert float(np.mean(learned_fct)) < MARGIN * mean_fct(str(scenario), equal)
