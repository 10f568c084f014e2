"""RackController (dcgym/rack/controller.hpp): Malcolm's policy and learning driving a RackSim in C++.

The controller must act exactly as rack_v0 + MalcolmRLModule would on the
same observations, give RackSim's own numbers when its tables are fixed, and
learn online.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from dcgym.agents.malcolm.malcolm_rl_module import MalcolmRLModule
from dcgym.cpp_core import MalcolmLearner, RackController, RackSim
from dcgym.envs.rack.game import RackGame

HETERO = {"scenario": "malcolm_hetero_paper_exp", "load": 0.9}
THREE_NODES = {
    "scenario": "malcolm_hetero_paper_exp",
    "overrides": {"nodes": [{"count": 1, "workers": 4}, {"count": 2, "workers": 2}]},
    "load": 0.95,
}
# tests/agents/test_malcolm.py's tiny heterogeneous rack: a 4-worker and a 1-worker node, 80% of tasks to the slow one.
TWO_NODES = {
    "scenario": "malcolm_hetero_paper_exp",
    "overrides": {
        "nodes": [{"count": 1, "workers": 4, "queue_capacity": 128}, {"count": 1, "workers": 1, "queue_capacity": 32}],
        "entry": {"kind": "nodes", "split": [0.2, 0.8]},
    },
    "load": 0.8,
}


def _engine_config(env: dict, seed: int) -> tuple[RackGame, dict]:
    game = RackGame(env)
    return game, dict(game.engine_config, seed=seed)


def _modules(game: RackGame, params: dict[str, np.ndarray]) -> list[MalcolmRLModule]:
    """One MalcolmRLModule per node (MalcolmConfig's load_scale 0.1) holding the given parameters."""
    n = game.num_nodes
    modules = []
    for i in range(n):
        module = MalcolmRLModule(
            observation_space=gym.spaces.Box(0.0, game.config.obs_clip, (game.obs_dim,), np.float32),
            action_space=gym.spaces.Box(-game.config.max_logit, game.config.max_logit, (2 * n,), np.float32),
            model_config={"load_scale": 0.1},
        )
        with torch.no_grad():
            for name in ("critic", "migration", "stealing"):
                getattr(module, f"{name}_weights").copy_(torch.as_tensor(params[name][i]))
        modules.append(module)
    return modules


@pytest.mark.parametrize("weight_scale", [1.0, 30.0])  # 30: logit spreads beyond 2 x max_logit, rack_v0 clips
def test_tables_equal_rack_v0_with_the_rllib_module_on_the_same_observations(weight_scale):
    game, config = _engine_config(THREE_NODES, seed=4)
    n = game.num_nodes
    params = {k: v * weight_scale for k, v in MalcolmLearner(n, seed=9).parameters().items()}
    modules = _modules(game, params)
    ctl = RackController(config, {}, **params)
    sim = ctl.sim
    clipped = 0
    for _ in range(60):
        # What rack_v0 would observe now, from the same engine state.
        beliefs, loads = sim.beliefs()[None], sim.true_loads()[None]
        obs = game.observe(beliefs, loads * game.scale, np.zeros((1, n, n), np.uint64))[0]
        with torch.no_grad():
            actions = np.stack(
                [
                    modules[i]
                    .forward_inference({"obs": torch.as_tensor(obs[i][None])})["action_dist_inputs"][0]
                    .numpy()
                    for i in range(n)
                ]
            )
        migration, stealing = game.tables(actions[None], [0])
        clipped += int((np.abs(actions) >= game.config.max_logit).any())
        ctl.run(1)
        np.testing.assert_array_equal(ctl.observations, obs[:, :n])  # bit for bit
        ours_m, ours_s = ctl.tables
        np.testing.assert_allclose(ours_m, migration[0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ours_s, stealing[0], rtol=1e-5, atol=1e-7)
    assert sim.results()["tasks_completed"] > 0
    if weight_scale > 1:
        assert clipped > 0, "the clipping path was not exercised"


def _assert_same(a, b, path="results"):
    """Recursive exact equality of results dicts (numpy arrays bit for bit; NaN == NaN)."""
    if isinstance(b, dict):
        for key in b:
            _assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(b, (list, tuple)):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{k}]")
    elif isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(b, float) and np.isnan(b):
        assert np.isnan(a), path
    else:
        assert a == b, path


def test_uniform_policy_gives_exactly_racksims_numbers_with_the_same_tables():
    game, config = _engine_config(HETERO, seed=21)
    n = game.num_nodes
    zeros = np.zeros((n, n, 2 * n + 1), np.float32)  # every logit 0: uniform tables
    ctl = RackController(config, {"heartbeat_us": 100.0}, migration=zeros, stealing=zeros)
    ours = ctl.run(2000)
    np.testing.assert_array_equal(ctl.tables[0], np.full((n, n), 1.0 / n))
    sim = RackSim(config)
    sim.set_tables(np.full((n, n), 1.0 / n), np.full((n, n), 1.0 / n))
    sim.run_until(2000 * 100.0)
    theirs = sim.results()
    assert theirs["tasks_completed"] > 100_000 and theirs["migrations"] > 0 and theirs["steals"] > 0
    _assert_same(ours, theirs)
    assert ours["heartbeats"] == 2000 and ours["num_updates"] == 0


@pytest.mark.parametrize("reward", ["utility", "imbalance_delta", "neg_p99"])
def test_reward_and_imbalance_equal_rack_v0s(reward):
    """With uniform tables both run the same trajectory: the controller's mean reward is rack_v0's."""
    game = RackGame({**THREE_NODES, "reward": reward})
    n = game.num_nodes
    game.reset(0, engine_seed=8)
    rewards, imbalances = [], []
    for _ in range(300):
        out = game.step(np.zeros((1, n, 2 * n)), [0])
        rewards.append(out["reward"][0])
        imbalances.append(2 * n * ((out["true_loads"][0] - out["true_loads"][0].mean()) ** 2).sum())
    zeros = np.zeros((n, n, 2 * n + 1), np.float32)
    ctl = RackController(dict(game.engine_config, seed=8), {"reward": reward}, migration=zeros, stealing=zeros)
    ours = ctl.run(300)
    assert abs(np.mean(rewards)) > 0
    assert ours["reward_mean"] == pytest.approx(np.mean(rewards), rel=1e-9)
    assert ours["imbalance_mean"] == pytest.approx(np.mean(imbalances), rel=1e-9)


@pytest.mark.parametrize(("variant", "reward"), [("paper", "utility"), ("code", "imbalance_delta")])
def test_the_reward_defaults_to_the_learner_variants(variant, reward):
    """The controller's default reward (rack::DefaultReward) follows the variant, as rack_config does for rack_v0."""
    game = RackGame(THREE_NODES)
    zeros = np.zeros((game.num_nodes, game.num_nodes, 2 * game.num_nodes + 1), np.float32)
    config = dict(game.engine_config, seed=8)

    def run(options):
        return RackController(config, options, migration=zeros, stealing=zeros).run(100)["reward_mean"]

    assert run({"variant": variant}) == run({"variant": variant, "reward": reward})
    other = "utility" if reward == "imbalance_delta" else "imbalance_delta"
    assert run({"variant": variant}) != run({"variant": variant, "reward": other})


def test_online_learning_lowers_the_imbalance_of_a_two_node_rack():
    """6000 heartbeats (0.6 s simulated) of Algorithm 1 online cut the initial policy's imbalance by >= 50%."""
    game, config = _engine_config(TWO_NODES, seed=123)
    initial = MalcolmLearner(2, seed=1).parameters()

    def evaluate(params):
        return RackController(config, {}, **params).run(2000)

    before = evaluate(initial)
    learning = RackController(dict(config, seed=7), {"learn": True}, **initial)
    learning.run(6000)
    assert learning.num_updates == 300
    after = evaluate(learning.parameters())
    assert after["imbalance_mean"] <= 0.5 * before["imbalance_mean"], (
        before["imbalance_mean"],
        after["imbalance_mean"],
    )
    assert after["latency_us"]["p99"] < before["latency_us"]["p99"]


def test_options_are_checked_by_name():
    _, config = _engine_config(TWO_NODES, seed=1)
    with pytest.raises(ValueError, match=r"options.heartbeat: unknown field; allowed: "):
        RackController(config, {"heartbeat": 100.0})
    with pytest.raises(ValueError, match=r"options.reward: unknown value 'latency'"):
        RackController(config, {"reward": "latency"})
    with pytest.raises(ValueError, match=r"migration: must have shape \(2, 2, 5\)"):
        RackController(config, {}, migration=np.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"entry kind 'nodes' and dispatch policy 'table'"):
        RackController(dict(config, dispatch={"policy": "random"}), {})


def test_a_measurement_window_is_not_cleared_by_a_latency_reward():
    """A controller with a latency reward reads and clears the engine's step histogram every heartbeat; a window
    measured with window_latency is its own: with fixed tables the reward does not change the run, so the window's
    summary is the same under neg_mean as under utility, and it counts every task of the window."""
    game = RackGame(THREE_NODES)
    n = game.num_nodes
    zeros = np.zeros((n, n, 2 * n + 1), np.float32)
    windows, steps = {}, {}
    for reward in ("utility", "neg_mean"):
        ctl = RackController(dict(game.engine_config, seed=8), {"reward": reward}, migration=zeros, stealing=zeros)
        ctl.run(100)
        ctl.sim.window_latency(reset=True)
        ctl.sim.step_latency(reset=True)
        before = ctl.sim.results()["tasks_completed"]
        ctl.run(200)
        windows[reward] = ctl.sim.window_latency(reset=True)
        steps[reward] = ctl.sim.step_latency(reset=True)["count"]
        assert windows[reward]["count"] == ctl.sim.results()["tasks_completed"] - before > 0
    assert windows["neg_mean"] == windows["utility"] and np.isfinite(windows["neg_mean"]["p99"])
    assert steps["neg_mean"] < steps["utility"]  # the step histogram holds only the last heartbeat's tasks
