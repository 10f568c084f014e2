"""Multistage scenario files: every packaged file runs; the engine dict; bad fields are named."""

from __future__ import annotations

import pytest

from dcgym.cpp_core._engine import LbSim, check_lb_config
from dcgym.envs.error import InvalidConfigError, UnknownScenarioError
from dcgym.envs.lb.scenario import LB_POLICIES, LbScenario, load_lb_scenario
from dcgym.envs.scenario import list_scenarios

SCENARIOS = list_scenarios("lb")


def test_packaged_multistage_scenarios_are_the_papers_settings():
    assert SCENARIOS == [
        "lb_capacity_change",
        "lb_large",
        "lb_reference",
        "lb_sim",
        "lb_sim_cpu25_io75",
        "lb_sim_cpu50_io50",
        "lb_sim_cpu75_io25",
    ]
    sim, large = load_lb_scenario("lb_sim"), load_lb_scenario("lb_large")
    assert (sim.lbs, [(g.count, g.workers) for g in sim.servers]) == (2, [(4, 1), (4, 2)])
    assert (large.lbs, [(g.count, g.workers) for g in large.servers]) == (6, [(10, 2), (10, 4)])
    # Table 9's 2000 tasks/s is the large setting's load 0.833 (60 CPUs / 25 ms = 2400 flows/s).
    rate = LbSim(large.engine_config(0.833, seed=1)).arrival_rate_per_us
    assert rate * 1e6 == pytest.approx(2000, rel=1e-3)


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("policy", list(LB_POLICIES))
def test_every_packaged_scenario_runs_under_every_policy(name, policy):
    scenario = load_lb_scenario(name)
    assert scenario.name == name and "App." in scenario.description
    for load in scenario.loads:
        check_lb_config(scenario.engine_config(load, seed=1, policy=policy))
    sim = LbSim(scenario.engine_config(max(scenario.loads), seed=1, policy=policy, warmup_flows=100))
    sim.run_flows(2000)
    r = sim.results()
    assert r["flows_arrived"] == 2000 and r["flows_warmup"] == 100
    assert r["flows_arrived"] == r["flows_completed"] + r["flows_rejected"] + r["flows_in_flight"]
    assert sim.observations().shape == (scenario.lbs, scenario.num_servers, len(LbSim.observation_features))


def test_reference_scenario_arrival_rate_is_load_times_cpu_capacity():
    # 10 x 4 + 10 x 2 workers at Exp(0.5 s): 120 flows/s at load 1 (the authors' run.py).
    scenario = load_lb_scenario("lb_reference")
    assert LbSim(scenario.engine_config(0.61, seed=1)).arrival_rate_per_us * 1e6 == pytest.approx(73.2)
    assert scenario.episode_flows == 50_000 and scenario.timeout_us == 40e6 and scenario.backlog == 64


def test_engine_config_is_exactly_the_engine_dict():
    scenario = load_lb_scenario(
        "lb_sim",
        {
            "application.stages": 3,
            "application.io": {"dist": "exp", "mean_us": 250_000},
            "split": [3, 1],
            "weights": [1, 1, 1, 1, 2, 2, 2, 2],
        },
    )
    assert scenario.engine_config(0.845, seed=7, policy=["sed", "weights"], warmup_flows=5) == {
        "servers": [
            {"count": 4, "workers": 1, "speed": 1.0, "mp_level": 1},
            {"count": 4, "workers": 2, "speed": 1.0, "mp_level": 1},
        ],
        "application": {
            "stages": 3,
            "cpu": {"dist": "exp", "mean_us": 1_000_000.0},
            "io": {"dist": "exp", "mean_us": 250_000.0},
            "split": "uniform",
        },
        "lbs": [
            {"policy": "sed", "weights": [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0], "share": 3.0},
            {"policy": "weights", "weights": [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0], "share": 1.0},
        ],
        "load": 0.845,
        "load_basis": "total",
        "seed": 7,
        "backlog": 64,
        "timeout_us": 40_000_000.0,
        "hop_delay_us": {"min": 100.0, "max": 1000.0},
        "decision_period_us": 500_000.0,
        "cpu_wait_order": "fifo",
        "observation": {
            "reservoir_size": 32,
            "fd_density": 2,
            "fd_min_us": 10_000.0,
            "decay_half_life_us": 1_000_000.0,
        },
        "warmup_flows": 5,
        "capacity_changes": [],
    }


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"kind": "rack"}, "kind"),
        ({"servers.0.workers": 0}, "servers.0.workers"),
        ({"servers.0.mp_level": 0}, "servers.0.mp_level"),
        ({"application.stages": 2}, "application.io"),
        ({"application.cpu.mean_us": -1}, "application.cpu.mean_us"),
        ({"application.split": "halves"}, "application.split"),
        ({"lbs": 0}, "lbs"),
        ({"split": [1.0]}, "split"),
        ({"policy": "po2"}, "policy"),
        ({"policy": ["sed"]}, "policy"),
        ({"weights": [1.0]}, "weights"),
        ({"backlog": -1}, "backlog"),
        ({"timeout_us": -1}, "timeout_us"),
        ({"hop_delay_us.max_us": 10}, "hop_delay_us.max_us"),
        ({"decision_period_us": 0}, "decision_period_us"),
        ({"observation.reservoir_size": 0}, "observation.reservoir_size"),
        ({"loads": []}, "loads"),
        ({"episode_us": 1e6}, "episode_us"),
        ({"timeout_s": 40}, "timeout_s"),
    ],
)
def test_bad_field_raises_invalid_config_error_naming_it(overrides, field):
    with pytest.raises(InvalidConfigError) as info:
        load_lb_scenario("lb_sim" if field != "episode_us" else "lb_reference", overrides)
    assert info.value.field == field, str(info.value)


def test_bad_engine_config_arguments_are_named():
    scenario = load_lb_scenario("lb_sim")
    for kwargs, field in [
        ({"load": 0}, "load"),
        ({"seed": -1}, "seed"),
        ({"policy": "jsq"}, "policy"),
        ({"policy": ["sed"] * 3}, "policy"),
        ({"warmup_flows": -1}, "warmup_flows"),
    ]:
        with pytest.raises(InvalidConfigError) as info:
            scenario.engine_config(**{"load": 0.5, "seed": 1, **kwargs})
        assert info.value.field == field


def test_unknown_scenario_suggests_a_close_name():
    with pytest.raises(UnknownScenarioError) as info:
        load_lb_scenario("lb_smi")
    assert info.value.suggestion == "lb_sim"
    assert isinstance(load_lb_scenario("lb_sim"), LbScenario)
