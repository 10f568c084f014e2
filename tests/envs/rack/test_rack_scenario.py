"""Rack scenario files: every packaged file runs; overrides; every kind of bad field is named."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dcgym.cpp_core import RackSim, check_rack_config
from dcgym.envs.error import InvalidConfigError, UnknownPolicyError, UnknownScenarioError
from dcgym.envs.rack.dispatch import known_policy_names
from dcgym.envs.rack.scenario import RackScenario
from dcgym.envs.scenario import DEFAULT_SCENARIO, list_scenarios, load_scenario

SCENARIOS = list_scenarios("rack")
MALCOLM_7_1 = [
    f"malcolm_{rack}_{workload}"
    for rack in ("homog", "hetero_paper", "hetero_code")
    for workload in ("exp", "bimodal", "hyperexp1", "hyperexp2")
]


def test_packaged_scenarios_include_the_papers_workloads_and_the_default():
    expected = {
        DEFAULT_SCENARIO,
        "mm1",
        "mm16",
        "malcolm_homog_exp",
        "malcolm_hetero_paper_bimodal",
        "malcolm_hetero_code_hyperexp1",
        "malcolm_homog_hyperexp2",
        "malcolm_fig1_exp",
        "malcolm_fig1_hyperexp",
        "racksched_sim_bimodal90",
        "racksched_sim_trimodal_ps",
        "racksched_testbed_hetero_exp",
        "racksched_testbed_homog_trimodal",
        "malcolm_adapt_shift",
        "malcolm_adapt_slowdown",
        "malcolm_adapt_shift_code",
        "malcolm_adapt_slowdown_code",
        "racksched_fig15_bimodal90",
        "racksched_fig15_bimodal50",
        "racksched_clients10_bimodal90",
        "racksched_clients100_bimodal90",
        "rack_lb_reference",
        "rack_lb_balancers",
        "racksched_multitype_bimodal50",
        "racksched_multitype_trimodal",
        "racksched_priority",
        "racksched_locality",
    }
    assert expected <= set(SCENARIOS)
    assert len(SCENARIOS) == 48


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_packaged_scenario_validates_and_runs_2000_tasks(name):
    scenario = load_scenario(name)
    assert scenario.name == name
    assert "\n" not in scenario.description
    assert re.search(r"§|App\. ", scenario.description) or name.startswith("mm")
    for load in scenario.loads:
        check_rack_config(scenario.engine_config(load, seed=1))
    sim = RackSim(scenario.engine_config(max(scenario.loads), seed=1, warmup_tasks=200))
    sim.run_tasks(2000)
    r = sim.results()
    assert r["tasks_arrived"] == 2000
    assert r["tasks_warmup"] == 200
    assert r["tasks_completed"] > 0


@pytest.mark.parametrize(
    ("name", "per_worker"),
    [
        ("malcolm_homog_exp", 32),
        ("malcolm_hetero_paper_bimodal", 32),
        ("malcolm_hetero_code_hyperexp1", 128),
        ("malcolm_homog_hyperexp2", 128),
    ],
)
def test_malcolm_queue_capacity_is_workers_times_per_worker_queue(name, per_worker):
    for group in load_scenario(name).nodes:
        assert group.queue_capacity == group.workers * per_worker


def test_engine_config_is_exactly_the_engine_dict():
    scenario = load_scenario("malcolm_hetero_paper_exp")
    assert scenario.engine_config(0.9, seed=7, policy="jsq", warmup_tasks=10) == {
        "nodes": [
            {"count": 4, "workers": 14, "speed": 1.0, "queue_capacity": 448},
            {"count": 10, "workers": 3, "speed": 1.0, "queue_capacity": 96},
        ],
        "service": {"dist": "exp", "mean_us": 75.0},
        "load": 0.9,
        "seed": 7,
        "warmup_tasks": 10,
        "intra_node": {"discipline": "fcfs", "queueing": "fifo"},
        "entry": {"kind": "nodes", "count": 1, "split": []},
        "dispatch": {"policy": "jsq", "metric": "queue", "per_type": False},
        "load_info": {"model": "periodic", "period_us": 100.0, "delay_us": 2.0, "local_increment": True},
        "migration": {"delay_us": 2.0, "steal_below": 1.0, "queue_smoothing": 0.95},
        "dynamics": [],
        "sample_period_us": 0.0,
    }


def test_defaults_fill_every_engine_field_of_a_minimal_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("kind: rack\ndescription: x\nnodes: [{count: 2, workers: 1}]\nservice: {dist: det, value_us: 3}\n")
    config = load_scenario(path).engine_config(0.5, seed=1)
    assert config["entry"] == {"kind": "switch", "count": 1, "split": []}
    assert config["load_info"] == {"model": "fresh"}
    assert config["migration"] == {"delay_us": 0.0, "steal_below": 1.0, "queue_smoothing": 0.95}
    assert (config["dynamics"], config["sample_period_us"]) == ([], 0.0)


@pytest.mark.parametrize("name", MALCOLM_7_1)
def test_malcolm_scenarios_have_the_settings_of_section_7_1(name):
    scenario = load_scenario(name)
    assert scenario.entry.kind == "nodes" and scenario.entry.split == []
    info = scenario.load_info
    assert (info.model, info.period_us, info.local_increment) == ("periodic", 100.0, True)
    assert scenario.migration.delay_us == 2.0
    for policy in ("po2", "jsq", "jbt"):  # the baselines compare queue lengths, whatever the caller writes
        assert scenario.engine_config(0.5, seed=1, policy=policy)["dispatch"]["metric"] == "queue"
    assert scenario.engine_config(0.5, seed=1, policy="jsq:metric=outstanding")["dispatch"]["metric"] == "outstanding"


def test_policy_defaults_leave_the_label_and_explicit_parameters_alone():
    scenario = load_scenario("malcolm_homog_exp")
    assert scenario.dispatch.label == "po2"
    assert scenario.dispatch.engine_dict() == {
        "policy": "po_d",
        "d": 2,
        "replace": True,
        "metric": "queue",
        "per_type": False,
    }
    assert scenario.policy("random").engine_dict() == {"policy": "random"}  # takes no metric: untouched
    assert scenario.policy("sed:metric=work").params.metric == "work"


def test_split_dynamics_send_ninety_percent_of_arrivals_to_the_fast_nodes():
    scenario = load_scenario("malcolm_adapt_shift", {"dynamics.0.at_us": 0})
    sim = RackSim(scenario.engine_config(0.9, seed=1, policy="random"))
    sim.run_tasks(20_000)
    nodes = sim.results()["nodes"]
    arrived = nodes["completed"] + nodes["dropped"] + nodes["outstanding"]
    assert arrived[:4].sum() / arrived.sum() == pytest.approx(0.9, abs=0.01)  # 18:1 weights, 4 of 12 nodes


def test_speed_dynamics_slow_the_listed_nodes():
    # One worker, 1 us tasks, half speed from time 0: every task takes exactly 2 us.
    scenario = load_scenario(
        "mm1",
        {
            "service": {"dist": "det", "value_us": 1},
            "dynamics": [{"at_us": 0, "kind": "speed", "nodes": [0], "factor": 0.5}],
        },
    )
    sim = RackSim(scenario.engine_config(0.2, seed=1))
    sim.run_tasks(1000)
    assert sim.results()["latency_us"]["min"] == pytest.approx(2.0, rel=1e-12)


def test_removed_nodes_get_no_new_tasks():
    removal = [{"at_us": 0, "kind": "remove", "nodes": [1, 2]}]
    scenario = load_scenario("mm16", {"nodes.0.count": 4, "dynamics": removal})
    sim = RackSim(scenario.engine_config(0.3, seed=1, policy="random"))
    sim.run_tasks(5000)
    nodes = sim.results()["nodes"]
    assert nodes["completed"][[1, 2]].tolist() == [0, 0]
    assert nodes["active"].tolist() == [True, False, False, True]


def test_sample_period_records_every_nodes_load():
    scenario = load_scenario("malcolm_adapt_shift")
    assert scenario.sample_period_us == 1000
    sim = RackSim(scenario.engine_config(0.9, seed=1))
    sim.run_until(10_500)
    times, loads = sim.take_samples()
    assert times.tolist() == [1000.0 * k for k in range(1, 11)]
    assert loads.shape == (10, 12) and np.all(loads >= 0)


def test_load_is_a_fraction_of_total_capacity():
    # Capacity of Malcolm's paper rack: (4 x 14 + 10 x 3) workers / 75 us = 1.1467 tasks/us.
    sim = RackSim(load_scenario("malcolm_hetero_paper_exp").engine_config(0.5, seed=1))
    sim.run_tasks(10)
    assert sim.results()["arrival_rate_per_us"] == pytest.approx(0.5 * 86 / 75, rel=1e-12)


def test_overrides_set_dotted_keys_and_list_items():
    scenario = load_scenario("malcolm_homog_exp", {"dispatch.policy": "jsq", "nodes.0.workers": 8})
    assert scenario.dispatch.name == "jsq"
    assert scenario.nodes[0].workers == 8
    assert load_scenario("malcolm_homog_exp").nodes[0].workers == 10  # the packaged file is untouched


def test_override_adds_fields_to_a_mapping():
    scenario = load_scenario("racksched_sim_exp", {"intra_node": {"discipline": "ps"}, "intra_node.quantum_us": 5})
    assert scenario.intra_node.quantum_us == 5.0


def test_scenario_loads_from_a_path(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(
        "kind: rack\ndescription: two nodes\nnodes: [{count: 2, workers: 1}]\nservice: {dist: det, value_us: 3}\n"
    )
    scenario = load_scenario(path)
    assert isinstance(scenario, RackScenario)
    assert (scenario.name, scenario.dispatch.label, scenario.loads) == ("tiny", "po2", [0.5, 0.7, 0.9])
    assert load_scenario(str(path)).name == "tiny"


BAD_FIELDS = [
    ({"nodes.0.workers": -1}, "nodes.0.workers", "got -1; allowed: an integer in [1, 65536]"),
    ({"nodes.0.count": 0}, "nodes.0.count", "an integer in [1, 1048576]"),
    ({"nodes.0.speed": float("inf")}, "nodes.0.speed", "a finite number > 0"),
    ({"nodes.0.queue_capacity": -1}, "nodes.0.queue_capacity", "an integer >= 0 or null"),
    ({"nodes": []}, "nodes", "a non-empty list"),
    ({"service": {"dist": "multimodal", "modes": [[0.8, 50], [0.1, 250]]}}, "service.modes", "sum to 1, not 0.9"),
    ({"service": {"dist": "hyperexp", "phases": [[0.5, 50], [0.4, 500]]}}, "service.phases", "sum to 1, not 0.9"),
    ({"service": {"dist": "expo", "mean_us": 5}}, "service.dist", 'did you mean "exp"?'),
    ({"service": {"mean_us": 5}}, "service.dist", "got nothing"),
    ({"service.mean_us": 0}, "service.mean_us", "a finite number > 0"),
    ({"service": {"dist": "exp"}}, "service.mean_us", "got nothing; allowed: a finite number > 0"),
    ({"service": {"dist": "bounded_pareto", "alpha": 1, "low_us": 5, "high_us": 2}}, "service.high_us", "low_us"),
    ({"service": {"dist": "empirical", "cdf": [[0, 0], [1, 0.5]]}}, "service.cdf", "from probability 0 to 1"),
    ({"dispatch": "jqs"}, "dispatch.policy", 'did you mean "jsq"?'),
    ({"dispatch": {"policy": "po_d", "d": 0}}, "dispatch.d", "an integer in [1, 64]"),
    ({"dispatch": {"policy": "po_d", "d": 11, "replace": False}}, "dispatch.d", "the number of nodes"),
    ({"dispatch": {"policy": "jsq", "metric": "avg"}}, "dispatch.metric", "one of outstanding, queue"),
    (
        {"intra_node": {"discipline": "ps"}, "entry": {"kind": "switch"}, "dispatch": "central_fcfs"},
        "dispatch.policy",
        "discipline is ps",
    ),
    ({"intra_node": {"discipline": "ps", "switch_cost_us": 1}}, "intra_node.switch_cost_us", "quantum_us"),
    ({"intra_node": {"discipline": "rr"}}, "intra_node.discipline", "one of fcfs, ps"),
    ({"load_info": {"model": "stale"}}, "load_info.model", "one of fresh, periodic, piggyback, min_only, proactive"),
    ({"load_info.period_us": -100}, "load_info.period_us", "got -100; allowed: a finite number > 0"),
    ({"load_info.period_us": 0}, "load_info.period_us", "a finite number > 0"),
    ({"load_info": {"model": "piggyback", "delay_us": -1}}, "load_info.delay_us", "a finite number >= 0"),
    ({"load_info": {"model": "fresh", "period_us": 100}}, "load_info.period_us", "one of the fields model"),
    (
        {"load_info": {"model": "proactive", "local_increment": True}},
        "load_info.local_increment",
        "one of the fields model, delay_us",
    ),
    ({"load_info": {"model": "min_only"}}, "load_info.model", "it needs entry switch or balancers"),
    ({"entry": {"kind": "hub"}}, "entry.kind", "one of switch, balancers, nodes"),
    ({"entry": {"kind": "balancers"}}, "entry.count", "got nothing"),
    ({"entry": {"kind": "balancers", "count": 0}}, "entry.count", "an integer in [1, 4096]"),
    ({"entry": {"kind": "balancers", "count": 2, "split": [1, 2, 3]}}, "entry.split", "one weight per dispatcher (2"),
    ({"entry": {"kind": "switch", "split": [1]}}, "entry.split", "one of the fields kind"),
    ({"entry.split": [1, 2]}, "entry.split", "[] or one weight per node (10 weights)"),
    ({"entry.split": [0] * 10}, "entry.split", "not all 0"),
    ({"entry.split": [-1] + [1] * 9}, "entry.split.0", "a finite number >= 0"),
    ({"migration.delay_us": -2}, "migration.delay_us", "a finite number >= 0"),
    ({"migration.queue_smoothing": 1}, "migration.queue_smoothing", "a number in [0, 1)"),
    ({"migration.steal_above": 1}, "migration.steal_above", 'did you mean "steal_below"?'),
    (
        {"dynamics": [{"at_us": 5, "kind": "speed", "nodes": [3, 10], "factor": 0.5}]},
        "dynamics.0.nodes.1",
        "a node id in [0, 9]",
    ),
    (
        {"dynamics": [{"at_us": 5, "kind": "remove", "nodes": list(range(10))}]},
        "dynamics.0.nodes",
        "leaves at least one node active",
    ),
    (
        {
            "dynamics": [
                {"at_us": 1, "kind": "remove", "nodes": [0, 1, 2, 3, 4]},
                {"at_us": 2, "kind": "add", "nodes": [0]},
                {"at_us": 3, "kind": "remove", "nodes": [0, 5, 6, 7, 8, 9]},
            ]
        },
        "dynamics.2.nodes",
        "leaves at least one node active",
    ),
    (
        {"dynamics": [{"at_us": 5, "kind": "load", "load": 0.5}, {"at_us": 4, "kind": "load", "load": 0.6}]},
        "dynamics.1.at_us",
        "a time >= the previous change's (5 us)",
    ),
    ({"dynamics": [{"at_us": -1, "kind": "load", "load": 0.5}]}, "dynamics.0.at_us", "a finite number >= 0"),
    ({"dynamics": [{"at_us": 1, "kind": "load", "load": 11}]}, "dynamics.0.load", "a finite number in (0, 10]"),
    ({"dynamics": [{"at_us": 5, "kind": "split", "split": [1, 2]}]}, "dynamics.0.split", "one weight per node (10"),
    ({"dynamics": [{"at_us": 5, "kind": "split", "split": [0] * 10}]}, "dynamics.0.split", "not all 0"),
    (
        {"entry": {"kind": "switch"}, "dynamics": [{"at_us": 5, "kind": "split", "split": [1] * 10}]},
        "dynamics.0.kind",
        "entry switch has no split",
    ),
    (
        {"dynamics": [{"at_us": 5, "kind": "speed", "nodes": [1], "factor": 0}]},
        "dynamics.0.factor",
        "a finite number > 0",
    ),
    ({"dynamics": [{"at_us": 5, "kind": "speed", "nodes": [], "factor": 2}]}, "dynamics.0.nodes", "a non-empty list"),
    ({"dynamics": [{"at_us": 5, "kind": "pause"}]}, "dynamics.0.kind", "one of split, speed, remove, add, load"),
    ({"dynamics": {"at_us": 5}}, "dynamics", "a list"),
    ({"sample_period_us": -1}, "sample_period_us", "a finite number >= 0"),
    ({"entry": {"kind": "switch"}, "dispatch": "table"}, "dispatch.policy", "table needs entry nodes"),
    ({"dispatch": "jbsq"}, "dispatch.policy", "jbsq needs entry switch"),
    ({"dispatch": "central_fcfs"}, "dispatch.policy", "central_fcfs needs entry switch"),
    ({"dispatch": {"policy": "wcmp", "weights": [1, 2]}}, "dispatch.weights", "one weight per node (10) or null"),
    ({"dispatch": {"policy": "jbt", "threshold": -1}}, "dispatch.threshold", "a finite number >= 0"),
    ({"dispatch": {"policy": "jbsq", "bound": 0}}, "dispatch.bound", "an integer in [1, 1048576]"),
    ({"dispatch": {"policy": "sed", "by": "speed"}}, "dispatch.by", "one of capacity, workers"),
    ({"policy_defaults": {"metrik": "queue"}}, "policy_defaults.metrik", 'did you mean "metric"?'),
    (
        {"policy_defaults": {"metric": "avg"}},
        "policy_defaults.metric",
        "one of outstanding, queue, expected_wait, nominal_wait, work",
    ),
    ({"arrivals": {"process": "mmpp"}}, "arrivals.process", "one of poisson"),
    ({"loads": [0.5, 1.5e9]}, "loads.1", "got 1500000000.0; allowed: a finite number in (0, 10]"),
    ({"loads": [0.5, "abc"]}, "loads.1", 'got "abc"'),
    ({"warmup_fraction": 1}, "warmup_fraction", "a number in [0, 1)"),
    ({"kind": "flows"}, "kind", "one of rack, lb"),
    ({"description": "two\nlines"}, "description", "one non-empty line"),
    ({"nodes.0.wrokers": 3}, "nodes.0.wrokers", 'did you mean "workers"?'),
    ({"colour": "red"}, "colour", "one of the fields kind, description, nodes"),
    ({"nodes.4.workers": 3}, "nodes.4", "a list index in [0, 0]"),
]


@pytest.mark.parametrize(("overrides", "field", "text"), BAD_FIELDS, ids=[f for _, f, _ in BAD_FIELDS])
def test_bad_field_raises_one_line_error_naming_the_field(overrides, field, text):
    with pytest.raises(InvalidConfigError) as info:
        load_scenario("malcolm_homog_exp", overrides)
    message = str(info.value)
    assert info.value.field == field
    assert message.startswith(f"{field}: got ")
    assert text in message
    assert "\n" not in message and "allowed: " in message


def test_unknown_policy_in_a_scenario_is_an_unknown_policy_error_listing_the_known_ones():
    with pytest.raises(UnknownPolicyError) as info:
        load_scenario("malcolm_homog_exp", {"dispatch": "po_dd"})
    assert info.value.field == "dispatch.policy"
    assert info.value.suggestion == "po_d"
    assert str(info.value).endswith("allowed: one of " + ", ".join(known_policy_names()))


def test_unknown_scenario_suggests_the_closest_name():
    with pytest.raises(UnknownScenarioError, match='did you mean "malcolm_homog_exp"'):
        load_scenario("malcom_homog_exp")
    with pytest.raises(UnknownScenarioError):
        load_scenario("no/such/file.yaml")


def test_invalid_yaml_names_the_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("kind: rack\nnodes: [\n  - {count: 1\n")
    with pytest.raises(InvalidConfigError, match=r"broken\.yaml: got invalid YAML .*line 3"):
        load_scenario(path)
    path.write_text("- just\n- a list\n")
    with pytest.raises(InvalidConfigError, match=r"broken\.yaml: got \[.*allowed: a YAML mapping"):
        load_scenario(path)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"load": 1.5e9}, "load"),
        ({"load": 0}, "load"),
        ({"seed": -1}, "seed"),
        ({"warmup_tasks": -1}, "warmup_tasks"),
        ({"policy": "po_d:d=11,replace=false"}, "dispatch.d"),
        ({"policy": "jbsq"}, "dispatch.policy"),
        ({"sample_period_us": -1}, "sample_period_us"),
        ({"sample_period_us": float("nan")}, "sample_period_us"),
    ],
)
def test_engine_config_rejects_bad_arguments(kwargs, field):
    args = {"load": 0.5, "seed": 1, **kwargs}
    with pytest.raises(InvalidConfigError) as info:
        load_scenario("malcolm_homog_exp").engine_config(**args)
    assert info.value.field == field
