"""Policy names: the string and YAML forms, aliases, defaults and errors (docs/architecture.md, "Scenario files")."""

from __future__ import annotations

import pytest

from dcgym.agents.heuristics.rack import HEURISTICS, Rack, known_policy_names, parse_policy
from dcgym.cpp_core import RackSim, check_rack_config
from dcgym.envs.error import InvalidConfigError, UnknownPolicyError
from dcgym.envs.scenario import load_scenario

SAME = [
    ("po_d:d=3,replace=false", {"policy": "po_d", "d": 3, "replace": False}),
    ("po_d: d = 3 , replace = false", {"policy": "po_d", "d": 3, "replace": False}),
    ("po2", {"policy": "po2"}),
    ("jsq:metric=queue", {"policy": "jsq", "metric": "queue"}),
    ("central_fcfs:rtt_us=5", {"policy": "central_fcfs", "rtt_us": 5.0}),
    ("random", {"policy": "random"}),
    ("jbt:threshold=30", {"policy": "jbt", "threshold": 30}),
    ("sed:by=workers", {"policy": "sed", "by": "workers"}),
    ("po2:metric=expected_wait", {"policy": "po2", "metric": "expected_wait"}),
    ("jbsq:bound=3", {"policy": "jbsq", "bound": 3}),
    ("wcmp:weights=4;4;1", {"policy": "wcmp", "weights": [4, 4, 1]}),
    ("jsq:metric=work", {"policy": "jsq", "metric": "work"}),
    ("ecmp", {"policy": "ecmp"}),
]


@pytest.mark.parametrize(("text", "mapping"), SAME, ids=[t for t, _ in SAME])
def test_string_and_yaml_forms_parse_to_the_same_policy(text, mapping):
    assert parse_policy(text) == parse_policy(mapping)
    assert parse_policy(text).engine_dict() == parse_policy(mapping).engine_dict()


ALIASES = [
    ("rr", "round_robin"),
    ("po2", "po_d:d=2"),
    ("po4", {"policy": "po_d", "d": 4}),
    ("po7", "po_d:d=7"),
    ("po_d", "po_d:d=2,replace=true,metric=outstanding"),
    ("po2:metric=expected_wait", "po_d:d=2,metric=expected_wait"),
    ("ecmp", "ecmp"),
]


@pytest.mark.parametrize(("alias", "canonical"), ALIASES, ids=[a for a, _ in ALIASES])
def test_aliases_and_shorthands_mean_the_canonical_policy(alias, canonical):
    assert parse_policy(alias).engine_dict() == parse_policy(canonical).engine_dict()


def test_defaults_are_filled_in_the_engine_dict():
    assert parse_policy("po2").engine_dict() == {
        "policy": "po_d",
        "d": 2,
        "replace": True,
        "metric": "outstanding",
        "per_type": False,
    }
    assert parse_policy("central_fcfs").engine_dict() == {"policy": "central_fcfs", "rtt_us": 0.0}
    assert parse_policy("rr").engine_dict() == {"policy": "round_robin"}
    assert parse_policy("jbt").engine_dict() == {
        "policy": "jbt",
        "metric": "outstanding",
        "per_type": False,
        "threshold": 1.0,
    }
    assert parse_policy("jbsq").engine_dict() == {"policy": "jbsq", "bound": 1}
    assert parse_policy("sed").engine_dict() == {
        "policy": "sed",
        "metric": "outstanding",
        "per_type": False,
        "by": "capacity",
    }
    assert parse_policy("jsq").engine_dict() == {"policy": "jsq", "metric": "outstanding", "per_type": False}
    assert parse_policy("wcmp").engine_dict() == {"policy": "wcmp", "weights": []}  # engine: workers x speed
    for name in ("lsq", "ecmp", "oracle", "table", "random"):
        assert parse_policy(name).engine_dict() == {"policy": name}


def test_every_summary_cites_a_paper_section():
    for name, heuristic in HEURISTICS.items():
        assert "§" in heuristic.summary or "App. " in heuristic.summary, name


def test_with_defaults_fills_only_parameters_that_were_not_given():
    defaults = {"metric": "queue", "threshold": 5}
    assert parse_policy("po2").with_defaults(defaults).params.metric == "queue"
    assert parse_policy("jsq:metric=work").with_defaults(defaults).params.metric == "work"
    jbt = parse_policy("jbt:threshold=30").with_defaults(defaults)
    assert (jbt.params.metric, jbt.params.threshold, jbt.label) == ("queue", 30.0, "jbt:threshold=30")
    assert parse_policy("rr").with_defaults(defaults) == parse_policy("rr")
    with pytest.raises(InvalidConfigError) as info:
        parse_policy("po2").with_defaults({"metric": "avg"})
    assert info.value.field == "metric"


RACK_CHECKS = [
    ("table", Rack(4, entry="switch"), "policy", "table needs entry nodes"),
    ("table", Rack(4, entry="balancers"), "policy", "table needs entry nodes"),
    ("jbsq", Rack(4, entry="nodes"), "policy", "jbsq needs entry switch"),
    ("water_fill", Rack(4, entry="switch"), "policy", "water_fill needs entry nodes"),
    ("jbsq", Rack(4, entry="balancers"), "policy", "jbsq needs entry switch"),
    ("central_fcfs", Rack(4, entry="nodes"), "policy", "central_fcfs needs entry switch"),
    ("central_fcfs", Rack(4, discipline="ps"), "policy", "discipline is ps"),
    ("wcmp:weights=1;2;3", Rack(4), "weights", "one weight per node (4) or null"),
    ("po_d:d=5,replace=false", Rack(4), "d", "an integer in [1, 4]"),
]


@pytest.mark.parametrize(
    ("spec", "rack", "field", "text"), RACK_CHECKS, ids=[f"{s}@{r.entry}" for s, r, _, _ in RACK_CHECKS]
)
def test_policies_refuse_racks_they_cannot_run_on(spec, rack, field, text):
    with pytest.raises(InvalidConfigError) as info:
        parse_policy(spec).check_rack(rack)
    assert info.value.field == field
    assert text in str(info.value)


@pytest.mark.parametrize(
    "spec", ["table", "water_fill:steal=true", "jbsq", "central_fcfs", "lsq", "oracle", "wcmp:weights=1;2;3;4", "po4"]
)
def test_policies_accept_racks_they_run_on(spec):
    entry = "nodes" if spec.startswith(("table", "water_fill")) else "switch"
    parse_policy(spec).check_rack(Rack(4, entry=entry))


@pytest.mark.parametrize(
    ("spec", "label"),
    [
        ("po2", "po2"),
        ("rr", "round_robin"),
        ("po_d:d=3", "po_d:d=3"),
        ({"policy": "po_d", "replace": False}, "po_d:replace=false"),
        ("central_fcfs:rtt_us=2.50", "central_fcfs:rtt_us=2.5"),
    ],
)
def test_label_is_the_name_as_written_with_the_given_parameters(spec, label):
    assert parse_policy(spec).label == label == str(parse_policy(spec))


@pytest.mark.parametrize(("typo", "suggestion"), [("jqs", "jsq"), ("radnom", "random"), ("p02", "po2")])
def test_unknown_name_suggests_and_lists_the_known_policies(typo, suggestion):
    with pytest.raises(UnknownPolicyError) as info:
        parse_policy(typo)
    assert info.value.suggestion == suggestion
    assert str(info.value).endswith("allowed: one of " + ", ".join(known_policy_names()))


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("po_d:d=0", "d"),
        ("po_d:d=65", "d"),
        ("po_d:d=abc", "d"),
        ("po_d:replace=maybe", "replace"),
        ("jsq:metric=avg", "metric"),
        ("random:d=2", "d"),
        ("po2:d=3", "d"),
        ("po_d:d", "policy"),
        ("po_d:d=2,d=3", "policy"),
        ("", "policy"),
        ({"d": 3}, "policy"),
        ("central_fcfs:rtt_us=-1", "rtt_us"),
        ("jbt:threshold=-1", "threshold"),
        ("jbt:threshold=inf", "threshold"),
        ("jbt:threshold=x", "threshold"),
        ("jbsq:bound=0", "bound"),
        ("jbsq:bound=1.5", "bound"),
        ("jbsq:metric=queue", "metric"),
        ("sed:by=speed", "by"),
        ("wcmp:weights=a;b", "weights.0"),
        ("wcmp:weights=0;0", "weights"),
        ("po2:metric=latency", "metric"),
        ("lsq:d=2", "d"),
        ("table:metric=queue", "metric"),
        ("ecmp:weights=1", "weights"),
        ("water_fill:mix=1.5", "mix"),
        ("water_fill:horizon=0", "horizon"),
        ("water_fill:period_us=-1", "period_us"),
        ("water_fill:steal=maybe", "steal"),
        ("water_fill:metric=queue", "metric"),
    ],
)
def test_bad_parameter_names_the_parameter(spec, field):
    with pytest.raises(InvalidConfigError) as info:
        parse_policy(spec)
    assert info.value.field == field


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_every_registered_policy_with_defaults_runs_in_the_engine(name):
    # A switch rack for the policies that run there, Malcolm's node-entry rack for the others.
    scenario = load_scenario("mm16" if "switch" in HEURISTICS[name].entries else "malcolm_homog_exp")
    config = scenario.engine_config(0.5, seed=1, policy=name)
    assert config["dispatch"]["policy"] == name
    check_rack_config(config)
    sim = RackSim(config)
    sim.run_tasks(2000)
    assert sim.results()["tasks_completed"] > 1800


@pytest.mark.parametrize("steal", [False, True])
def test_water_fill_migrates_and_steals_only_when_told(steal):
    # Its tables come from the engine every heartbeat: tasks move between nodes, and steals happen only with steal.
    scenario = load_scenario("malcolm_homog_exp")
    sim = RackSim(scenario.engine_config(0.9, seed=1, policy=f"water_fill:steal={str(steal).lower()}"))
    sim.run_tasks(5000)
    results = sim.results()
    assert results["migrations"] > 500
    assert (results["steals"] > 0) == steal


def test_jbsq_is_refused_where_task_types_are_tied_to_nodes():
    with pytest.raises(InvalidConfigError, match="jbsq refills a node with the switch's oldest task"):
        load_scenario("racksched_locality").policy("jbsq")
    assert load_scenario("racksched_multitype_bimodal50").policy("jbsq").name == "jbsq"  # types, no locality
