"""The engine against an independent Python simulator, flow by flow.

flow_reference.py recomputes every rate from scratch at every event and
sweeps every flow's bytes; the engine solves incrementally and keeps bytes
sent on shared clocks. On small random multi-link cases (big switch, planes,
leaf-spine with oversubscription) with pinned priorities, rate caps, paths,
MLFQ and QSJF levels and actions at given times, every flow's FCT must agree
to 1e-9 relative (+1 ns): both are exact up to floating-point rounding, so
any modelling difference shows as an error many orders of magnitude larger.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from dcgym.cpp_core import FlowSim

sys.path.insert(0, str(Path(__file__).parent))
import flow_reference as ref  # noqa: E402

GBPS = 1e9 / 8  # bytes per second
REL = 1e-9
ABS_S = 1e-9


def random_trace(
    rng: np.random.Generator, hosts: int, paths_of, *, flows: int, levels: int, caps: bool, pins: bool
) -> list[dict]:
    """Flows over ~20 ms with sizes of 2 KB - 2 MB: enough overlap for every link to be shared."""
    trace, t = [], 0.0
    for _ in range(flows):
        t += rng.exponential(4e-4)
        src = int(rng.integers(hosts))
        dst = int(rng.integers(hosts - 1))
        dst += dst >= src
        e = {"time_s": t, "src": src, "dst": dst, "size_bytes": float(np.exp(rng.uniform(np.log(2e3), np.log(2e6))))}
        n = paths_of(src, dst)
        if n > 1:  # explicit: ECMP draws from the engine's own stream
            e["path"] = int(rng.integers(n))
        if pins and rng.random() < 0.4:
            e["priority"] = int(rng.integers(levels))
        if caps and rng.random() < 0.3:
            e["cap_gbps"] = float(rng.choice([0.05, 0.2, 0.5]))
        trace.append(e)
    return trace


def engine_fcts(config: dict) -> np.ndarray:
    sim = FlowSim({**config, "record_flows": True})
    sim.run_flows(len(config["workload"]["trace"]))
    sim.run_until(1e6)
    r = sim.records()
    assert len(r["index"]) == len(config["workload"]["trace"])
    fct = np.empty(len(r["index"]))
    fct[r["index"]] = r["fct_s"]
    return fct


def reference_fcts(config: dict, capacity: dict, route, *, actions=()) -> np.ndarray:
    sched = config["scheduling"]
    flows = []
    for e in config["workload"]["trace"]:
        flows.append(
            ref.Flow(
                arrival=e["time_s"],
                size=e["size_bytes"],
                links=route(e["src"], e["dst"], e.get("path", 0)),
                cap=e.get("cap_gbps", math.inf) * GBPS,
                level=e.get("priority"),
            )
        )
    discipline = {"fair": "fair", "qsjf": "qsjf", "pias": "mlfq"}[sched["discipline"]]
    sim = ref.Simulation(capacity, flows, discipline, sched.get("thresholds_bytes", []), list(actions))
    return np.array(sim.run())


def assert_same(engine: np.ndarray, reference: np.ndarray) -> None:
    err = np.abs(engine - reference)
    bad = err > REL * np.abs(reference) + ABS_S
    assert not bad.any(), (
        f"{bad.sum()} of {len(bad)} flows differ; worst flow {int(np.argmax(err))}: "
        f"engine {engine[np.argmax(err)]:.12g} s vs reference {reference[np.argmax(err)]:.12g} s"
    )


TOPOLOGIES = {
    "big_switch": ({"kind": "big_switch", "hosts": 4, "link_gbps": 1.0}, ref.big_switch(4, GBPS), 4, lambda s, d: 1),
    "planes": (
        {"kind": "planes", "hosts": 4, "planes": 2, "link_gbps": 1.0},
        ref.planes(4, 2, GBPS),
        4,
        lambda s, d: 2,
    ),
    "leaf_spine": (
        {"kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "spines": 2, "link_gbps": 1.0, "oversubscription": 2.0},
        ref.leaf_spine(2, 2, 2, GBPS, 2.0),
        4,
        lambda s, d: 1 if s // 2 == d // 2 else 2,
    ),
}

SCHEDULING = {
    "fair": {"discipline": "fair", "levels": 4},
    "mlfq": {"discipline": "pias", "levels": 4, "thresholds_bytes": [2e4, 2e5, 1e6]},
    "qsjf": {"discipline": "qsjf", "levels": 3, "thresholds_bytes": [5e4, 5e5]},
}


@pytest.mark.parametrize("scheduling", sorted(SCHEDULING))
@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_engine_matches_reference_flow_by_flow(topology: str, scheduling: str) -> None:
    topo, (capacity, route), hosts, paths_of = TOPOLOGIES[topology]
    sched = SCHEDULING[scheduling]
    for seed in range(3):
        rng = np.random.default_rng(1000 * seed + len(topology) + len(scheduling))
        trace = random_trace(rng, hosts, paths_of, flows=60, levels=sched["levels"], caps=True, pins=True)
        config = {"topology": topo, "scheduling": sched, "workload": {"trace": trace}, "seed": seed}
        assert_same(engine_fcts(config), reference_fcts(config, capacity, route))


@pytest.mark.parametrize("solver", ["incremental", "full"])
def test_both_solver_modes_match_reference_on_leaf_spine(solver: str) -> None:
    topo, (capacity, route), hosts, paths_of = TOPOLOGIES["leaf_spine"]
    rng = np.random.default_rng(77)
    trace = random_trace(rng, hosts, paths_of, flows=80, levels=4, caps=True, pins=True)
    config = {"topology": topo, "scheduling": SCHEDULING["mlfq"], "workload": {"trace": trace}, "solver": solver}
    assert_same(engine_fcts(config), reference_fcts(config, capacity, route))


def test_actions_at_given_times_match_reference() -> None:
    """lRLA-style actions (priority, cap, path) on flows in flight, then the rest of the run."""
    topo, (capacity, route), hosts, paths_of = TOPOLOGIES["planes"]
    for seed in range(4):
        rng = np.random.default_rng(500 + seed)
        trace = random_trace(rng, hosts, paths_of, flows=50, levels=4, caps=False, pins=False)
        for e in trace:
            e["path"] = int(rng.integers(2))
        config = {
            "topology": topo,
            "scheduling": SCHEDULING["mlfq"],
            "workload": {"trace": trace},
            "record_flows": True,
            "seed": seed,
        }
        sim = FlowSim(config)
        actions = []
        for t in np.sort(rng.uniform(0.002, 0.02, size=8)):
            sim.run_until(float(t))
            table = sim.active_flows_table()
            if len(table["handle"]) == 0:
                continue
            k = int(rng.integers(len(table["handle"])))
            flow = int(table["index"][k])
            level = int(rng.integers(4)) if rng.random() < 0.6 else -1
            cap = float(rng.choice([0.1, 0.3, math.inf])) if rng.random() < 0.5 else -1.0
            path = int(rng.integers(2)) if rng.random() < 0.5 else -1
            sim.set_flow_actions([table["handle"][k]], [level], [cap], [path])
            e = trace[flow]
            actions.append(
                ref.Action(
                    time=float(t),
                    flow=flow,
                    level=None if level < 0 else level,
                    cap=None if cap < 0 else cap * GBPS,
                    links=None if path < 0 else route(e["src"], e["dst"], path),
                )
            )
        sim.run_until(1e6)
        r = sim.records()
        engine = np.empty(len(trace))
        engine[r["index"]] = r["fct_s"]
        assert len(actions) >= 6
        assert_same(engine, reference_fcts(config, capacity, route, actions=actions))


def test_reference_priority_max_min_by_hand() -> None:
    """The reference's own allocation on the textbook example (so a shared mistake would show)."""
    cap = {"a": 10.0, "b": 4.0}
    flows = [ref.Flow(0, 1, ("a", "b")), ref.Flow(0, 1, ("a",)), ref.Flow(0, 1, ("b",)), ref.Flow(0, 1, ("a",))]
    assert ref.priority_max_min(cap, flows, [0, 0, 0, 1]) == [2.0, 8.0, 2.0, 0.0]
    flows[1].cap = 3.0
    assert ref.priority_max_min(cap, flows, [0, 0, 0, 1]) == [2.0, 3.0, 2.0, 5.0]
