"""The single-agent Gymnasium environments: registration, Gymnasium's checker, agreement with rack_v0."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dcgym.envs  # noqa: F401  (registers the ids)
from dcgym.envs import rack_v0
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError
from dcgym.envs.rack.wrappers import RackCentralEnv, RackDispatchEnv
from dcgym.envs.registration import GYMNASIUM_IDS

REGISTERED = sorted(env_id for env_id in gymnasium.registry if env_id.startswith("dcgym/"))


def test_every_listed_id_is_registered_and_versioned():
    assert set(GYMNASIUM_IDS) <= set(REGISTERED)
    for env_id in GYMNASIUM_IDS:
        assert gymnasium.spec(env_id).version == 0 and gymnasium.spec(env_id).namespace == "dcgym"
        assert isinstance(gymnasium.spec(env_id).entry_point, str)  # lazy: nothing imported until make


@pytest.mark.parametrize("env_id", REGISTERED)
def test_gymnasium_check_env_passes(env_id):
    env = gymnasium.make(env_id, max_steps=20)
    check_env(env.unwrapped)  # warnings are errors in this test suite
    env.close()


def test_misspelled_id_gets_a_did_you_mean():
    with pytest.raises(gymnasium.error.NameNotFound, match="Did you mean: `RackCentral`"):
        gymnasium.make("dcgym/RackCentrl-v0")
    with pytest.raises(gymnasium.error.VersionNotFound, match=r"\[ `v0` \]"):
        gymnasium.make("dcgym/RackDispatch-v9")


def test_make_passes_arguments_and_validates_them():
    env = gymnasium.make("dcgym/RackCentral-v0", scenario="malcolm_homog_exp", obs_extras=("rank",))
    assert env.observation_space.shape == (10 * 12,) and env.action_space.shape == (10 * 20,)
    with pytest.raises(InvalidConfigError, match="reward"):
        gymnasium.make("dcgym/RackCentral-v0", reward="p99")


# ------------------------------------------------------------------ RackCentral-v0


def test_central_env_follows_rack_v0_exactly():
    """The central agent's action, scaled by max_logit, is every node's rack_v0 action: same trajectory."""
    central = RackCentralEnv(scenario="malcolm_hetero_paper_exp", max_steps=30)
    parallel = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", max_steps=30)
    obs_c, _ = central.reset(seed=5)
    obs_p, _ = parallel.reset(seed=5)
    central.action_space.seed(5)
    for _ in range(30):
        np.testing.assert_array_equal(obs_c, np.concatenate([obs_p[a] for a in parallel.possible_agents]))
        action = central.action_space.sample()
        obs_c, r_c, term_c, trunc_c, info_c = central.step(action)
        logits = action.astype(np.float64).reshape(14, 28) * 10.0
        obs_p, r_p, _, trunc_p, info_p = parallel.step({f"node_{i}": logits[i] for i in range(14)})
        assert r_c == r_p["node_0"] and trunc_c == trunc_p["node_0"] and not term_c
        np.testing.assert_array_equal(info_c["migrate"][3], info_p["node_3"]["migrate"])
        assert info_c["migrations"][3] == info_p["node_3"]["migrations"]
    assert trunc_c


def test_central_env_refuses_bad_actions_and_steps_without_reset():
    env = RackCentralEnv(scenario="malcolm_homog_exp", max_steps=1)
    with pytest.raises(ResetNeededError, match=r"Call reset\(\) before step\(\)"):
        env.step(np.zeros(200))
    env.reset(seed=1)
    with pytest.raises(InvalidActionError, match=r"action: got shape \(199,\); expected \(200,\)"):
        env.step(np.zeros(199))
    bad = np.zeros(200)
    bad[47] = np.nan
    with pytest.raises(InvalidActionError, match="action of node_2: got nan at index 7"):
        env.step(bad)
    env.step(np.zeros(200))
    with pytest.raises(ResetNeededError, match="episode is over"):
        env.step(np.zeros(200))


def test_central_env_renders_both_modes():
    ansi = RackCentralEnv(scenario="malcolm_homog_exp", render_mode="ansi")
    ansi.reset(seed=1)
    ansi.step(ansi.action_space.sample())
    assert len(ansi.render().splitlines()) == 11
    rgb = gymnasium.make("dcgym/RackCentral-v0", scenario="malcolm_homog_exp", render_mode="rgb_array")
    rgb.reset(seed=1)
    rgb.step(rgb.action_space.sample())
    assert rgb.render().shape == (400, 600, 3)


# ----------------------------------------------------------------- RackDispatch-v0


def test_dispatcher_sends_every_task_by_its_weights():
    env = RackDispatchEnv(scenario="malcolm_homog_exp", action_type="probabilities")
    env.reset(seed=3)
    weights = np.zeros(10)
    weights[[2, 7]] = [1.0, 3.0]
    arrived = np.zeros(10)
    for _ in range(100):
        obs, _, _, _, info = env.step(weights)
        assert info["migrate"][1:].sum() == 0  # only node 0 (the dispatcher) receives client tasks
        assert info["steals"].sum() == 0 and info["failed_steals"].sum() == 0
        arrived += info["migrate"][0]
    assert arrived[[0, 1, 3, 4, 5, 6, 8, 9]].sum() == 0
    share = arrived[7] / arrived.sum()
    assert abs(share - 0.75) < 3 * np.sqrt(0.75 * 0.25 / arrived.sum())  # binomial, 3 standard deviations
    np.testing.assert_allclose(obs, np.clip(env.game.sims[0].beliefs()[0] / 75, 0, 100), rtol=1e-6)


def test_dispatcher_setup_and_refusals():
    env = RackDispatchEnv(scenario="racksched_sim_exp")
    cfg = env.game.engine_config
    assert cfg["entry"] == {"count": 1, "split": [1.0] + [0.0] * 7, "kind": "nodes"}
    assert cfg["migration"]["delay_us"] == 0 and env.config.costs.migration == 0
    with pytest.raises(InvalidConfigError, match="dynamics"):
        RackDispatchEnv(scenario="malcolm_adapt_shift")
    with pytest.raises(InvalidConfigError, match="obs_extras"):
        RackDispatchEnv(obs_extras=("rank",))
    env.reset(seed=1)
    with pytest.raises(InvalidActionError, match="action of the dispatcher: got inf at index 3"):
        env.step(np.array([0, 0, 0, np.inf, 0, 0, 0, 0], dtype=np.float64))
    weights = RackDispatchEnv(scenario="racksched_sim_exp", action_type="probabilities")
    weights.reset(seed=1)
    with pytest.raises(InvalidActionError, match="action of the dispatcher: sums to 0.0"):
        weights.step(np.zeros(8))
