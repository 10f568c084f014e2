"""The team reward of Malcolm's game, computed once in C++ (rack/game.hpp), against an independent recomputation.

Every step of rack_v0 and RackDispatch-v0 gets its reward from the engine. Here
the same step's true loads and counts (from the env's info) go through a plain
Python transcription of Malcolm eq. (1) and the authors' code's variants; the
two agree to the last bit or to 1e-12 relative, for every reward variant and
explicitly set costs.
"""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.envs import rack_v0
from dcgym.envs.rack.game import REWARD_COSTS


def reference_reward(kind, x, previous, counts, costs, latency, completed):
    """Eq. (1) and the code's variants, written out: x are the true loads in load units."""
    n = len(x)
    imbalance = sum((a - b) ** 2 for a in x for b in x)  # over ordered pairs
    migration, steal, failed_steal, drop = costs
    cost = (
        counts["migrations"] * migration
        + (counts["steals"] + counts["failed_steals"]) * steal
        + counts["failed_steals"] * failed_steal
        + counts["dropped"] * drop
    )
    if kind == "utility":
        return -imbalance - cost, imbalance
    if kind == "imbalance_delta":
        return (previous - imbalance) / max(1, n * (n - 1)) - cost, imbalance
    return -(latency if completed else 0.0) - cost, imbalance


@pytest.mark.parametrize("kind", ["utility", "imbalance_delta", "neg_p99", "neg_mean"])
@pytest.mark.parametrize("costs", [None, {"migration_cost": 0.01, "steal_cost": 0.02, "drop_cost": 3.0}])
def test_the_engine_reward_equals_the_reference_every_step(kind, costs):
    env = rack_v0.parallel_env(
        scenario="malcolm_hetero_paper_exp", load=0.95, reward=kind, max_steps=60, **(costs or {})
    )
    expected_costs = env.config.costs
    if costs:
        assert expected_costs.migration == 0.01 and expected_costs.drop == 3.0
    else:
        assert expected_costs == REWARD_COSTS[kind]
    rng = np.random.default_rng(3)
    _, infos = env.reset(seed=11)
    previous = sum((a - b) ** 2 for a in infos["node_0"]["true_loads"] for b in infos["node_0"]["true_loads"])
    scale = env.game.scale
    checked = 0
    while env.agents:
        actions = {a: rng.normal(0, 3, env.action_space(a).shape).astype(np.float32) for a in env.agents}
        _, rewards, _, _, infos = env.step(actions)
        info = infos["node_0"]
        counts = {k: sum(int(infos[a][k]) for a in infos) for k in ("migrations", "steals", "failed_steals", "dropped")}
        latency = (info["latency_p99_us"] if kind == "neg_p99" else info["latency_mean_us"]) * scale
        want, imbalance = reference_reward(
            kind, list(info["true_loads"]), previous, counts, expected_costs, latency, info["completed"]
        )
        assert rewards["node_0"] == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert len(set(rewards.values())) == 1  # a team reward
        if kind == "imbalance_delta":
            previous = imbalance
        checked += 1
    assert checked == 60
