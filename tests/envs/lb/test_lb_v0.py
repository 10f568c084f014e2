"""lb_v0, the multi-LB game: PettingZoo API, rewards as the paper defines them, agreement with the engine."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from dcgym.cpp_core._engine import LbSim
from dcgym.envs import lb_v0
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError, UnknownScenarioError
from dcgym.envs.lb.scenario import load_lb_scenario

SCENARIOS = ["lb_sim", "lb_large"]
ACTION_TYPES = ["discrete", "continuous"]
FD_DECAYED = lb_v0.OBSERVATION_FEATURES.index("fd_decayed")


def uniform(env, agent):
    """The action giving every server the same weight."""
    n = env.num_servers
    return np.zeros(n, np.int64) if env.action_type == "discrete" else np.ones(n, np.float32)


def run(env, steps, seed=1, policy=None):
    """(observations, rewards, infos) after each of `steps` steps from reset(seed)."""
    env.reset(seed=seed)
    trace = []
    for _ in range(steps):
        actions = {a: env.action_space(a).sample() if policy is None else policy(env, a) for a in env.agents}
        obs, rewards, _, _, infos = env.step(actions)
        trace.append((obs, rewards, infos))
    return trace


# ------------------------------------------------------------------ PettingZoo API


@pytest.mark.parametrize("action_type", ACTION_TYPES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_parallel_api_test_passes(scenario, action_type):
    parallel_api_test(lb_v0.parallel_env(scenario=scenario, action_type=action_type, max_steps=4), num_cycles=10)


@pytest.mark.parametrize("action_type", ACTION_TYPES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_parallel_seed_test_passes(scenario, action_type):
    parallel_seed_test(
        lambda: lb_v0.parallel_env(scenario=scenario, action_type=action_type, max_steps=4), num_cycles=10
    )


def test_module_exports_and_metadata():
    assert lb_v0.LbEnv.metadata["name"] == "lb_v0"
    assert lb_v0.raw_env is lb_v0.LbEnv and isinstance(lb_v0.parallel_env(), lb_v0.LbEnv)
    env = lb_v0.parallel_env(scenario="lb_large")
    assert env.possible_agents == [f"lb_{i}" for i in range(6)]
    assert env.observation_space("lb_3") is env.observation_space("lb_3")
    assert env.action_space("lb_3") is env.action_space("lb_3")
    assert env.observation_space("lb_0").shape == (20, 12) and env.action_space("lb_0").nvec.tolist() == [3] * 20
    aec = lb_v0.env(scenario="lb_sim", max_steps=2)  # the AEC form steps the agents in turn
    aec.reset(seed=1)
    turns = []
    for agent in aec.agent_iter():
        turns.append(agent)
        _, _, terminated, truncated, _ = aec.last()
        aec.step(None if terminated or truncated else np.zeros(8, np.int64))
    assert turns == ["lb_0", "lb_1"] * 3  # two steps, then each truncated agent steps once with None
    assert lb_v0.env(scenario="lb_sim").metadata["name"] == "lb_v0"


def test_defaults_come_from_the_scenario_and_the_paper():
    sim, large = lb_v0.parallel_env(scenario="lb_sim"), lb_v0.parallel_env(scenario="lb_large")
    # App. E.1's 84.5% operating point; Table 9's 60 s episodes of 0.5 s and 0.25 s steps.
    assert (sim.load, sim.max_steps, sim.period_us) == (0.845, 120, 500_000)
    assert (large.load, large.max_steps, large.period_us) == (0.833, 240, 250_000)
    assert sim.mean_flow_time_us == pytest.approx(1e6, rel=1e-12)
    assert large.mean_flow_time_us == pytest.approx(25e3, rel=1e-12)
    assert (sim.reward_name, sim.action_type, sim.load_estimate) == ("vbf", "discrete", "fd_decayed")


def test_episode_is_truncated_after_max_steps_and_never_terminated():
    env = lb_v0.parallel_env(scenario="lb_sim", max_steps=3)
    env.reset(seed=1)
    for step in range(1, 4):
        _, _, terminations, truncations, _ = env.step({a: uniform(env, a) for a in env.agents})
        assert not any(terminations.values())
        assert all(truncations.values()) == (step == 3)
    assert env.agents == []
    with pytest.raises(ResetNeededError, match="call reset"):
        env.step({})


def test_step_before_reset_is_refused():
    with pytest.raises(ResetNeededError, match=r"Call reset\(\) before step\(\)"):
        lb_v0.parallel_env(scenario="lb_sim").step({"lb_0": np.zeros(8, np.int64), "lb_1": np.zeros(8, np.int64)})


def test_reset_seed_rebuilds_the_engine_with_that_seed():
    env = lb_v0.parallel_env(scenario="lb_large", max_steps=50)
    first = run(env, 8, seed=5, policy=uniform)
    again = run(env, 8, seed=5, policy=uniform)
    other = run(env, 8, seed=6, policy=uniform)
    assert first[-1][2]["lb_0"]["fct_us"] == again[-1][2]["lb_0"]["fct_us"]
    assert first[-1][2]["lb_0"]["fct_us"] != other[-1][2]["lb_0"]["fct_us"]
    # reset() without a seed draws the next engine seed from the generator of the last seeded reset.
    a, b = lb_v0.parallel_env(scenario="lb_large"), lb_v0.parallel_env(scenario="lb_large")
    for e in (a, b):
        e.reset(seed=9)
        e.reset()
    steps = [e.step({x: uniform(e, x) for x in e.agents})[4]["lb_0"]["fct_us"] for e in (a, b)]
    assert steps[0] == steps[1]


def test_reset_options_load_changes_the_load_for_one_episode():
    env = lb_v0.parallel_env(scenario="lb_large", max_steps=8, render_mode="ansi")
    default = run(env, 8, seed=2, policy=uniform)  # run() resets without options
    env.reset(seed=2, options={"load": 0.3})
    assert env.engine_seed == 2 and "load 0.3 " in env.render()
    for _ in range(8):
        _, _, _, _, infos = env.step({a: uniform(env, a) for a in env.agents})
    sc = load_lb_scenario("lb_large")
    sim = LbSim(sc.engine_config(load=0.3, seed=2, policy="weights"))
    sim.run_until(8 * sc.decision_period_us)
    assert infos["lb_0"]["fct_us"] == sim.results()["fct_us"]
    assert infos["lb_0"]["fct_us"]["count"] < 0.5 * default[-1][2]["lb_0"]["fct_us"]["count"]
    env.reset(seed=2)
    assert "load 0.833 " in env.render()  # the next episode is back at the env's load


def test_load_range_draws_each_episodes_load_from_its_seed_and_runs_the_engine_at_it():
    env = lb_v0.parallel_env(scenario="lb_large", max_steps=4, load_range=(0.61, 0.991))
    loads = []
    for seed in range(40):
        env.reset(seed=seed)
        loads.append(env._episode_load)
    assert all(0.61 <= x <= 0.991 for x in loads) and len(set(loads)) == 40
    assert np.mean(loads) == pytest.approx((0.61 + 0.991) / 2, abs=0.06)  # uniform: standard error 0.017
    env.reset(seed=7)
    assert env._episode_load == loads[7]  # the seed fixes the load
    for _ in range(4):
        _, _, _, _, infos = env.step({a: uniform(env, a) for a in env.agents})
    sc = load_lb_scenario("lb_large")
    sim = LbSim(sc.engine_config(load=loads[7], seed=7, policy="weights"))
    sim.run_until(4 * sc.decision_period_us)
    assert infos["lb_0"]["fct_us"] == sim.results()["fct_us"]
    env.reset(seed=7, options={"load": 0.3})
    assert env._episode_load == 0.3  # an explicit load wins for that episode


# ------------------------------------------------------------------ rewards


def expected_reward(name, x):
    """The paper's fairness functions, written out again (App. B, E.2.1; the authors' src/lb/env.py)."""
    n, var = len(x), np.mean((x - np.mean(x)) ** 2)
    log_vbf = -np.log(var + 1e-6)
    formulas = {
        "vbf": -var,
        "log_vbf": log_vbf,
        "vbf_log_vbf": -var + log_vbf,
        "pbf": np.prod(x) / np.max(x) if np.max(x) > 0 else 0.0,
        "pbf_normalized": np.prod(x / np.max(x)) if np.max(x) > 0 else 1.0,
        "makespan": -np.max(x),
        "jain": np.sum(x) ** 2 / (n * np.sum(x**2)) if np.sum(x**2) > 0 else 1.0,
        "cv": -np.sqrt(var) / np.mean(x) if np.mean(x) > 0 else 0.0,
    }
    return formulas[name]


@pytest.mark.parametrize("reward", list(lb_v0.REWARDS))
def test_reward_is_its_formula_over_the_lbs_own_decayed_flow_durations(reward):
    env = lb_v0.parallel_env(scenario="lb_large", reward=reward, max_steps=12)
    trace = run(env, 12, seed=3)
    per_agent_rewards = set()
    for obs, rewards, infos in trace:
        for agent, r in rewards.items():
            x = obs[agent][:, FD_DECAYED].astype(np.float64)  # this LB's estimates, in units of D
            assert isinstance(r, float) and np.isfinite(r)
            assert r == pytest.approx(expected_reward(reward, x), rel=1e-12, abs=1e-300)
            np.testing.assert_array_equal(infos[agent]["load_estimate"], x)
            per_agent_rewards.add(r)
    assert len(per_agent_rewards) > len(trace)  # per LB, not shared: LBs see different flows


def test_fct_reward_is_minus_the_lbs_own_mean_fct_in_d_and_holds_through_empty_periods():
    env = lb_v0.parallel_env(scenario="lb_sim", reward="fct", dispatch="sed", max_steps=30)
    trace = run(env, 30, seed=3)
    previous = dict.fromkeys(env.possible_agents, -1.0)
    held = 0
    for _, rewards, infos in trace:
        for agent, r in rewards.items():
            info = infos[agent]
            if info["lb_fct_samples"]:  # float32 observations: the info's float64 mean to 1e-6
                assert r == pytest.approx(-info["lb_fct_mean_us"] / env.mean_flow_time_us, rel=1e-6)
            else:
                assert r == previous[agent]
                held += 1
            previous[agent] = r
    assert len({r for _, rewards, _ in trace for r in rewards.values()}) > len(trace)  # per LB
    assert held > 0  # lb_sim's LBs see periods in which none of their flows ends


def test_reward_of_equal_estimates_is_the_fair_optimum():
    x = np.full(8, 0.7)
    assert lb_v0.vbf(x) == 0.0 and lb_v0.makespan(x) == -0.7 and lb_v0.cv(x) == pytest.approx(0.0)
    assert lb_v0.jain(x) == pytest.approx(1.0) and lb_v0.pbf_normalized(x) == pytest.approx(1.0)
    assert lb_v0.log_vbf(x) == pytest.approx(-np.log(1e-6))
    skewed = np.array([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 4.2])  # same mean, one server hot
    for name, f in lb_v0.REWARDS.items():
        if name != "pbf":  # prod(x) / max(x) rewards load itself, not balance (it is scale-dependent)
            assert f(x) > f(skewed), name


def test_capacity_aware_weights_earn_more_vbf_and_lower_fct_than_uniform():
    # Uniform weights overload the 2-worker servers of the large setting (100 flows/s each for a capacity of 80).
    returns, fct = {}, {}
    for name in ("uniform", "capacity"):
        env = lb_v0.parallel_env(scenario="lb_large", reward="vbf", max_steps=80)
        action = np.where(env.workers == 4, 2, 0) if name == "capacity" else np.zeros(20, np.int64)  # 2.0 vs 1.0
        trace = run(env, 80, seed=7, policy=lambda e, a, chosen=action: chosen)
        returns[name] = np.mean([sum(r.values()) for _, r, _ in trace])
        fct[name] = trace[-1][2]["lb_0"]["fct_us"]["mean"]
    assert returns["capacity"] > 5 * returns["uniform"]  # both negative: 5x less variance at least
    assert fct["capacity"] < 0.2 * fct["uniform"]


def test_load_estimate_selects_the_observation_column_the_reward_reads():
    env = lb_v0.parallel_env(scenario="lb_large", reward="makespan", load_estimate="fct_mean", max_steps=6)
    column = lb_v0.OBSERVATION_FEATURES.index("fct_mean")
    for obs, rewards, _ in run(env, 6, seed=2):
        for agent, r in rewards.items():
            assert r == -float(np.max(obs[agent][:, column].astype(np.float64)))


# ------------------------------------------------------------------ agreement with the engine


@pytest.mark.parametrize("action_type", ACTION_TYPES)
@pytest.mark.parametrize("scenario,steps", [("lb_sim", 40), ("lb_large", 20)])
def test_equal_weights_give_the_engine_weights_policy_statistics(scenario, steps, action_type):
    env = lb_v0.parallel_env(scenario=scenario, action_type=action_type, max_steps=steps)
    trace = run(env, steps, seed=11, policy=uniform)
    sc = load_lb_scenario(scenario)
    sim = LbSim(sc.engine_config(load=env.load, seed=11, policy="weights"))  # uniform weights, never set
    sim.run_until(steps * sc.decision_period_us)
    direct = sim.results()
    _, _, infos = trace[-1]
    assert direct["fct_us"]["count"] > 100
    assert infos["lb_0"]["fct_us"] == direct["fct_us"]  # exactly: same flows, same dispatch draws
    assert infos["lb_0"]["sim_time_us"] == direct["sim_time_us"]
    assert sum(i["lb_0"]["step_flows_ended"] for _, _, i in trace) == direct["fct_us"]["count"]
    assert sum(i["lb_0"]["step_flows_rejected"] for _, _, i in trace) == direct["flows_rejected"]
    total = sum(i["lb_0"]["step_fct_mean_us"] * i["lb_0"]["step_flows_ended"] for _, _, i in trace)
    assert total / direct["fct_us"]["count"] == pytest.approx(direct["fct_us"]["mean"], rel=1e-9)
    # Observations are the engine's, times in units of D and counts as reservoir fill.
    raw = sim.observations()
    obs = np.stack([trace[-1][0][a] for a in env.possible_agents])
    features = list(LbSim.observation_features)
    for k, name in enumerate(features):
        scale = env.mean_flow_time_us if name.endswith("_us") else 32 if name.endswith("_count") else 1
        np.testing.assert_allclose(obs[:, :, k].astype(np.float64) * scale, raw[:, :, k], rtol=1e-6, err_msg=name)
    np.testing.assert_array_equal(env.state(), obs)


def test_one_hot_weights_send_all_of_an_lbs_flows_to_one_server():
    env = lb_v0.parallel_env(scenario="lb_large", action_type="continuous", max_steps=10)
    one_hot = np.zeros(20, np.float32)
    one_hot[13] = 1.0
    policy = lambda e, a: one_hot if a == "lb_0" else uniform(e, a)  # noqa: E731
    dispatched = lb_v0.OBSERVATION_FEATURES.index("dispatched")
    in_progress = lb_v0.OBSERVATION_FEATURES.index("flows_in_progress")
    for obs, _, infos in run(env, 10, seed=4, policy=policy):
        sent = obs["lb_0"][:, dispatched]
        assert sent[13] > 40 and np.count_nonzero(sent) == 1  # about 333 flows/s x 0.25 s
        assert np.count_nonzero(obs["lb_0"][:, in_progress]) <= 1
        assert np.count_nonzero(obs["lb_1"][:, dispatched]) > 10  # the other LBs still spread theirs
        np.testing.assert_array_equal(infos["lb_0"]["weights"], one_hot)


def test_discrete_actions_pick_weights_1_1_5_2():
    env = lb_v0.parallel_env(scenario="lb_sim", max_steps=2)
    env.reset(seed=1)
    action = np.array([0, 1, 2, 0, 1, 2, 0, 0])
    _, _, _, _, infos = env.step({"lb_0": action, "lb_1": np.zeros(8, np.int64)})
    levels = np.array([1.0, 1.5, 2.0, 1.0, 1.5, 2.0, 1.0, 1.0])
    np.testing.assert_allclose(infos["lb_0"]["weights"], levels / levels.sum())
    np.testing.assert_allclose(infos["lb_1"]["weights"], np.full(8, 1 / 8))


def test_all_zero_continuous_action_means_uniform():
    env = lb_v0.parallel_env(scenario="lb_sim", action_type="continuous", max_steps=2)
    env.reset(seed=1)
    _, _, _, _, infos = env.step({a: np.zeros(8, np.float32) for a in env.agents})
    np.testing.assert_array_equal(infos["lb_1"]["weights"], np.full(8, 1 / 8))


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    "action_type,action,message",
    [
        ("continuous", np.full(8, np.nan), r"lb_1: action\[0\] = nan; allowed: a weight in \[0, 1\]"),
        ("continuous", np.ones(7), r"lb_1: action must have shape \(8,\), one entry per server, got shape \(7,\)"),
        ("continuous", np.ones((2, 8)), r"lb_1: action must have shape \(8,\)"),
        ("continuous", np.array([1, 1, -0.5, 1, 1, 1, 1, 1]), r"lb_1: action\[2\] = -0.5; allowed: a weight in"),
        ("continuous", np.array([1, 1, 1, 1, 1, 1, 1, 3.0]), r"lb_1: action\[7\] = 3.0; allowed"),
        ("continuous", "heavy", r"lb_1: action must have shape \(8,\)"),
        (
            "discrete",
            np.array([0, 1, 2, 3, 0, 0, 0, 0]),
            r"lb_1: action\[3\] = 3 is not a weight index; allowed: "
            r"0 = weight 1, 1 = weight 1.5, 2 = weight 2",
        ),
        ("discrete", np.array([0, -1, 0, 0, 0, 0, 0, 0]), r"lb_1: action\[1\] = -1 is not a weight index"),
        ("discrete", np.full(8, 0.5), r"lb_1: action must hold integer indices .* got dtype float64"),
        ("discrete", [0, 1], r"lb_1: action must have shape \(8,\)"),
    ],
)
def test_invalid_actions_are_refused_naming_the_agent_and_entry(action_type, action, message):
    env = lb_v0.parallel_env(scenario="lb_sim", action_type=action_type)
    env.reset(seed=1)
    with pytest.raises(InvalidActionError, match=message):
        env.step({"lb_0": uniform(env, "lb_0"), "lb_1": action})
    assert env._sim.now_us == 0 and env.agents == ["lb_0", "lb_1"]  # nothing applied, nothing run
    env.step({a: uniform(env, a) for a in env.agents})  # the env is still usable


def test_missing_or_unknown_agents_are_refused():
    env = lb_v0.parallel_env(scenario="lb_sim")
    env.reset(seed=1)
    with pytest.raises(InvalidActionError, match="no action for lb_1; step"):
        env.step({"lb_0": np.zeros(8, np.int64)})
    with pytest.raises(InvalidActionError, match="unknown agents lb_7"):
        env.step({"lb_0": np.zeros(8, np.int64), "lb_1": np.zeros(8, np.int64), "lb_7": np.zeros(8, np.int64)})


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"scenario": "lb_smi"}, UnknownScenarioError, 'scenario: got "lb_smi"; did you mean "lb_sim"'),
        ({"scenario": "mm1"}, InvalidConfigError, r'scenario: got "mm1"; allowed: a multi-LB scenario .*lb_sim'),
        ({"reward": "vfb"}, InvalidConfigError, 'reward: got "vfb"; did you mean "vbf"'),
        ({"action_type": "box"}, InvalidConfigError, 'action_type: got "box"; allowed: one of discrete, continuous'),
        ({"load_estimate": "fd_decay"}, InvalidConfigError, 'load_estimate: got "fd_decay"; did you mean "fd_decayed"'),
        ({"load": -1.0}, InvalidConfigError, "load: got -1.0"),
        ({"load_range": (0.9, 0.5)}, InvalidConfigError, r"^load_range: got \[0\.9, 0\.5\]; allowed: \[low, high\]"),
        ({"max_steps": 0}, InvalidConfigError, "max_steps: got 0; allowed: a positive integer"),
        ({"scenario": "lb_reference"}, InvalidConfigError, "max_steps: got null; .*has no episode_us"),
        ({"render_mode": "human"}, InvalidConfigError, 'render_mode: got "human"; allowed: one of ansi, rgb_array'),
        ({"overrides": {"lbs": 0}}, InvalidConfigError, "lbs: got 0"),
    ],
)
def test_bad_arguments_are_refused_naming_the_field(kwargs, error, message):
    with pytest.raises(error, match=message):
        lb_v0.parallel_env(**kwargs)


def test_bad_reset_seed_is_refused_naming_the_field():
    with pytest.raises(InvalidConfigError, match="seed: got -3"):
        lb_v0.parallel_env(scenario="lb_sim").reset(seed=-3)


# ------------------------------------------------------------------ rendering


def test_ansi_rendering_has_one_line_per_server():
    env = lb_v0.parallel_env(scenario="lb_large", render_mode="ansi", max_steps=5)
    run(env, 5, seed=1, policy=uniform)
    lines = env.render().splitlines()
    assert lines[0].startswith("lb_v0 lb_large  t = 1.25 s  step 5/5")
    assert len(lines) == 2 + 20
    assert lines[2].startswith("s0 ") and lines[-1].split()[-7] == "4"  # the last server has 4 workers
    assert lines[-1].count("0.05") == 6  # uniform weights of the 6 LBs


def test_rgb_rendering_shows_server_loads_over_the_last_steps():
    env = lb_v0.parallel_env(scenario="lb_large", render_mode="rgb_array", max_steps=5)
    run(env, 5, seed=1, policy=uniform)
    image = env.render()
    assert image.shape == (20 * 8, 64 * 8, 3) and image.dtype == np.uint8
    assert (image[:, : 58 * 8] == 30).all()  # no data before the first observation
    assert image[0, -1, 0] > image[-1, -1, 0]  # the 2-worker servers are redder than the 4-worker ones
    assert lb_v0.parallel_env(scenario="lb_sim").render() is None  # no render_mode, nothing drawn


# ------------------------------------------------------------------ RLlib


@pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")  # RLlib re-registers its env wrapper
@pytest.mark.parametrize("action_type", ACTION_TYPES)
def test_rllib_builds_and_samples_lb_v0(ray_session, tmp_path, monkeypatch, action_type):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import FlattenObservations
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    monkeypatch.setattr("ray.tune.trainable.trainable.DEFAULT_STORAGE_PATH", str(tmp_path))  # not ~/ray_results
    register_env("dcgym_lb_v0_test", lambda cfg: ParallelPettingZooEnv(lb_v0.parallel_env(**cfg)))
    agents = ["lb_0", "lb_1"]
    config = (
        PPOConfig()
        .environment("dcgym_lb_v0_test", env_config={"scenario": "lb_sim", "action_type": action_type, "max_steps": 4})
        .env_runners(
            num_env_runners=0,
            rollout_fragment_length=8,
            env_to_module_connector=lambda env, spaces=None, device=None: FlattenObservations(multi_agent=True),
        )
        .learners(num_learners=0)
        .multi_agent(policies=set(agents), policy_mapping_fn=lambda agent_id, *args, **kwargs: agent_id)
        .training(train_batch_size_per_learner=16, minibatch_size=8, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )
    algo = config.build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=8, random_actions=False)
        assert sum(len(e) for e in episodes) >= 8
        assert all(set(e.agent_ids) == set(agents) for e in episodes)
        returns = algo.train()["env_runners"]["agent_episode_returns_mean"]
        assert set(returns) == set(agents) and all(np.isfinite(v) for v in returns.values())
    finally:
        algo.stop()
