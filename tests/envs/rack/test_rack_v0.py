"""rack_v0, Malcolm's game: PettingZoo API, rewards as eq. (1) defines them, agreement with the bare engine."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

from dcgym.cpp_core import RackSim
from dcgym.envs import rack_v0
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError, UnknownScenarioError
from dcgym.envs.rack.game import REWARD_COSTS
from dcgym.envs.scenario import list_scenarios

# Small racks of every kind: homogeneous, heterogeneous, one node, a switch scenario, a traffic shift.
SCENARIOS = ["malcolm_homog_exp", "malcolm_hetero_paper_exp", "mm1", "racksched_sim_exp", "malcolm_adapt_shift"]


def run(env, steps, seed=1, policy=None):
    """(observations, rewards, infos) after each of ``steps`` steps from reset(seed)."""
    env.reset(seed=seed)
    trace = []
    for _ in range(steps):
        actions = {a: env.action_space(a).sample() if policy is None else policy(env, a) for a in env.agents}
        obs, rewards, _, _, infos = env.step(actions)
        trace.append((obs, rewards, infos))
    return trace


def uniform_policy(env, agent):
    """Uniform migration, never steal (as probabilities)."""
    n = env.game.num_nodes
    action = np.concatenate([np.ones(n), np.zeros(n)])
    action[n + int(agent.split("_")[1])] = 1.0
    return action


# ------------------------------------------------------------------ PettingZoo API


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_parallel_api_test_passes(scenario):
    parallel_api_test(rack_v0.parallel_env(scenario=scenario, max_steps=5), num_cycles=12)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_parallel_seed_test_passes(scenario):
    parallel_seed_test(
        lambda: rack_v0.parallel_env(scenario=scenario, max_steps=5, obs_extras=("arrival_rate", "rank")),
        num_cycles=10,
    )


def test_aec_form_passes_the_aec_api_test():
    # warm-up so the first observation is not all zeros (api_test warns about that)
    api_test(rack_v0.env(scenario="malcolm_homog_exp", max_steps=3, warmup_us=1000), num_cycles=10)


def test_module_exports_metadata_and_cached_spaces():
    assert rack_v0.RackEnv.metadata["name"] == "rack_v0"
    assert rack_v0.raw_env is rack_v0.RackEnv and isinstance(rack_v0.parallel_env(), rack_v0.RackEnv)
    env = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", obs_extras=("capacity",))
    assert env.possible_agents == [f"node_{i}" for i in range(14)]
    assert env.observation_space("node_3") is env.observation_space("node_3") is env.observation_space("node_5")
    assert env.action_space("node_3") is env.action_space("node_3")
    assert env.observation_space("node_0").shape == (16,) and env.action_space("node_0").shape == (28,)
    assert env.action_space("node_0").low[0] == -10 and env.action_space("node_0").high[0] == 10
    probs = rack_v0.parallel_env(action_type="probabilities").action_space("node_0")
    assert probs.low[0] == 0 and probs.high[0] == 1
    with pytest.raises(KeyError, match="node_0 .. node_13"):
        env.action_space("node_14")


@pytest.mark.parametrize("scenario", list_scenarios("rack"))
def test_every_rack_scenario_runs(scenario):
    env = rack_v0.parallel_env(scenario=scenario, max_steps=2)
    trace = run(env, 2)
    assert not env.agents  # truncated after max_steps
    assert all(np.isfinite(r) for _, rewards, _ in trace for r in rewards.values())


# ------------------------------------------------------------- scenario handling


def test_switch_scenario_becomes_node_entry_with_heartbeat_broadcasts():
    env = rack_v0.parallel_env(scenario="racksched_sim_exp", heartbeat_us=50)
    cfg = env.game.engine_config
    assert cfg["entry"]["kind"] == "nodes" and cfg["dispatch"] == {"policy": "table", "metric": "expected_wait"}
    assert cfg["load_info"]["model"] == "periodic" and cfg["load_info"]["period_us"] == 50


def test_node_scenario_keeps_its_load_information_and_split():
    env = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", overrides={"entry.split": [1] * 4 + [0] * 10})
    cfg = env.game.engine_config
    assert cfg["load_info"] == {"model": "periodic", "period_us": 100.0, "delay_us": 2.0, "local_increment": True}
    assert cfg["entry"]["split"] == [1.0] * 4 + [0.0] * 10
    _, _, infos = run(env, 3, policy=uniform_policy)[-1]
    assert all(infos[f"node_{i}"]["migrate"].sum() == 0 for i in range(4, 14))  # no arrivals at the slow nodes


def test_scenario_file_path_and_overrides(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(
        "kind: rack\ndescription: two nodes\nnodes:\n  - {count: 2, workers: 2}\nservice: {dist: exp, mean_us: 10}\n"
    )
    env = rack_v0.parallel_env(scenario=str(path), overrides={"nodes.0.count": 3})
    assert env.possible_agents == ["node_0", "node_1", "node_2"]


def test_bad_scenario_name_is_refused_with_a_suggestion():
    with pytest.raises(UnknownScenarioError, match='did you mean "malcolm_homog_exp"'):
        rack_v0.parallel_env(scenario="malcolm_homog_ex")


def test_non_rack_scenario_is_refused():
    with pytest.raises(InvalidConfigError, match="scenario: .*allowed: a rack scenario"):
        rack_v0.parallel_env(scenario="lb_sim")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"reward": "utilty"}, "reward"),
        ({"heartbeat_us": 0}, "heartbeat_us"),
        ({"obs_extras": ["rank", "rank"]}, "obs_extras"),
        ({"obs_extras": ["speed"]}, "obs_extras.0"),
        ({"load": 12}, "load"),
        ({"heartbeats": 3}, "heartbeats"),
        ({"drop_cost": -1}, "drop_cost"),
    ],
)
def test_bad_arguments_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(InvalidConfigError) as error:
        rack_v0.parallel_env(**kwargs)
    assert error.value.field == field


# ------------------------------------------------------------------ actions


@pytest.mark.parametrize(
    ("action_type", "bad", "message"),
    [
        ("logits", lambda a: np.r_[a, 0.0], r"action of node_2: got shape \(21,\); expected \(20,\)"),
        ("logits", lambda a: a[:5], r"action of node_2: got shape \(5,\)"),
        ("logits", lambda a: np.where(np.arange(20) == 7, np.nan, a), "action of node_2: got nan at index 7"),
        ("logits", lambda a: np.where(np.arange(20) == 12, np.inf, a), "action of node_2: got inf at index 12"),
        ("probabilities", lambda a: np.where(np.arange(20) == 3, -0.5, a), "action of node_2: got -0.5 at index 3"),
        ("probabilities", lambda a: np.r_[a[:10], np.zeros(10)], "action of node_2: the stealing half sums to 0.0"),
        ("probabilities", lambda a: "accept", r"action of node_2: got shape \(\)"),
    ],
)
def test_invalid_actions_are_refused_naming_the_agent(action_type, bad, message):
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp", action_type=action_type)
    env.reset(seed=1)
    actions = {a: np.full(20, 0.5) for a in env.agents}
    actions["node_2"] = bad(actions["node_2"])
    with pytest.raises(InvalidActionError, match=message):
        env.step(actions)


def test_missing_and_unknown_agents_are_refused():
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp")
    env.reset(seed=1)
    actions = {a: np.zeros(20) for a in env.agents}
    del actions["node_4"]
    with pytest.raises(InvalidActionError, match=r"missing \['node_4'\]"):
        env.step(actions)
    actions["node_4"] = actions["node_10"] = np.zeros(20)
    with pytest.raises(InvalidActionError, match=r"unknown \['node_10'\]"):
        env.step(actions)


def test_step_before_reset_and_after_truncation_asks_for_reset():
    env = rack_v0.parallel_env(scenario="mm1", max_steps=1)
    with pytest.raises(ResetNeededError, match=r"Call reset\(\) before step\(\)"):
        env.step({})
    env.reset(seed=1)
    _, _, terminations, truncations, _ = env.step({"node_0": np.zeros(2)})
    assert truncations == {"node_0": True} and terminations == {"node_0": False} and env.agents == []
    with pytest.raises(ResetNeededError, match="episode is over"):
        env.step({"node_0": np.zeros(2)})


def test_logits_and_probabilities_set_the_same_tables():
    logits = rack_v0.parallel_env(scenario="malcolm_homog_exp")
    weights = rack_v0.parallel_env(scenario="malcolm_homog_exp", action_type="probabilities")
    rng = np.random.default_rng(3)
    a = rng.uniform(-3, 3, size=(1, 10, 20))
    half = np.exp(a.reshape(1, 10, 2, 10))
    p = (half / half.sum(axis=-1, keepdims=True)).reshape(1, 10, 20)
    for got, want in zip(logits.game.tables(a, [0]), weights.game.tables(p, [0])):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    clipped = logits.game.tables(np.full((1, 10, 20), 50.0) * (np.arange(20) == 0), [0])[0][0, 0]
    assert clipped[0] / clipped[1] == pytest.approx(np.exp(10.0))  # logits clipped to max_logit = 10


# ------------------------------------------------------------ observations


def test_observation_is_the_view_of_each_node_in_mean_service_times():
    env = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", obs_extras=("arrival_rate", "capacity", "rank"))
    obs, _, infos = run(env, 20, policy=uniform_policy)[-1]
    beliefs = env.game.sims[0].beliefs() / 75.0
    x = infos["node_0"]["true_loads"]
    np.testing.assert_allclose(x, env.game.sims[0].true_loads() / 75.0)
    for i in range(14):
        o = obs[f"node_{i}"]
        assert o.dtype == np.float32 and o.shape == (18,)
        np.testing.assert_allclose(o[:14], beliefs[i], rtol=1e-6)
        assert o[14] == pytest.approx(x[i], rel=1e-6) == pytest.approx(beliefs[i, i], rel=1e-6)
        arrivals = infos[f"node_{i}"]["migrate"].sum()
        assert o[15] == pytest.approx(arrivals * 75 / 100, rel=1e-6)
        assert o[16] == (14 if i < 4 else 3)
        below = sum(b < beliefs[i, i] or (b == beliefs[i, i] and j < i) for j, b in enumerate(beliefs[i]))
        assert o[17] == pytest.approx(below / 13)


def test_observations_are_clipped_and_queue_metric_counts_tasks():
    env = rack_v0.parallel_env(scenario="malcolm_fig1_exp", load=0.99, obs_clip=2.0, load_metric="queue")
    obs, _, infos = run(env, 30)[-1]
    assert max(o.max() for o in obs.values()) == 2.0 and infos["node_0"]["true_loads"].max() > 2.0
    assert env.game.scale == 1.0 and env.game.engine_config["dispatch"]["metric"] == "queue"


def test_nominal_wait_is_the_outstanding_tasks_times_the_nominal_mean_over_workers():
    """nominal_wait: outstanding x mean service time / (speed x workers), exactly; expected_wait uses each node's
    moving average of execution times instead, which a heavy-tailed service (HyperExp-2, CV^2 about 10) moves."""
    loads = {}
    for metric in ("nominal_wait", "expected_wait"):
        env = rack_v0.parallel_env(scenario="malcolm_hetero_paper_hyperexp2", load=0.9, load_metric=metric)
        run(env, 30, policy=uniform_policy)
        sim = env.game.sims[0]
        outstanding = np.asarray(sim.results()["nodes"]["outstanding"], np.float64)
        nominal = outstanding * env.game.mean_service_us / env.game.workers
        loads[metric] = sim.true_loads(), nominal
        assert env.game.scale == 1.0 / env.game.mean_service_us
    np.testing.assert_allclose(*loads["nominal_wait"], rtol=1e-12)
    assert not np.allclose(*loads["expected_wait"], rtol=1e-3)


def test_state_is_the_clipped_true_loads():
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp")
    _, _, infos = run(env, 5)[-1]
    np.testing.assert_allclose(env.state(), np.clip(infos["node_0"]["true_loads"], 0, 100), rtol=1e-6)
    assert env.state() in env.state_space


# ------------------------------------------------------------------ rewards


def counts_of(infos, n):
    """Total migrations, steal requests, failed steals and drops of a step, from the agents' infos."""
    keys = ("migrations", "steals", "failed_steals", "dropped")
    total = {key: sum(infos[f"node_{i}"][key] for i in range(n)) for key in keys}
    requests = sum(infos[f"node_{i}"]["steal"].sum() - infos[f"node_{i}"]["steal"][i] for i in range(n))
    assert requests == total["steals"] + total["failed_steals"]
    return total


def ordered_pair_imbalance(x):
    return sum((xi - xj) ** 2 for xi in x for xj in x)


@pytest.mark.parametrize("reward", ["utility", "imbalance_delta", "neg_p99", "neg_mean"])
def test_reward_is_the_formula_recomputed_from_true_loads_and_counts(reward):
    costs = {"migration_cost": 0.01, "steal_cost": 0.02, "failed_steal_cost": 0.5, "drop_cost": 3.0}
    small_queues = {"nodes.1.queue_capacity": 2}  # so that tasks are dropped too
    env = rack_v0.parallel_env(scenario="malcolm_fig1_exp", overrides=small_queues, load=0.95, reward=reward, **costs)
    previous, seen = None, dict.fromkeys(("migrations", "steals", "failed_steals", "dropped"), 0)
    env.reset(seed=2)
    for _ in range(25):
        _, rewards, _, _, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
        c = counts_of(infos, 16)
        seen = {key: seen[key] + c[key] for key in seen}
        x = infos["node_0"]["true_loads"]
        requests = c["steals"] + c["failed_steals"]
        cost = 0.01 * c["migrations"] + 0.02 * requests + 0.5 * c["failed_steals"] + 3.0 * c["dropped"]
        if reward == "utility":
            want = -ordered_pair_imbalance(x) - cost
        elif reward == "imbalance_delta":
            now = ordered_pair_imbalance(x) / (16 * 15)
            want = (previous if previous is not None else 0.0) - now - cost
            previous = now
        else:
            key = "latency_p99_us" if reward == "neg_p99" else "latency_mean_us"
            want = -infos["node_0"][key] / env.game.mean_service_us - cost  # Exp(20) here
        assert set(rewards.values()) == {rewards["node_0"]}  # one team reward
        assert rewards["node_0"] == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert min(seen.values()) > 0  # every cost term was exercised


def test_default_costs_follow_the_paper_for_utility_and_the_code_for_imbalance_delta():
    assert rack_v0.parallel_env().config.costs == REWARD_COSTS["utility"] == (1e-4, 1e-4, 0.0, 0.0)
    assert rack_v0.parallel_env(reward="imbalance_delta").config.costs == (1e-4, 1e-4, 0.0, 10.0)
    assert rack_v0.parallel_env(reward="imbalance_delta", drop_cost=100).config.costs.drop == 100


def test_balanced_policy_earns_more_than_a_random_one():
    def capacity_share(env, agent):
        i, cap = int(agent.split("_")[1]), env.game.capacity
        return np.concatenate([cap / cap.sum(), np.eye(env.game.num_nodes)[i]])

    balanced = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", action_type="probabilities")
    mean_balanced = np.mean([r["node_0"] for _, r, _ in run(balanced, 200, policy=capacity_share)])
    uniform = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", action_type="probabilities")
    mean_uniform = np.mean([r["node_0"] for _, r, _ in run(uniform, 200, policy=uniform_policy)])
    assert mean_balanced > 10 * mean_uniform  # both negative: the uniform tables overload the 3-worker nodes


# ------------------------------------------------------- agreement with the engine


def test_fixed_tables_through_the_env_match_the_bare_engine():
    """The same tables for the same simulated time give the same tasks, counts and latencies, bit for bit."""
    env = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", action_type="probabilities", max_steps=500)
    trace = run(env, 500, seed=7, policy=uniform_policy)
    n = 14
    sim = RackSim(dict(env.game.engine_config, seed=7))
    migration, stealing = np.full((n, n), 1 / n), np.eye(n)
    sim.set_tables(migration, stealing)
    sim.step_latency(reset=True)
    sim.run_until(500 * 100.0)
    want, got = sim.results(), env.game.sims[0].results()
    assert got["latency_us"] == want["latency_us"]
    for key in ("tasks_arrived", "tasks_completed", "tasks_dropped", "migrations", "steals", "events"):
        assert got[key] == want[key]
    assert sum(i["node_0"]["completed"] for _, _, i in trace) == want["tasks_completed"]
    assert sum(sum(i[f"node_{k}"]["migrations"] for k in range(n)) for _, _, i in trace) == want["migrations"]


def test_reset_seed_is_the_engine_seed_and_reset_without_seed_draws_one():
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp")
    env.reset(seed=11)
    assert env.engine_seed == 11
    env.reset()
    first = env.engine_seed
    env.reset(seed=11)
    env.reset()
    assert env.engine_seed == first != 11  # drawn from np_random, seeded by reset(seed=11)


def test_options_load_changes_the_load_for_one_episode():
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp", load=0.5, max_steps=50)

    def completed(options):
        env.reset(seed=1, options=options)
        return sum(env.step({a: np.zeros(20) for a in env.agents})[4]["node_0"]["completed"] for _ in range(50))

    assert completed({"load": 0.9}) > 1.5 * completed(None)
    with pytest.raises(InvalidConfigError, match="options.load"):
        env.reset(options={"load": -1})


def test_load_range_draws_each_episodes_load_from_the_engine_seed():
    ranged = rack_v0.parallel_env(scenario="malcolm_homog_exp", load_range=(0.3, 0.95), max_steps=20)
    loads = [ranged.game.config.episode_load(seed) for seed in range(50)]
    assert 0.3 <= min(loads) and max(loads) <= 0.95 and np.std(loads) > 0.1  # uniform: sd 0.19
    assert ranged.game.config.episode_load(7) == loads[7]  # a function of the seed
    # An episode of the ranged env is the episode of a fixed-load env at the drawn load, bit for bit.
    fixed = rack_v0.parallel_env(scenario="malcolm_homog_exp", load=loads[7], max_steps=20)
    a, b = run(ranged, 20, seed=7, policy=uniform_policy), run(fixed, 20, seed=7, policy=uniform_policy)
    assert all(np.array_equal(x[0]["node_0"], y[0]["node_0"]) and x[1] == y[1] for x, y in zip(a, b))
    with pytest.raises(InvalidConfigError, match="load_range"):
        rack_v0.parallel_env(scenario="malcolm_homog_exp", load_range=(0.9, 0.5))


def test_truncation_by_simulated_time_and_warmup():
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp", max_time_us=1000, heartbeat_us=300, warmup_us=5000)
    _, infos = env.reset(seed=1)
    assert infos["node_0"]["sim_time_us"] == 5000 and infos["node_0"]["true_loads"].sum() > 0
    steps = 0
    while env.agents:
        env.step({a: np.zeros(20) for a in env.agents})
        steps += 1
    assert steps == 4  # ceil(1000 / 300)


# ------------------------------------------------------------------ render


def test_render_ansi_draws_one_line_per_node():
    env = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", render_mode="ansi")
    run(env, 10)
    frame = env.render()
    lines = frame.splitlines()
    assert lines[0].startswith("rack_v0 t=1000 us step 10/1000") and len(lines) == 15
    assert lines[1].startswith("node_0  [") and "busy" in lines[1] and lines[14].endswith("/3")


def test_render_rgb_array_is_an_image_of_recent_loads():
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp", render_mode="rgb_array", render_history=50)
    run(env, 60)
    image = env.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.shape[0] == 10 * (400 // 10) and image.shape[1] == 50 * (600 // 50)
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 3


# ------------------------------------------------------------------- RLlib


@pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")  # RLlib re-registers its env wrapper
@pytest.mark.usefixtures("ray_session")
def test_rllib_builds_and_samples_rack_v0(tmp_path, monkeypatch):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    register_env("dcgym_rack_v0", lambda cfg: ParallelPettingZooEnv(rack_v0.parallel_env(**cfg)))
    agents = [f"node_{i}" for i in range(10)]
    config = (
        PPOConfig()
        .environment("dcgym_rack_v0", env_config={"scenario": "malcolm_homog_exp", "max_steps": 20})
        .env_runners(num_env_runners=0, rollout_fragment_length=20)
        .learners(num_learners=0)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "shared")
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .debugging(seed=1)
    )
    # An Algorithm built outside Tune makes a log folder under ~/ray_results: keep it in tmp_path.
    monkeypatch.setattr("ray.tune.trainable.trainable.DEFAULT_STORAGE_PATH", str(tmp_path))
    algo = config.build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=40, random_actions=False)
        steps = sum(len(e) for e in episodes)
        assert steps >= 40
        agent_ids = {aid for e in episodes for aid in e.agent_ids}
        assert agent_ids == set(agents)
    finally:
        algo.stop()
