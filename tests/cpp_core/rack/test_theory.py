"""The rack engine against exact queueing theory.

How the tolerances work: a statistical check runs the same config under
`len(SEEDS)` independent seeds (every stream of the engine derives from the
seed), takes the mean of the per-run estimates and its standard error
SE = std / sqrt(R), and asserts

    |mean of runs - theory| <= Z * SE + bias * |theory|

where `bias` is a deterministic error that does not average out over seeds
(the histogram's bucket resolution for percentiles, 0 for means). With R = 16
runs the statistic (mean - theory) / SE is Student-t with 15 degrees of
freedom, and P(|t_15| > 4.5) ~ 4e-4, so a correct engine fails one of the ~100
checks here with probability under 5%; because the seeds are fixed, the outcome
is reproducible. Each check also asserts that SE itself is below a stated
fraction of the theoretical value, so a check cannot pass by being noisy: the
run lengths below were chosen to meet those bounds, which means a deviation of
a few percent (a few tenths of a percent for the means) is caught.

Every run discards the first `WARMUP` arrivals. An M/M/1 queue started empty
relaxes in about 1 / (mu (1 - sqrt(rho))^2) service times (Abate and Whitt,
"Transient behavior of the M/M/1 queue: starting at the origin", Queueing
Systems 2, 1987): ~400 at rho = 0.9 and ~1,600 at 0.95 on 2 workers, far
shorter than the warm-up, so the empty start biases nothing measurable.

Runs of one check go to a small thread pool (`run_tasks` releases the GIL).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dcgym.cpp_core import Distribution, LogHistogram, RackSim

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1])]  # this folder's helpers, theory.py
import theory  # noqa: E402  (the formulas live beside this file)
from rack_checks import Z, canonical, check_estimate, mean_and_se, run_seeds  # noqa: E402

WARMUP = 50_000
HIST_ERR = LogHistogram.max_relative_error


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def rack_config(
    *,
    nodes: int = 1,
    workers: int = 1,
    service: dict | None = None,
    load: float = 0.5,
    seed: int = 1,
    intra: dict | None = None,
    dispatch: dict | None = None,
    queue_capacity: int = -1,
    warmup: int = WARMUP,
) -> dict:
    return {
        "nodes": [{"count": nodes, "workers": workers, "speed": 1.0, "queue_capacity": queue_capacity}],
        "service": service or {"dist": "exp", "mean_us": 1.0},
        "load": load,
        "seed": seed,
        "warmup_tasks": warmup,
        "intra_node": intra or {"discipline": "fcfs"},
        "dispatch": dispatch or {"policy": "random"},
        "load_info": {"model": "fresh"},
    }


def latencies(results: list[dict], key: str, cls: int | None = None) -> list[float]:
    if cls is None:
        return [r["latency_us"][key] for r in results]
    return [r["latency_by_class_us"][cls][key] for r in results]


# Service distributions used throughout (us). Every moment of each is finite
# (bounded support, or exponential / lognormal tails), so the regenerative
# CLT applies to the per-run means used below.
DISTS = {
    "exp": {"dist": "exp", "mean_us": 100.0},
    "det": {"dist": "det", "value_us": 100.0},
    "bimodal": {"dist": "multimodal", "modes": [[0.8, 50.0], [0.2, 250.0]]},
    "hyperexp": {"dist": "hyperexp", "phases": [[0.5, 50.0], [0.5, 500.0]]},
    "lognormal": {"dist": "lognormal", "mean_us": 100.0, "sigma": 1.0},
    "bounded_pareto": {"dist": "bounded_pareto", "alpha": 1.5, "low_us": 10.0, "high_us": 10_000.0},
    "empirical": {"dist": "empirical", "cdf": [[10.0, 0.0], [50.0, 0.5], [100.0, 0.9], [1000.0, 1.0]]},
}


# ---------------------------------------------------------------------------
# M/M/1 and M/M/c
# ---------------------------------------------------------------------------

# Run lengths grow like 1/(1 - rho)^2, the growth of the relative asymptotic
# variance of queue averages near saturation.
MM1_TASKS = {0.5: 300_000, 0.8: 1_000_000, 0.9: 3_000_000}


@pytest.mark.parametrize("rho", sorted(MM1_TASKS))
def test_mm1_response_time_is_exponential_with_rate_mu_minus_lambda(rho):
    results = run_seeds(rack_config(load=rho), MM1_TASKS[rho])
    lam, mu = rho, 1.0
    check_estimate(latencies(results, "mean"), 1.0 / (mu - lam), max_rel_se=0.005, what="mean response")
    check_estimate([r["wait_us"]["p_wait"] for r in results], rho, max_rel_se=0.005, what="P(wait) = rho")
    for key, q, max_rel_se in [("p50", 0.5, 0.005), ("p99", 0.99, 0.01), ("p999", 0.999, 0.02)]:
        check_estimate(
            latencies(results, key),
            theory.mm1_response_quantile(lam, mu, q),
            max_rel_se=max_rel_se,
            bias=HIST_ERR,
            what=f"{key} response",
        )


# At load 0.5 waiting is rare for c = 16 (C = 0.009), so P(wait) needs more
# tasks there; near saturation the queue's slow mixing is the cost.
MMC_TASKS = {0.5: 500_000, 0.7: 300_000, 0.9: 600_000, 0.95: 1_000_000}


@pytest.mark.parametrize("c", [2, 8, 16])
@pytest.mark.parametrize("load", sorted(MMC_TASKS))
def test_mmc_matches_erlang_c(c, load):
    results = run_seeds(rack_config(workers=c, load=load), MMC_TASKS[load])
    lam, mu = c * load, 1.0
    check_estimate(
        [r["wait_us"]["p_wait"] for r in results], theory.erlang_c(c, lam / mu), max_rel_se=0.025, what="P(wait)"
    )
    check_estimate(
        [r["wait_us"]["mean"] for r in results], theory.mmc_mean_wait(c, lam, mu), max_rel_se=0.04, what="mean wait"
    )
    check_estimate(
        latencies(results, "p99"),
        theory.mmc_response_quantile(0.99, c, lam, mu),
        max_rel_se=0.04,
        bias=HIST_ERR,
        what="p99 response",
    )


# ---------------------------------------------------------------------------
# M/G/1 FCFS: Pollaczek-Khinchine
# ---------------------------------------------------------------------------

MG1_DISTS = ["det", "bimodal", "hyperexp", "lognormal", "bounded_pareto", "empirical"]
MG1_TASKS = {"bounded_pareto": 2_500_000}  # SCV ~ 10 and E[S^3] large: the slowest to converge


@pytest.mark.parametrize("name", MG1_DISTS)
def test_mg1_fcfs_mean_wait_matches_pollaczek_khinchine(name):
    # The variance of a run's mean wait grows with E[S^3] and E[S^4] and like
    # 1/(1 - rho)^4; rho = 0.5 keeps the heavy-tailed workloads affordable.
    # Every moment of these sizes is finite, so the per-run means are
    # asymptotically normal; the SE bound (2%) certifies the run length.
    service, rho = DISTS[name], 0.5
    es, es2 = theory.moment(service, 1), theory.moment(service, 2)
    results = run_seeds(rack_config(service=service, load=rho), MG1_TASKS.get(name, 500_000))
    lam = rho / es
    check_estimate(
        [r["wait_us"]["mean"] for r in results], theory.pk_mean_wait(lam, es, es2), max_rel_se=0.02, what="mean wait"
    )
    check_estimate(
        latencies(results, "mean"), theory.pk_mean_wait(lam, es, es2) + es, max_rel_se=0.02, what="mean response"
    )


@pytest.mark.parametrize("name", sorted(DISTS))
def test_engine_moments_match_closed_forms(name):
    cfg = DISTS[name]
    d = Distribution(cfg)
    assert d.mean == pytest.approx(theory.moment(cfg, 1), rel=1e-12)
    assert d.second_moment == pytest.approx(theory.moment(cfg, 2), rel=1e-12)
    assert d.num_classes == len(theory.class_probabilities(cfg))


@pytest.mark.parametrize("name", ["lognormal", "bounded_pareto", "empirical"])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_closed_form_moments_match_quadrature(name, k):
    # Guards the reference formulas themselves (relative 1e-8: quad's accuracy).
    cfg = DISTS[name]
    assert theory.moment(cfg, k) == pytest.approx(theory.moment_by_quadrature(cfg, k), rel=1e-8)


# ---------------------------------------------------------------------------
# Processor sharing
# ---------------------------------------------------------------------------

IDEAL_PS = {"discipline": "ps", "quantum_us": 0}
PS_DISTS = ["exp", "det", "bimodal", "hyperexp"]


@pytest.mark.parametrize("name", PS_DISTS)
def test_mg1_ps_mean_response_is_mean_size_over_one_minus_rho(name):
    service, rho = DISTS[name], 0.7
    es = theory.moment(service, 1)
    results = run_seeds(rack_config(service=service, load=rho, intra=IDEAL_PS), 400_000)
    check_estimate(latencies(results, "mean"), es / (1 - rho), max_rel_se=0.005, what="PS mean response")


@pytest.mark.parametrize("name", ["bimodal", "hyperexp"])
def test_mg1_ps_class_response_is_proportional_to_size(name):
    # E[T | S = x] = x / (1 - rho) is linear in x, so the mean over a class is
    # that class's mean size over (1 - rho): a mode value or a phase mean.
    service, rho = DISTS[name], 0.7
    parts = service.get("modes") or service["phases"]
    results = run_seeds(rack_config(service=service, load=rho, intra=IDEAL_PS), 400_000)
    for k, (_, size) in enumerate(parts):
        check_estimate(
            latencies(results, "mean", cls=k),
            theory.ps_conditional_response(size, rho),
            max_rel_se=0.005,
            what=f"class {k} (size {size}) mean response",
        )


@pytest.mark.parametrize("name", ["exp", "det", "hyperexp"])
@pytest.mark.parametrize("load", [0.3, 0.7])
def test_multiserver_ps_mean_response_equals_mmc(name, load):
    # c workers shared egalitarian-ly (each of n tasks at rate min(1, c/n)) is a
    # symmetric queue, so its number in system is insensitive to the size
    # distribution beyond the mean (Kelly, Reversibility and Stochastic
    # Networks, 1979, Ch. 3, symmetric queues). With exponential sizes that
    # birth-death chain is the M/M/c one, hence by Little's law
    # E[T] = E[T_{M/M/c}] for any size distribution with the same mean.
    service, c = DISTS[name], 4
    es = theory.moment(service, 1)
    results = run_seeds(rack_config(workers=c, service=service, load=load, intra=IDEAL_PS), 300_000)
    mu = 1.0 / es
    check_estimate(
        latencies(results, "mean"),
        theory.mmc_mean_response(c, c * load * mu, mu),
        max_rel_se=0.005,
        what="M/G/4-PS mean response",
    )


def test_huge_quantum_ps_is_fcfs_bit_for_bit():
    # A quantum no task reaches never preempts, so the event sequence is FCFS's.
    base = rack_config(nodes=3, workers=2, service=DISTS["hyperexp"], load=0.85, dispatch={"policy": "po_d", "d": 2})
    fcfs = RackSim(base)
    ps = RackSim({**base, "intra_node": {"discipline": "ps", "quantum_us": 1e9}})
    for sim in (fcfs, ps):
        sim.run_tasks(300_000)
    assert canonical(ps.results()) == canonical(fcfs.results())


def test_round_robin_quantum_converges_to_ideal_ps():
    # Det sizes: FCFS (M/D/1, 1 + rho/(2(1-rho)) = 1.5 at rho = 0.5) and PS
    # (1/(1-rho) = 2) differ, so convergence is visible. The measured gap to
    # PS is about proportional to the quantum: 6.8%, 3.5%, 1.8% at 0.2, 0.1,
    # 0.05 (SE 0.15%). The same seeds give every quantum the same arrivals, so
    # the gaps' differences are measured per seed (paired), with less noise.
    service, rho = {"dist": "det", "value_us": 1.0}, 0.5
    ps_mean = 1.0 / (1.0 - rho)
    gaps = {}
    for q in (0.2, 0.1, 0.05):
        cfg = rack_config(service=service, load=rho, intra={"discipline": "ps", "quantum_us": q}, warmup=10_000)
        gaps[q] = (ps_mean - np.array(latencies(run_seeds(cfg, 100_000), "mean"))) / ps_mean
        assert mean_and_se(gaps[q])[1] < 0.002
    for big, small in [(0.2, 0.1), (0.1, 0.05)]:
        m, se = mean_and_se(gaps[big] - gaps[small])
        assert m > Z * se, f"quantum {big} -> {small}: gap {gaps[big].mean():.4f} -> {gaps[small].mean():.4f}"
        # about linear: halving the quantum halves the gap (measured ratios 0.52, 0.51; SE ~0.03)
        ratio = gaps[small] / gaps[big]
        assert 0.3 < ratio.mean() < 0.7
    assert 0 < gaps[0.05].mean() < 0.025


# ---------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------

DISPATCH_TASKS = {0.5: 300_000, 0.9: 1_500_000}


@pytest.mark.parametrize("rho", sorted(DISPATCH_TASKS))
def test_random_dispatch_makes_independent_mm1_queues(rho):
    # Random splitting of a Poisson stream gives N independent Poisson streams
    # of rate lambda / N, so each node is an M/M/1 queue at the same rho.
    results = run_seeds(rack_config(nodes=10, load=rho), DISPATCH_TASKS[rho])
    check_estimate(latencies(results, "mean"), 1.0 / (1.0 - rho), max_rel_se=0.01, what="mean response")
    check_estimate(
        latencies(results, "p99"),
        theory.mm1_response_quantile(rho, 1.0, 0.99),
        max_rel_se=0.015,
        bias=HIST_ERR,
        what="p99 response",
    )
    check_estimate([r["wait_us"]["p_wait"] for r in results], rho, max_rel_se=0.005, what="P(wait)")


@pytest.mark.parametrize("rho", sorted(DISPATCH_TASKS))
def test_round_robin_dispatch_is_erlang_arrival_queue(rho):
    # Each node gets every N-th arrival: Erlang-N interarrivals, an E_N/M/1
    # queue. GI/M/1 theory: P(wait) = sigma and T ~ Exp(mu (1 - sigma)).
    n = 10
    results = run_seeds(rack_config(nodes=n, load=rho, dispatch={"policy": "round_robin"}), DISPATCH_TASKS[rho])
    sigma = theory.gm1_sigma(theory.erlang_k_lst(n, rho), 1.0)
    check_estimate(latencies(results, "mean"), 1.0 / (1.0 - sigma), max_rel_se=0.01, what="mean response")
    check_estimate([r["wait_us"]["p_wait"] for r in results], sigma, max_rel_se=0.005, what="P(wait) = sigma")
    check_estimate(
        latencies(results, "p99"),
        -math.log(0.01) / (1.0 - sigma),
        max_rel_se=0.015,
        bias=HIST_ERR,
        what="p99 response",
    )
    # It beats random dispatch on every seed: same seeds, so the same arrivals
    # and sizes (common random numbers). Theory: 1.32 vs 2 (rho = 0.5), 5.66 vs 10 (0.9).
    rr = np.array(latencies(results, "mean"))
    rand = np.array(latencies(run_seeds(rack_config(nodes=n, load=rho), DISPATCH_TASKS[rho]), "mean"))
    assert np.all(rr < 0.8 * rand)


PO2_TASKS = 1_000_000


@pytest.mark.parametrize("rho", [0.5, 0.8, 0.9])
def test_po2_at_100_nodes_is_just_above_mean_field_limit(rho):
    # The mean-field value is the N -> infinity limit; at N = 100 the measured
    # mean sits 0.4%, 1.0% and 1.7% above it (rho = 0.5, 0.8, 0.9; SE 0.04%,
    # 0.10%, 0.16%), a gap that shrinks with N (next test). Assert it is
    # positive and below 3%, each beyond Z standard errors.
    results = run_seeds(rack_config(nodes=100, load=rho, dispatch={"policy": "po_d", "d": 2}), PO2_TASKS)
    m, se = mean_and_se(latencies(results, "mean"))
    limit = theory.po2_mean_field_response(rho)
    assert se < 0.002 * limit
    assert m - Z * se > limit
    assert m + Z * se < 1.03 * limit


def test_po2_finite_size_gap_shrinks_with_more_nodes():
    rho = 0.9
    limit = theory.po2_mean_field_response(rho)
    gaps = {}
    for n_nodes in (100, 400):
        cfg = rack_config(nodes=n_nodes, load=rho, dispatch={"policy": "po_d", "d": 2})
        m, se = mean_and_se(latencies(run_seeds(cfg, PO2_TASKS), "mean"))
        gaps[n_nodes] = ((m - limit) / limit, se / limit)
    (g100, s100), (g400, s400) = gaps[100], gaps[400]
    # measured: +1.67% (SE 0.16%) at N = 100, +0.35% (SE 0.16%) at N = 400
    assert g100 - g400 > Z * math.hypot(s100, s400)
    # and consistent with the 1/N accuracy of the mean-field approximation
    # (Gast, "Expected values estimated via mean-field approximation are
    # 1/N-accurate", SIGMETRICS 2017): g400 ~ g100 / 4
    assert abs(g400 - g100 / 4) < Z * math.hypot(s400, s100 / 4)


def test_jsq_beats_po2_beats_random_at_100_nodes():
    # Same seeds: arrivals and sizes are identical across policies (common
    # random numbers), so the ordering is not a sampling accident.
    rho, seeds = 0.9, range(1, 5)
    means = {}
    for policy in ({"policy": "jsq"}, {"policy": "po_d", "d": 2}, {"policy": "random"}):
        results = run_seeds(rack_config(nodes=100, load=rho, dispatch=policy), 300_000, seeds=seeds)
        means[policy["policy"]] = np.array(latencies(results, "mean"))
    # measured: jsq ~1.06, po2 ~2.65, random ~10; every seed must agree
    assert np.all(means["jsq"] < 0.6 * means["po_d"])
    assert np.all(means["po_d"] < 0.4 * means["random"])


@pytest.mark.parametrize("load", sorted(MMC_TASKS))
def test_central_fcfs_over_4x4_workers_is_one_mm16_queue_pathwise(load):
    # One FCFS queue feeding 16 identical workers is M/M/16 whichever node
    # the worker sits in: with the same seed (same arrivals and sizes) every
    # task starts and ends at the same instants as on one 16-worker node, so
    # the statistics agree bit for bit, and the Erlang C checks of the 16-worker
    # node (test_mmc_matches_erlang_c) carry over.
    tasks = 200_000
    central = RackSim(rack_config(nodes=4, workers=4, load=load, dispatch={"policy": "central_fcfs"}))
    single = RackSim(rack_config(nodes=1, workers=16, load=load))
    for sim in (central, single):
        sim.run_tasks(tasks)
    a, b = central.results(), single.results()
    for key in ("latency_us", "wait_us", "tasks_completed", "sim_time_us"):
        assert canonical(a[key]) == canonical(b[key]), key
    assert a["wait_us"]["p_wait"] > 0


def test_central_fcfs_response_grows_with_fetch_rtt():
    # A worker that frees up idles for rtt before its next queued task
    # arrives, so every rtt > 0 costs capacity. Measured means at load 0.8:
    # 1.095 (rtt 0, M/M/16: 1.0953), 1.156 (0.05), 2.18 (0.2).
    stats_by_rtt = {}
    for rtt in (0.0, 0.05, 0.2):
        cfg = rack_config(nodes=4, workers=4, load=0.8, dispatch={"policy": "central_fcfs", "rtt_us": rtt})
        stats_by_rtt[rtt] = mean_and_se(latencies(run_seeds(cfg, 300_000), "mean"))
    for lo, hi in [(0.0, 0.05), (0.05, 0.2)]:
        (m0, s0), (m1, s1) = stats_by_rtt[lo], stats_by_rtt[hi]
        assert m1 - m0 > Z * math.hypot(s0, s1), f"rtt {lo} -> {hi}: {m0:.4g} -> {m1:.4g}"


# ---------------------------------------------------------------------------
# Determinism, conservation, memory
# ---------------------------------------------------------------------------


DETERMINISM_CONFIGS = {
    "fcfs_po2": rack_config(
        nodes=8, workers=2, service=DISTS["bimodal"], load=0.9, dispatch={"policy": "po_d", "d": 2}
    ),
    "ps_jsq": rack_config(
        nodes=4, workers=2, service=DISTS["lognormal"], load=0.8, intra=IDEAL_PS, dispatch={"policy": "jsq"}
    ),
    "quantum_rr": rack_config(
        nodes=4,
        workers=1,
        service=DISTS["hyperexp"],
        load=0.8,
        intra={"discipline": "ps", "quantum_us": 20.0, "switch_cost_us": 1.0},
        dispatch={"policy": "round_robin"},
    ),
    "central_rtt": rack_config(
        nodes=4,
        workers=4,
        service=DISTS["bounded_pareto"],
        load=0.8,
        dispatch={"policy": "central_fcfs", "rtt_us": 2.0},
    ),
}


@pytest.mark.parametrize("name", sorted(DETERMINISM_CONFIGS))
def test_same_seed_reproduces_results_bit_for_bit(name):
    def run(seed):
        sim = RackSim({**DETERMINISM_CONFIGS[name], "seed": seed})
        sim.run_tasks(200_000)
        sim.run_until(sim.now_us + 1234.5)
        return canonical(sim.results())

    assert run(7) == run(7)
    a, b = run(7), run(8)
    assert a["latency_us"] != b["latency_us"]
    assert a["sim_time_us"] != b["sim_time_us"]


CAPACITY = 4
CONSERVATION_CONFIGS = {
    "fcfs_random": dict(intra=None, dispatch={"policy": "random"}),
    "fcfs_round_robin": dict(intra=None, dispatch={"policy": "round_robin"}),
    "fcfs_po2_queue_metric": dict(intra=None, dispatch={"policy": "po_d", "d": 2, "replace": False, "metric": "queue"}),
    "fcfs_jsq": dict(intra=None, dispatch={"policy": "jsq"}),
    "ideal_ps_po2": dict(intra=IDEAL_PS, dispatch={"policy": "po_d", "d": 2}),
    "quantum_ps_random": dict(
        intra={"discipline": "ps", "quantum_us": 30.0, "switch_cost_us": 2.0}, dispatch={"policy": "random"}
    ),
}


@pytest.mark.parametrize("name", sorted(CONSERVATION_CONFIGS))
def test_tasks_are_conserved_with_drops_under_overload(name):
    nodes, workers = 5, 2
    cfg = rack_config(
        nodes=nodes,
        workers=workers,
        service=DISTS["hyperexp"],
        load=1.2,
        queue_capacity=CAPACITY,
        warmup=0,
        **CONSERVATION_CONFIGS[name],
    )
    sim = RackSim(cfg)
    for _ in range(3):  # check mid-run too, including at a time between events
        sim.run_tasks(100_000)
        sim.run_until(sim.now_us + 333.3)
        r = sim.results()
        assert r["tasks_arrived"] == r["tasks_completed"] + r["tasks_dropped"] + r["tasks_in_flight"]
        assert r["tasks_dropped"] > 0
        assert int(r["nodes"]["completed"].sum()) == r["tasks_completed"]
        assert int(r["nodes"]["dropped"].sum()) == r["tasks_dropped"]
        # two independent counts of the tasks held: walking queues vs node counters
        assert int(r["nodes"]["outstanding"].sum()) == r["tasks_in_flight"]
        assert int(r["nodes"]["outstanding"].max()) <= workers + CAPACITY


def test_central_fcfs_conserves_tasks_under_overload():
    # The global queue is unbounded (queue_capacity bounds per-node queues,
    # which central_fcfs does not use), so overload shows up as tasks in flight.
    cfg = rack_config(
        nodes=4,
        workers=2,
        service=DISTS["hyperexp"],
        load=1.2,
        queue_capacity=CAPACITY,
        warmup=0,
        dispatch={"policy": "central_fcfs", "rtt_us": 3.0},
    )
    sim = RackSim(cfg)
    sim.run_tasks(200_000)
    sim.run_until(sim.now_us + 333.3)
    r = sim.results()
    assert r["tasks_arrived"] == r["tasks_completed"] + r["tasks_dropped"] + r["tasks_in_flight"]
    assert r["tasks_in_flight"] > 0.1 * r["tasks_arrived"]  # 1 - 1/1.2 = 17% of arrivals pile up


@pytest.mark.parametrize("policy", ["random", "round_robin", "jsq", "po_d"])
def test_dispatch_spreads_tasks_evenly_over_identical_nodes(policy):
    # At load 0.05 nearly every arrival finds all 10 nodes idle, so jsq and
    # po_d decide by their tie rules (uniform reservoir sampling; the first of
    # d uniform samples): each node's share must be 1/10 (chi-square, p > 1e-4),
    # and round robin's counts differ by at most one.
    n_nodes, tasks = 10, 200_000
    sim = RackSim(rack_config(nodes=n_nodes, load=0.05, dispatch={"policy": policy}, warmup=0))
    sim.run_tasks(tasks)
    r = sim.results()["nodes"]
    per_node = r["completed"] + r["dropped"] + r["outstanding"]
    assert int(per_node.sum()) == tasks
    if policy == "round_robin":
        assert int(per_node.max() - per_node.min()) <= 1
    else:
        assert stats.chisquare(per_node).pvalue > 1e-4, per_node.tolist()


@pytest.mark.parametrize("load", [0.5, 0.8])
def test_node_utilization_equals_offered_load(load):
    # Below saturation each node is busy a fraction `load` of the time (the
    # work arriving per unit of capacity); 16 seeds, mean over 4 nodes.
    cfg = rack_config(nodes=4, workers=2, service=DISTS["bimodal"], load=load)
    results = run_seeds(cfg, 200_000)
    check_estimate(
        [float(r["nodes"]["utilization"].mean()) for r in results], load, max_rel_se=0.005, what="utilization"
    )


@pytest.mark.parametrize(
    "intra", [None, IDEAL_PS, {"discipline": "ps", "quantum_us": 0.5}], ids=["fcfs", "ideal_ps", "quantum_ps"]
)
def test_node_utilization_saturates_at_one_under_overload(intra):
    # Utilization is the fraction of time a node's workers are busy, so it
    # cannot exceed 1. At load 1.5 with unbounded queues every worker is busy
    # from the first few arrivals on, so it must be in [0.99, 1].
    cfg = rack_config(nodes=2, workers=2, load=1.5, intra=intra, warmup=0)
    sim = RackSim(cfg)
    sim.run_tasks(200_000)
    util = sim.results()["nodes"]["utilization"]
    assert np.all(util <= 1.0 + 1e-12), f"utilization {util.tolist()} exceeds 1"
    assert np.all(util >= 0.99), util.tolist()


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_does_not_grow_with_tasks():
    # State is O(tasks in flight) plus fixed histograms (12,802 buckets x 8 B
    # per histogram). 2e7 more tasks with a bound of 4 MiB means any per-task
    # leak of 0.2 B or more fails the test.
    cfg = rack_config(nodes=8, workers=2, service=DISTS["bimodal"], load=0.9, dispatch={"policy": "po_d", "d": 2})
    sim = RackSim(cfg)
    sim.run_tasks(1_000_000)
    sim.results()
    before = resident_bytes()
    sim.run_tasks(20_000_000)
    sim.results()
    grown = resident_bytes() - before
    assert grown < 4 * 2**20, f"RSS grew by {grown / 2**20:.2f} MiB over 2e7 tasks"
    assert sim.results()["tasks_completed"] > 20_000_000


# ---------------------------------------------------------------------------
# Histogram and distributions
# ---------------------------------------------------------------------------

QUANTILES = [0.5, 0.9, 0.99, 0.999, 0.9999]


@pytest.mark.parametrize("name", ["exp", "bimodal", "hyperexp", "lognormal", "bounded_pareto", "empirical"])
def test_histogram_quantiles_are_within_max_relative_error(name):
    values, _ = Distribution(DISTS[name]).sample(1_000_000, 11)
    h = LogHistogram()
    h.record(values)
    assert h.count == len(values)
    assert h.mean == pytest.approx(values.mean(), rel=1e-12)  # the mean is exact, not bucketed
    for q in QUANTILES:
        exact = float(np.quantile(values, q, method="inverted_cdf"))
        err = abs(h.quantile(q) - exact) / exact
        assert err <= HIST_ERR * (1 + 1e-9), f"q={q}: histogram {h.quantile(q)} vs exact {exact}"


def test_histogram_max_relative_error_is_half_a_sub_bucket():
    # 256 sub-buckets per octave, midpoint reporting: 1 / 512
    assert HIST_ERR == pytest.approx(1 / 512, rel=1e-15)


SAMPLES = 2_000_000


@pytest.mark.parametrize("name", sorted(DISTS))
def test_sample_moments_match_formulas(name):
    # SE of the sample mean of S^k is sqrt((E[S^2k] - E[S^k]^2) / n), exact
    # from the formulas; every moment exists (bounded or light tails), and a
    # 5-sigma bound fails a correct sampler with probability ~6e-7.
    cfg = DISTS[name]
    values, _ = Distribution(cfg).sample(SAMPLES, 5)
    for k in (1, 2):
        mk, m2k = theory.moment(cfg, k), theory.moment(cfg, 2 * k)
        se = math.sqrt(max(m2k - mk * mk, 0.0) / SAMPLES)
        got = float(np.mean(values**k))
        assert abs(got - mk) <= 5 * se + 1e-12 * mk, f"E[S^{k}]: sample {got:.6g} vs {mk:.6g} (SE {se:.3g})"


def test_exponential_sampler_fills_equiprobable_bins_evenly():
    # The unit exponential is drawn by a 256-layer ziggurat; an error in a
    # layer or wedge shows as a dent at that layer's x range. 4e6 samples in
    # 2,000 equiprobable bins (2,000 expected each, so a 10% dent in one bin
    # is 4.5 sigma) plus the far tail beyond the base layer (x > 7.697),
    # drawn by a separate branch, checked against its exact mass e^-7.697.
    n, bins = 4_000_000, 2000
    values, _ = Distribution({"dist": "exp", "mean_us": 1.0}).sample(n, 21)
    edges = -np.log1p(-np.arange(1, bins) / bins)  # F^-1 of k / bins
    counts = np.bincount(np.searchsorted(edges, values, side="right"), minlength=bins)
    p = stats.chisquare(counts).pvalue
    assert p > 1e-4, f"chi-square p-value {p:.3g}; worst bin {counts.min()}..{counts.max()} vs {n // bins}"
    r = 7.69711747013104972
    tail = int((values > r).sum())
    p_tail = math.exp(-r)
    assert stats.binomtest(tail, n, p_tail).pvalue > 1e-4, f"{tail} samples beyond {r}, expected {n * p_tail:.0f}"
    # and beyond it the tail is again exponential (memoryless): mean excess 1
    excess = values[values > r] - r
    assert abs(excess.mean() - 1.0) < 5 / math.sqrt(len(excess))


@pytest.mark.parametrize("name", ["exp", "lognormal", "bounded_pareto", "empirical"])
def test_samples_follow_the_distribution_function(name):
    # Kolmogorov-Smirnov against the exact CDF: at n = 1e6 a p-value above
    # 1e-4 rules out shape errors of about 0.4% in the CDF (critical D ~ 1.95/sqrt(n)).
    cfg = DISTS[name]
    values, _ = Distribution(cfg).sample(1_000_000, 9)
    p = stats.kstest(values, theory.cdf(cfg)).pvalue
    assert p > 1e-4, f"KS p-value {p:.3g}"


@pytest.mark.parametrize(
    "cfg",
    [
        DISTS["bimodal"],
        DISTS["hyperexp"],
        {"dist": "multimodal", "modes": [[0.5, 1.0], [0.3, 2.0], [0.15, 5.0], [0.05, 40.0]]},
        {"dist": "multimodal", "modes": [[0.0, 1.0], [0.999, 2.0], [0.001, 3.0]]},
    ],
    ids=["bimodal", "hyperexp", "four_modes", "rare_mode"],
)
def test_class_frequencies_match_probabilities(cfg):
    probs = np.array(theory.class_probabilities(cfg))
    n = 1_000_000
    values, classes = Distribution(cfg).sample(n, 13)
    counts = np.bincount(classes, minlength=len(probs))
    assert len(counts) == len(probs)
    assert counts[probs == 0].sum() == 0  # a zero-probability mode never appears
    live = probs > 0
    p = stats.chisquare(counts[live], n * probs[live]).pvalue
    assert p > 1e-4, f"chi-square p-value {p:.3g}, counts {counts.tolist()}"
    if cfg["dist"] == "multimodal":  # each class carries exactly its mode's value
        modes = np.array([v for _, v in cfg["modes"]])
        assert np.array_equal(values, modes[classes])
