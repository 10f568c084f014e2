"""The colo schedulers: the Oracle against brute force, PARTIES and CLITE reaching QoS where an equal split does not,
CLITE's pieces (score, rounding, the GP posterior), parameters and refusals."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import Matern

from dcgym.agents.evaluation.colo import run
from dcgym.agents.heuristics.colo import BASELINES, make_scheduler, scheduler_names
from dcgym.agents.heuristics.colo.base import equal_split
from dcgym.agents.heuristics.colo.clite import Clite, Posterior, round_shares, score
from dcgym.agents.heuristics.colo.oracle import SLACK_STEPS, cheapest, most_slack
from dcgym.agents.heuristics.colo.parties import Parties
from dcgym.agents.policies import colo as colo_policies
from dcgym.envs.colo.scenario import SCHEDULERS, load_colo_scenario
from dcgym.envs.colo.server import ColoServer
from dcgym.envs.error import InvalidConfigError

# Moses at 50%, Img-dnn and Xapian at 30% of the code's max loads: an equal split leaves Moses below its cache
# cliff (6 of 20 ways), so a scheduler has to move ways to it.
SMALL = [
    {"service": "moses", "load": 0.5},
    {"service": "img-dnn", "load": 0.3},
    {"service": "xapian", "load": 0.3},
]


def small(mode="online"):
    return load_colo_scenario("osml_case_a", {"mixes": [SMALL], "mode": mode, "horizon_s": 120})


def tiny_server(rps):
    """Img-dnn and Xapian on an 8-core (4 physical), 4-way server."""
    scenario = load_colo_scenario(
        "osml_case_a",
        {
            "platform": {"cores": 8, "ways": 4},
            "mixes": [[{"service": "img-dnn", "rps": rps[0]}, {"service": "xapian", "rps": rps[1]}]],
        },
    )
    server = ColoServer(scenario.engine_config(mix=0, seed=0))
    server.advance(0.1)
    return server


@pytest.mark.parametrize("rps", [(600.0, 1000.0), (1000.0, 300.0), (300.0, 1800.0)])
def test_oracle_is_the_cheapest_allocation_meeting_qos_by_brute_force(rps):
    server = tiny_server(rps)
    points = [
        (c1, w1, c2, w2)
        for c1, w1, c2, w2 in itertools.product(range(1, 8), range(1, 4), range(1, 8), range(1, 4))
        if c1 + c2 <= 8 and w1 + w2 <= 4
    ]
    grid = np.array(points, dtype=np.float64)
    p99 = server.steady_state(grid[:, [0, 2]], grid[:, [1, 3]], np.array(rps))
    feasible = (p99 <= server.qos_ms).all(axis=1)
    cost = grid.sum(axis=1)
    assert feasible.any() and not feasible.all()
    best = cost[feasible].min()
    for extra in (None, 2):
        sol = cheapest(server, np.array(rps), np.array([0, 1]), margin=0.0, extra_ways=extra)
        assert sol.feasible and sol.cost == best
        got = server.steady_state(sol.cores[None, :], sol.ways[None, :], np.array(rps))[0]
        assert (got <= server.qos_ms).all() and sol.ratio == pytest.approx((got / server.qos_ms).max(), rel=1e-12)
    assert not feasible[cost < best].any()  # nothing cheaper meets QoS
    assert best > 4  # the case is not trivial: one core and one way each would be cheapest


@pytest.mark.parametrize("rps", [(600.0, 1000.0), (300.0, 1800.0)])
def test_oracles_slack_objective_is_within_a_bisection_step_of_the_most_slack_by_brute_force(rps):
    server = tiny_server(rps)
    grid = np.array(
        [
            p
            for p in itertools.product(range(1, 8), range(1, 4), range(1, 8), range(1, 4))
            if p[0] + p[2] <= 8 and p[1] + p[3] <= 4
        ],
        dtype=np.float64,
    )
    best = (server.steady_state(grid[:, [0, 2]], grid[:, [1, 3]], np.array(rps)) / server.qos_ms).max(axis=1).min()
    sol = most_slack(server, np.array(rps), np.array([0, 1]), margin=0.0, extra_ways=None)
    cost = cheapest(server, np.array(rps), np.array([0, 1]), margin=0.0, extra_ways=None)
    assert sol.feasible and sol.ratio <= cost.ratio
    # the largest margin met is found to within 1 / 2**SLACK_STEPS, so the worst p99 / target to within that too
    assert best - 1e-12 <= sol.ratio < best + 0.5**SLACK_STEPS


def test_oracle_reports_an_infeasible_mix():
    server = tiny_server((4000.0, 4000.0))  # 10 + 4 core-equivalents on 5
    sol = cheapest(server, np.array([4000.0, 4000.0]), np.array([0, 1]))
    assert not sol.feasible and sol.ratio > 1


@pytest.mark.parametrize(("spec", "mode"), [("parties", "online"), ("parties", "fresh"), ("clite", "fresh")])
def test_parties_and_clite_reach_qos_where_an_equal_split_does_not(spec, mode):
    scenario = small(mode)
    config = scenario.engine_config(mix=0, seed=1)
    equal, _ = run(config, "equal", 1, 120.0, scenario.hold_s)
    assert not equal["converged"] and equal["p99_over_target"]["moses"] > 1.2
    row, _ = run(config, spec, 1, 120.0, scenario.hold_s)
    assert row["converged"] and row["convergence_s"] < 90
    assert row["qos_met_fraction"] > 0.6
    final = ColoServer(config)
    final.advance(0.1)
    cores = np.array([row["final_cores"][s["service"]] for s in SMALL])
    ways = np.array([row["final_ways"][s["service"]] for s in SMALL])
    assert cores.sum() <= 36 and ways.sum() <= 20
    assert ways[0] >= 9  # Moses was given the ways its cache cliff needs (OSML Fig. 1a: 10 at 6 cores)


def test_oracle_converges_at_once_and_uses_less_than_the_server():
    scenario = small()
    row, timeline = run(scenario.engine_config(mix=0, seed=2), "oracle", 2, 60.0, scenario.hold_s, timeline_s=1.0)
    assert row["converged"] and row["convergence_s"] <= 15 and row["actions"] == 1
    assert row["cores_used"] < 36 and row["ways_used"] < 20
    assert len(timeline["times_s"]) == 61 and timeline["cores"][0][-1] == row["final_cores"]["moses"]


def test_unmanaged_shares_everything_and_equal_splits_it():
    scenario = small()
    config = scenario.engine_config(mix=0, seed=1)
    row, _ = run(config, "unmanaged", 1, 10.0, scenario.hold_s)
    assert (row["cores_used"], row["ways_used"]) == (36, 20) and sum(row["final_cores"].values()) == 0
    row, _ = run(config, "equal", 1, 10.0, scenario.hold_s)
    assert row["final_cores"] == {"moses": 12, "img-dnn": 12, "xapian": 12}
    assert row["final_ways"] == {"moses": 7, "img-dnn": 7, "xapian": 6}


def test_clite_score_is_eq_3_without_background_jobs():
    qos = np.array([10.0, 10.0])
    assert score(np.array([5.0, 9.0]), qos) == 1.0
    assert score(np.array([20.0, 5.0]), qos) == pytest.approx(0.5 * np.sqrt(0.5 * 1.0), rel=1e-12)
    assert score(np.array([40.0, 20.0]), qos) == pytest.approx(0.5 * np.sqrt(0.25 * 0.5), rel=1e-12)


def test_clite_rounding_keeps_totals_and_one_unit_each():
    for x, total in [([1.2, 10.6, 24.2], 36), ([1.0, 1.0, 18.0], 20), ([6.5, 6.5, 7.0], 20), ([0.4, 0.3, 19.3], 20)]:
        got = round_shares(np.array(x), total)
        assert got.sum() == total and got.min() >= 1 and np.abs(got - np.array(x)).max() < 1.5


def test_clite_posterior_is_scikit_learns():
    rng = np.random.default_rng(0)
    X = rng.random((25, 6))
    y = np.sin(3 * X).sum(axis=1)
    gp = GaussianProcessRegressor(Matern(length_scale=1.0, nu=1.5), alpha=1e-5, normalize_y=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp.fit(X, y)
    posterior = Posterior(gp)
    for z in rng.random((10, 6)):
        mean, std = gp.predict(z[None, :], return_std=True)
        got = posterior(z)
        assert got[0] == pytest.approx(mean[0], rel=1e-9) and got[1] == pytest.approx(std[0], rel=1e-6, abs=1e-12)


def test_clite_bootstraps_with_n_plus_one_samples_then_searches():
    scenario = small("fresh")
    server = ColoServer(scenario.engine_config(mix=0, seed=1))
    clite = Clite()
    clite.reset(server, np.random.default_rng(0))
    clite.act(server)
    boot = clite.bootstrap
    assert len(boot) == 4 and boot[0].tolist() == [12, 12, 12, 7, 7, 6]
    assert boot[1].tolist() == [34, 1, 1, 18, 1, 1] and boot[3].tolist() == [1, 1, 34, 1, 1, 18]
    for _ in range(6):
        server.advance(clite.interval_s)
        clite.act(server)
    assert len(clite.Y) == 6 and all(x[:3].sum() == 36 and x[3:].sum() == 20 for x in clite.X)


def test_parties_variants_hold_the_papers_and_the_codes_settings():
    paper, code = Parties(), Parties(variant="code")
    assert (paper.interval_s, paper.judge_samples, paper.cooldown_s, paper.random_wheel) == (0.5, 1, 30.0, True)
    assert (code.interval_s, code.judge_samples, code.cooldown_s, code.random_wheel) == (0.1, 5, 10.0, False)
    assert (paper.up_slack, paper.down_slack) == (0.05, 0.20)


def test_registry_and_refusals():
    assert set(BASELINES) == set(scheduler_names()) and set(colo_policies.names()) == set(SCHEDULERS)
    assert make_scheduler("parties:variant=code,interval_s=0.2").interval_s == 0.2
    with pytest.raises(InvalidConfigError, match="^samples: got 3; allowed: a parameter of clite: interval_s"):
        make_scheduler("clite:samples=3")
    with pytest.raises(InvalidConfigError, match=r'^policy: got "osmll"; did you mean "osml"\?'):
        make_scheduler("osmll")
    with pytest.raises(InvalidConfigError, match='^variant: got "both"; allowed: one of paper, code'):
        make_scheduler({"policy": "parties", "variant": "both"})
    with pytest.raises(InvalidConfigError, match="^margin: got 1.5"):
        make_scheduler("oracle:margin=1.5")


def test_clite_partitions_memory_bandwidth_where_the_platform_has_mba():
    scenario = load_colo_scenario(
        "osml_case_a",
        {
            "platform": "silver_4114",
            "mixes": [[{"service": "img-dnn", "load": 0.3}, {"service": "xapian", "load": 0.3}]],
        },
    )
    server = ColoServer(scenario.engine_config(mix=0, seed=1))
    clite = Clite()
    clite.reset(server, np.random.default_rng(0))
    clite.act(server)
    assert clite.totals == [20, 11, 10]  # CLITE's server: 20 threads, 11 ways, MBA in 10% steps
    assert server.cores.tolist() == [10, 10] and np.asarray(server.sim.mba).tolist() == [0.5, 0.5]
    clite._apply(server, clite.bootstrap[1])  # the first service at its maximum, one unit to the other
    assert server.cores.tolist() == [19, 1] and server.ways.tolist() == [10, 1]
    assert np.asarray(server.sim.mba) == pytest.approx([0.9, 0.1])


@pytest.mark.parametrize("mix", [0, 23])  # the lightest and the heaviest (the Oracle: 48 of 56 cores and ways)
def test_osml_mixes_heavy_has_headroom_and_fits(mix):
    scenario = load_colo_scenario("osml_mixes_heavy")
    server = ColoServer(scenario.engine_config(mix=mix, seed=1))
    run = np.ones(3, dtype=bool)
    equal = server.steady_state(
        equal_split(server.total_cores, run)[None], equal_split(server.total_ways, run)[None], server.rps
    )[0]
    assert (equal > server.qos_ms).any()  # an equal split misses QoS
    assert cheapest(server, server.rps, np.arange(3), margin=0.1).feasible  # the Oracle's search fits the mix
