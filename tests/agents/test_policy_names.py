"""Policy names: the string and YAML forms, aliases, defaults and errors (DESIGN.md, "Scenario files")."""

from __future__ import annotations

import pytest

from dcgym.agents.heuristics import HEURISTICS, known_policy_names, parse_policy
from dcgym.cpp_core import check_rack_config
from dcgym.envs.error import InvalidConfigError, UnknownPolicyError
from dcgym.envs.scenario import load_scenario

SAME = [
    ("po_d:d=3,replace=false", {"policy": "po_d", "d": 3, "replace": False}),
    ("po_d: d = 3 , replace = false", {"policy": "po_d", "d": 3, "replace": False}),
    ("po2", {"policy": "po2"}),
    ("jsq:metric=queue", {"policy": "jsq", "metric": "queue"}),
    ("central_fcfs:rtt_us=5", {"policy": "central_fcfs", "rtt_us": 5.0}),
    ("random", {"policy": "random"}),
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
]


@pytest.mark.parametrize(("alias", "canonical"), ALIASES, ids=[a for a, _ in ALIASES])
def test_aliases_and_shorthands_mean_the_canonical_policy(alias, canonical):
    assert parse_policy(alias).engine_dict() == parse_policy(canonical).engine_dict()


def test_defaults_are_filled_in_the_engine_dict():
    assert parse_policy("po2").engine_dict() == {"policy": "po_d", "d": 2, "replace": True, "metric": "outstanding"}
    assert parse_policy("central_fcfs").engine_dict() == {"policy": "central_fcfs", "rtt_us": 0.0}
    assert parse_policy("rr").engine_dict() == {"policy": "round_robin"}


@pytest.mark.parametrize(
    ("spec", "label"),
    [("po2", "po2"), ("rr", "round_robin"), ("po_d:d=3", "po_d:d=3"), ({"policy": "po_d", "replace": False},
     "po_d:replace=false"), ("central_fcfs:rtt_us=2.50", "central_fcfs:rtt_us=2.5")],
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
    [("po_d:d=0", "d"), ("po_d:d=65", "d"), ("po_d:d=abc", "d"), ("po_d:replace=maybe", "replace"),
     ("jsq:metric=avg", "metric"), ("random:d=2", "d"), ("po2:d=3", "d"), ("po_d:d", "policy"),
     ("po_d:d=2,d=3", "policy"), ("", "policy"), ({"d": 3}, "policy"), ("central_fcfs:rtt_us=-1", "rtt_us")],
)
def test_bad_parameter_names_the_parameter(spec, field):
    with pytest.raises(InvalidConfigError) as info:
        parse_policy(spec)
    assert info.value.field == field


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_every_registered_policy_with_defaults_is_accepted_by_the_engine(name):
    config = load_scenario("mm16").engine_config(0.5, seed=1, policy=name)
    assert config["dispatch"]["policy"] == name
    check_rack_config(config)
