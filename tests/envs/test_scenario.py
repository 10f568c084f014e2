"""Scenario files: every packaged file runs; overrides; every kind of bad field is named."""

from __future__ import annotations

import pytest

from dcgym.cpp_core import RackSim, check_rack_config
from dcgym.envs.error import InvalidConfigError, UnknownPolicyError, UnknownScenarioError
from dcgym.envs.scenario import DEFAULT_SCENARIO, RackScenario, list_scenarios, load_scenario

SCENARIOS = list_scenarios()


def test_packaged_scenarios_include_the_papers_workloads_and_the_default():
    expected = {
        DEFAULT_SCENARIO, "mm1", "mm16", "malcolm_homog_exp", "malcolm_hetero_paper_bimodal",
        "malcolm_hetero_code_hyperexp1", "malcolm_homog_hyperexp2", "malcolm_fig1_exp", "malcolm_fig1_hyperexp",
        "racksched_sim_bimodal90", "racksched_sim_trimodal_ps", "racksched_testbed_hetero_exp",
        "racksched_testbed_homog_trimodal",
    }
    assert expected <= set(SCENARIOS)
    assert len(SCENARIOS) == 34


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_packaged_scenario_validates_and_runs_2000_tasks(name):
    scenario = load_scenario(name)
    assert scenario.name == name
    assert "\n" not in scenario.description
    assert "§" in scenario.description or name.startswith("mm")
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
    [("malcolm_homog_exp", 32), ("malcolm_hetero_paper_bimodal", 32), ("malcolm_hetero_code_hyperexp1", 128),
     ("malcolm_homog_hyperexp2", 128)],
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
        "intra_node": {"discipline": "fcfs"},
        "dispatch": {"policy": "jsq", "metric": "outstanding"},
        "load_info": {"model": "fresh"},
    }


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
    ({"intra_node": {"discipline": "ps"}, "dispatch": "central_fcfs"}, "dispatch.policy", "discipline is ps"),
    ({"intra_node": {"discipline": "ps", "switch_cost_us": 1}}, "intra_node.switch_cost_us", "quantum_us"),
    ({"intra_node": {"discipline": "rr"}}, "intra_node.discipline", "one of fcfs, ps"),
    ({"load_info": {"model": "stale"}}, "load_info.model", "one of fresh"),
    ({"arrivals": {"process": "mmpp"}}, "arrivals.process", "one of poisson"),
    ({"loads": [0.5, 1.5e9]}, "loads.1", "got 1500000000.0; allowed: a finite number in (0, 10]"),
    ({"loads": [0.5, "abc"]}, "loads.1", 'got "abc"'),
    ({"warmup_fraction": 1}, "warmup_fraction", "a number in [0, 1)"),
    ({"kind": "flow"}, "kind", "one of rack"),
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
    assert str(info.value).endswith("allowed: one of random, round_robin, po_d, jsq, central_fcfs, rr, poN")


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
    [({"load": 1.5e9}, "load"), ({"load": 0}, "load"), ({"seed": -1}, "seed"), ({"warmup_tasks": -1}, "warmup_tasks"),
     ({"policy": "po_d:d=11,replace=false"}, "dispatch.d")],
)
def test_engine_config_rejects_bad_arguments(kwargs, field):
    args = {"load": 0.5, "seed": 1, **kwargs}
    with pytest.raises(InvalidConfigError) as info:
        load_scenario("malcolm_homog_exp").engine_config(**args)
    assert info.value.field == field
