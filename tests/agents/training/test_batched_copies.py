"""RackCopies, ColoCopies and LbCopies (agents/rl/batched_copies.py) return what RLlib's SyncVectorMultiAgentEnv of the same
copies returns, step by step and bit for bit: observations, rewards, terminations, truncations and infos, through
episode ends and next-step autoresets, and (colo_churn) services arriving and ending."""

from __future__ import annotations

import numpy as np
import pytest
from ray.rllib.env.vector.sync_vector_multi_agent_env import SyncVectorMultiAgentEnv

from dcgym.agents.rl.batched_copies import ColoCopies, LbCopies, RackCopies
from dcgym.agents.rl.envs import make_rllib_env

from .episodes import assert_same_state

CASES = {
    "rack": ("rack_v0", RackCopies, {"scenario": "malcolm_homog_exp", "max_steps": 7}, 30),
    "colo_paper_reward": ("colo_v0", ColoCopies, {"scenario": "osml_mixes", "mix": "random", "max_steps": 9}, 40),
    "colo_churn": ("colo_v0", ColoCopies, {"scenario": "colo_churn", "max_steps": 120}, 260),
    "lb": ("lb_v0", LbCopies, {"scenario": "lb_sim", "max_steps": 6, "action_type": "discrete"}, 20),
    "lb_central": ("lb_central_v0", LbCopies, {"scenario": "lb_sim", "max_steps": 6}, 20),
}


def _synced(env: str, config: dict) -> SyncVectorMultiAgentEnv:
    return SyncVectorMultiAgentEnv([lambda: make_rllib_env(env, **config) for _ in range(3)])


def _actions(rng: np.random.Generator, obs: dict, space_of) -> dict:
    out = {}
    for agent, o in obs.items():
        space = space_of(agent)
        if isinstance(o, dict):  # colo_v0: a legal resize
            out[agent] = int(rng.choice(np.flatnonzero(o["action_mask"])))
        elif hasattr(space, "nvec"):  # lb_v0's discrete weight levels
            out[agent] = rng.integers(0, space.nvec)
        else:
            out[agent] = rng.uniform(space.low, space.high).astype(space.dtype)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_copies_return_what_rllibs_sync_vector_env_returns(case):
    env, cls, config, steps = CASES[case]
    synced = _synced(env, config)
    batched = LbCopies(_synced(env, config)) if cls is LbCopies else cls(_synced(env, config), config)
    space_of = synced.envs[0].unwrapped.get_action_space
    obs, infos = synced.reset(seed=4)
    got_obs, got_infos = batched.reset(seed=4)
    assert_same_state(list(obs), got_obs, "reset obs")
    assert_same_state(list(infos), got_infos, "reset infos")
    rng = np.random.default_rng(1)
    ends = changes = 0
    for step in range(steps):
        actions = [_actions(rng, o, space_of) for o in obs]
        want, got = synced.step(actions), batched.step(actions)
        for name, a, b in zip(("obs", "rewards", "terminations", "truncations", "infos"), want, got, strict=True):
            assert_same_state(list(a), list(b), f"step {step} {name}")
        ends += sum(t["__all__"] for t in want[3])
        changes += sum(set(a) != set(b) for a, b in zip(obs, want[0], strict=True))
        obs = want[0]
    assert ends >= 3  # every copy ended an episode and was reset at the next step
    if case == "colo_churn":
        assert changes > 5  # services arrived and ended


def test_step_lb_batch_checks_every_time_before_running_any_sim():
    from dcgym.cpp_core import step_lb_batch
    from dcgym.envs.lb.lb_v0 import parallel_env

    sims = []
    for seed in (1, 2):
        env = parallel_env(scenario="lb_sim")
        env.reset(seed=seed)
        sims.append(env.sim)
    with pytest.raises(ValueError, match=r"^time_us\[1\]: must be finite and >= sims\[1\]'s current time"):
        step_lb_batch(sims, [1000.0, float("nan")])
    assert sims[0].now_us == 0.0  # nothing ran
    with pytest.raises(ValueError, match=r"^time_us: needs one time per sim \(2\), got 1"):
        step_lb_batch(sims, [1000.0])
    step_lb_batch(sims, [1000.0, 2000.0])
    assert (sims[0].now_us, sims[1].now_us) == (1000.0, 2000.0)
