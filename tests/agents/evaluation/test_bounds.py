"""The rack and lb bounds against exact theory, drained runs, and no heuristic beating a bound (tolerance 0)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dcgym.agents.evaluation import evaluate
from dcgym.agents.evaluation.bounds import (
    capped_spt_mean_busy,
    lb_mean_fct_bound_s,
    pooled_flow_time,
    printed_floor,
    rack_p99_bound_us,
    srpt_flow_times,
)
from dcgym.agents.evaluation.scores import run_scores, scoring_of, top_values
from dcgym.agents.evaluation.suites import suite_scenarios
from dcgym.cpp_core import LbSim, LogHistogram, RackSim
from dcgym.envs.scenario import load_scenario

SERIAL = {"progress": False, "workers": 0}
ONE_SERVER = {"nodes": [{"count": 1, "workers": 1, "speed": 1.0}], "dynamics": []}


def test_rack_bound_is_exact_for_a_batch_on_one_server():
    """100 unit tasks at time 0 on one server: in every order the k-th completes at k, so the 99th latency is 99;
    the bound reaches it (to its 1e-4 search tolerance) and never exceeds it."""
    bound = rack_p99_bound_us(ONE_SERVER, np.zeros(100), np.ones(100))
    assert 99 * (1 - 1e-4) <= bound <= 99


def test_a_bound_compares_with_printed_p99s_at_its_buckets_lower_edge():
    """The engine prints a p99 as its histogram bucket's midpoint, clamped to the run's exact minimum and maximum.
    printed_floor(v) is the lower edge of v's bucket (below v by less than one bucket, 0.39% of v): whatever a run
    whose p99 is at or above v prints, it is at or above printed_floor(v); a value a bucket lower prints below."""
    rng = np.random.default_rng(3)
    for v in np.exp(rng.uniform(math.log(0.01), math.log(1e7), 2000)):
        floor = printed_floor(float(v))
        assert floor <= v and (v - floor) / v < 2 * LogHistogram.max_relative_error
        for above in (v, v * (1 + 1e-9), v * 1.001, floor * (1 + 2 * LogHistogram.max_relative_error)):
            for low, high in ((0.0, 1e12), (above, above), (0.0, above)):  # midpoint, or clamped to the run's range
                h = LogHistogram()
                h.record(np.array([low, above, high]))
                assert h.quantile(0.5) >= floor, (v, above, low, high)
        h = LogHistogram()
        h.record(np.array([0.0, floor * (1 - 1e-9), 1e12]))
        assert h.quantile(0.5) < floor
    assert printed_floor(232.7846) == 232.5  # [232.5, 233): 0.5 us wide between 128 and 256 us
    assert printed_floor(0.0) == 0.0


def test_rack_bound_is_the_service_time_when_tasks_never_overlap():
    """Tasks far apart: each alone, so the p99 is the rank-th service time at the fastest speed, exactly."""
    sizes = np.arange(1.0, 201.0)
    config = {"nodes": [{"count": 2, "workers": 1, "speed": 2.0}], "dynamics": []}
    assert rack_p99_bound_us(config, np.arange(200) * 1e4, sizes) == pytest.approx(198 / 2.0, rel=1e-4)


def test_lb_pooled_bound_is_srpt_when_the_cap_does_not_bind_and_each_job_alone_when_apart():
    rng = np.random.default_rng(3)
    release, work = np.sort(rng.uniform(0, 50, 40)), rng.exponential(2.0, 40)
    srpt = np.sum(srpt_flow_times(release, work, 1.0))
    assert pooled_flow_time(release, work, 1.0, 1.0) == pytest.approx(srpt, rel=1e-10)
    apart = np.arange(40) * 1e3  # rounding of event times near 4e4: 1e-10 relative
    assert pooled_flow_time(apart, work, 4.0, 0.5) == pytest.approx(np.sum(work) / 0.5, rel=1e-10)
    # capped SPT gives a job alone at the cap a mean busy time of work / (2 cap) after its release
    assert capped_spt_mean_busy(apart, work, 4.0, 0.5) == pytest.approx(work, rel=1e-10)


def test_lb_bound_of_one_flow_is_its_hops_and_work():
    config = {
        "servers": [{"count": 2, "workers": 2, "speed": 1.5}],
        "hop_delay_us": {"min": 100.0, "max": 1000.0},
        "application": {"stages": 2},
    }
    records = {"arrival_us": np.array([0.0]), "cpu_us": np.array([3000.0]), "io_us": np.array([500.0])}
    exact = (200 + 3000 / 1.5 + 500) * 1e-6
    assert exact * (1 - 2e-9) <= lb_mean_fct_bound_s(config, records) <= exact


def test_a_drained_rack_run_measures_exactly_its_window():
    scenario = load_scenario("malcolm_homog_exp")
    config = scenario.engine_config(0.9, 1, scenario.policy("wcmp"), 100, 0)
    sim = RackSim({**config, "measure_tasks": 400, "record_tasks": True})
    sim.run_tasks(1000)
    assert len(sim.records()["size_us"]) == 400 and sim.results()["tasks_warmup"] == 100
    while sim.results()["tasks_measured_pending"]:
        sim.run_until(sim.now_us + 1e3)
    assert sim.results()["latency_us"]["count"] == 400


def test_a_drained_lb_run_measures_exactly_its_window():
    scenario = load_scenario("lb_sim_cpu50_io50")
    config = scenario.engine_config(load=0.7, seed=1, policy="wcmp", warmup_flows=50)
    sim = LbSim({**config, "measure_flows": 200, "record_flows": True})
    sim.run_flows(600)
    records = sim.records()
    assert len(records["arrival_us"]) == 200 and np.all(records["io_us"] > 0)
    while sim.results()["flows_measured_pending"]:
        sim.run_until(sim.now_us + 1e5)
    assert sim.results()["fct_us"]["count"] == 200


def test_default_runs_are_not_drained():
    """The drained measurement is an option: without it a document has no ``drained`` key and its rack and lb
    scores use the upper reference, not a bound."""
    doc = evaluate("mm16", ["jsq", "wcmp", "oracle"], loads=[0.5], tasks=500, **SERIAL)
    assert "drained" not in doc and not scoring_of(doc).top_is_bound


@pytest.mark.parametrize(
    ("name", "policies", "loads", "work"),
    [
        ("malcolm_homog_hyperexp2", ["wcmp", "random", "jsq", "sed", "oracle"], [0.8, 0.98], 3000),
        ("racksched_sim_trimodal", ["wcmp", "jsq", "jbsq", "central_fcfs"], [0.75, 0.95], 3000),
        ("mm1", ["wcmp", "random"], [0.8], 2000),
        ("lb_reference", ["wcmp", "ecmp", "lsq", "sed", "oracle"], [0.61, 0.905], 800),
        ("lb_sim_cpu25_io75", ["wcmp", "lsq", "sed", "oracle"], [0.7], 800),
    ],
)
def test_no_heuristic_beats_the_bound_of_a_drained_run(name, policies, loads, work):
    """Tolerance 0: a bound. Every run drained (nothing measured left in flight), every score at most 1."""
    scenario = load_scenario(name)
    doc = evaluate(scenario, policies, loads=loads, tasks=work, seeds=[1, 2], drained=True, **SERIAL)
    scoring = scoring_of(doc)
    assert doc["drained"] and scoring.top_is_bound and scoring.top_name == "ideal"
    top = top_values(doc, scenario)
    path = {"rack": ("latency_us", "p99"), "lb": ("fct_s", "mean")}[doc["family"]]
    for row in doc["results"]:
        bound = top(row["load"], row["seed"])
        assert math.isfinite(bound) and bound > 0
        in_flight = row.get("tasks_in_flight", row.get("flows_in_flight"))
        if in_flight == 0 and not row.get("tasks_dropped"):  # a rejected flow counts with its timeout
            assert row[path[0]][path[1]] >= bound, (row["policy"], row["load"], row["seed"])
    assert all(s["score"] is None or s["score"] <= 1 for s in run_scores(doc, top))


def test_colo_scores_reach_one_only_at_the_full_qos_share(tmp_path):
    """The colo top is the QoS share's ceiling (a bound: no score above 1); the held-out suite's mixes are scored."""
    entry = suite_scenarios("colo:test")[1]
    doc = evaluate(entry.write(tmp_path), ["equal", "oracle"], loads=[0], tasks=30, **SERIAL)
    scoring = scoring_of(doc)
    assert scoring.top_is_bound and scoring.reference == "equal"
    scores = run_scores(doc, top_values(doc, entry.load()))
    shares = {r["policy"]: r["qos_met_fraction"] for r in doc["results"]}
    for s in scores:
        assert s["score"] is not None and s["score"] <= 1
        assert (s["score"] == 1) == (shares[s["policy"]] == 1)


@pytest.mark.parametrize(
    ("name", "policies", "load", "work"),
    [
        ("malcolm_homog_exp", ["zoo:malcolm_homog_exp", "wcmp"], 0.9, 5000),
        ("lb_sim", ["zoo:multilb_distr_lb_sim", "wcmp"], 0.7, 800),
    ],
)
def test_policy_files_drain_too_and_stay_above_the_bound(name, policies, load, work):
    """A zoo policy file's drained run measures exactly its window (every measured task or flow ended) and its
    metric is no better than the bound (tolerance 0)."""
    scenario = load_scenario(name)
    doc = evaluate(scenario, policies, loads=[load], tasks=work, seeds=[1], drained=True, **SERIAL)
    top = top_values(doc, scenario)
    warmup = doc["results"][1].get("tasks_warmup", doc["results"][1].get("flows_warmup"))
    for row in doc["results"]:
        done = row.get("tasks_completed", row.get("flows_completed"))
        metric = row["latency_us"]["p99"] if "latency_us" in row else row["fct_s"]["mean"]
        assert done == work - warmup and metric >= top(load, 1)
