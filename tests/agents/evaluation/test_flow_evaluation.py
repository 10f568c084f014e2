"""The flow family's evaluation: rows of FCTs per bucket, measured flows accounted for, censoring said."""

from __future__ import annotations

import math

import pytest

from dcgym.agents.evaluation import evaluate, family_of
from dcgym.agents.evaluation import flow as flow_eval
from dcgym.agents.rl.envs import make_env
from dcgym.cpp_core import FlowSim
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import load_scenario


def _rows(scenario: str, policies, tasks: int, loads=None, seeds=(1,)):
    s = load_scenario(scenario)
    doc = evaluate(s, policies, loads=loads or [s.loads[0]], tasks=tasks, seeds=list(seeds), workers=0, progress=False)
    return doc


def test_every_measured_flow_is_completed_or_counted_in_flight():
    doc = _rows("auto_websearch", ["qlas", "srpt"], 3000, loads=[0.8])
    assert doc["flows"] == 3000
    for row in doc["results"]:
        assert row["flows_warmup"] == 300
        assert row["flows_completed"] + row["flows_in_flight"] == 3000 - 300
        assert row["fct_ms"]["p50"] <= row["fct_ms"]["p99"]
        for bucket in ("small", "medium", "large"):
            assert set(row[f"fct_{bucket}_ms"]) >= {"mean", "p50", "p99"}
        # every FCT holds the 100 us base RTT; a slowdown is at least 1 (nothing beats being alone)
        assert row["fct_small_ms"]["mean"] > 0.1 and row["slowdown"]["mean"] >= 1.0
        assert row["events"] > 0 and row["sim_time_s"] > 0 and row["throughput_gbps"] > 0


def test_the_same_seed_gives_the_same_rows_but_the_wall_time():
    a, b = (_rows("single_link_websearch", ["pias", "las"], 2000)["results"] for _ in range(2))
    for x, y in zip(a, b):
        x.pop("wall_s"), y.pop("wall_s")
        assert x == y


def test_srpt_beats_fair_sharing_on_mean_fct_on_one_link():
    # Exact M/G/1 theory: SRPT minimises the mean response time; at load 0.8 on web-search sizes its mean is
    # less than half of PS's, far outside the noise of 20,000 flows (the theory tests bound it at a few %).
    doc = _rows("single_link_websearch", ["srpt", "fair"], 20000, loads=[0.8])
    mean = {row["policy"]: row["fct_ms"]["mean"] for row in doc["results"]}
    assert mean["srpt"] < 0.6 * mean["fair"]


def test_a_run_stopped_early_says_it_left_flows_out(monkeypatch):
    # No drain at all: the run stops at the last arrival, so flows in flight then (data mining's large flows
    # among them: up to 1 GB at 1 Gbps) are left out, counted and flagged.
    monkeypatch.setattr(flow_eval, "DRAIN_FACTOR", 0.0)
    doc = _rows("auto_datamining", ["fair"], 3000, loads=[0.8])
    row = doc["results"][0]
    assert row["flows_in_flight"] > 0 and row["censored"]
    assert row["censored_fraction"] == pytest.approx(
        row["flows_in_flight"] / (row["flows_in_flight"] + row["flows_completed"])
    )
    assert doc["summary"][0]["censored"]


def test_the_headline_is_the_mean_fct_in_ms():
    family = family_of("flow")
    assert family.headline == ("fct_ms.mean", "mean flow completion time (ms)", 3)
    assert family.work == "flows"


def test_las_runs_on_one_link_only_and_the_leaderboard_skips_it_elsewhere():
    family = family_of("flow")
    assert family.runs_on(load_scenario("single_link_datamining"), "las")
    assert not family.runs_on(load_scenario("auto_websearch"), "las")
    with pytest.raises(InvalidConfigError, match=r"^policy: got \"las\"; allowed: a policy other than las"):
        _rows("auto_websearch", ["las"], 1000)


def test_too_few_flows_are_refused_naming_tasks():
    with pytest.raises(InvalidConfigError, match=r"^tasks: got 5; allowed: at least 10 flows"):
        _rows("auto_websearch", ["qlas"], 5)


def test_expected_arrivals_follow_the_dynamics():
    s = load_scenario("auto_dynamic")
    base = flow_eval.expected_arrivals(s, 0.8, 0.4)  # before the first change (0.5 s)
    assert base > 0 and math.isclose(flow_eval.expected_arrivals(s, 0.8, 0.2), base / 2, rel_tol=1e-12)
    assert not math.isclose(flow_eval.expected_arrivals(s, 0.8, 4.0), 10 * base, rel_tol=1e-3)  # the load changes
    assert family_of("flow").work_to_cover(s, 0.8) > 0


def test_rows_report_the_load_they_ran_at_as_measured_link_utilisation():
    # AuTO's 80% (load_unit: ports) puts every port near 80%; the tolerance covers 3,000 flows' noise (a run
    # is about 0.5 s of web search) and the drain, when arrivals go on. The busiest link is above the mean.
    row = _rows("auto_websearch", ["qlas"], 3000, loads=[0.8])["results"][0]
    assert 65 < row["mean_port_util_pct"] < 95
    assert row["mean_port_util_pct"] <= row["busiest_link_util_pct"] <= 100 + 1e-9
    light = _rows("pias_websearch", ["pias"], 3000, loads=[0.5])["results"][0]  # one link per host: at 50%
    assert 35 < light["mean_port_util_pct"] < 65


def test_pathbal_moves_long_flows_to_their_least_loaded_path_and_counts_each_move():
    s = load_scenario("auto_websearch")
    sim = FlowSim(s.engine_config(0.8, seed=2))
    sim.run_for(0.2)
    before = sim.active_flows_table()
    moved = sim.balance_paths(1 << 20, 0, -1)
    after = sim.active_flows_table()
    assert list(before["handle"]) == list(after["handle"])
    changed = before["path"] != after["path"]
    assert moved == int(changed.sum()) > 0
    assert (before["sent_bytes"][changed] >= 1 << 20).all()  # only long flows move
    assert sim.balance_paths(1 << 20, 3, 3) <= 3  # at most the oldest 3
    with pytest.raises(ValueError, match="level"):
        sim.balance_paths(1 << 20, 0, 4)


def test_pathbal_runs_as_a_baseline_and_is_refused_as_the_agents_scheduling():
    doc = _rows("auto_websearch", ["pathbal:flows=11", "qlas"], 2000, loads=[0.8])
    labels = [r["policy"] for r in doc["results"]]
    assert labels == ["pathbal:flows=11", "qlas"]
    pathbal, qlas = doc["results"]
    assert pathbal["fct_ms"]["mean"] != qlas["fct_ms"]["mean"]  # the moves act (same flows, same seed)
    with pytest.raises(InvalidConfigError, match="pathbal"):
        make_env("flow_v0", {"scenario": "auto_websearch", "policy": "pathbal"})


def test_pathbal_pins_long_flows_only_from_demote_bytes():
    """demote_bytes 4 MiB: after a step of the rule, the long flows past 4 MiB are pinned to the last level and
    those between 1 and 4 MiB keep MLFQ's level (below the last here); the setting is refused without demote or
    below long_bytes, naming the field."""
    from dcgym.agents.evaluation.flow import balancing
    from dcgym.envs.flow.policies import parse_flow_policy

    s = load_scenario("auto_websearch")
    config = s.engine_config(0.8, seed=2)
    policy = parse_flow_policy("pathbal:demote=true,demote_bytes=4194304")
    assert policy.balance["demote_bytes"] == 4194304 and parse_flow_policy("pathbal").balance["demote_bytes"] == 2**20
    levels = config["scheduling"]["levels"]
    sim = FlowSim(config)
    sim.run_for(0.3)
    balancing(sim, policy.balance, levels)()
    flows = sim.active_flows_table()
    sent, level = flows["sent_bytes"], flows["level"]
    past, between = sent >= 4 << 20, (sent >= 1 << 20) & (sent < 4 << 20)
    assert past.any() and between.any()
    assert (level[past] == levels - 1).all()
    assert (level[between] < levels - 1).any()  # MLFQ's level (pias_ws: level 0 below 2.1 MB)
    for spec, field in (
        ("pathbal:demote_bytes=4194304", "demote_bytes"),
        ("pathbal:demote=true,demote_bytes=1000", "demote_bytes"),
    ):
        with pytest.raises(InvalidConfigError, match=field):
            parse_flow_policy(spec)
