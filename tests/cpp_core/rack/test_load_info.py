"""Load-information models (rack/load_info.hpp): what each dispatcher believes.

Two kinds of checks:
- exact invariants read through beliefs() and true_loads() at chosen instants,
  with the bookkeeping (tasks sent per node) recovered from results() and
  decision_counts(); these are deterministic, so they are asserted with ==;
- the consequences for latency (stale loads make JSQ herd), asserted as
  orderings beyond Z = 4.5 standard errors over seeds, and the periodic model
  against the independent reference simulator.

Event order at an instant (RackSim::Loop, docs/rack.md): run_until(t)
processes every event due at or before t, so a broadcast due exactly at t has
been delivered when run_until(t) returns. Arrivals and completions fall on a
broadcast instant with probability 0 (continuous times), so at that instant
the snapshot is the current truth. Broadcast k is scheduled at the float sum
period + ... + period; the periods used here are integers, for which that sum
is exact and equal to k x period.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from dcgym.cpp_core import RackSim

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1])]  # this folder's helpers, theory.py
from rack_checks import (  # noqa: E402
    Z,
    arrivals_per_node,
    canonical,
    check_same_mean,
    latency,
    mean_and_se,
    nodes,
    rack,
    run,
    run_seeds,
)
from reference_sim import simulate  # noqa: E402

PERIOD = 100.0


def busy_rack(load_info: dict, *, policy: str = "po_d", **extra) -> RackSim:
    """6 nodes x 2 workers near saturation: loads change many times per period."""
    cfg = rack(
        nodes(count=6, workers=2),
        service={"dist": "exp", "mean_us": 10.0},
        load=0.9,
        seed=3,
        warmup=0,
        dispatch={"policy": policy, "d": 2},
        load_info=load_info,
        **extra,
    )
    return RackSim(cfg)


# ---------------------------------------------------------------------------
# periodic
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [None, {"kind": "balancers", "count": 3}], ids=["switch", "three_balancers"])
def test_periodic_beliefs_equal_true_loads_at_broadcast_instants_then_freeze(entry):
    extra = {"entry": entry} if entry else {}
    sim = busy_rack({"model": "periodic", "period_us": PERIOD}, **extra)
    moved = 0
    previous = None  # the snapshot of the broadcast before
    for k in range(1, 60):
        sim.run_until(k * PERIOD - 1e-6)  # just before broadcast k: still snapshot k - 1
        before = sim.beliefs()
        sim.run_until(k * PERIOD)
        snapshot = sim.true_loads()
        beliefs = sim.beliefs()
        assert beliefs.shape == (3 if entry else 1, 6)
        assert np.all(beliefs == snapshot), f"broadcast {k}: beliefs {beliefs[0]} vs truth {snapshot}"
        if previous is not None:
            assert np.all(before == previous)
        sim.run_until(k * PERIOD + 0.5 * PERIOD)
        assert np.all(sim.beliefs() == snapshot)  # nothing changes between broadcasts
        moved += not np.array_equal(sim.true_loads(), snapshot)
        previous = snapshot
    assert moved > 50  # the truth did move in between, so the freeze is real


@pytest.mark.parametrize("delay", [30.0, 250.0])
def test_periodic_beliefs_lag_by_the_delivery_delay(delay):
    # At time t a viewer holds the snapshot of the latest broadcast b with
    # b + delay <= t; with delay > period several snapshots are in transit.
    sim = busy_rack({"model": "periodic", "period_us": PERIOD, "delay_us": delay})
    snapshots = {0: np.zeros(6)}  # nothing delivered yet: the board starts at 0
    for k in range(1, 80):
        sim.run_until(k * PERIOD)
        snapshots[k] = sim.true_loads()
        for t in (k * PERIOD, k * PERIOD + 0.5 * PERIOD):
            if t > k * PERIOD:
                sim.run_until(t)
            latest = max(0, math.floor((t - delay) / PERIOD + 1e-9))
            assert np.all(sim.beliefs()[0] == snapshots[latest]), f"t = {t}: expected snapshot {latest}"


@pytest.mark.parametrize("entry", [None, {"kind": "balancers", "count": 3}], ids=["switch", "three_balancers"])
def test_local_increment_adds_one_per_task_sent_since_the_last_broadcast(entry):
    # Tasks sent to node j since broadcast k = the growth of its arrivals
    # (completed + dropped + outstanding). With several balancers each adds
    # its own sends, so the increments summed over viewers equal that growth.
    extra = {"entry": entry} if entry else {}
    sim = busy_rack({"model": "periodic", "period_us": PERIOD, "local_increment": True}, **extra)
    for k in range(1, 40):
        sim.run_until(k * PERIOD)
        snapshot, sent0 = sim.true_loads(), arrivals_per_node(sim.results())
        assert np.all(sim.beliefs() == snapshot)  # a broadcast clears every increment
        sim.run_until(k * PERIOD + 60.0)
        sent = arrivals_per_node(sim.results()) - sent0
        extra_load = sim.beliefs() - snapshot
        assert np.all(extra_load.sum(axis=0) == sent)
        assert np.all(extra_load >= 0) and np.all(extra_load == np.round(extra_load))


def test_local_increment_at_node_entry_counts_each_nodes_own_migrations():
    # With entry 'nodes' node i's belief of node j != i is the snapshot plus
    # the tasks i migrated to j since (decision_counts()["migrate"][i, j]);
    # its own load it always sees exactly.
    sim = busy_rack(
        {"model": "periodic", "period_us": PERIOD, "local_increment": True}, policy="jsq", entry={"kind": "nodes"}
    )
    off = ~np.eye(6, dtype=bool)
    for k in range(1, 40):
        sim.run_until(k * PERIOD)
        snapshot = sim.true_loads()
        sim.decision_counts(reset=True)
        sim.run_until(k * PERIOD + 60.0)
        migrated = sim.decision_counts(reset=False)["migrate"].astype(float)
        beliefs, truth = sim.beliefs(), sim.true_loads()
        assert np.all(np.diag(beliefs) == truth)
        assert np.all(beliefs[off] == (snapshot[None, :] + migrated)[off])
    assert sim.results()["migrations"] > 0


# ---------------------------------------------------------------------------
# piggyback, proactive, min_only
# ---------------------------------------------------------------------------


def test_piggyback_with_local_increment_tracks_outstanding_exactly_with_one_switch():
    # Every change of a node's outstanding count is a task the switch sent
    # (+1 locally) or a completion whose reply (delay 0) carries the new
    # count, so the single viewer's belief is the truth at every instant.
    sim = busy_rack({"model": "piggyback", "local_increment": True}, policy="jsq")
    for k in range(1, 200):
        sim.run_until(k * 7.3)
        assert np.all(sim.beliefs()[0] == sim.true_loads())


def test_proactive_beliefs_are_tasks_sent_minus_replies():
    # Each balancer counts its own tasks in flight at each node, so the
    # counts summed over balancers are the nodes' outstanding tasks.
    sim = busy_rack({"model": "proactive"}, policy="jsq", entry={"kind": "balancers", "count": 3})
    for k in range(1, 100):
        sim.run_until(k * 7.3)
        beliefs = sim.beliefs()
        assert np.all(beliefs.sum(axis=0) == sim.true_loads())
        assert np.all(beliefs >= 0) and np.all(beliefs == np.round(beliefs))


def test_proactive_beliefs_belong_to_the_balancer_that_sent():
    # All traffic through balancer 0: the others have sent nothing.
    sim = busy_rack({"model": "proactive"}, policy="jsq", entry={"kind": "balancers", "count": 3, "split": [1, 0, 0]})
    for k in range(1, 50):
        sim.run_until(k * 7.3)
        beliefs = sim.beliefs()
        assert np.all(beliefs[0] == sim.true_loads())
        assert np.all(beliefs[1:] == 0)


def test_proactive_beliefs_with_reply_delay_count_replies_in_transit():
    # With delay_us the decrement arrives late: beliefs never undercount.
    sim = busy_rack({"model": "proactive", "delay_us": 5.0}, policy="jsq")
    ahead = 0
    for k in range(1, 100):
        sim.run_until(k * 7.3)
        excess = sim.beliefs()[0] - sim.true_loads()
        assert np.all(excess >= 0)
        ahead += excess.sum() > 0
    assert ahead > 10


def test_min_only_holds_a_single_finite_belief_per_viewer():
    sim = busy_rack({"model": "min_only"}, policy="jsq", entry={"kind": "balancers", "count": 3})
    for k in range(1, 50):
        sim.run_until(k * 7.3)
        finite = np.isfinite(sim.beliefs())
        assert np.all(finite.sum(axis=1) == 1)


def test_nodes_see_their_own_load_fresh():
    sim = busy_rack({"model": "periodic", "period_us": PERIOD}, policy="jsq", entry={"kind": "nodes"})
    for k in range(1, 50):
        sim.run_until(k * 37.3)
        assert np.all(np.diag(sim.beliefs()) == sim.true_loads())


# ---------------------------------------------------------------------------
# Stale information and herding (RackSched §2; Malcolm Fig. 10)
# ---------------------------------------------------------------------------

HERD_SEEDS = range(1, 9)


def herd_config(dispatch: dict, load_info: dict | None = None) -> dict:
    # 8 identical single-worker servers, Exp(50) us, rho = 0.8
    return rack(
        nodes(count=8),
        service={"dist": "exp", "mean_us": 50.0},
        load=0.8,
        warmup=20_000,
        dispatch=dispatch,
        load_info=load_info or {"model": "fresh"},
    )


def herd_p99(dispatch: dict, load_info: dict | None = None, what: str = "p99") -> tuple[float, float]:
    return mean_and_se(latency(run_seeds(herd_config(dispatch, load_info), 200_000, HERD_SEEDS), what))


def test_stale_periodic_loads_make_jsq_herd_more_than_po2():
    # Between broadcasts JSQ sends every task to the node that was least
    # loaded at the last broadcast; Po2's random sampling spreads them.
    # Measured p99 (us) for periods 10 / 100 / 1000: JSQ 357 / 869 / 5810,
    # Po2 438 / 504 / 1052 (SE <= 13).
    periods = (10.0, 100.0, 1000.0)
    p99 = {}
    for name, dispatch in (("jsq", {"policy": "jsq"}), ("po2", {"policy": "po_d", "d": 2})):
        p99[name] = [herd_p99(dispatch, {"model": "periodic", "period_us": p}) for p in periods]
        for (a, sa), (b, sb), p in zip(p99[name], p99[name][1:], periods[1:]):
            assert b - a > Z * math.hypot(sa, sb), f"{name}: p99 does not rise at period {p}: {a:.4g} -> {b:.4g}"
    rise = {name: (v[-1][0] - v[0][0], math.hypot(v[-1][1], v[0][1])) for name, v in p99.items()}
    assert rise["jsq"][0] - rise["po2"][0] > Z * math.hypot(rise["jsq"][1], rise["po2"][1])
    # fresh enough information favours JSQ; stale information reverses the order
    (j10, sj10), (p10, sp10) = p99["jsq"][0], p99["po2"][0]
    assert p10 - j10 > Z * math.hypot(sj10, sp10)
    (j1k, sj1k), (p1k, sp1k) = p99["jsq"][-1], p99["po2"][-1]
    assert j1k - p1k > Z * math.hypot(sj1k, sp1k)


def test_min_only_herds_worse_than_piggyback_and_both_worse_than_fresh():
    # Piggybacked counts (INT1) refresh one node per reply; min_only (INT2)
    # keeps a single node and sends everything there until a reply moves it.
    # Measured JSQ p99: fresh 317, piggyback 690, min_only 1644 (SE <= 12).
    fresh = herd_p99({"policy": "jsq"})
    piggyback = herd_p99({"policy": "jsq"}, {"model": "piggyback"})
    min_only = herd_p99({"policy": "jsq"}, {"model": "min_only"})
    for (a, sa), (b, sb), what in [(fresh, piggyback, "piggyback vs fresh"), (piggyback, min_only, "min_only")]:
        assert b - a > Z * math.hypot(sa, sb), f"{what}: {a:.4g} -> {b:.4g}"


@pytest.mark.parametrize("entry", [None, {"kind": "balancers", "count": 1}], ids=["switch", "one_balancer"])
def test_proactive_with_one_dispatcher_is_fresh_jsq_bit_for_bit(entry):
    # The only dispatcher's sent-minus-replied counts (delay 0) are the
    # outstanding counts, so it decides exactly as JSQ on fresh loads.
    extra = {"entry": entry} if entry else {}
    cfg = herd_config({"policy": "jsq"})
    proactive = run({**cfg, **extra, "load_info": {"model": "proactive"}}, 200_000).results()
    assert canonical(proactive) == canonical(run({**cfg, **extra}, 200_000).results())


@pytest.mark.parametrize(
    ("policy", "delay"), [("jsq", 0.0), ("jsq", 30.0), ("po_d", 30.0)], ids=["jsq", "jsq_delayed", "po2_delayed"]
)
def test_periodic_loads_match_reference_sim(policy, delay):
    # Period 100 us against Exp(50) tasks: stale enough that JSQ herds
    # (mean ~200 us, against 73 us with fresh loads).
    load_info = {"model": "periodic", "period_us": 100.0, "delay_us": delay}
    engine = latency(run_seeds(herd_config({"policy": policy, "d": 2}, load_info), 300_000))
    reference = [
        simulate(
            speeds=[1.0] * 8,
            mean_us=50.0,
            load=0.8,
            policy=policy,
            tasks=20_000,
            warmup=2_000,
            seed=s,
            period_us=100.0,
            delay_us=delay,
        ).mean
        for s in range(10)
    ]
    check_same_mean(engine, reference, max_rel_se=0.02, what=f"{policy} periodic delay {delay} mean response")


# ---------------------------------------------------------------------------
# Bad configs
# ---------------------------------------------------------------------------

BAD_LOAD_INFO = {
    "negative_period": ({"model": "periodic", "period_us": -10.0}, {}, "load_info.period_us"),
    "zero_period": ({"model": "periodic", "period_us": 0.0}, {}, "load_info.period_us"),
    "nan_period": ({"model": "periodic", "period_us": math.nan}, {}, "load_info.period_us"),
    "negative_delay": ({"model": "periodic", "delay_us": -1.0}, {}, "load_info.delay_us"),
    "unknown_model": ({"model": "gossip"}, {}, "load_info.model"),
    "min_only_at_node_entry": ({"model": "min_only"}, {"entry": {"kind": "nodes"}}, "load_info.model"),
}


@pytest.mark.parametrize("name", sorted(BAD_LOAD_INFO))
def test_bad_load_info_raises_value_error_naming_the_field(name):
    load_info, extra, field = BAD_LOAD_INFO[name]
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        RackSim(rack(nodes(count=4), dispatch={"policy": "jsq"}, load_info=load_info, **extra))


# ---------------------------------------------------------------------------
# the batched step reads every belief row at once (LoadBoard::BeliefRow)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "load_info",
    [
        {"model": "fresh"},
        {"model": "periodic", "period_us": 30.0},
        {"model": "periodic", "period_us": 30.0, "delay_us": 5.0, "local_increment": True},
        {"model": "piggyback"},
        {"model": "proactive"},
    ],
    ids=lambda d: "-".join(str(v) for v in d.values()),
)
def test_batched_belief_rows_equal_the_single_beliefs(load_info):
    from dcgym.cpp_core import step_rack_batch

    n = 5
    cfg = rack(
        nodes(count=n, workers=2),
        service={"dist": "exp", "mean_us": 10.0},
        load=0.9,
        seed=4,
        warmup=0,
        dispatch={"policy": "table"},
        entry={"kind": "nodes"},
        load_info=load_info,
    )
    sim = RackSim(cfg)
    uniform = np.full((1, n, n), 1.0 / n)
    for _ in range(40):
        out = step_rack_batch([sim], uniform, uniform, 7.0)
        assert np.array_equal(out["beliefs"][0], sim.beliefs())
        assert np.array_equal(out["loads"][0], sim.true_loads())
    assert sim.results()["tasks_completed"] > 100
