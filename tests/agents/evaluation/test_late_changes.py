"""A run that ends before a scenario's changes over time says so, in every family that has such changes."""

from __future__ import annotations

import logging

import pytest

from dcgym.agents.evaluation import evaluate
from dcgym.agents.evaluation.core import warn_late_changes
from dcgym.agents.evaluation.family import family_of
from dcgym.envs.scenario import load_scenario

# (scenario, load, a run too short for any change, the late fields in order)
SHORT_RUNS = [
    ("malcolm_adapt_shift", 0.9, 20_000, ["dynamics.0"]),
    ("lb_capacity_change", 0.6, 200, ["capacity_changes.0"]),
    ("auto_dynamic", 0.8, 1_000, [f"workload.dynamics.{k}" for k in range(28)]),
    (
        "colo_churn",
        0,
        15,
        ["mixes.0.1.launch_s", "mixes.0.2.launch_s", "mixes.0.1.changes.0", "mixes.0.2.end_s"],
    ),
]


@pytest.mark.parametrize(("name", "load", "work", "fields"), SHORT_RUNS, ids=[r[0] for r in SHORT_RUNS])
def test_a_short_run_lists_every_change_it_misses_and_the_run_that_reaches_each(name, load, work, fields):
    scenario = load_scenario(name)
    family = family_of(scenario.kind)
    late = family.late_changes(scenario, load, work)
    assert [c.field for c in late] == fields
    for change in late:
        assert change.needed > work
        # the run length the warning suggests reaches the change
        assert change.field not in [c.field for c in family.late_changes(scenario, load, change.needed)]


@pytest.mark.parametrize(("name", "load", "work", "fields"), SHORT_RUNS, ids=[r[0] for r in SHORT_RUNS])
def test_a_run_long_enough_for_every_change_misses_none(name, load, work, fields):
    scenario = load_scenario(name)
    family = family_of(scenario.kind)
    cover = family.work_to_cover(scenario, load) or family.default_work_for(scenario)
    assert family.late_changes(scenario, load, cover) == []


def test_scenarios_without_changes_have_no_late_ones():
    for name, load in [("mm16", 0.5), ("lb_sim", 0.845), ("auto_websearch", 0.8), ("osml_case_a", 0)]:
        scenario = load_scenario(name)
        assert family_of(scenario.kind).late_changes(scenario, load, 1) == []


def test_evaluate_warns_once_per_load_naming_the_field_and_the_run_that_reaches_it(caplog):
    with caplog.at_level(logging.WARNING, logger="dcgym.agents.evaluation"):
        evaluate("lb_capacity_change", "lsq", loads=[0.5, 0.6], tasks=200, workers=0, progress=False)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    late = [w for w in warnings if "comes after the end of the runs" in w]
    assert len(late) == 2
    assert late[1].startswith(
        "capacity_changes.0 (server group 1 at speed 0.5 from 25 s) comes after the end of the runs at load 0.6"
    )
    assert late[1].endswith("--tasks 18151 or more would reach it")


def test_many_late_changes_are_one_warning(caplog):
    scenario = load_scenario("auto_dynamic")
    with caplog.at_level(logging.WARNING, logger="dcgym.agents.evaluation"):
        warn_late_changes(family_of("flow"), scenario, [0.8], 1_000)
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith(
        "workload.dynamics.0 (relative_load 1, sizes data_mining for group 0 at 0.5 s) and 27 later"
    )
    assert "they never happen" in message
