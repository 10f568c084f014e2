"""Every dispatch policy of the rack engine against an independent reference.

Three kinds of reference, strongest first:
- pathwise identities: two configs that must process the same tasks at the
  same instants give bit-identical results (same seed = same arrivals and
  sizes, docs/rack.md "Randomness");
- exact queueing theory (tests/cpp_core/theory.py) where the policy splits
  the rack into independent queues or is equivalent to a central queue;
- otherwise the pure-Python simulator tests/cpp_core/reference_sim.py,
  which is itself checked against theory below.

Tolerances are those of rack_checks.py: |mean of R runs - reference| <= 4.5 SE,
with SE bounded so every check can detect a deviation of a few percent. The
engine runs are long (SE ~0.1-0.5%); the reference simulator's are short
(10 seeds x 20,000 tasks, SE ~0.5-1%), so comparisons with it detect errors
of about 5%; only moderate loads are used there, where runs mix fast.

A measurement note: results() covers completed tasks only, and the tasks
still in flight when a run stops are biased towards long ones, so a run's
mean is low by about (tasks in flight / tasks run) x E[S]. Every run here
keeps that ratio below 2e-3 of the quantity it measures.
"""

from __future__ import annotations

import math
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dcgym.cpp_core import RackSim

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1])]  # this folder's helpers, theory.py
import theory  # noqa: E402
from rack_checks import (  # noqa: E402
    HYPEREXP,
    SEEDS,
    THREADS,
    Z,
    arrivals_per_node,
    canonical,
    check_estimate,
    check_same_mean,
    latency,
    mean_and_se,
    nodes,
    rack,
    run,
    run_seeds,
)
from reference_sim import simulate  # noqa: E402

REF_SEEDS = range(10)
REF_TASKS, REF_WARMUP = 20_000, 2_000


def reference_means(**kwargs) -> list[float]:
    return [simulate(seed=s, tasks=REF_TASKS, warmup=REF_WARMUP, **kwargs).mean for s in REF_SEEDS]


def same_latencies(a: dict, b: dict) -> bool:
    return all(canonical(a[k]) == canonical(b[k]) for k in ("latency_us", "wait_us", "tasks_completed", "sim_time_us"))


# ---------------------------------------------------------------------------
# The reference simulator itself
# ---------------------------------------------------------------------------


def test_reference_sim_agrees_with_queueing_theory():
    # Guards the guard: random splitting makes independent M/M/1 queues, a
    # central queue over 4 workers is M/M/4, round robin gives E_4/M/1 queues.
    n, rho = 4, 0.6
    check_estimate(
        reference_means(speeds=[1.0] * n, load=rho, policy="random"),
        1 / (1 - rho),
        max_rel_se=0.02,
        what="reference random = M/M/1",
    )
    check_estimate(
        reference_means(speeds=[1.0] * n, load=rho, policy="central_fcfs"),
        theory.mmc_mean_response(n, n * rho, 1.0),
        max_rel_se=0.01,
        what="reference central = M/M/4",
    )
    sigma = theory.gm1_sigma(theory.erlang_k_lst(n, rho), 1.0)
    check_estimate(
        reference_means(speeds=[1.0] * n, load=rho, policy="round_robin"),
        1 / (1 - sigma),
        max_rel_se=0.01,
        what="reference round robin = E4/M/1",
    )


# ---------------------------------------------------------------------------
# Policies that split the rack into independent queues: exact theory
# ---------------------------------------------------------------------------


def test_random_dispatch_to_heterogeneous_nodes_makes_independent_mm1_queues():
    # Random splitting of a Poisson(lam) stream over 4 nodes gives each an
    # independent Poisson(lam / 4) stream: node i is M/M/1 with mu_i = speed_i
    # (Exp(1) work). Per node, utilization = rho_i, and the time-average
    # number of tasks (from take_samples, sampled every 2 us) is
    # rho_i / (1 - rho_i) = lam_i E[T_i] by Little's law; the overall mean
    # response is the traffic-weighted mean of 1 / (mu_i - lam_i).
    speeds = np.array([0.5, 1.0, 2.0, 4.0])
    load = 0.2  # lam = 1.5, rho = 0.75, 0.375, 0.19, 0.09
    lam = load * speeds.sum() / len(speeds)
    rho = lam / speeds
    cfg = rack(nodes(speeds), load=load, sample_period_us=2.0)

    def one(seed):
        sim = RackSim({**cfg, "seed": seed})
        sim.run_tasks(50_000)
        sim.take_samples()  # drop the warm-up's samples
        sim.run_tasks(600_000)
        r = sim.results()
        return r, sim.take_samples()[1].mean(axis=0)

    with ThreadPoolExecutor(THREADS) as pool:
        runs = list(pool.map(one, SEEDS))
    for i in range(len(speeds)):
        check_estimate(
            [counts[i] for _, counts in runs],
            rho[i] / (1 - rho[i]),
            max_rel_se=0.01,
            what=f"node {i} mean tasks (Little)",
        )
        check_estimate(
            [r["nodes"]["utilization"][i] for r, _ in runs], rho[i], max_rel_se=0.005, what=f"node {i} utilization"
        )
    check_estimate(
        [r["latency_us"]["mean"] for r, _ in runs],
        float(np.mean(1 / (speeds - lam))),
        max_rel_se=0.01,
        what="mean response",
    )


def test_wcmp_with_weights_proportional_to_speed_gives_equal_rho_everywhere():
    # Default WCMP weights are workers x speed: node i receives lam s_i / sum(s),
    # so every node is an M/M/1 queue at the same rho, with mean response
    # 1 / (s_i (1 - rho)); traffic-weighted, E[T] = N / (sum(s) (1 - rho)).
    speeds, rho = np.array([1.0, 1.0, 2.0, 4.0]), 0.7
    cfg = rack(nodes(speeds), load=rho, dispatch={"policy": "wcmp"})
    results = run_seeds(cfg, 300_000)
    check_estimate(latency(results), len(speeds) / (speeds.sum() * (1 - rho)), max_rel_se=0.01, what="mean response")
    for i in range(len(speeds)):
        check_estimate(
            [r["nodes"]["utilization"][i] for r in results], rho, max_rel_se=0.005, what=f"node {i} utilization"
        )
    # explicit weights equal to the default ones: the same run, bit for bit
    explicit = run(rack(nodes(speeds), load=rho, dispatch={"policy": "wcmp", "weights": speeds.tolist()}), 50_000)
    assert canonical(explicit.results()) == canonical(run(cfg, 50_000).results())


def test_wcmp_shares_follow_explicit_weights():
    weights = [1.0, 0.0, 3.0, 6.0]  # a zero weight gets nothing
    sim = run(rack(nodes(count=4), load=0.3, dispatch={"policy": "wcmp", "weights": weights}, warmup=0), 200_000)
    got = arrivals_per_node(sim.results())
    assert got[1] == 0
    live = np.array(weights) > 0
    expected = 200_000 * np.array(weights)[live] / sum(weights)
    assert stats.chisquare(got[live], expected).pvalue > 1e-4, got.tolist()


def test_round_robin_on_heterogeneous_nodes_gives_erlang_arrival_queues():
    # Node i gets every 4th arrival (Erlang-4 interarrivals, rate lam / 4) and
    # serves at mu_i = speed_i: an E_4/M/1 queue whose response time is
    # Exp(mu_i (1 - sigma_i)), sigma_i = A*(mu_i (1 - sigma_i)) (GI/M/1).
    speeds, load = [1.0, 1.0, 2.0, 2.0], 0.5  # rho = 0.75 and 0.375
    lam_node = load * sum(speeds) / len(speeds)
    means = [1 / (mu * (1 - theory.gm1_sigma(theory.erlang_k_lst(len(speeds), lam_node), mu))) for mu in speeds]
    results = run_seeds(rack(nodes(speeds), load=load, dispatch={"policy": "round_robin"}), 300_000)
    check_estimate(latency(results), float(np.mean(means)), max_rel_se=0.01, what="mean response")
    for r in results:  # cyclic: counts differ by at most one
        got = arrivals_per_node(r)
        assert got.max() - got.min() <= 1


# ---------------------------------------------------------------------------
# Policies equivalent to another one
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dispatch",
    [{"policy": "ecmp"}, {"policy": "po_d", "d": 1}, {"policy": "jbt", "threshold": 0.0}],
    ids=["ecmp", "po_d_one_sample", "jbt_threshold_zero"],
)
def test_policies_that_reduce_to_random_are_random_bit_for_bit(dispatch):
    # ECMP is per-task uniform hashing; one uniform sample is a uniform pick;
    # no load is below 0, so JBT(0) falls back to its uniform draw. Each makes
    # the same single draw from the dispatch stream as random.
    cfg = rack(nodes(count=6), load=0.8)
    a = run({**cfg, "dispatch": dispatch}, 100_000).results()
    assert canonical(a) == canonical(run(cfg, 100_000).results())


@pytest.mark.parametrize("speeds", [[1.0] * 4, [4.0, 2.0, 1.0, 1.0]], ids=["identical", "by_workers"])
def test_sed_that_cannot_tell_nodes_apart_is_jsq_bit_for_bit(speeds):
    # (load + 1) / rate with equal rates orders nodes, ties included, exactly
    # as the load does: identical nodes, or `by: workers` with equal workers.
    cfg = rack(nodes(speeds, workers=2), load=0.8)
    sed = run({**cfg, "dispatch": {"policy": "sed", "by": "workers"}}, 100_000).results()
    assert canonical(sed) == canonical(run({**cfg, "dispatch": {"policy": "jsq"}}, 100_000).results())


def test_po_d_without_replacement_sampling_every_node_is_jsq_in_distribution():
    # d = N samples without replacement visit every node in random order and
    # keep the first least loaded: JSQ with ties broken uniformly at random.
    # Only the dispatch draws differ (same arrivals and sizes per seed), so the
    # per-seed difference of means is a low-noise paired estimate.
    n = 5
    jsq = latency(run_seeds(rack(nodes(count=n), load=0.9, dispatch={"policy": "jsq"}), 200_000))
    pod = latency(
        run_seeds(rack(nodes(count=n), load=0.9, dispatch={"policy": "po_d", "d": n, "replace": False}), 200_000)
    )
    m, se = mean_and_se(pod - jsq)
    assert se < 0.002 * jsq.mean()
    assert abs(m) <= Z * se, f"po_d(d=N, no replacement) - jsq = {m:.4g} (SE {se:.3g})"
    assert not np.array_equal(pod, jsq)  # different draws, so not the same run


def test_jbt_with_a_huge_threshold_is_random_dispatch():
    # Every node is below the threshold: uniform among all, so M/M/1 queues
    # (drawn differently from random: equal in distribution only).
    rho = 0.7
    results = run_seeds(rack(nodes(count=10), load=rho, dispatch={"policy": "jbt", "threshold": 1e9}), 300_000)
    check_estimate(latency(results), 1 / (1 - rho), max_rel_se=0.01, what="mean response")


@pytest.mark.parametrize("sizes", ["exp", "hyperexp"])
@pytest.mark.parametrize("load", [0.5, 0.9])
def test_jbsq_bound_one_on_single_worker_nodes_is_central_fcfs_pathwise(sizes, load):
    # With at most one task per single-worker node, the rest wait at the
    # switch in FIFO order and the node that replies takes the head: one FCFS
    # queue over all workers. The same seed must reproduce a single node with
    # that many workers (an M/G/c queue) bit for bit, as central_fcfs does.
    service = HYPEREXP if sizes == "hyperexp" else None
    one_node = run(rack(nodes(workers=8), service=service, load=load), 200_000).results()
    for policy in ({"policy": "jbsq", "bound": 1}, {"policy": "central_fcfs"}):
        r = run(rack(nodes(count=8), service=service, load=load, dispatch=policy), 200_000).results()
        assert same_latencies(r, one_node), policy


def test_jbsq_mean_response_matches_erlang_c():
    c, rho = 8, 0.8
    results = run_seeds(rack(nodes(count=c), load=rho, dispatch={"policy": "jbsq", "bound": 1}), 200_000)
    check_estimate(
        latency(results),
        theory.mmc_mean_response(c, c * rho, 1.0),
        max_rel_se=0.005,
        what="JBSQ(1) mean response = M/M/8",
    )


def test_jbsq_never_exceeds_its_bound_per_worker():
    bound, workers = 2, 2
    cfg = rack(
        nodes(count=4, workers=workers),
        load=0.95,
        warmup=0,
        dispatch={"policy": "jbsq", "bound": bound},
        sample_period_us=0.25,
    )
    sim = run(cfg, 200_000)
    _, samples = sim.take_samples()
    assert samples.max() == bound * workers  # reached, never exceeded
    r = sim.results()
    assert r["tasks_in_flight"] > int(r["nodes"]["outstanding"].sum())  # the rest wait at the switch


@pytest.mark.parametrize("entry", [None, {"kind": "balancers", "count": 1}], ids=["switch", "one_balancer"])
def test_lsq_with_one_dispatcher_is_jsq_on_outstanding_bit_for_bit(entry):
    # One dispatcher's count of tasks sent minus replies received (delay 0)
    # is every node's outstanding count; ties use the same draws.
    extra = {"entry": entry} if entry else {}
    cfg = rack(nodes(count=6), load=0.9, **extra)
    lsq = run({**cfg, "dispatch": {"policy": "lsq"}}, 200_000).results()
    jsq = run({**cfg, "dispatch": {"policy": "jsq"}}, 200_000).results()
    assert canonical(lsq) == canonical(jsq)


@pytest.mark.parametrize("load", [0.5, 0.9])
def test_oracle_on_identical_single_worker_nodes_is_central_fcfs_pathwise(load):
    # Least work left over FCFS single-server nodes starts each task exactly
    # when the first server frees up: the M/G/k FCFS queue (Harchol-Balter,
    # Performance Modeling and Design of Computer Systems, 2013, Sec. 24.2).
    one_node = run(rack(nodes(workers=8), service=HYPEREXP, load=load), 200_000).results()
    oracle = run(rack(nodes(count=8), service=HYPEREXP, load=load, dispatch={"policy": "oracle"}), 200_000).results()
    assert same_latencies(oracle, one_node)


def test_oracle_beats_jsq_on_outstanding_work_on_every_seed():
    # JSQ on the `work` metric counts whole sizes, not what is left of the
    # task in service, so it misjudges; same seeds = same tasks.
    seeds = range(1, 9)
    oracle = latency(
        run_seeds(rack(nodes(count=8), service=HYPEREXP, load=0.9, dispatch={"policy": "oracle"}), 200_000, seeds)
    )
    jsq_work = latency(
        run_seeds(
            rack(nodes(count=8), service=HYPEREXP, load=0.9, dispatch={"policy": "jsq", "metric": "work"}),
            200_000,
            seeds,
        )
    )
    assert np.all(oracle < jsq_work), (oracle.tolist(), jsq_work.tolist())


NODE_ENTRY_CASES = {
    # least work left applied by the load manager of the node a task arrives
    # at (delay 0) places every task as the switch's oracle does: M/G/8
    "oracle": (
        rack(nodes(count=8), service=HYPEREXP, load=0.8, dispatch={"policy": "oracle"}, entry={"kind": "nodes"}),
        rack(nodes(workers=8), service=HYPEREXP, load=0.8),
    ),
    # all traffic enters at node 0, whose own counts of tasks sent and not
    # yet completed are every node's outstanding count: JSQ at a switch
    "lsq": (
        rack(nodes(count=4), load=0.8, dispatch={"policy": "lsq"}, entry={"kind": "nodes", "split": [1, 0, 0, 0]}),
        rack(nodes(count=4), load=0.8, dispatch={"policy": "jsq"}),
    ),
}


@pytest.mark.parametrize("name", sorted(NODE_ENTRY_CASES))
def test_oracle_and_lsq_at_node_entry_read_their_own_loads(name):
    # ENGINE BUG (see the report): with entry 'nodes', RackSim::ArriveAtNode
    # (rack_sim.cpp) passes board.Belief() to Pick for every policy, but the
    # board never learns true loads for oracle or lsq
    # (Dispatcher::ReadsLoads() is false, so track_truth_ is false): every
    # load reads 0 and both pick uniformly at random. Measured mean 5.85
    # instead of 1.32 (oracle) and 4.82 instead of 1.90 (lsq). lsq's own
    # counts are also wrong there: Migrate() never increments local_count_
    # while every completion's Reply() decrements it.
    node_entry, reference = NODE_ENTRY_CASES[name]
    got = run(node_entry, 100_000).results()["latency_us"]["mean"]
    assert got == pytest.approx(run(reference, 100_000).results()["latency_us"]["mean"], rel=1e-9)


def test_jsq_mean_response_tends_to_the_mean_size_as_nodes_grow():
    # At fixed rho < 1, JSQ over N single-worker nodes finds an idle node for
    # almost every task as N grows, so E[T] -> E[S] = 1. It can never beat
    # the central queue over the same workers (M/M/N, never idle while a task
    # waits). Measured excess E[T] - 1 at rho = 0.9: 0.94, 0.069, 0.0026 for
    # N = 10, 100, 400 (SE 0.02, 0.003, 0.0014).
    rho, seeds = 0.9, range(1, 9)
    excess = {}
    for n in (10, 100, 400):
        m, se = mean_and_se(
            latency(
                run_seeds(rack(nodes(count=n), load=rho, dispatch={"policy": "jsq"}, warmup=20_000), 200_000, seeds)
            )
        )
        assert m + Z * se >= theory.mmc_mean_response(n, n * rho, 1.0), f"N = {n}: {m:.4g} beats M/M/N"
        excess[n] = (m - 1.0, se)
    for small, big in [(10, 100), (100, 400)]:
        (a, sa), (b, sb) = excess[small], excess[big]
        assert a - b > Z * math.hypot(sa, sb), f"excess {a:.4g} at N = {small} vs {b:.4g} at N = {big}"
    assert abs(excess[400][0]) < 0.01


def test_wcmp_never_sends_everything_to_one_node_when_weighted_nodes_are_removed():
    # Weights [1, 0, 0, 0] and node 0 removed: no active node has weight. The
    # entry split falls back to uniform in that case (RackSim::RebuildSplit);
    # WCMP should do the same or the config should be refused, like a
    # dynamics that removes the last node. ENGINE BUG (see the report):
    # Dispatcher::OnActiveChanged builds cumulative weights that are all 0,
    # Pick draws u = 0 and its binary search lands on the last active node,
    # so node 3 receives every task (19,774 of 19,774 here).
    cfg = rack(
        nodes(count=4),
        load=0.5,
        warmup=0,
        dispatch={"policy": "wcmp", "weights": [1.0, 0.0, 0.0, 0.0]},
        dynamics=[{"at_us": 100.0, "kind": "remove", "nodes": [0]}],
    )
    try:
        sim = RackSim(cfg)
    except ValueError:
        return  # refusing the config is an acceptable fix
    sim.run_until(100.0)
    before = arrivals_per_node(sim.results())
    sim.run_until(10_000.0)
    after = (arrivals_per_node(sim.results()) - before)[1:]
    assert stats.chisquare(after).pvalue > 1e-4, after.tolist()


# ---------------------------------------------------------------------------
# Against the reference simulator
# ---------------------------------------------------------------------------

REFERENCE_CASES = {
    # SED on heterogeneous single-worker nodes: light load, where SED sends
    # nearly everything to the fastest node, and moderate load
    "sed_light": dict(speeds=[4.0, 2.0, 1.0, 1.0], workers=1, load=0.3, policy="sed"),
    "sed_moderate": dict(speeds=[4.0, 2.0, 1.0, 1.0], workers=1, load=0.6, policy="sed"),
    "jsq_4_nodes": dict(speeds=[1.0] * 4, workers=1, load=0.7, policy="jsq"),
    "jsq_heterogeneous": dict(speeds=[4.0, 2.0, 1.0, 1.0], workers=1, load=0.6, policy="jsq"),
    "po2_heterogeneous": dict(speeds=[2.0, 1.0, 1.0], workers=2, load=0.7, policy="po_d"),
    "po2_no_replacement": dict(speeds=[2.0, 1.0, 1.0], workers=2, load=0.7, policy="po_d", replace=False),
    # JBT(1) on single-worker nodes: an idle node if there is one, else any
    "jbt_threshold_one": dict(speeds=[1.0] * 4, workers=1, load=0.6, policy="jbt", threshold=1.0),
    "central_heterogeneous": dict(speeds=[2.0, 1.0, 1.0], workers=2, load=0.7, policy="central_fcfs"),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_CASES))
def test_engine_matches_reference_sim(name):
    case = dict(REFERENCE_CASES[name])
    dispatch = {"policy": case["policy"]}
    for key in ("replace", "threshold"):
        if key in case:
            dispatch[key] = case[key]
    cfg = rack(nodes(case["speeds"], workers=case["workers"]), load=case["load"], dispatch=dispatch)
    engine = latency(run_seeds(cfg, 300_000))
    check_same_mean(engine, reference_means(**case), max_rel_se=0.012, what=f"{name} mean response")


# ---------------------------------------------------------------------------
# Bad configs
# ---------------------------------------------------------------------------

BAD_DISPATCH = {
    "unknown_policy": ({"dispatch": {"policy": "shortest"}}, "dispatch.policy"),
    "central_fcfs_with_balancers": (
        {"dispatch": {"policy": "central_fcfs"}, "entry": {"kind": "balancers", "count": 2}},
        "dispatch.policy",
    ),
    "jbsq_at_node_entry": ({"dispatch": {"policy": "jbsq"}, "entry": {"kind": "nodes"}}, "dispatch.policy"),
    "table_without_node_entry": ({"dispatch": {"policy": "table"}}, "dispatch.policy"),
    "po_d_more_than_nodes_without_replacement": (
        {"dispatch": {"policy": "po_d", "d": 5, "replace": False}},
        "dispatch.d",
    ),
    "d_zero": ({"dispatch": {"policy": "po_d", "d": 0}}, "dispatch.d"),
    "wcmp_weights_wrong_length": ({"dispatch": {"policy": "wcmp", "weights": [1.0, 2.0]}}, "dispatch.weights"),
    "wcmp_negative_weight": ({"dispatch": {"policy": "wcmp", "weights": [1.0, -1.0, 1.0, 1.0]}}, "dispatch.weights[1]"),
    "unknown_metric": ({"dispatch": {"policy": "jsq", "metric": "cpu"}}, "dispatch.metric"),
    "rtt_without_central_fcfs": ({"dispatch": {"policy": "jsq", "rtt_us": 1.0}}, "dispatch.rtt_us"),
    "jbt_infinite_threshold": ({"dispatch": {"policy": "jbt", "threshold": math.inf}}, "dispatch.threshold"),
    "jbsq_bound_zero": ({"dispatch": {"policy": "jbsq", "bound": 0}}, "dispatch.bound"),
}


@pytest.mark.parametrize("name", sorted(BAD_DISPATCH))
def test_bad_dispatch_config_raises_value_error_naming_the_field(name):
    override, field = BAD_DISPATCH[name]
    with pytest.raises(ValueError, match=field.replace(".", r"\.").replace("[", r"\[")):
        RackSim({**rack(nodes(count=4)), **override})
