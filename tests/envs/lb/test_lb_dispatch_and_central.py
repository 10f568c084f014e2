"""lb_v0's ``dispatch="sed"`` (the agents' weights as SED's divisors) and lb_central_v0 (one agent for every LB)."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from dcgym.cpp_core._engine import LbSim
from dcgym.envs import lb_v0
from dcgym.envs.error import InvalidActionError, InvalidConfigError
from dcgym.envs.lb import lb_central_v0
from dcgym.envs.lb.scenario import load_lb_scenario


def capacity_levels(env) -> np.ndarray:
    """Weight level 2.0 on the servers with the most workers, 1.0 elsewhere: SED's own weights in lb_sim."""
    return np.where(env.workers == env.workers.max(), 2, 0)


@pytest.mark.parametrize("scenario", ["lb_sim", "lb_large"])
def test_sed_dispatch_with_the_capacity_weights_is_the_sed_heuristic_bit_for_bit(scenario):
    # lb_sim: workers 1 and 2, lb_large: 2 and 4; SED's score (count + 1) / w only depends on the ratio 2.
    env = lb_v0.parallel_env(scenario=scenario, dispatch="sed", max_steps=40)
    env.reset(seed=5)
    while env.agents:
        _, _, _, _, infos = env.step({a: capacity_levels(env) for a in env.agents})
    sc = load_lb_scenario(scenario)
    sim = LbSim(sc.engine_config(load=env.load, seed=5, policy="sed"))
    sim.run_until(40 * sc.decision_period_us)
    assert sim.results()["fct_us"]["count"] > 100
    assert infos["lb_0"]["fct_us"] == sim.results()["fct_us"]


def test_sed_dispatch_differs_from_weighted_random_dispatch():
    fct = {}
    for dispatch in ("weights", "sed"):
        env = lb_v0.parallel_env(scenario="lb_sim", dispatch=dispatch, max_steps=120)
        env.reset(seed=2)
        while env.agents:
            _, _, _, _, infos = env.step({a: capacity_levels(env) for a in env.agents})
        fct[dispatch] = infos["lb_0"]["fct_us"]["mean"]
    assert fct["sed"] < 0.6 * fct["weights"]  # per-flow least score beats weighted random draws at load 0.845


def test_bad_dispatch_is_refused_naming_the_field():
    with pytest.raises(InvalidConfigError, match='dispatch: got "jsq".*weights, sed'):
        lb_v0.parallel_env(dispatch="jsq")


def test_central_env_passes_the_parallel_api_test():
    parallel_api_test(lb_central_v0.parallel_env(scenario="lb_sim", max_steps=4), num_cycles=10)


@pytest.mark.parametrize("action_type", ["discrete", "continuous"])
def test_central_agent_is_every_lb_at_once(action_type):
    central = lb_central_v0.parallel_env(scenario="lb_large", action_type=action_type, dispatch="sed", max_steps=6)
    plain = lb_v0.parallel_env(scenario="lb_large", action_type=action_type, dispatch="sed", max_steps=6)
    assert central.possible_agents == ["central"]
    assert central.observation_space("central").shape == (6, 20, 12)
    space = central.action_space("central")
    assert space.shape == (120,)
    obs_c, _ = central.reset(seed=4)
    obs_p, _ = plain.reset(seed=4)
    np.testing.assert_array_equal(obs_c["central"], plain.state())
    rng = np.random.default_rng(0)
    while plain.agents:
        joint = space.sample() if action_type == "discrete" else rng.random(120).astype(np.float32)
        obs_c, rew_c, _, trunc_c, info_c = central.step({"central": joint})
        split = {a: joint[i * 20 : (i + 1) * 20] for i, a in enumerate(plain.agents)}
        obs_p, rew_p, _, trunc_p, info_p = plain.step(split)
        np.testing.assert_array_equal(obs_c["central"], np.stack([obs_p[a] for a in plain.possible_agents]))
        assert rew_c["central"] == pytest.approx(np.mean(list(rew_p.values())), rel=1e-12)
        assert trunc_c["central"] == trunc_p["lb_0"]
        assert info_c["central"]["fct_us"] == info_p["lb_0"]["fct_us"]
        assert info_c["central"]["weights"].shape == (6, 20)
    assert central.agents == []


def test_central_actions_of_the_wrong_shape_or_agent_are_refused():
    env = lb_central_v0.parallel_env(scenario="lb_sim", max_steps=3)
    env.reset(seed=1)
    with pytest.raises(InvalidActionError, match="shape \\(16,\\)"):
        env.step({"central": np.zeros(8, np.int64)})
    with pytest.raises(InvalidActionError, match="central"):
        env.step({"lb_0": np.zeros(16, np.int64)})
