"""RackCopies and ColoCopies (agents/rl/batched_copies.py) return what RLlib's SyncVectorMultiAgentEnv of the same
copies returns, step by step and bit for bit: observations, rewards, terminations, truncations and infos, through
episode ends and next-step autoresets, and (colo_churn) services arriving and ending."""

from __future__ import annotations

import numpy as np
import pytest
from ray.rllib.env.vector.sync_vector_multi_agent_env import SyncVectorMultiAgentEnv

from dcgym.agents.rl.batched_copies import ColoCopies, RackCopies
from dcgym.agents.rl.envs import make_rllib_env

from .episodes import assert_same_state

CASES = {
    "rack": ("rack_v0", RackCopies, {"scenario": "malcolm_homog_exp", "max_steps": 7}, 30),
    "colo_paper_reward": ("colo_v0", ColoCopies, {"scenario": "osml_mixes", "mix": "random", "max_steps": 9}, 40),
    "colo_churn": ("colo_v0", ColoCopies, {"scenario": "colo_churn", "max_steps": 120}, 260),
}


def _synced(env: str, config: dict) -> SyncVectorMultiAgentEnv:
    return SyncVectorMultiAgentEnv([lambda: make_rllib_env(env, **config) for _ in range(3)])


def _actions(rng: np.random.Generator, obs: dict, space_of) -> dict:
    out = {}
    for agent, o in obs.items():
        if isinstance(o, dict):  # colo_v0: a legal resize
            out[agent] = int(rng.choice(np.flatnonzero(o["action_mask"])))
        else:
            out[agent] = rng.uniform(-1, 1, space_of(agent).shape).astype(np.float32)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_copies_return_what_rllibs_sync_vector_env_returns(case):
    env, cls, config, steps = CASES[case]
    synced, batched = _synced(env, config), cls(_synced(env, config), config)
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
