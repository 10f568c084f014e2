"""Capacity changes in the multi-LB engine (App. E.2.3: extra CPU load on one server group from some time on)."""

from __future__ import annotations

import pytest

from dcgym.cpp_core._engine import LbSim, check_lb_config
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.lb.scenario import load_lb_scenario

WORK_US = 100.0


def config(changes=(), speed=1.0, load=0.7, cpu=None, **kw) -> dict:
    """Two one-worker servers in two groups, one ECMP LB, zero network delay."""
    return {
        "servers": [{"count": 1, "workers": 1, "speed": speed}, {"count": 1, "workers": 1, "speed": 1.0}],
        "application": {"stages": 1, "cpu": cpu or {"dist": "exp", "mean_us": WORK_US}},
        "lbs": [{"policy": "ecmp"}],
        "load": load,
        "seed": 3,
        "backlog": 1_000_000,
        "hop_delay_us": {"min": 0.0, "max": 0.0},
        "decision_period_us": 10_000.0,
        "capacity_changes": list(changes),
        "observation": {"fd_density": 0},  # no flow-duration sampling: its cost grows with the flows in progress
        **kw,
    }


def test_a_change_at_time_zero_is_the_same_run_as_that_speed_from_the_start():
    # Both start with a capacity of 2 (the same arrival rate) and run at speeds (0.5, 1) from time 0.
    changed = LbSim(config([{"at_us": 0.0, "group": 0, "speed": 0.5}]))
    other = config([{"at_us": 0.0, "group": 1, "speed": 1.0}], speed=0.5)
    other["servers"][1]["speed"] = 1.5
    started = LbSim(other)
    for sim in (changed, started):
        sim.run_flows(20_000)
    assert changed.results()["fct_us"] == started.results()["fct_us"]  # bit for bit
    busy = [sim.results()["servers"]["cpu_utilization"].tolist() for sim in (changed, started)]
    assert busy[0] == busy[1]


def test_no_change_leaves_every_run_bit_identical():
    with_field = LbSim(config([]))
    without = config()
    del without["capacity_changes"]
    plain = LbSim(without)
    for sim in (with_field, plain):
        sim.run_flows(5000)
    assert with_field.results()["fct_us"] == plain.results()["fct_us"]


def test_work_done_before_a_change_is_kept_and_the_rest_runs_at_the_new_speed():
    # One flow of exactly 100 us of CPU at a tiny load: find when it starts, then halve the speed 40 us into it.
    det = {"dist": "det", "value_us": WORK_US}
    probe = LbSim(config(load=1e-4, cpu=det))
    probe.run_completions(1)
    start = probe.now_us - WORK_US  # zero hops: the client receives the response when the CPU stage ends
    for group, expected in ((0, 40 + 60 / 0.5), (1, WORK_US)):
        sim = LbSim(config([{"at_us": start + 40, "group": group, "speed": 0.5}], load=1e-4, cpu=det))
        sim.run_completions(1)
        assert sim.results()["fct_us"]["mean"] == pytest.approx(expected, rel=1e-9)
        assert sim.results()["servers"]["dispatched"].tolist() == probe.results()["servers"]["dispatched"].tolist()


def test_a_slowed_group_slows_its_flows_from_the_change_on():
    # Both servers at load 0.35 each; from 0.5 s server 0 runs at half speed: its utilization doubles after.
    sim = LbSim(config([{"at_us": 5e5, "group": 0, "speed": 0.5}]))
    sim.run_until(5e5)
    before = sim.results()["servers"]["cpu_utilization"].copy()
    sim.run_until(2e7)
    after = sim.results()["servers"]["cpu_utilization"]
    assert before[0] == pytest.approx(0.7, abs=0.1) and before[1] == pytest.approx(0.7, abs=0.1)
    assert after[0] == pytest.approx(1.0, abs=0.05)  # 2 x 0.7 > 1: saturated from 0.5 s on
    assert after[1] == pytest.approx(0.7, abs=0.05)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"at_us": 1.0, "group": 2, "speed": 0.5}, r"capacity_changes\[0\]\.group: must be a server group index"),
        ({"at_us": -1.0, "group": 0, "speed": 0.5}, r"capacity_changes\[0\]\.at_us"),
        ({"at_us": 1.0, "group": 0, "speed": 0.0}, r"capacity_changes\[0\]\.speed: must be a positive"),
    ],
)
def test_bad_changes_are_refused_naming_the_field(change, message):
    with pytest.raises(ValueError, match=message):
        check_lb_config(config([change]))


def test_the_scenario_schema_checks_changes_and_hands_them_to_the_engine():
    scenario = load_lb_scenario("lb_capacity_change")
    assert scenario.engine_config(0.6, seed=1)["capacity_changes"] == [{"at_us": 25e6, "group": 1, "speed": 0.5}]
    with pytest.raises(InvalidConfigError, match=r"capacity_changes\.0\.group"):
        load_lb_scenario("lb_sim", {"capacity_changes": [{"at_us": 0, "group": 5, "speed": 0.5}]})
    with pytest.raises(InvalidConfigError, match=r"capacity_changes\.1\.at_us"):
        changes = [{"at_us": 10, "group": 0, "speed": 0.5}, {"at_us": 5, "group": 1, "speed": 0.5}]
        load_lb_scenario("lb_sim", {"capacity_changes": changes})


def test_wcmp_overloads_the_slowed_group_only_after_the_change():
    # lb_capacity_change: WCMP keeps 16/22 of the traffic on the 4-CPU group, which can serve only 8 CPUs' worth.
    scenario = load_lb_scenario("lb_capacity_change")
    sim = LbSim(scenario.engine_config(0.6, seed=1, policy="wcmp"))
    sim.run_until(25e6)
    assert sim.results()["flows_rejected"] == 0
    sim.run_until(60e6)
    assert sim.results()["flows_rejected"] > 100
