"""Flow scenario files: the packaged ones, the engine config they produce, and one-line errors for bad ones."""

from __future__ import annotations

import pytest

from dcgym.cpp_core import FlowSim, check_flow_config
from dcgym.envs.error import InvalidConfigError, UnknownPolicyError
from dcgym.envs.flow.scenario import FlowScenario, load_flow_scenario
from dcgym.envs.flow.thresholds import THRESHOLD_PRESETS, preset_thresholds
from dcgym.envs.scenario import list_scenarios, load_scenario
from dcgym.envs.validation import validate

FLOW = list_scenarios("flow")


def test_the_library_ships_the_papers_settings():
    assert set(FLOW) == {
        "auto_websearch",
        "auto_datamining",
        "auto_hetero",
        "auto_dynamic",
        "pias_websearch",
        "pias_datamining",
        "single_link_websearch",
        "single_link_datamining",
    }


@pytest.mark.parametrize("name", FLOW)
def test_every_flow_scenario_gives_configs_the_engine_accepts(name):
    scenario = load_scenario(name)
    assert isinstance(scenario, FlowScenario) and scenario.description
    for load in scenario.loads:
        config = scenario.engine_config(load, seed=3)
        check_flow_config(config)
    sim = FlowSim(scenario.engine_config(scenario.loads[-1], seed=1))
    sim.run_flows(200)
    assert sim.results()["flows_arrived"] == 200


def test_autos_testbed_is_32_hosts_on_3_planes_with_4_queues_and_the_searched_thresholds():
    config = load_scenario("auto_websearch").engine_config(0.8, seed=1)
    assert config["topology"] == {"kind": "planes", "hosts": 32, "planes": 3, "link_gbps": 1.0}
    assert config["base_rtt_us"] == 100
    expected = [p * 1460.0 for p in THRESHOLD_PRESETS["pias_ws"][("mlfq", 4)].packets]
    assert config["scheduling"] == {"discipline": "mlfq", "levels": 4, "thresholds_bytes": expected}
    sim = FlowSim(config)
    # load 0.8 is every port at 80% (load_unit: ports, AuTO §6): each host offers 3 x 0.8 Gbps of 1.71 MB
    # web-search flows on average: 32 x 2.4 x 1.25e8 / 1711250.
    assert config["workload"]["load"] == pytest.approx(2.4)
    assert sim.results()["arrival_rate_per_s"] == pytest.approx(32 * 2.4 * 1.25e8 / 1711250, rel=1e-9)


def test_a_load_in_ports_is_the_link_load_on_one_link_per_host():
    # The two readings agree with one link per host: PIAS's fabric in either unit offers the same.
    pias = load_scenario("pias_websearch")
    either = load_flow_scenario("pias_websearch", {"load_unit": "ports"})
    assert pias.engine_config(0.7, seed=1) == either.engine_config(0.7, seed=1)
    # On AuTO's 3 planes the same number in link units is a third of the load.
    link = load_flow_scenario("auto_websearch", {"load_unit": "link"}).engine_config(2.4, seed=1)
    ports = load_scenario("auto_websearch").engine_config(0.8, seed=1)
    assert link["workload"].pop("load") == pytest.approx(ports["workload"].pop("load"), rel=1e-12)
    assert link == ports
    with pytest.raises(InvalidConfigError, match="load_unit"):
        load_flow_scenario("auto_websearch", {"load_unit": "host"})


def test_group_and_change_loads_are_relative_to_the_runs_load():
    hetero = load_scenario("auto_hetero").engine_config(0.8, seed=1)  # every port's share: x 3 for the engine
    assert [g["load"] for g in hetero["workload"]["groups"]] == pytest.approx([1.8, 2.4, 1.8, 1.8])
    assert [g["sizes"] for g in hetero["workload"]["groups"]] == ["web_search"] * 2 + ["data_mining"] * 2
    dynamic = load_scenario("auto_dynamic").engine_config(0.8, seed=1)["workload"]["dynamics"]
    assert len(dynamic) == 28 and sorted({round(c["load"], 9) for c in dynamic}) == pytest.approx([1.8, 2.1, 2.4])
    assert all(a["time_s"] <= b["time_s"] for a, b in zip(dynamic, dynamic[1:]))


def test_a_policy_takes_the_scenarios_thresholds_resolved_for_its_own_discipline_and_levels():
    s = load_scenario("auto_websearch")
    qsjf = s.engine_config(0.8, 1, "qsjf")["scheduling"]
    assert qsjf["discipline"] == "qsjf" and qsjf["levels"] == 4
    assert qsjf["thresholds_bytes"] == preset_thresholds("pias_ws", "qsjf", 4).bytes
    pias = s.engine_config(0.8, 1, "pias")["scheduling"]  # PIAS's own 8 queues, its published set
    assert pias["levels"] == 8 and pias["thresholds_bytes"][0] == 46 * 1460.0
    given = s.engine_config(0.8, 1, "qlas:thresholds=20000;1e6;1e7")["scheduling"]
    assert given["thresholds_bytes"] == [20000.0, 1e6, 1e7]
    assert s.policy("qlas:thresholds=20000;1e6;1e7").label == "qlas:thresholds=20000;1e+06;1e+07"
    for name in ("fair", "srpt"):
        assert s.engine_config(0.8, 1, name)["scheduling"] == {"discipline": name, "levels": 1}


def _scenario(**changes):
    raw = {
        "kind": "flow",
        "topology": {"kind": "planes", "hosts": 8, "planes": 2},
        "workload": {"sizes": "web_search"},
        "priorities": 4,
        "scheduling": {"policy": "qlas", "thresholds": "pias_ws"},
    }
    raw.update(changes)
    return validate(FlowScenario, raw)


def test_a_minimal_scenario_gets_its_defaults_from_the_schema():
    s = validate(FlowScenario, {"kind": "flow", "topology": {"kind": "single_link"}})
    assert s.topology.link_gbps == 1.0 and s.priorities == 8 and s.loads == [0.5, 0.6, 0.7, 0.8]
    scheduling = s.engine_config(0.5, 1)["scheduling"]  # pias, 8 levels, PIAS's web-search set
    assert scheduling == {
        "discipline": "mlfq",
        "levels": 8,
        "thresholds_bytes": preset_thresholds("pias_ws", "mlfq", 8).bytes,
    }


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"topology": {"kind": "ring"}}, "topology.kind", "single_link, big_switch, planes, leaf_spine"),
        ({"topology": {"kind": "planes", "hosts": 1}}, "topology.hosts", "an integer in [2, 65536]"),
        (
            {"scheduling": {"policy": "qlas", "thresholds": "pias_wx"}},
            "scheduling.thresholds",
            'did you mean "pias_ws"',
        ),
        (
            {"scheduling": {"policy": "qlas", "thresholds": "pias_ws_0.8"}},
            "scheduling.thresholds",
            "mlfq with 8 levels",
        ),
        ({"scheduling": {"policy": "qlas", "thresholds": [1e4, 1e5]}}, "scheduling.thresholds", "3 thresholds"),
        ({"scheduling": {"policy": "qlas", "thresholds": [1e5, 1e4, 1e6]}}, "scheduling.thresholds", "non-decreasing"),
        ({"scheduling": "qlsa"}, "scheduling", 'did you mean "qlas"'),
        ({"scheduling": {"policy": "qlsa"}}, "scheduling.policy", 'did you mean "qlas"'),
        ({"scheduling": "las"}, "scheduling", "single_link only"),
        (
            {"scheduling": "zoo:auto_ws"},
            "scheduling",
            "a policy file (AuTO's exported agents) runs as an evaluated policy",
        ),
        ({"priorities": 9}, "priorities", "an integer in [1, 8]"),
        ({"workload": {"sizes": {"cdf": [[0, 0], [100, 0.5]]}}}, "workload.sizes.cdf", "from probability 0 to 1"),
        ({"workload": {"sizes": "web"}}, "workload.sizes", "web_search, data_mining or {cdf"),
        (
            {"workload": {"groups": [{"hosts": 3}, {"hosts": 3}]}},
            "workload.groups",
            "groups whose hosts add up to 8",
        ),
        (
            {
                "workload": {
                    "groups": [{"hosts": 8}],
                    "dynamics": [{"time_s": 2, "relative_load": 1}, {"time_s": 1, "relative_load": 1}],
                }
            },
            "workload.dynamics.1.time_s",
            "a time >= 2",
        ),
        (
            {"workload": {"dynamics": [{"time_s": 1, "group": 1, "relative_load": 1}]}},
            "workload.dynamics.0.group",
            "[0, 0]",
        ),
        ({"workload": {"dynamics": [{"time_s": 1}]}}, "workload.dynamics.0.relative_load", "a change must change"),
        ({"loads": [0.5, -1]}, "loads.1", "(0, 10]"),
        ({"base_rtt_us": -1}, "base_rtt_us", "[0, 1000000]"),
        ({"paths": "ecmp"}, "paths", "one of the fields"),
    ],
)
def test_a_bad_scenario_is_refused_in_one_line_naming_the_field(changes, field, words):
    with pytest.raises(InvalidConfigError) as info:
        _scenario(**changes)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{field}: got "), message
    assert words in message, message


def test_a_bad_policy_on_the_command_line_names_policy():
    s = load_scenario("auto_websearch")
    with pytest.raises(UnknownPolicyError, match=r'^policy: got "sprt"; did you mean "srpt"\?'):
        s.policy("sprt")
    with pytest.raises(InvalidConfigError, match=r"^policy: got \"las\"; allowed: a policy other than las"):
        s.policy("las")
    with pytest.raises(InvalidConfigError, match=r"^policy\.priorities: got \"9\"; allowed: an integer in \[2, 8\]"):
        s.policy("qlas:priorities=9")
    with pytest.raises(InvalidConfigError, match=r"^policy\.thresholds: got \"pias_ws\"; allowed: a preset with a set"):
        s.policy("qlas:priorities=3")


def test_load_flow_scenario_refuses_another_family_naming_the_scenario():
    with pytest.raises(InvalidConfigError, match=r"^scenario: got \"lb_sim\"; allowed: a flow scenario"):
        load_flow_scenario("lb_sim")
    assert load_flow_scenario("auto_websearch", {"priorities": 8, "scheduling.thresholds": "pias_ws"}).priorities == 8


def test_check_policy_is_the_callers_form_of_policy():
    s = load_scenario("auto_websearch")
    assert s.check_policy("qsjf").label == "qsjf"
    with pytest.raises(InvalidConfigError, match=r"^policy: got \"las\""):
        s.check_policy("las")
