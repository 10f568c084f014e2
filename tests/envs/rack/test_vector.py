"""Batched stepping: the same trajectories as rack_v0, next-step autoreset, the Gymnasium vector form."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dcgym.envs  # noqa: F401  (registers the ids)
from dcgym.envs import rack_v0
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError
from dcgym.envs.rack.vector import INFO_KEYS, RackCentralVectorEnv, RackDispatchVectorEnv, RackVectorEnv
from dcgym.envs.rack.wrappers import RackCentralEnv, RackDispatchEnv

B, STEPS, EPISODE = 3, 12, 5
KWARGS = {"scenario": "malcolm_hetero_paper_exp", "max_steps": EPISODE, "obs_extras": ("arrival_rate", "rank")}


def plain_trajectory(k: int, actions: np.ndarray, seed: int):
    """Copy k driven through rack_v0, resetting (without a seed) after each truncation, as autoreset does."""
    env = rack_v0.parallel_env(**KWARGS)
    obs, infos = env.reset(seed=seed + k)
    trace = [(obs, {a: 0.0 for a in env.possible_agents}, infos)]
    for t in range(len(actions)):
        if not env.agents:
            obs, infos = env.reset()
            trace.append((obs, {a: 0.0 for a in env.possible_agents}, infos))
            continue
        obs, rewards, _, _, infos = env.step({f"node_{i}": actions[t, k, i] for i in range(14)})
        trace.append((obs, rewards, infos))
    return trace


def test_batched_copies_follow_rack_v0_bit_for_bit_across_autoresets():
    rng = np.random.default_rng(0)
    actions = rng.uniform(-10, 10, size=(STEPS, B, 14, 28))
    venv = RackVectorEnv(B, **KWARGS)
    obs, infos = venv.reset(seed=40)
    batched = [(obs, np.zeros((B, 14)), infos)]
    for t in range(STEPS):
        obs, rewards, terminations, truncations, infos = venv.step(actions[t])
        assert not terminations.any() and (truncations.all() or not truncations.any())
        batched.append((obs, rewards, infos))
    for k in range(B):
        for t, (obs_p, rew_p, info_p) in enumerate(plain_trajectory(k, actions, 40)):
            obs_b, rew_b, info_b = batched[t]
            for i, agent in enumerate(obs_p):  # node_0 .. node_13 in order
                np.testing.assert_array_equal(obs_b[k, i], obs_p[agent])
                assert rew_b[k, i] == rew_p[agent]
                np.testing.assert_array_equal(info_b["migrate"][k, i], info_p[agent]["migrate"])
                assert info_b["dropped"][k, i] == info_p[agent]["dropped"]
            assert info_b["latency_p99_us"][k] == info_p["node_0"]["latency_p99_us"]
            np.testing.assert_array_equal(info_b["true_loads"][k], info_p["node_0"]["true_loads"])


def test_next_step_autoreset_ignores_the_actions_and_returns_the_first_observation():
    venv = RackVectorEnv(2, scenario="malcolm_homog_exp", max_steps=2)
    venv.reset(seed=1)
    zeros = np.zeros((2, 10, 20))
    venv.step(zeros)
    _, _, _, truncations, infos = venv.step(zeros)
    assert truncations.all() and (infos["sim_time_us"] == 200).all()
    poisoned = zeros.copy()
    poisoned[:] = np.nan  # ignored: every copy resets on this step
    obs, rewards, terminations, truncations, infos = venv.step(poisoned)
    assert (rewards == 0).all() and not terminations.any() and not truncations.any()
    assert (infos["sim_time_us"] == 0).all() and (infos["completed"] == 0).all() and (obs == 0).all()
    _, _, _, _, infos = venv.step(zeros)
    assert (infos["sim_time_us"] == 100).all()
    assert set(infos) == set(INFO_KEYS)


def test_vector_env_validates_actions_naming_the_copy():
    venv = RackVectorEnv(2, scenario="malcolm_homog_exp")
    with pytest.raises(ResetNeededError):
        venv.step(np.zeros((2, 10, 20)))
    venv.reset(seed=1)
    with pytest.raises(InvalidActionError, match=r"got shape \(3, 10, 20\); expected \(2, 10, 20\)"):
        venv.step(np.zeros((3, 10, 20)))
    actions = np.zeros((2, 10, 20))
    actions[1, 4, 15] = -np.inf
    with pytest.raises(InvalidActionError, match="action of node_4 in copy 1: got -inf at index 15"):
        venv.step(actions)


def test_reset_accepts_one_seed_per_copy():
    venv = RackVectorEnv(2, scenario="malcolm_homog_exp")
    venv.reset(seed=[7, 3])
    assert venv.game.engine_seeds.tolist() == [7, 3]
    venv.reset(seed=3)
    assert venv.game.engine_seeds.tolist() == [3, 4]
    with pytest.raises(ValueError, match="one per copy"):
        venv.reset(seed=[1, 2, 3])


# ---------------------------------------------------------- Gymnasium vector form


def test_make_vec_builds_the_batched_central_env():
    envs = gymnasium.make_vec(
        "dcgym/RackCentral-v0", num_envs=2, vectorization_mode="vector_entry_point", scenario="malcolm_homog_exp"
    )
    assert isinstance(envs.unwrapped, RackCentralVectorEnv)
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.NEXT_STEP
    assert envs.single_observation_space.shape == (110,) and envs.single_action_space.shape == (200,)
    obs, infos = envs.reset(seed=2)
    assert obs.shape == (2, 110) and obs in envs.observation_space
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    assert obs.shape == (2, 110) and rewards.shape == terminations.shape == truncations.shape == (2,)
    assert infos["migrate"].shape == (2, 10, 10) and infos["_migrate"].all()
    envs.close()


@pytest.mark.parametrize("action_type", ["logits", "probabilities"])
@pytest.mark.parametrize(
    "env_id, vector, single, width",
    [
        ("dcgym/RackCentral-v0", RackCentralVectorEnv, RackCentralEnv, 200),
        ("dcgym/RackDispatch-v0", RackDispatchVectorEnv, RackDispatchEnv, 10),
    ],
)
def test_the_one_agent_vector_envs_match_their_single_envs(env_id, vector, single, width, action_type):
    kwargs = {"scenario": "malcolm_homog_exp", "max_steps": 4, "action_type": action_type}
    envs = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    assert isinstance(envs.unwrapped, vector) and envs.single_action_space.shape == (width,)
    singles = [single(**kwargs) for _ in range(2)]
    obs, _ = envs.reset(seed=5)
    for k, env in enumerate(singles):
        np.testing.assert_array_equal(obs[k], env.reset(seed=5 + k)[0])
    envs.action_space.seed(2)
    for _ in range(4):
        actions = envs.action_space.sample()
        obs, rewards, _, truncations, infos = envs.step(actions)
        for k, env in enumerate(singles):
            o, r, _, trunc, info = env.step(actions[k])
            np.testing.assert_array_equal(obs[k], o)
            assert rewards[k] == r and truncations[k] == trunc
            np.testing.assert_array_equal(infos["migrate"][k], info["migrate"])
    assert truncations.all() and (rewards != 0).all()


def test_dispatch_vector_env_refuses_node_tables_and_extras_by_name():
    envs = RackDispatchVectorEnv(2, scenario="malcolm_homog_exp")
    envs.reset(seed=1)
    with pytest.raises(InvalidActionError, match=r"^actions: got shape \(2, 200\); expected \(2, 10\): for each copy"):
        envs.step(np.zeros((2, 200)))
    with pytest.raises(InvalidConfigError, match=r'^obs_extras: got \["rank"\]; allowed: \[\] for RackDispatch-v0'):
        RackDispatchVectorEnv(2, scenario="malcolm_homog_exp", obs_extras=["rank"])
