"""The NAME:key=value,... grammar, parsed in one place for every family (and for policy files' options)."""

from __future__ import annotations

import pytest

from dcgym.envs.colo.scenario import parse_scheduler
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.flow.policies import parse_flow_policy
from dcgym.envs.policy_spec import parse_options, parse_spec, scalar, show_option, spec_label, split_spec
from dcgym.envs.rack.dispatch import parse_policy


class Malformed(Exception):
    pass


def _error(item: str) -> Malformed:
    return Malformed(item)


def test_a_spec_is_its_name_and_its_options_as_written():
    assert parse_spec(" po_d : d = 3 , replace=false,", _error) == ("po_d", {"d": "3", "replace": "false"})
    assert parse_spec("jsq", _error) == ("jsq", {})
    assert parse_spec("jsq:", _error) == ("jsq", {})
    assert parse_spec("wcmp:weights=4;4;1;1", _error) == ("wcmp", {"weights": "4;4;1;1"})


@pytest.mark.parametrize("text,item", [("po_d:d", "d"), ("po_d:=3", "=3"), ("po_d:d=1,d=2", "d=2")])
def test_a_malformed_option_raises_the_callers_error_with_the_item(text, item):
    with pytest.raises(Malformed, match=f"^{item}$"):
        parse_spec(text, _error)


def test_without_distinct_keys_the_last_value_holds():
    assert parse_options("a=1,a=2", _error, distinct=False) == {"a": "2"}


@pytest.mark.parametrize(
    "text,split",
    [
        ("zoo:lb_x:heartbeat_us=50", ("zoo:lb_x", "heartbeat_us=50")),
        ("zoo:lb_x", ("zoo:lb_x", "")),
        ("runs/a:b/model.dcpol", ("runs/a:b/model.dcpol", "")),
        ("C:\\runs\\a.dcpol:load_metric=queue", ("C:\\runs\\a.dcpol", "load_metric=queue")),
    ],
)
def test_a_policy_files_options_follow_its_last_colon(text, split):
    assert split_spec(text, file=True) == split


def test_values_read_and_written_as_on_a_command_line():
    assert [scalar(t) for t in ("3", "0.5", "True", "false", "code")] == [3, 0.5, True, False, "code"]
    assert [show_option(v) for v in (False, 1e6, [4.0, 1.5], 3, "ws")] == ["false", "1e+06", "4;1.5", "3", "ws"]
    for value in (4194304.0, 1 / 3, 80459140.0, 2.5e-7):  # a label is exact: two values never share one
        assert float(show_option(value)) == value
    assert show_option(4194304.0) == "4194304"  # not %g's 4.1943e+06
    assert spec_label("po_d", {"d": 3, "replace": False}) == "po_d:d=3,replace=false" and spec_label("jsq", {}) == "jsq"


@pytest.mark.parametrize(
    "parse,text,field,allowed",
    [
        (parse_policy, "po_d:d", "policy", "NAME or NAME:KEY=VALUE,KEY=VALUE with distinct keys"),
        (parse_policy, "po_d:d=2,d=3", "policy", "NAME or NAME:KEY=VALUE,KEY=VALUE with distinct keys"),
        (parse_flow_policy, "qlas:thresholds", "policy", "NAME or NAME:KEY=VALUE,KEY=VALUE with distinct keys"),
        (parse_scheduler, "parties:variant", "", "NAME or NAME:key=value,key=value (a scheduler and parameters)"),
    ],
)
def test_each_family_keeps_its_message_naming_the_whole_spec(parse, text, field, allowed):
    with pytest.raises(InvalidConfigError) as error:
        parse(text)
    assert (error.value.field, error.value.value, error.value.allowed) == (field, text, allowed)


def test_each_family_reads_the_options_into_its_parameters():
    assert parse_policy("po_d:d=3,replace=false").label == "po_d:d=3,replace=false"
    assert parse_policy("po_d:d=3,replace=false").engine_dict()["d"] == 3
    assert parse_flow_policy("qsjf:thresholds=1e4;2e4;3e4").label == "qsjf:thresholds=10000;20000;30000"
    assert parse_scheduler("parties:interval_s=0.5,variant=code,verbose=true") == {
        "policy": "parties",
        "interval_s": 0.5,
        "variant": "code",
        "verbose": True,
    }
