"""colo_v0 and ColoCentral-v0: PettingZoo and Gymnasium API, seeds, OSML's actions, masks and reward, agents that
arrive and leave, conservation of cores and ways, refusals."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test, parallel_seed_test

from dcgym.envs.colo import colo_v0
from dcgym.envs.colo.server import ENDED, RUNNING, WARMING
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError


def masked_random(env, obs, rng):
    return {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}


@pytest.mark.parametrize(("scenario", "interval_s"), [("osml_case_a", 1.0), ("colo_churn", 5.0)])
def test_parallel_api_test_passes(scenario, interval_s):
    parallel_api_test(colo_v0.parallel_env(scenario=scenario, interval_s=interval_s), num_cycles=200)


def test_parallel_seed_test_passes():
    parallel_seed_test(lambda: colo_v0.parallel_env(max_steps=10, interval_s=0.5), num_cycles=10)


def test_central_env_passes_check_env_and_is_registered():
    env = gymnasium.make("dcgym/ColoCentral-v0")
    check_env(env.unwrapped)
    obs, info = env.reset(seed=2)
    assert obs.shape == (3, 9) and info["action_mask"].shape == (3, 49)
    assert obs[:, -1].tolist() == [1.0, 1.0, 1.0]
    steps = 0
    truncated = False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step(np.full(3, colo_v0.NO_CHANGE))
        steps += 1
        assert not terminated and math.isfinite(reward)
    assert steps == 180  # 180 s of 1-s steps


def test_actions_are_osmls_49_and_decode_to_deltas():
    assert colo_v0.ACTIONS == 49 and colo_v0.decode(colo_v0.NO_CHANGE) == (0, 0)
    assert colo_v0.decode(0) == (-3, -3) and colo_v0.decode(48) == (3, 3) and colo_v0.decode(7 * 5 + 1) == (2, -2)


@pytest.mark.parametrize(
    ("now", "before", "dc", "dw", "want"),
    [(10.0, 30.0, 1, 0, math.log(21.0) - 1), (30.0, 10.0, 0, -2, -math.log(21.0) + 2), (5.0, 5.0, 2, 1, -3.0)],
)
def test_reward_is_osmls_model_c_reward(now, before, dc, dw, want):
    assert colo_v0.osml_reward(now, before, dc, dw) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("excess", [1e-9, 0.01, 0.5, 3.0, 1e6])
def test_qos_reward_makes_any_violation_cost_more_than_any_reclaim(excess):
    qos = 10.0
    met = [colo_v0.qos_reward(qos, qos, dc, dw) for dc in range(-3, 4) for dw in range(-3, 4)]
    violated = [colo_v0.qos_reward(qos * (1 + excess), qos, dc, dw) for dc in range(-3, 4) for dw in range(-3, 4)]
    assert max(met) == 6.0 and min(met) == -6.0  # one unit per core or way freed or added
    assert max(violated) < 0.0  # freeing 3 cores and 3 ways (+6) never pays for a violation
    assert max(violated) <= -colo_v0.QOS_WEIGHT + 6 - colo_v0.QOS_WEIGHT * min(excess, colo_v0.EXCESS_CAP) + 1e-9
    worse = colo_v0.qos_reward(qos * (1 + 2 * excess), qos, 0, 0)  # grows with the excess up to the cap
    assert worse < colo_v0.qos_reward(qos * (1 + excess), qos, 0, 0) or excess >= colo_v0.EXCESS_CAP / 2


@pytest.mark.parametrize("reward", ["qos", "paper"])
def test_rewards_follow_the_reward_rule_and_granted_resources(reward):
    env = colo_v0.parallel_env(reward=reward)
    obs, infos = env.reset(seed=4)
    previous = {a: infos[a]["latency_ms"] for a in env.agents}
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, rewards, _, _, infos = env.step(masked_random(env, obs, rng))
        for a in env.agents:
            dc, dw = infos[a]["granted"]
            if reward == "paper":
                want = colo_v0.osml_reward(infos[a]["latency_ms"], previous[a], dc, dw)
            else:
                want = colo_v0.qos_reward(infos[a]["latency_ms"], infos[a]["qos_ms"], dc, dw)
            assert rewards[a] == pytest.approx(want, rel=1e-12)
            previous[a] = infos[a]["latency_ms"]


def test_an_unknown_reward_is_refused_by_name():
    with pytest.raises(InvalidConfigError, match="reward"):
        colo_v0.parallel_env(reward="fast")


def test_masks_allow_exactly_what_is_free_and_masked_actions_are_clipped():
    env = colo_v0.parallel_env()
    obs, infos = env.reset(seed=1)
    # Equal shares: 12 cores each (none idle), 6 ways each (2 idle).
    mask = obs["moses"]["action_mask"].reshape(7, 7)
    assert mask[3:, :].any() and not mask[4:, :].any()  # no core can be added
    assert mask[3, 3:6].all() and not mask[3, 6]  # up to 2 ways can
    assert mask[:3, :].all(axis=1).any() is not None and mask[0, 3]  # cores can be given back
    obs, _, _, _, infos = env.step({"moses": 48, "img-dnn": 24, "xapian": 24})  # +3 cores, +3 ways: clipped
    assert infos["moses"]["granted"] == (0, 2) and infos["moses"]["ways"] == 8 and infos["moses"]["idle_ways"] == 0
    obs, _, _, _, infos = env.step({"moses": 24, "img-dnn": 0, "xapian": 24})  # -3, -3 then moses cannot use them
    assert infos["img-dnn"]["granted"] == (-3, -3) and infos["img-dnn"]["cores"] == 9
    assert (infos["moses"]["idle_cores"], infos["moses"]["idle_ways"]) == (3, 3)


def test_cores_and_ways_are_conserved_through_arrivals_and_departures():
    env = colo_v0.parallel_env(scenario="colo_churn", interval_s=1.0)
    obs, _ = env.reset(seed=7)
    assert env.agents == ["moses"]  # img-dnn launches at 20 s, xapian at 40 s and ends at 120 s
    rng = np.random.default_rng(3)
    seen, left = set(env.agents), set()
    while env.agents:
        obs, _, terminations, truncations, infos = env.step(masked_random(env, obs, rng))
        sim = env.server.sim
        cores, ways = np.asarray(sim.cores), np.asarray(sim.ways)
        assert cores.sum() + sim.idle_cores == 36 and ways.sum() + sim.idle_ways == 20
        phases = np.asarray(sim.phases)
        present = {a for i, a in enumerate(env.possible_agents) if phases[i] in (WARMING, RUNNING)}
        assert set(env.agents) == (set() if any(truncations.values()) else present)
        for i, a in enumerate(env.possible_agents):
            if phases[i] == ENDED:
                assert cores[i] == 0 and ways[i] == 0
            if a in infos:
                assert (infos[a]["cores"], infos[a]["ways"]) == (cores[i], ways[i])
            if a in env.agents:
                assert cores[i] >= 1 and ways[i] >= 1
        seen |= set(obs)
        left |= {a for a, t in terminations.items() if t}
    assert seen == {"moses", "img-dnn", "xapian"} and left == {"xapian"}
    assert env.server.now_s == pytest.approx(180.0)


def test_same_seed_same_episode_and_other_seed_another():
    def trace(seed):
        env = colo_v0.parallel_env(max_steps=20)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(5)
        out = []
        while env.agents:
            obs, rewards, _, _, _ = env.step(masked_random(env, obs, rng))
            out.append((np.stack([o["observation"] for o in obs.values()]), list(rewards.values())))
        return out

    a, b, c = trace(11), trace(11), trace(12)
    assert all(np.array_equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(a, b))
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(a, c))


@pytest.mark.parametrize("action", [49, -1, 2.5, "up", None, np.array([1, 2]), True])
def test_bad_actions_name_the_agent_and_the_value(action):
    env = colo_v0.parallel_env()
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=r"^img-dnn: action .* is not an action index; allowed: an integer"):
        env.step({"moses": 24, "img-dnn": action, "xapian": 24})
    with pytest.raises(InvalidActionError, match="no action for xapian"):
        env.step({"moses": 24, "img-dnn": 24})
    with pytest.raises(InvalidActionError, match="actions for unknown agents sphinx"):
        env.step({"moses": 24, "img-dnn": 24, "xapian": 24, "sphinx": 24})


def test_misuse_and_bad_arguments():
    with pytest.raises(ResetNeededError, match="Call reset"):
        colo_v0.parallel_env().step({})
    with pytest.raises(InvalidConfigError, match=r"interval_s: got 0.251; allowed: a whole number of ticks of 0.1 s"):
        colo_v0.parallel_env(interval_s=0.25 + 1e-3)
    with pytest.raises(InvalidConfigError, match="mix: got 2"):
        colo_v0.parallel_env(mix=2)
    with pytest.raises(InvalidConfigError, match="max_steps: got 0"):
        colo_v0.parallel_env(max_steps=0)


def test_ansi_render_lists_every_service():
    env = colo_v0.parallel_env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "moses" in text and "xapian" in text and "idle: 0 cores, 2 ways" in text


def test_random_mix_draws_a_mix_per_reset_from_the_seed():
    env = colo_v0.parallel_env(scenario="osml_mixes", mix="random", max_steps=3)
    drawn = []
    for seed in range(12):
        obs, _ = env.reset(seed=seed)
        k = env.episode_mix
        drawn.append(k)
        fixed = colo_v0.parallel_env(scenario="osml_mixes", mix=k, max_steps=3)
        obs_k, _ = fixed.reset(seed=seed)  # the same mix and engine seed: the same episode
        for _ in range(3):
            assert all(np.array_equal(obs[a]["observation"], obs_k[a]["observation"]) for a in env.agents)
            actions = {a: 31 for a in env.agents}  # (+1, 0)
            obs = env.step(actions)[0]
            obs_k = fixed.step(actions)[0]
    assert len(set(drawn)) >= 8 and all(0 <= k < 125 for k in drawn)
    env.reset(seed=3)
    again = env.episode_mix
    env.reset(seed=3)
    assert env.episode_mix == again == drawn[3]
    env.reset(seed=3, options={"mix": 7})  # an explicit mix wins
    assert env.episode_mix == 7
    with pytest.raises(
        InvalidConfigError, match=r"mix: got \"random\"; allowed: a mix index: mix 1 has other services than mix 0"
    ):
        colo_v0.parallel_env(scenario="parties_scaling", mix="random")
