"""Lower bounds that no policy can beat on each family's headline metric, from a run's own workload: the flow
family's mean FCT (below), the rack p99 (:func:`rack_p99_bound_us`) and the lb mean FCT
(:func:`lb_mean_fct_bound_s`); docs/benchmarking.md gives the arguments. The rack and lb bounds hold for drained
runs (a fixed measured set, each task or flow counted when it ends), as flow runs always are.

Flow:

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

import bisect
import heapq
import math
from typing import Any

import numpy as np

from dcgym.cpp_core import FlowSim, LbSim, LogHistogram, RackSim

__all__ = [
    "capped_spt_mean_busy",
    "flow_bound",
    "flow_bound_ms",
    "lb_bound",
    "lb_mean_fct_bound_s",
    "measured_flows",
    "pooled_flow_time",
    "printed_floor",
    "rack_bound",
    "rack_p99_bound_us",
    "srpt_flow_times",
]

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


# ---------------------------------------------------------------------------------------------- rack

ROUNDING = 1e-9
"""A bound computed in floating point is lowered by this share, more than its arithmetic's rounding (event
times summed over thousands of jobs), so that rounding never lifts it above a schedule that meets it exactly."""


def rack_capacity(config: dict[str, Any]) -> tuple[float, float]:
    """(C, s_max): the most work per microsecond the rack of ``config`` serves at any time (every node counted
    active, speed changes followed) and the fastest speed any node has at any time. Both only ever over-estimate
    what a schedule has, so the bounds below stay bounds on racks whose nodes slow down, leave or join."""
    speeds = np.concatenate([[g["speed"]] * g["count"] for g in config["nodes"]]).astype(float)
    workers = np.concatenate([[g["workers"]] * g["count"] for g in config["nodes"]]).astype(float)
    capacity, fastest = float(np.sum(workers * speeds)), float(speeds.max())
    for change in config.get("dynamics", []):
        if change["kind"] == "speed":
            speeds[list(change["nodes"])] *= change["factor"]
            capacity, fastest = max(capacity, float(np.sum(workers * speeds))), max(fastest, float(speeds.max()))
    return capacity, fastest


def _late_in_every_schedule(arrival: np.ndarray, size: np.ndarray, d: float, capacity: float, fastest: float) -> int:
    """How many of the tasks finish later than ``d`` after their arrival in every schedule of a rack serving at
    most ``capacity`` work per microsecond, each task at most at ``fastest``: those too large to finish alone, and
    per block of consecutive arrivals i..j the fewest largest tasks whose sizes cover the block's excess (its work
    minus what the rack serves in [r_i, r_j + d]). Blocks are disjoint, one per excess episode of the fluid
    workload; any partition is valid, a better one only tightens."""
    alone = size / fastest > d
    count = int(np.count_nonzero(alone))
    size, arrival = size[~alone], arrival[~alone]
    if len(size) == 0:
        return count
    x = np.cumsum(size) - capacity * arrival  # work arrived by task i minus the rack's capacity up to r_i
    base = x - size  # a block k..i has excess x_i - base_k - capacity d
    excess = x - np.minimum.accumulate(base) - capacity * d
    edges = np.flatnonzero(np.diff(np.concatenate([[0], (excess > 0).astype(np.int8), [0]])))
    last = -1
    for a, b in zip(edges[0::2], edges[1::2], strict=True):  # an episode: tasks a .. b - 1
        if last + 1 > a:
            continue  # the previous block reached into this episode
        lowest = np.minimum.accumulate(base[last + 1 : b])[a - last - 1 :]
        e = x[a:b] - lowest - capacity * d
        i = a + int(np.argmax(e))
        if e[i - a] <= 0:
            continue
        k = last + 1 + int(np.argmin(base[last + 1 : i + 1]))
        largest = np.cumsum(np.sort(size[k : i + 1])[::-1])
        count += min(int(np.searchsorted(largest, e[i - a] * (1 - 1e-12))) + 1, len(largest))
        last = i
    return count


def rack_p99_bound_us(config: dict[str, Any], arrival_us: np.ndarray, size_us: np.ndarray, q: float = 0.99) -> float:
    """A lower bound on the ``q`` latency quantile (the rank-``ceil(q n)`` latency, as the engine ranks) of the
    tasks ``arrival_us``, ``size_us`` (work at speed 1) under every policy of ``config``'s rack: the pooled-window
    bound (docs/benchmarking.md). It is the largest d (to 1e-4) found with more than ``n - rank`` tasks late in
    every schedule, and at least the rank-th task's service time at the fastest speed."""
    capacity, fastest = rack_capacity(config)
    n = len(size_us)
    allowed = n - max(1, math.ceil(q * n))
    service = float(np.sort(size_us)[max(1, math.ceil(q * n)) - 1] / fastest)
    lo, hi = service, service * 2
    while _late_in_every_schedule(arrival_us, size_us, hi, capacity, fastest) > allowed:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        if _late_in_every_schedule(arrival_us, size_us, mid, capacity, fastest) > allowed:
            lo = mid
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------------------------------------- lb


def capped_spt_mean_busy(release: np.ndarray, work: np.ndarray, capacity: float, cap: float) -> np.ndarray:
    """Each job's mean busy time after its release (the work-weighted mean instant it is served, minus its
    release) under preemptive SPT by original
    size on one resource of ``capacity`` where a job runs at most at ``cap``: at every instant the smallest jobs
    present get ``cap`` each until the capacity is used. This schedule minimises the sum of mean busy times over
    every capped fluid schedule (an exchange moving a smaller job's work earlier never costs more; Goemans 1997
    without the cap), and a job served at most at ``cap`` completes at least ``work / (2 cap)`` after its mean
    busy time."""
    order = np.argsort(release, kind="stable")
    rel, size = release[order].tolist(), work[order].tolist()
    n = len(rel)
    moment, left = [0.0] * n, list(size)
    present: list[tuple[float, int]] = []  # (size, job), kept sorted
    now, k = 0.0, 0
    while k < n or present:
        if not present:
            now = max(now, rel[k])
        while k < n and rel[k] <= now:
            bisect.insort(present, (size[k], k))
            k += 1
        served, room = [], capacity
        for _, j in present:
            if room <= 0:
                break
            served.append((j, min(cap, room)))
            room -= cap
        upcoming = rel[k] if k < n else math.inf
        until = min(upcoming, *(now + left[j] / r for j, r in served))
        for j, r in served:
            moment[j] += r * (until - now) * ((until + now) / 2 - rel[j])  # from the release: no cancellation
            left[j] = 0.0 if now + left[j] / r <= until else left[j] - r * (until - now)
        present = [p for p in present if left[p[1]] > 0]
        now = until
    out = np.empty(n)
    out[order] = np.asarray(moment) / np.asarray(size)
    return out


def pooled_flow_time(release: np.ndarray, work: np.ndarray, capacity: float, cap: float) -> float:
    """A lower bound on the sum of flow times of jobs on one resource of ``capacity`` where a job runs at most at
    ``cap``: the largest of each job alone at ``cap``, SRPT at the full capacity (optimal without the cap:
    Schrage 1968) and the capped mean-busy-time bound (:func:`capped_spt_mean_busy`)."""
    work = np.maximum(work, 0.0)
    busy = capped_spt_mean_busy(release, np.maximum(work, 1e-12), capacity, cap)
    return max(
        float(np.sum(work)) / cap,
        float(np.sum(srpt_flow_times(release, work, capacity))),
        float(np.sum(busy) + np.sum(work) / (2 * cap)),
    )


def lb_capacity(config: dict[str, Any]) -> tuple[float, float, int]:
    """(CPU rate, fastest CPU speed, servers) of ``config``'s cluster: the most CPU work per microsecond at any
    time (capacity changes followed), the fastest speed any server has at any time, and the number of disks."""
    groups = config["servers"]
    speeds = [float(g["speed"]) for g in groups]
    rate = sum(g["count"] * g["workers"] * s for g, s in zip(groups, speeds, strict=True))
    fastest = max(speeds)
    for change in config.get("capacity_changes", []):
        speeds[change["group"]] = float(change["speed"])
        rate = max(rate, sum(g["count"] * g["workers"] * s for g, s in zip(groups, speeds, strict=True)))
        fastest = max(fastest, speeds[change["group"]])
    return rate, fastest, sum(g["count"] for g in groups)


def lb_mean_fct_bound_s(config: dict[str, Any], records: dict[str, np.ndarray]) -> float:
    """A lower bound on the mean FCT in s of the flows ``records`` (arrival_us, cpu_us, io_us per flow) under every
    policy of ``config``'s cluster: every CPU pooled into one resource (each flow at most at the fastest speed),
    every disk into one (each flow at most at 1), two minimum hops (docs/benchmarking.md)."""
    rate, fastest, disks = lb_capacity(config)
    arrival, cpu, io = records["arrival_us"], records["cpu_us"], records["io_us"]
    hops = 2 * config["hop_delay_us"]["min"]
    # With one CPU stage then at most one IO stage, each phase's flow time adds to the other's; with more stages
    # (alternating) only each phase's own flow time from the first hop is certain.
    sequential = config["application"]["stages"] <= 2
    before_io, after_cpu = (cpu / fastest, io) if sequential else (0.0 * cpu, 0.0 * io)
    total = float(np.sum(hops + cpu / fastest + io))  # each flow alone
    total = max(total, float(np.sum(hops + after_cpu)) + pooled_flow_time(arrival + hops / 2, cpu, rate, fastest))
    if np.any(io > 0):
        io_release = arrival + hops / 2 + before_io
        total = max(total, float(np.sum(hops + before_io)) + pooled_flow_time(io_release, io, float(disks), 1.0))
    return total / len(arrival) * 1e-6 * (1 - ROUNDING)


# ---------------------------------------------------------------------------------------------- per scenario


def flow_bound(scenario: Any, reference: str, load: float, seed: int, flows: int, warmup: int) -> float | None:
    """:func:`flow_bound_ms` of one (load, seed) of a flow scenario, from a drained run of ``reference``."""
    config = scenario.engine_config(
        load, seed, scenario.policy(reference), warmup_flows=warmup, measure_flows=flows - warmup
    )
    measured = measured_flows(config, flows, warmup)
    return None if measured is None else flow_bound_ms(config, measured)


def printed_floor(value: float) -> float:
    """The lower edge of the engine's histogram bucket that holds ``value`` (:class:`LogHistogram`: each power of
    two cut into ``0.5 / max_relative_error`` = 256 equal sub-buckets): every latency at or above ``value`` prints at
    or above it, as a bucket's midpoint or the run's exact minimum or maximum, whichever the histogram reports."""
    if not (value > 0 and math.isfinite(value)):
        return value
    sub = round(0.5 / LogHistogram.max_relative_error)  # sub-buckets per power of two
    _, exponent = math.frexp(value)  # value in [2^(exponent - 1), 2^exponent)
    width = math.ldexp(1.0, exponent - 1) / sub
    return math.floor(value / width) * width


def rack_bound(scenario: Any, reference: str, load: float, seed: int, tasks: int, warmup: int) -> float:
    """:func:`rack_p99_bound_us` of one (load, seed) of a rack scenario as a printed p99 can be compared with it:
    the lower edge of its histogram bucket (:func:`printed_floor`), since a p99 is printed at the resolution of
    the engine's histogram. From the measured tasks' arrivals (the workload is the same under every policy: one
    run of ``reference`` to the last arrival)."""
    config = scenario.engine_config(load, seed, scenario.policy(reference), warmup, 0)
    sim = RackSim({**config, "measure_tasks": tasks - warmup, "record_tasks": True})
    sim.run_tasks(tasks)
    records = sim.records()
    return printed_floor(rack_p99_bound_us(config, records["arrival_us"], records["size_us"]))


def lb_bound(scenario: Any, reference: str, load: float, seed: int, flows: int, warmup: int) -> float:
    """:func:`lb_mean_fct_bound_s` of one (load, seed) of a lb scenario, from the measured flows' arrivals and work
    (the same under every policy: one run of ``reference`` to the last arrival)."""
    config = scenario.engine_config(load=load, seed=seed, policy=reference, warmup_flows=warmup)
    sim = LbSim({**config, "measure_flows": flows - warmup, "record_flows": True})
    sim.run_flows(flows)
    return lb_mean_fct_bound_s(config, sim.records())
