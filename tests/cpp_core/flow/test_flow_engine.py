"""FlowSim's guarantees through the binding: determinism, conservation, flat
memory, the workload features (groups, dynamics, traffic matrices, ECMP),
AuTO's observations and actions, and refusal of bad configs and actions.
"""

from __future__ import annotations

import math
import resource

import numpy as np
import pytest

from dcgym.cpp_core import FlowSim, check_flow_config, observe_flow_batch, step_flow_batch

GBPS = 1e9 / 8
PIAS_WS = [46, 1084, 1717, 1943, 1989, 1999, 2001]


def auto_testbed(load: float = 0.8, seed: int = 1, **extra) -> dict:
    """AuTO's testbed (Chen et al. SIGCOMM 2018 §6): 32 hosts, 3 planes of 1 Gbps, web search; 8 levels with PIAS's thresholds."""
    return {
        "topology": {"kind": "planes", "hosts": 32, "planes": 3, "link_gbps": 1.0},
        "scheduling": {"discipline": "pias", "levels": 8, "thresholds_packets": PIAS_WS},
        "workload": {"sizes": "web_search", "load": load},
        "seed": seed,
        **extra,
    }


def canonical(x):
    """Floats as hex and arrays as bytes: == is bit-for-bit equality."""
    if isinstance(x, dict):
        return {k: canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [canonical(v) for v in x]
    if isinstance(x, np.ndarray):
        return (str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, float):
        return x.hex()
    return x


# --------------------------------------------------------------------------- determinism and invariants


def test_same_seed_same_bits_and_other_seeds_differ() -> None:
    def run(seed):
        sim = FlowSim(auto_testbed(seed=seed, warmup_flows=1000))
        sim.run_flows(20_000)
        return canonical(sim.results()), canonical(sim.observe())

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_batch_stepping_is_the_same_on_any_number_of_threads() -> None:
    def states(threads):
        sims = [FlowSim(auto_testbed(seed=s)) for s in range(1, 5)]
        for _ in range(20):
            step_flow_batch(sims, 0.01, threads=threads)
        return [canonical(s.results()) for s in sims]

    assert states(1) == states(2)


def test_full_recompute_solver_gives_the_same_fcts() -> None:
    """The incremental solver recomputes less, not differently: same flows, same FCTs up to rounding."""
    out = {}
    for solver in ("incremental", "full"):
        sim = FlowSim(auto_testbed(load=1.6, solver=solver, record_flows=True))
        sim.run_flows(3000)
        r = sim.records()
        out[solver] = r["fct_s"][np.argsort(r["index"])]
    assert len(out["full"]) > 2000
    np.testing.assert_allclose(out["incremental"], out["full"], rtol=1e-9, atol=1e-12)


def single_link_run(solver: str, *, cap_at: float | None = None) -> np.ndarray:
    cfg = {
        "topology": {"kind": "single_link", "senders": 4},
        "workload": {"sizes": "web_search", "load": 0.8},
        "scheduling": {"discipline": "pias", "levels": 8, "thresholds_packets": PIAS_WS},
        "solver": solver,
        "record_flows": True,
        "seed": 11,
    }
    sim = FlowSim(cfg)
    if cap_at is not None:
        sim.run_until(cap_at)
        t = sim.active_flows_table()
        k = int(np.argmax(t["sent_bytes"]))
        sim.set_flow_actions([t["handle"][k]], [2], [0.3], [-1])
    sim.run_flows(20_000)
    r = sim.records()
    return r["fct_s"][np.argsort(r["index"])]


def test_single_bottleneck_allocation_matches_the_solver() -> None:
    """On single_link without caps the model allocates by counts per level; the solver agrees flow by flow."""
    np.testing.assert_allclose(single_link_run("incremental"), single_link_run("full"), rtol=1e-9, atol=1e-12)


def test_a_cap_on_single_link_hands_the_allocation_to_the_solver() -> None:
    fast, solver = single_link_run("incremental", cap_at=30.0), single_link_run("full", cap_at=30.0)
    assert len(fast) == len(solver) > 19_000
    np.testing.assert_allclose(fast, solver, rtol=1e-9, atol=1e-12)
    plain = single_link_run("incremental")
    n = min(len(plain), len(fast))
    assert not np.allclose(fast[:n], plain[:n])  # the action did change the run


@pytest.mark.parametrize("discipline", ["fair", "pias", "qsjf", "srpt"])
def test_conservation_and_lazy_bytes_agree_with_a_sweep(discipline: str) -> None:
    """arrived = completed + active at any time, and the engine's running unfinished-bytes total (kept by
    rates between events, never by sweeping flows) equals the sum over flows of size - sent."""
    sched = {
        "fair": {"discipline": "fair"},
        "srpt": {"discipline": "srpt"},
        "pias": {"discipline": "pias", "levels": 8, "thresholds_packets": PIAS_WS},
        "qsjf": {"discipline": "qsjf", "levels": 4, "thresholds_bytes": [1e5, 1e6, 1e7]},
    }[discipline]
    sim = FlowSim({**auto_testbed(load=1.5), "scheduling": sched})
    for _ in range(10):
        sim.run_for(0.05)
        r = sim.results()
        assert r["flows_arrived"] == r["flows_completed"] + r["flows_active"]
        table = sim.active_flows_table()
        assert len(table["handle"]) == r["flows_active"]
        unfinished = float(np.sum(table["size_bytes"] - table["sent_bytes"]))
        assert r["unfinished_bytes"] == pytest.approx(unfinished, rel=1e-6, abs=1.0)
        flows, bytes_ = sim.level_occupancy()
        assert flows.sum() == r["flows_active"]
        assert bytes_.sum() == pytest.approx(unfinished, rel=1e-9, abs=1e-3)
    assert r["flows_completed"] > 500


def test_memory_is_flat_in_the_number_of_flows() -> None:
    """Flow records are reused: after the first 10^5 flows, 2 x 10^6 more allocate no new records beyond
    the few a new peak of flows in flight needs, and the process grows by no more than a few MB."""
    sim = FlowSim(
        {
            "topology": {"kind": "single_link"},
            "workload": {"sizes": "web_search", "load": 0.8},
            "scheduling": {"discipline": "pias", "levels": 8, "thresholds_packets": PIAS_WS},
        }
    )
    sim.run_flows(100_000)
    slots, rss = sim.slots, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sim.run_flows(2_000_000)
    assert sim.results()["flows_completed"] > 2_000_000
    assert sim.slots <= slots + 32, (slots, sim.slots)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 16 * 1024  # KB


def test_warmup_flows_are_left_out_of_the_statistics() -> None:
    sim = FlowSim({**auto_testbed(), "warmup_flows": 500, "record_flows": True})
    sim.run_flows(5000)
    r = sim.results()
    measured = int(np.sum(sim.records()["index"] >= 500))
    assert r["flows_measured"] == measured == r["fct_s"]["all"]["count"]
    assert r["flows_completed"] - measured == int(np.sum(sim.records()["index"] < 500))


def test_base_rtt_is_added_beside_the_fluid_fct() -> None:
    """One flow alone: fluid FCT = size / C; the reported FCT adds the base RTT; slowdown is 1."""
    trace = [{"time_s": 0.0, "src": 0, "size_bytes": 125_000.0}]
    sim = FlowSim(
        {
            "topology": {"kind": "single_link"},
            "workload": {"trace": trace},
            "base_rtt_us": 100.0,
            "scheduling": {"discipline": "fair"},
        }
    )
    sim.run_until(1.0)
    r = sim.results()
    assert r["fct_fluid_s"]["all"]["mean"] == pytest.approx(1e-3, rel=1e-12)
    assert r["fct_s"]["all"]["mean"] == pytest.approx(1.1e-3, rel=1e-12)
    assert r["slowdown"]["all"]["mean"] == pytest.approx(1.0, rel=1e-12)


def test_link_utilisation_matches_the_load() -> None:
    sim = FlowSim(
        {
            "topology": {"kind": "big_switch", "hosts": 8},
            "workload": {"sizes": "web_search", "load": 0.5},
            "scheduling": {"discipline": "fair"},
            "seed": 2,
        }
    )
    sim.run_for(30.0)
    sim.start_interval()
    sim.run_for(200.0)
    interval, _ = sim.link_utilization()
    assert interval.mean() == pytest.approx(0.5, rel=0.05)  # 16 links x ~17 k flows each
    assert sim.link_names[:2] == ["up0", "up1"] and sim.link_names[8] == "down0"


# --------------------------------------------------------------------------- workload


def test_groups_offer_their_own_load_and_sizes() -> None:
    """AuTO §6.1.2: <WS, 60%>, <WS, 80%>, <DM, 60%>, <DM, 60%> on 4 x 8 hosts of 1 Gbps."""
    groups = [
        {"hosts": 8, "sizes": "web_search", "load": 0.6},
        {"hosts": 8, "sizes": "web_search", "load": 0.8},
        {"hosts": 8, "sizes": "data_mining", "load": 0.6},
        {"hosts": 8, "sizes": "data_mining", "load": 0.6},
    ]
    cfg = {**auto_testbed(), "workload": {"groups": groups}, "record_flows": True, "seed": 5}
    sim = FlowSim(cfg)
    sim.run_for(60.0)
    r = sim.records()
    group = r["src"] // 8
    counts = np.bincount(group, minlength=4)
    # Flow rates: load x C x 8 hosts / E[S]: web search 1.711 MB, data mining 12.66 MB.
    rates = np.array([0.6, 0.8, 0.6 * 1.711 / 12.66, 0.6 * 1.711 / 12.66]) * GBPS * 8 / 1.711e6
    np.testing.assert_allclose(counts / 60.0, rates, rtol=0.06)
    assert np.median(r["size_bytes"][group == 0]) > 20 * np.median(r["size_bytes"][group == 2])


def test_dynamics_change_load_and_sizes_at_their_times() -> None:
    """AuTO §6.1.3: the load and the workload change at given times (here every 20 s)."""
    dyn = [{"time_s": 20.0, "load": 0.3}, {"time_s": 40.0, "sizes": "data_mining", "load": 0.6}]
    cfg = {
        "topology": {"kind": "big_switch", "hosts": 8},
        "workload": {"sizes": "web_search", "load": 0.6, "dynamics": dyn},
        "scheduling": {"discipline": "fair"},
        "record_flows": True,
    }
    sim = FlowSim(cfg)
    sim.run_until(60.0)
    r = sim.records()
    t = r["arrival_s"]
    rate = lambda lo, hi: np.sum((t >= lo) & (t < hi)) / (hi - lo)  # noqa: E731
    per_s = 0.6 * GBPS * 8 / 1.71125e6
    assert rate(0, 20) == pytest.approx(per_s, rel=0.08)
    assert rate(20, 40) == pytest.approx(per_s / 2, rel=0.1)
    assert rate(40, 58) == pytest.approx(0.6 * GBPS * 8 / 12.658e6, rel=0.25)
    assert np.median(r["size_bytes"][t >= 40]) < 5000 < np.median(r["size_bytes"][t < 40])


def test_traffic_matrix_sets_the_destinations() -> None:
    n = 4
    matrix = [[0, 3, 1, 0], [1, 0, 0, 1], [1, 1, 0, 0], [0, 0, 2, 0]]
    sim = FlowSim(
        {
            "topology": {"kind": "big_switch", "hosts": n},
            "workload": {"sizes": "web_search", "load": 0.2, "traffic_matrix": matrix},
            "scheduling": {"discipline": "fair"},
            "record_flows": True,
        }
    )
    sim.run_flows(40_000)
    sim.run_until(sim.now_s + 100)
    r = sim.records()
    counts = np.zeros((n, n))
    np.add.at(counts, (r["src"], r["dst"]), 1)
    expected = np.array(matrix, float) / np.sum(matrix, axis=1, keepdims=True)
    np.testing.assert_allclose(counts / counts.sum(axis=1, keepdims=True), expected, atol=0.015)


def test_ecmp_spreads_flows_uniformly_over_planes_and_spines() -> None:
    for topo, paths in (
        ({"kind": "planes", "hosts": 8, "planes": 3}, 3),
        ({"kind": "leaf_spine", "racks": 4, "hosts_per_rack": 4, "spines": 4}, 4),
    ):
        sim = FlowSim(
            {
                "topology": topo,
                "workload": {"sizes": "web_search", "load": 0.3},
                "scheduling": {"discipline": "fair"},
                "record_flows": True,
            }
        )
        sim.run_flows(30_000)
        r = sim.records()
        inter = r["src"] // 4 != r["dst"] // 4 if topo["kind"] == "leaf_spine" else np.ones(len(r["src"]), bool)
        share = np.bincount(r["path"][inter], minlength=paths) / inter.sum()
        np.testing.assert_allclose(share, 1.0 / paths, atol=0.015)
        if topo["kind"] == "leaf_spine":
            assert set(r["path"][~inter]) == {0}


# --------------------------------------------------------------------------- AuTO's interface


def test_observations_are_views_of_preallocated_buffers() -> None:
    sim = FlowSim(auto_testbed())
    sim.step_interval(0.01)
    a = sim.observe()
    assert a["short_finished"].shape == (100, 7) and a["long_active"].shape == (11, 6)
    assert a["long_active_flows"].shape == (11,) and a["long_finished"].shape == (10, 7)
    assert not a["short_finished"].flags.owndata and a["short_finished"].base is not None
    sim.step_interval(0.01)
    b = sim.observe()
    assert np.shares_memory(a["short_finished"], b["short_finished"])
    assert FlowSim.finished_features == ["src", "dst", "path", "level", "size_bytes", "fct_s", "age_s"]
    assert FlowSim.active_features == ["src", "dst", "path", "level", "sent_bytes", "age_s"]


def test_observations_describe_the_interval_and_the_long_flows() -> None:
    sim = FlowSim(auto_testbed(load=1.5))
    sim.run_for(1.0)
    sim.step_interval(0.01)
    o, iv = sim.observe(), sim.interval()
    n_short = min(100, iv["short_finished"])
    short = o["short_finished"]
    assert n_short > 5 and np.all(short[n_short:] == 0)
    assert np.all(short[:n_short, 4] < sim.long_flow_bytes) and np.all(short[:n_short, 5] > 0)
    assert np.all(np.diff(short[:n_short, 6]) >= 0)  # most recent first
    assert np.all((short[:n_short, 6] >= 0) & (short[:n_short, 6] <= 0.01))
    if iv["short_finished"] <= 100:
        assert short[:n_short, 5].mean() == pytest.approx(iv["mean_short_fct_s"], rel=1e-12)
    long_ = o["long_active"]
    ids = o["long_active_flows"]
    k = int(np.sum(ids >= 0))
    assert k == min(11, sim.results()["long_flows_active"]) and k > 0
    assert np.all(long_[:k, 4] >= sim.long_flow_bytes) and np.all(long_[:k, 3] == 7)
    table = sim.active_flows_table()
    row = {int(h): i for i, h in enumerate(table["handle"])}
    for j in range(k):
        i = row[int(ids[j])]
        assert table["sent_bytes"][i] == pytest.approx(long_[j, 4])
        assert [table["src"][i], table["dst"][i], table["path"][i]] == list(long_[j, :3])


def test_lrla_actions_pin_priority_cap_and_path() -> None:
    sim = FlowSim(auto_testbed(load=1.5))
    sim.run_for(1.0)
    o = sim.observe()
    ids = o["long_active_flows"][:3].copy()
    assert np.all(ids >= 0)
    sim.set_flow_actions(ids, [0, 2, -1], [-1.0, 0.1, math.inf], [-1, -1, 2])
    table = sim.active_flows_table()
    row = {int(h): i for i, h in enumerate(table["handle"])}
    a, b, c = (row[int(h)] for h in ids)
    assert table["level"][a] == 0 and table["pinned"][a]
    assert table["level"][b] == 2 and table["rate_gbps"][b] <= 0.1 + 1e-12
    assert table["path"][c] == 2 and not table["pinned"][c]
    sent = table["sent_bytes"][a]
    sim.run_for(0.002)  # a pinned flow keeps its level whatever it sends
    table = sim.active_flows_table()
    a = list(table["handle"]).index(int(ids[0]))
    assert table["level"][a] == 0 and table["sent_bytes"][a] > sent


def test_srla_thresholds_move_flows_between_levels_at_once() -> None:
    sim = FlowSim(auto_testbed(load=1.5))
    sim.run_for(0.5)
    new = [1e4, 2e4, 4e4, 8e4, 1.6e5, 3.2e5, 6.4e5]
    sim.set_thresholds(new)
    assert sim.thresholds == new and sim.long_flow_bytes == 6.4e5
    t = sim.active_flows_table()
    free = ~t["pinned"]
    expected = np.searchsorted(new, t["sent_bytes"][free], side="right")
    mismatch = expected != t["level"][free]
    # flows exactly at a threshold may sit on either side of it by rounding
    assert mismatch.sum() <= 1
    assert np.all(t["long"][t["sent_bytes"] >= 6.4e5 * (1 + 1e-9)])


def test_interval_aggregates_give_the_rewards() -> None:
    sim = FlowSim({**auto_testbed(load=1.5), "record_flows": True})
    sim.run_for(1.0)
    done = len(sim.records()["index"])
    sim.step_interval(0.05)
    iv = sim.interval()
    r = sim.records()
    new = slice(done, None)
    assert iv["finished"] == len(r["index"][new])
    assert iv["mean_fct_s"] == pytest.approx(r["fct_s"][new].mean(), rel=1e-9)
    tput = r["size_bytes"][new] * 8 / 1e9 / r["fct_s"][new]  # base RTT 0: reported FCT = fluid FCT
    assert iv["mean_throughput_gbps"] == pytest.approx(tput.mean(), rel=1e-9)
    assert iv["duration_s"] == pytest.approx(0.05)
    assert iv["short_finished"] + iv["long_finished"] == iv["finished"]


def test_observe_batch_writes_stacked_arrays() -> None:
    sims = [FlowSim(auto_testbed(seed=s)) for s in (1, 2, 3)]
    step_flow_batch(sims, 0.02)
    short = np.zeros((3, 100, 7))
    long_ = np.zeros((3, 11, 6))
    ids = np.zeros((3, 11), dtype=np.int64)
    done = np.zeros((3, 10, 7))
    observe_flow_batch(sims, short, long_, ids, done)
    for i, s in enumerate(sims):
        o = s.observe()
        assert np.array_equal(short[i], o["short_finished"]) and np.array_equal(ids[i], o["long_active_flows"])
    with pytest.raises(ValueError, match=r"short_finished: must have shape \(3, 100, 7\), got \(2, 100, 7\)"):
        observe_flow_batch(sims, np.zeros((2, 100, 7)), long_, ids, done)


# --------------------------------------------------------------------------- bad input

BASE = {"topology": {"kind": "big_switch", "hosts": 4}, "workload": {"sizes": "web_search", "load": 0.5}}

BAD_CONFIGS = [
    ({"topology": {"kind": "ring"}}, "topology.kind: unknown value 'ring'"),
    ({"topology": {"kind": "big_switch", "host": 4}}, "topology.host: unknown field; allowed: kind, link_gbps, hosts"),
    ({"topology": {"kind": "big_switch", "hosts": 1}}, "topology.hosts: must be in [2, "),
    ({"topology": {"kind": "planes", "hosts": 4, "planes": 0}}, "topology.planes: must be in [1, 64]"),
    ({"topology": {"kind": "big_switch", "hosts": 4, "link_gbps": 0}}, "topology.link_gbps: must be a positive"),
    ({"topology": {"kind": "leaf_spine", "oversubscription": -1}}, "topology.oversubscription"),
    (
        {"scheduling": {"discipline": "pias", "levels": 3, "thresholds_bytes": [1e5]}},
        "scheduling.thresholds: 'mlfq' needs levels - 1 = 2 thresholds, got 1",
    ),
    (
        {"scheduling": {"discipline": "pias", "levels": 3, "thresholds_bytes": [1e5, 1e4]}},
        "scheduling.thresholds[1]: must be >= the one before",
    ),
    ({"scheduling": {"discipline": "pias", "levels": 9}}, "scheduling.levels: must be in [1, 8]"),
    ({"scheduling": {"discipline": "fair", "thresholds_bytes": [1.0]}}, "scheduling.thresholds: 'fair' takes no"),
    ({"scheduling": {"discipline": "las"}}, "'las' (exact fluid least attained service) needs topology single_link"),
    (
        {"scheduling": {"discipline": "pias", "levels": 2, "thresholds_bytes": [1], "thresholds_packets": [1]}},
        "give thresholds_bytes or thresholds_packets, not both",
    ),
    ({"scheduling": {"discipline": "sjf"}}, "scheduling.discipline: unknown value 'sjf'"),
    ({"workload": {"sizes": "websearch", "load": 0.5}}, "workload.sizes: unknown workload 'websearch'"),
    (
        {"workload": {"sizes": {"cdf": [[0, 0], [10, 0.5]]}, "load": 0.5}},
        "workload.sizes.cdf: probability must reach 1",
    ),
    ({"workload": {"sizes": "web_search", "load": -0.1}}, "workload.load: must be in [0, 64]"),
    (
        {"workload": {"groups": [{"hosts": 2, "sizes": "web_search", "load": 0.5}]}},
        "workload.groups: hosts of the groups must add up to the 4 hosts, got 2",
    ),
    (
        {"workload": {"sizes": "web_search", "load": 0.5, "traffic_matrix": [[0, 1], [1, 0]]}},
        "workload.traffic_matrix: needs one row per host (4), got 2",
    ),
    (
        {"workload": {"sizes": "web_search", "load": 0.5, "traffic_matrix": [[1, 1, 1, 1]] * 4}},
        "workload.traffic_matrix[0][0]: a host sends nothing to itself",
    ),
    (
        {"workload": {"sizes": "web_search", "load": 0.5, "dynamics": [{"time_s": 2}, {"time_s": 1, "load": 1}]}},
        "workload.dynamics[0]: changes nothing",
    ),
    (
        {
            "workload": {
                "sizes": "web_search",
                "load": 0.5,
                "dynamics": [{"time_s": 2, "load": 1}, {"time_s": 1, "load": 1}],
            }
        },
        "workload.dynamics[1].time_s: changes must be in time order",
    ),
    (
        {"workload": {"sizes": "web_search", "load": 0.5, "dynamics": [{"time_s": 1, "group": 3, "load": 1}]}},
        "workload.dynamics[0].group: must be a group index in [0, 0]",
    ),
    (
        {"workload": {"trace": [{"time_s": 0, "src": 0, "dst": 0, "size_bytes": 10}]}},
        "workload.trace[0].dst: must differ from src",
    ),
    (
        {"workload": {"trace": [{"time_s": 0, "src": 9, "dst": 0, "size_bytes": 10}]}},
        "workload.trace[0].src: must be in [0, 3], got 9",
    ),
    (
        {"workload": {"trace": [{"time_s": 0, "src": 0, "dst": 1, "size_bytes": 10, "priority": 8}]}},
        "workload.trace[0].priority: must be in [0, 7] or -1",
    ),
    (
        {"workload": {"trace": [{"time_s": 0, "src": 0, "dst": 1, "size_bytes": 10, "path": 1}]}},
        "workload.trace[0].path: must be in [0, 0], got 1",
    ),
    ({"base_rtt_us": -1}, "base_rtt_us: must be a finite number >= 0"),
    ({"solver": "fast"}, "solver: unknown value 'fast'; allowed: incremental, full"),
    ({"observation": {"short_finished": 65537}}, "observation.short_finished: must be in [0, 65536], got 65537"),
    (
        {"observation": {"short_finished": -1}},
        "observation.short_finished: must be an integer in [0, 4294967295], got -1",
    ),
    ({"topology": {"kind": "planes", "hosts": 65536, "planes": 3}}, "topology: at most 262144 links, got 393216"),
    ({"topology": {"kind": "big_switch", "hosts": 4, "link_gbps": 1e6}}, "topology.link_gbps: must be at most 100000"),
    ({"seeds": 3}, "seeds: unknown field; allowed: topology, scheduling"),
]


@pytest.mark.parametrize("change,message", BAD_CONFIGS, ids=[m.split(":")[0] for _, m in BAD_CONFIGS])
def test_bad_configs_are_refused_naming_the_field(change: dict, message: str) -> None:
    config = {**BASE, "scheduling": {"discipline": "pias", "levels": 8, "thresholds_packets": PIAS_WS}, **change}
    with pytest.raises(ValueError) as e:
        check_flow_config(config)
    assert message in str(e.value)
    with pytest.raises(ValueError):
        FlowSim(config)


def test_bad_actions_are_refused_and_change_nothing() -> None:
    sim = FlowSim(auto_testbed(load=1.5))
    sim.run_for(0.5)
    ids = sim.observe()["long_active_flows"]
    h = int(ids[0])
    before = canonical(sim.active_flows_table())
    cases = [
        (([h, h + (1 << 32)], [0, 0], [-1, -1], [-1, -1]), "actions[1].flow: flow"),
        (([h], [8], [-1], [-1]), "actions[0].level: must be in [0, 7] or -1 (keep), got 8"),
        (([h], [-1], [math.nan], [-1]), "actions[0].cap_gbps: must be a number"),
        (([h], [-1], [-1], [3]), "actions[0].path: must be in [0, 2] or -1 (keep), got 3"),
        (([-1], [0], [-1], [-1]), "actions[0].flow: not a flow handle (padding?)"),
        (([h, h], [0], [-1], [-1]), "must be 1-D of one length"),
    ]
    for args, message in cases:
        with pytest.raises(ValueError) as e:
            sim.set_flow_actions(*args)
        assert message in str(e.value)
    with pytest.raises(ValueError, match=r"thresholds: needs levels - 1 = 7 values, got 2"):
        sim.set_thresholds([1e4, 1e5])
    with pytest.raises(ValueError, match=r"thresholds\[2\]: must be >= thresholds\[1\]"):
        sim.set_thresholds([1e4, 1e5, 1e4, 1e6, 1e6, 1e6, 1e7])
    with pytest.raises(ValueError, match=r"thresholds\[0\]: must be a positive finite number of bytes"):
        sim.set_thresholds([-1.0, 1e5, 1e5, 1e6, 1e6, 1e6, 1e7])
    assert canonical(sim.active_flows_table()) == before
    with pytest.raises(ValueError, match="time_s: must be finite and >= the current time"):
        sim.run_until(0.1)
    with pytest.raises(ValueError, match="time_s: must be finite"):
        sim.run_until(math.inf)
    with pytest.raises(ValueError, match="seconds: must be a positive finite number"):
        sim.step_interval(0.0)
    srpt = FlowSim({**auto_testbed(), "scheduling": {"discipline": "srpt"}})
    srpt.run_for(0.5)
    with pytest.raises(ValueError, match="discipline 'srpt' takes no per-flow actions"):
        srpt.set_flow_actions([0], [0], [-1], [-1])
    with pytest.raises(ValueError, match="discipline 'srpt' has no thresholds"):
        srpt.set_thresholds([])
