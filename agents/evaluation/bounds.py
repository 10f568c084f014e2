"""Lower bounds on a flow scenario's mean flow completion time that no scheduler can beat, from the run's own flows.

The flows (arrival, size, source and destination host) come from the engine's records of one run drained until
every measured flow has finished: arrivals, sizes and endpoints are drawn from their own random streams, so every
policy sees the same flows at a seed (docs/flow.md).

The bound (docs/benchmarking.md): a flow crosses its source host's uplink and its destination host's downlink (on
a ``planes`` topology, one of the host's P ports at a time, each of ``link_gbps``), so the measured flows leaving
host h form a feasible schedule of h's uplink(s) alone, and whatever else they cross only slows them. On one link
the least total flow time of a set of jobs with release dates is that of preemptive SRPT (Schrage 1968); on P ports
pooled to rate P c with each flow at most c, both SRPT at rate P c and each flow alone at c bound it. Every measured
flow leaves one host and enters one, so the sum of fluid FCTs is at least max(sum over hosts of the uplink bounds,
sum of the downlink bounds), and the mean FCT at least that over n plus the base RTT. On ``single_link`` every
flow crosses the one link: the bound is SRPT over the measured flows, the exact optimum.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from dcgym.cpp_core import FlowSim

__all__ = ["flow_bound_ms", "measured_flows", "srpt_flow_times"]

BYTES_PER_GBIT = 1.25e8


def srpt_flow_times(release: np.ndarray, size: np.ndarray, rate: float) -> np.ndarray:
    """Each job's flow time (completion - release) under preemptive shortest-remaining-processing-time on one
    machine of ``rate`` (size units per time unit); ties go to the earlier job."""
    order = np.argsort(release, kind="stable")
    flow = np.empty(len(size))
    queue: list[tuple[float, int]] = []  # (remaining size, job)
    now = 0.0
    k = 0
    while k < len(order) or queue:
        if not queue:
            now = max(now, float(release[order[k]]))
        while k < len(order) and release[order[k]] <= now:
            j = int(order[k])
            heapq.heappush(queue, (float(size[j]), j))
            k += 1
        left, j = heapq.heappop(queue)
        finish = now + left / rate
        upcoming = float(release[order[k]]) if k < len(order) else math.inf
        if finish <= upcoming:
            now = finish
            flow[j] = finish - release[j]
        else:  # served until the next release, then compared again
            heapq.heappush(queue, (left - (upcoming - now) * rate, j))
            now = upcoming
    return flow


DRAIN_LIMIT = 100
"""How long :func:`measured_flows` waits for the measured flows to finish, in multiples of the arrivals' time."""


def measured_flows(config: dict[str, Any], flows: int, warmup: int) -> dict[str, np.ndarray] | None:
    """The measured flows (index ``warmup`` .. ``flows - 1``) of a run of ``config``: src, dst, size_bytes,
    arrival_s, in order of arrival. Runs the engine until every one has finished; None if some have not after
    :data:`DRAIN_LIMIT` times the arrivals' time (an overloaded network: no bound is computed)."""
    sim = FlowSim({**config, "record_flows": True})
    sim.run_flows(flows)
    step = max(sim.now_s / 10, 1e-3)
    deadline = sim.now_s * (1 + DRAIN_LIMIT)
    while sim.results()["flows_measured_pending"] > 0:
        if sim.now_s >= deadline:
            return None
        sim.run_for(step)
    records = sim.records()
    index = np.asarray(records["index"])
    keep = (index >= warmup) & (index < flows)
    order = np.argsort(index[keep])
    return {k: np.asarray(records[k])[keep][order] for k in ("src", "dst", "size_bytes", "arrival_s")}


def flow_bound_ms(config: dict[str, Any], flows: dict[str, np.ndarray]) -> float:
    """The lower bound (module docstring) on the mean FCT in ms of ``flows`` (:func:`measured_flows`) under any
    policy of ``config``'s topology."""
    topology = config["topology"]
    rate = topology["link_gbps"] * BYTES_PER_GBIT
    size = np.maximum(flows["size_bytes"], 1.0)
    arrival = flows["arrival_s"]
    rtt_s = config.get("base_rtt_us", 0.0) * 1e-6
    if topology["kind"] == "single_link":
        total = float(np.sum(srpt_flow_times(arrival, size, rate)))
    else:
        ports = topology.get("planes", 1) if topology["kind"] == "planes" else 1
        sides = []
        for key in ("src", "dst"):
            hosts = flows[key]
            side = 0.0
            for h in np.unique(hosts):
                mine = hosts == h
                pooled = float(np.sum(srpt_flow_times(arrival[mine], size[mine], ports * rate)))
                side += max(pooled, float(np.sum(size[mine])) / rate)
            sides.append(side)
        total = max(sides)
    return (total / len(size) + rtt_s) * 1e3
