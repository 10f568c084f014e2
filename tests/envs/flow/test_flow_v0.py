"""flow_v0 and its single-agent and vector forms: AuTO's two agents on the flow engine.

The conformance suite (tests/test_conformance.py) runs PettingZoo's and Gymnasium's checkers; these tests check
what the agents do to the model, what they are told, and that bad actions and arguments are refused by name.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dcgym.envs  # noqa: F401  (registers the Gymnasium ids)
from dcgym.cpp_core import FlowSim, flow_thresholds_from_action
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError
from dcgym.envs.flow.flow_v0 import parallel_env
from dcgym.envs.flow.thresholds import THRESHOLD_PRESETS
from dcgym.envs.flow.vector import FlowVectorEnv
from dcgym.envs.scenario import load_scenario

SMALL = {"scenario": "auto_websearch", "max_steps": 8}
ZERO = {"srla": np.zeros(3, np.float32), "lrla": np.zeros(33, np.int64)}


def _actions(env, rng):
    return {
        "srla": rng.uniform(-1, 1, 3).astype(np.float32),
        "lrla": rng.integers(0, env.action_space("lrla").nvec).astype(np.int64),
    }


def test_spaces_are_autos_sizes_on_its_testbed():
    env = parallel_env(**SMALL)
    assert env.observation_space("srla").shape == (100 * 7,)
    assert env.observation_space("lrla").shape == (11 * 6 + 10 * 7,)
    assert env.action_space("srla").shape == (3,)  # K - 1 thresholds, 4 queues
    assert list(env.action_space("lrla").nvec[:3]) == [4, 4, 3]  # level, rate cap, path (3 planes)
    assert len(env.action_space("lrla").nvec) == 33


def test_the_srla_map_gives_increasing_thresholds_in_the_range():
    lo, hi = 1460.0, 1460.0 * 2**16
    rng = np.random.default_rng(3)
    for _ in range(200):
        t = flow_thresholds_from_action(rng.uniform(-1.5, 1.5, 7), lo, hi)
        assert np.all(np.diff(t) >= 0) and t[0] >= lo and t[-1] <= hi
    # a = 0 everywhere spaces them evenly in log bytes over [lo, hi]; the gaps are exp(8 a_i) against the last's 1
    # (the map's formula, exact up to rounding).
    mid = flow_thresholds_from_action(np.zeros(3), lo, hi)
    assert np.log(mid) == pytest.approx(np.log(lo) + np.log(hi / lo) / 4 * np.arange(1, 4), rel=1e-12)
    a = np.array([1.0, -0.25, 0.5])
    w = np.exp(8 * a)
    want = np.log(lo) + np.log(hi / lo) * np.cumsum(w) / (1 + w.sum())
    assert np.log(flow_thresholds_from_action(a, lo, hi)) == pytest.approx(want, rel=1e-12)


def _action_for(thresholds: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The inverse of the map, in plain numpy: each gap's log weight against the last gap's, over 8."""
    edges = np.log(np.concatenate([[lo], thresholds, [hi]]))
    gaps = np.diff(edges)
    return np.log(gaps[:-1] / gaps[-1]) / 8


def test_threshold_sets_with_gaps_within_e8_of_the_last_are_actions_and_pias_sets_nearly():
    # Random increasing sets whose gaps lie within a factor e^8 of the last one: the inverse map's action lies in
    # the box and maps back to the set, to rounding. PIAS's published 8-queue sets (the first threshold far above
    # lo, the rest close together) have gaps down to 1/3500 of the last: the nearest action (clipped) gives them
    # within 0.1%.
    lo, hi = 1460.0, 1460.0 * 2**16
    rng = np.random.default_rng(5)
    for _ in range(50):
        gaps = np.exp(rng.uniform(-7.9, 7.9, 8))
        gaps[-1] = 1.0
        want = np.exp(np.log(lo) + np.log(hi / lo) * np.cumsum(gaps[:-1]) / gaps.sum())
        action = _action_for(want, lo, hi)
        assert np.all(np.abs(action) <= 1)
        assert flow_thresholds_from_action(action, lo, hi) == pytest.approx(want, rel=1e-9)
    pias = [np.array(sets[("mlfq", 8)].bytes) for sets in THRESHOLD_PRESETS.values() if ("mlfq", 8) in sets]
    assert len(pias) == 8
    for want in pias:
        action = np.clip(_action_for(want, lo, hi), -1, 1)
        assert flow_thresholds_from_action(action, lo, hi) == pytest.approx(want, rel=1e-3)


def test_srlas_action_becomes_the_engines_thresholds_for_the_next_interval():
    env = parallel_env(**SMALL)
    env.reset(seed=1)
    action = np.array([0.2, -0.5, 0.9], np.float32)
    _, _, _, _, infos = env.step({"srla": action, "lrla": ZERO["lrla"]})
    expected = flow_thresholds_from_action(action.astype(np.float64), 1460.0, 1460.0 * 2**16)
    assert np.array_equal(env.sim.thresholds, expected)
    assert np.array_equal(infos["srla"]["thresholds_bytes"], expected)


def test_lrlas_choice_pins_each_listed_long_flow_at_its_level_cap_and_path():
    env = parallel_env(**SMALL)
    env.reset(seed=2)
    low = {"srla": np.full(3, -0.5, np.float32), "lrla": ZERO["lrla"]}  # thresholds of 1 to 2 packets
    for _ in range(4):
        env.step(low)
    flows = env.game.agents[0].flows
    listed = flows[flows >= 0]
    assert listed.size >= 2, "a 40 ms run at load 0.8 has long flows to act on"
    choice = np.zeros(33, np.int64)
    choice[0::3], choice[1::3], choice[2::3] = 2, 3, 1  # level 2, cap 0.25 of 1 Gbps, plane 1
    env.step({"srla": low["srla"], "lrla": choice})
    table = env.sim.active_flows_table()
    still = np.isin(table["handle"], listed)
    assert still.any()
    assert np.all(table["level"][still] == 2) and np.all(table["path"][still] == 1) and np.all(table["pinned"][still])
    assert np.all(table["rate_gbps"][still] <= 0.25 + 1e-12)  # the cap holds (a flow may get less)


def test_keep_level_adds_a_choice_that_leaves_the_flow_to_mlfq():
    env = parallel_env(**SMALL, keep_level=True)
    assert list(env.action_space("lrla").nvec[:3]) == [5, 4, 3]  # the fifth level choice: keep
    env.reset(seed=2)
    keep = np.zeros(33, np.int64)
    keep[0::3] = 4
    thresholds = {"srla": np.full(3, -0.5, np.float32)}  # 1 to 2 packets: MLFQ demotes every long flow at once
    for _ in range(4):
        env.step({**thresholds, "lrla": keep})
    flows = env.game.agents[0].flows
    listed = flows[flows >= 0]
    assert listed.size >= 2
    env.step({**thresholds, "lrla": keep})
    table = env.sim.active_flows_table()
    still = np.isin(table["handle"], listed)
    assert still.any() and not table["pinned"][still].any()
    assert np.all(table["level"][still] == 3)  # MLFQ's last level: past the last threshold
    pin = keep.copy()
    pin[0::3] = 1  # level 1 pins the flows listed now, against MLFQ's thresholds
    flows = env.game.agents[0].flows
    env.step({**thresholds, "lrla": pin})
    table = env.sim.active_flows_table()
    still = np.isin(table["handle"], flows[flows >= 0])
    assert table["pinned"][still].all() and np.all(table["level"][still] == 1)
    with pytest.raises(
        InvalidActionError, match=r"^lrla: action\[0\] = 5 is not a level index of long flow 0; allowed: 0 \.\. 4"
    ):
        env.step({**thresholds, "lrla": np.full(33, 5)})


def test_observations_are_scaled_into_the_unit_box_and_padded_with_zeros():
    env = parallel_env(**SMALL)
    obs, _ = env.reset(seed=1)
    assert not obs["srla"].any() and not obs["lrla"].any()  # nothing has happened yet
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, *_ = env.step(_actions(env, rng))
        for agent in ("srla", "lrla"):
            assert obs[agent].dtype == np.float32 and obs[agent].min() >= 0 and obs[agent].max() <= 1
    rows = obs["srla"].reshape(100, 7)
    filled = rows[:, 4] > 0  # size column
    assert 0 < filled.sum() < 100 and not rows[~filled].any()


def test_srlas_reward_is_the_ratio_of_consecutive_mean_fcts():
    env = parallel_env(**SMALL)
    env.reset(seed=4)
    means = []
    rewards = []
    for _ in range(6):
        _, r, _, _, infos = env.step(ZERO)
        means.append(infos["srla"]["mean_fct_ms"])
        rewards.append(r["srla"])
    assert rewards[0] == 1.0  # no previous interval
    for k in range(1, 6):
        if means[k] > 0 and means[k - 1] > 0:
            assert rewards[k] == pytest.approx(means[k - 1] / means[k], rel=1e-9)


def test_the_flowtime_reward_sums_to_minus_the_flows_time_in_the_network():
    env = parallel_env(**SMALL, reward="flowtime")
    env.reset(seed=4)
    sim, game = env.sim, env.game
    start = sim.results()
    rewards = [env.step(ZERO)[1] for _ in range(6)]
    assert all(r["srla"] == r["lrla"] <= 0 for r in rewards) and min(r["srla"] for r in rewards) < 0
    end = sim.results()
    flow_seconds = end["mean_active_flows"] * end["measured_time_s"] - (
        start["mean_active_flows"] * start["measured_time_s"] if start["measured_time_s"] > 0 else 0.0
    )
    scale = game.interval_s * game.num_hosts
    assert sum(r["srla"] for r in rewards) * scale == pytest.approx(-flow_seconds, rel=1e-9)


def test_the_flowtime_ref_reward_is_the_flowtime_less_the_held_policys():
    held = parallel_env(**SMALL, reward="flowtime_ref")
    held.reset(seed=4)
    # Not acting is the held policy: the reference run is the episode's twin, every reward 0.
    assert [float(held.game.step(None, None, [0])[1][0, 0]) for _ in range(4)] == [0.0] * 4
    acting, alone = parallel_env(**SMALL, reward="flowtime_ref"), parallel_env(**SMALL, reward="flowtime")
    acting.reset(seed=4)
    alone.reset(seed=4)
    baseline = parallel_env(**SMALL, reward="flowtime")
    baseline.reset(seed=4)
    action = {"srla": np.full(acting.game.levels - 1, -1.0, np.float32), "lrla": ZERO["lrla"]}
    got = [acting.step(action)[1]["srla"] for _ in range(6)]
    own = [alone.step(action)[1]["srla"] for _ in range(6)]
    ref = [float(baseline.game.step(None, None, [0])[1][0, 0]) for _ in range(6)]
    assert got == pytest.approx([o - r for o, r in zip(own, ref)], rel=1e-9, abs=1e-12)
    assert any(abs(g) > 0 for g in got)


def test_lrlas_reward_is_capped():
    env = parallel_env(**SMALL, lrla_reward_cap=1.1)
    env.reset(seed=5)
    rewards = [env.step(ZERO)[1]["lrla"] for _ in range(8)]
    assert max(rewards) <= 1.1 and min(rewards) > 0


def test_the_same_seed_gives_the_same_bits_and_another_seed_other_flows():
    def run(seed):
        env = parallel_env(**SMALL)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(9)
        out = [obs["srla"].copy(), obs["lrla"].copy()]
        for _ in range(8):
            obs, r, *_ = env.step(_actions(env, rng))
            out += [obs["srla"], obs["lrla"], np.array([r["srla"], r["lrla"]])]
        return np.concatenate([np.ravel(x) for x in out])

    a, b, c = run(7), run(7), run(8)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_vector_copies_follow_flow_v0_bit_for_bit_and_threads_change_nothing():
    rng = np.random.default_rng(1)
    probe = parallel_env(**SMALL)
    actions = [
        {
            "srla": rng.uniform(-1, 1, (3, 3)).astype(np.float32),
            "lrla": rng.integers(0, probe.action_space("lrla").nvec, (3, 33)),
        }
        for _ in range(5)
    ]
    outs = []
    for threads in (1, 2):
        vec = FlowVectorEnv(3, threads=threads, **SMALL)
        obs, _ = vec.reset(seed=10)
        trail = [obs["srla"].copy()]
        for a in actions:
            obs, r, *_ = vec.step(a)
            trail += [obs["srla"], obs["lrla"], r["srla"], r["lrla"]]
        outs.append(trail)
    for x, y in zip(*outs):
        assert np.array_equal(x, y)
    for k in range(3):  # copy k is flow_v0 reset with seed 10 + k
        env = parallel_env(**SMALL)
        env.reset(seed=10 + k)
        for a in actions:
            obs, r, *_ = env.step({"srla": a["srla"][k], "lrla": a["lrla"][k]})
        assert np.array_equal(obs["lrla"], outs[0][-3][k]) and r["srla"] == outs[0][-2][k]


def test_the_vector_entry_point_steps_many_copies():
    envs = gymnasium.make_vec("dcgym/FlowSrla-v0", num_envs=4, vectorization_mode="vector_entry_point", **SMALL)
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (4, 700)
    for _ in range(3):
        obs, reward, term, trunc, _ = envs.step(envs.action_space.sample())
    assert reward.shape == (4,) and not term.any()
    envs.close()


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ({"srla": np.zeros(2), "lrla": ZERO["lrla"]}, r"^srla: action must have shape \(3,\)"),
        ({"srla": np.array([0, 2.0, 0]), "lrla": ZERO["lrla"]}, r"^srla: action\[1\] = 2\.0; allowed: a number in"),
        ({"srla": np.array([0, np.nan, 0]), "lrla": ZERO["lrla"]}, r"^srla: action\[1\] = nan"),
        ({"srla": ZERO["srla"], "lrla": np.full(33, 4)}, r"^lrla: action\[0\] = 4 is not a level index of long flow 0"),
        (
            {"srla": ZERO["srla"], "lrla": np.r_[np.zeros(5, int), 3, np.zeros(27, int)]},
            r"^lrla: action\[5\] = 3 is not a path index of long flow 1; allowed: 0 \.\. 2",
        ),
        ({"srla": ZERO["srla"], "lrla": np.zeros(33, float)}, r"^lrla: action must hold integer indices"),
        ({"srla": ZERO["srla"]}, r"^no action for lrla"),
        ({**ZERO, "x": 1}, r"^actions for unknown agents x"),
    ],
)
def test_invalid_actions_are_refused_naming_the_agent_and_index(actions, message):
    env = parallel_env(**SMALL)
    env.reset(seed=1)
    before = env.sim.now_s
    with pytest.raises(InvalidActionError, match=message):
        env.step(actions)
    assert env.sim.now_s == before  # nothing applied


def test_step_before_reset_and_after_the_end_is_refused():
    env = parallel_env(scenario="auto_websearch", max_steps=1)
    with pytest.raises(ResetNeededError):
        env.step(ZERO)
    env.reset(seed=1)
    _, _, _, trunc, infos = env.step(ZERO)
    assert trunc == {"srla": True, "lrla": True} and env.agents == []
    assert "episode_metrics" in infos["srla"]
    with pytest.raises(ResetNeededError):
        env.step(ZERO)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"interval_ms": 0}, r"^interval_ms: got 0"),
        ({"scenario": "pias_websrch"}, r'^scenario: got "pias_websrch"; did you mean "pias_websearch"'),
        ({"scenario": "lb_sim"}, r"^scenario: got \"lb_sim\"; allowed: a flow scenario"),
        ({"policy": "fair"}, r"^policy: got \"fair\"; allowed: an MLFQ \(qlas, pias\) or qsjf policy"),
        ({"load_range": (0.9, 0.5)}, r"^load_range: got \[0\.9, 0\.5\]"),
        ({"rate_caps": (1.0, -0.5)}, r"^rate_caps: got"),
        ({"threshold_range_bytes": (100.0, 10.0)}, r"^threshold_range_bytes: got"),
        ({"bogus": 1}, r"^bogus: got 1; allowed: one of the fields"),
    ],
)
def test_bad_arguments_are_refused_naming_the_field(kwargs, message):
    with pytest.raises(InvalidConfigError, match=message):
        parallel_env(**kwargs)


def test_the_policy_argument_sets_levels_and_initial_thresholds():
    env = parallel_env(scenario="auto_websearch", policy="pias", max_steps=2)
    assert env.action_space("srla").shape == (7,) and env.action_space("lrla").nvec[0] == 8
    env.reset(seed=1)
    assert env.sim.thresholds[0] == 46 * 1460.0  # PIAS's published web-search set


def test_the_engine_of_an_episode_is_the_scenarios_with_that_seed():
    env = parallel_env(**SMALL)
    env.reset(seed=3)
    direct = FlowSim(load_scenario("auto_websearch").engine_config(0.8, seed=3))
    env.step(
        {"srla": np.zeros(3, np.float32), "lrla": ZERO["lrla"]}
    )  # nothing observed yet: lRLA's choices touch no flow
    env_flows = env.sim.results()["flows_arrived"]
    direct.run_for(env.sim.now_s)
    assert direct.results()["flows_arrived"] == env_flows


def test_ansi_render_names_levels_and_links_and_rgb_is_an_image():
    env = parallel_env(**SMALL, render_mode="ansi")
    env.reset(seed=1)
    env.step(ZERO)
    text = env.render()
    assert "level" in text and "links" in text and "thresholds" in text
    env = parallel_env(**SMALL, render_mode="rgb_array")
    env.reset(seed=1)
    for _ in range(3):
        env.step(ZERO)
    image = env.render()
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8 and image.std() > 0


def test_a_bad_action_in_a_batch_is_refused_naming_the_agent_copy_and_index():
    vec = FlowVectorEnv(3, **SMALL)
    vec.reset(seed=1)
    lrla = np.zeros((3, 33), np.int64)
    lrla[2, 4] = 9
    with pytest.raises(InvalidActionError, match=r"^lrla \(copy 2\): action\[4\] = 9 is not a rate cap index"):
        vec.step({"srla": np.zeros((3, 3)), "lrla": lrla})
    srla = np.zeros((3, 3))
    srla[1, 0] = -1.5
    with pytest.raises(InvalidActionError, match=r"^srla \(copy 1\): action\[0\] = -1\.5"):
        vec.step({"srla": srla})
    with pytest.raises(InvalidActionError, match=r"^srla: actions must have a leading axis of 3 copies"):
        vec.step({"srla": np.zeros((2, 3))})
