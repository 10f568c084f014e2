"""rack_v0's ``action_type="fill"``: each node's action is the gains of a per-task fill policy, its table
recomputed at every task that arrives at it; the decisions come back in the infos."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from dcgym.agents import policy_format as fmt
from dcgym.agents.malcolm.fill import water_fill_policy
from dcgym.agents.policies.rack import game_engine_config
from dcgym.cpp_core import FillController, TaskFill
from dcgym.envs import rack_v0
from dcgym.envs.error import InvalidActionError, InvalidConfigError
from dcgym.envs.rack.game import FILL_FEATURES, fill_rows
from dcgym.envs.rack.vector import RackVectorEnv
from dcgym.envs.rack.wrappers import RackCentralEnv
from dcgym.envs.scenario import load_scenario

SCENARIO = "malcolm_hetero_paper_exp"  # 14 nodes: 4 x 14 workers, 10 x 3
N = 14
WIDTH = fill_rows(N) * FILL_FEATURES


def fill_env(**kwargs):
    return rack_v0.parallel_env(scenario=SCENARIO, action_type="fill", load_metric="nominal_wait", **kwargs)


def zeros(env):
    return {a: np.zeros(WIDTH, np.float32) for a in env.agents}


def test_fill_actions_pass_the_parallel_api_test():
    parallel_api_test(fill_env(max_steps=5), num_cycles=8)


def test_zero_gains_run_bit_for_bit_as_the_per_task_rule_in_the_engine():
    """Gains 0 are water_fill's per-task rule (the fill argument's horizon, mix and steal): 300 heartbeats through
    rack_v0 give the same latencies and migrations as the engine's FillController running the zero-gain per-task
    file of that rule, bit for bit; each node's decisions in the infos are its migration counts, drawn from
    levels in mean service times at the engine's arrivals per heartbeat."""
    heartbeats, seed, load = 300, 7, 0.85
    env = fill_env(load=load, max_steps=heartbeats, fill={"horizon": 0.5, "mix": 0.1, "steal": True})
    _, infos = env.reset(seed=seed)
    assert all(len(info["decisions"]["dest"]) == 0 for info in infos.values())
    decided = 0
    for _ in range(heartbeats):
        _, _, _, _, infos = env.step(zeros(env))
        for info in infos.values():
            d = info["decisions"]
            np.testing.assert_array_equal(np.bincount(d["dest"], minlength=N), info["migrate"])
            assert d["levels"].shape == (len(d["dest"]), N) and (d["levels"] >= 0).all()
            decided += len(d["dest"])
    sim = env.game.sims[0]
    rate = sim.results()["arrival_rate_per_us"]
    np.testing.assert_allclose(d["arrivals"], rate * 100.0, rtol=1e-12)
    scenario = load_scenario(SCENARIO)
    rule = water_fill_policy(scenario, horizon=0.5, mix=0.1, steal=True, per_task=True, metric="nominal_wait")
    engine = FillController(game_engine_config(scenario, load, seed, load_metric="nominal_wait"), fmt.to_bytes(rule))
    expected = engine.run(heartbeats)
    ours = sim.results()
    assert ours["latency_us"] == expected["latency_us"] and ours["latency_us"]["count"] > 20_000
    assert ours["migrations"] == expected["migrations"] and ours["steals"] == expected["steals"]
    assert decided > 20_000


def test_the_gains_decide_each_task():
    """Level offsets of +50 mean service times on every node but node 0, for every node: node 0 is the only one
    below the fill level, so a task goes there with probability 1 - mix + mix x its capacity share (0.916)."""
    env = fill_env(load=0.5, max_steps=20)
    env.reset(seed=3)
    gains = np.zeros((fill_rows(N), FILL_FEATURES), np.float32)
    gains[3 + N + 1 :, 0] = 50.0  # the level offsets of nodes 1 .. N-1, on the constant feature
    dest = []
    for _ in range(20):
        _, _, _, _, infos = env.step({a: gains.reshape(-1) for a in env.agents})
        dest += [info["decisions"]["dest"] for info in infos.values()]
    dest = np.concatenate(dest)
    share = 0.9 + 0.1 * 14 / (4 * 14 + 10 * 3)
    assert len(dest) > 1000 and abs(np.mean(dest == 0) - share) < 0.03


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (lambda a: a[:10], r"action of node_2: got shape \(10,\); expected \(124,\): its fill gains, 31 rows of 4"),
        (lambda a: np.where(np.arange(WIDTH) == 7, np.nan, a), "action of node_2: got nan at index 7; allowed"),
        (lambda a: np.where(np.arange(WIDTH) == 9, -np.inf, a), "action of node_2: got -inf at index 9"),
    ],
)
def test_invalid_gains_are_refused_naming_the_agent(bad, message):
    env = fill_env()
    env.reset(seed=1)
    actions = zeros(env)
    actions["node_2"] = bad(actions["node_2"])
    with pytest.raises(InvalidActionError, match=message):
        env.step(actions)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: rack_v0.parallel_env(action_type="fill", load_metric="queue"), "load_metric"),
        (lambda: fill_env(fill={"mix": 0.0}), "fill.mix"),
        (lambda: fill_env(fill={"horizon": 1, "level": 2}), "fill.level"),
        (lambda: RackVectorEnv(2, action_type="fill"), "action_type"),
        (lambda: RackCentralEnv(action_type="fill"), "action_type"),
    ],
)
def test_fill_settings_are_refused_naming_the_field(make, field):
    with pytest.raises(InvalidConfigError) as error:
        make()
    assert error.value.field == field


def test_a_second_per_task_policy_on_one_simulation_is_refused():
    """One per-task policy per simulation: a second would take the arrivals over and the first, when it dies,
    unhook it. A reset builds a new simulation with its own."""
    env = fill_env()
    env.reset(seed=1)
    game = env.game
    with pytest.raises(ValueError, match=r"sim: already driven by a per-task fill policy \(one per simulation\)"):
        TaskFill(game.sims[0], game.capacity.tolist(), game.scale, 100 * game.scale, 0.5, 0.1, True, 100.0)
    env.reset(seed=2)
    _, _, _, _, infos = env.step(zeros(env))
    assert sum(len(info["decisions"]["dest"]) for info in infos.values()) > 0  # the new simulation's hook acts
