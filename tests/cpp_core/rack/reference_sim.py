"""A small, slow, independent rack simulator to test the C++ engine against.

Written from the documented semantics (docs/rack.md and the comments of
cpp_core/include/dcgym/rack/{dispatch,load_info}.hpp), not from the engine's
code: it shares no code, no random streams and no event-ordering tricks with
it, so agreement in distribution is evidence that both implement the model.

The model: Poisson arrivals at rate load x sum(workers x speed) / E[S];
exponential task sizes of mean `mean_us` (work at speed 1); one switch picks a
node; each node is one FCFS queue served by `workers` workers of its speed.
The switch sees the nodes' outstanding tasks (waiting or in service) either
fresh, or as the snapshot that every `period_us` is taken and delivered
`delay_us` later. `central_fcfs` keeps one FIFO queue at the switch instead:
an arrival takes an idle worker of the fastest speed with one free
(uniformly among those nodes), and a worker that frees up takes the head of
the queue.

Plain heapq and `random.Random`: a few 10^5 tasks per second, so keep runs small.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from dataclasses import dataclass, field

POLICIES = ("random", "round_robin", "jsq", "po_d", "sed", "wcmp", "jbt", "central_fcfs")

_ARRIVAL, _DONE, _BROADCAST, _PUBLISH = 0, 1, 2, 3


@dataclass
class Result:
    """What one run measured; latencies of the tasks after the warm-up, in arrival order."""

    latencies: list[float]
    per_node: list[int]  # tasks sent to each node (all arrivals, warm-up included)
    sim_time_us: float

    @property
    def mean(self) -> float:
        return sum(self.latencies) / len(self.latencies)


@dataclass
class _Node:
    workers: int
    speed: float
    busy: int = 0
    queue: deque = field(default_factory=deque)  # (arrival time, index, size) waiting

    @property
    def outstanding(self) -> int:
        return self.busy + len(self.queue)


def simulate(
    *,
    speeds: list[float],
    workers: int | list[int] = 1,
    mean_us: float = 1.0,
    load: float,
    policy: str,
    tasks: int,
    warmup: int,
    seed: int,
    d: int = 2,
    replace: bool = True,
    weights: list[float] | None = None,
    threshold: float = 1.0,
    period_us: float | None = None,
    delay_us: float = 0.0,
) -> Result:
    """Simulates `tasks` arrivals and returns the latencies of those after the first `warmup`.

    `period_us` None means fresh loads; otherwise periodic snapshots (see the module doc).
    Tasks still in the rack when the last one arrives are run to completion.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r} is not one of {POLICIES}")
    n = len(speeds)
    counts = [workers] * n if isinstance(workers, int) else list(workers)
    nodes = [_Node(c, s) for c, s in zip(counts, speeds)]
    capacity = [c * s for c, s in zip(counts, speeds)]
    rate = load * sum(capacity) / mean_us
    weights = weights or capacity

    # independent generators per purpose, derived from the seed
    master = random.Random(seed)
    arrivals, sizes, choices = (random.Random(master.getrandbits(64)) for _ in range(3))

    events: list = []
    tie = itertools.count()  # FIFO among equal times

    def push(t: float, kind: int, payload=None) -> None:
        heapq.heappush(events, (t, next(tie), kind, payload))

    latency = [float("nan")] * tasks
    per_node = [0] * n
    seen = [0] * n  # what the switch believes (periodic model)
    rr = 0
    central: deque = deque()

    def believed(j: int) -> int:
        return nodes[j].outstanding if period_us is None else seen[j]

    def least(key) -> int:
        best, ties = [], None
        for j in range(n):
            k = key(j)
            if ties is None or k < ties:
                best, ties = [j], k
            elif k == ties:
                best.append(j)
        return best[0] if len(best) == 1 else choices.choice(best)

    def pick() -> int:
        nonlocal rr
        if policy == "random":
            return choices.randrange(n)
        if policy == "round_robin":
            rr = (rr + 1) % n
            return (rr - 1) % n
        if policy == "jsq":
            return least(believed)
        if policy == "sed":
            return least(lambda j: (believed(j) + 1) / capacity[j])
        if policy == "wcmp":
            return choices.choices(range(n), weights=weights)[0]
        if policy == "jbt":  # uniform among nodes below the threshold, else uniform
            below = [j for j in range(n) if believed(j) < threshold]
            return choices.choice(below or range(n))
        # po_d: the least loaded of d samples, ties to the first sampled
        sample = [choices.randrange(n) for _ in range(d)] if replace else choices.sample(range(n), d)
        return min(sample, key=believed)  # min keeps the first of equal keys

    def start(j: int, now: float, arrival: float, index: int, size: float) -> None:
        nodes[j].busy += 1
        push(now + size / nodes[j].speed, _DONE, (j, arrival, index))

    def place(j: int, now: float, index: int, size: float) -> None:
        per_node[j] += 1
        node = nodes[j]
        if node.busy < node.workers:
            start(j, now, now, index, size)
        else:
            node.queue.append((now, index, size))

    push(arrivals.expovariate(rate), _ARRIVAL, 0)
    if period_us is not None:
        push(period_us, _BROADCAST)
    now = 0.0
    done = 0
    while done < tasks:
        now, _, kind, payload = heapq.heappop(events)
        if kind == _ARRIVAL:
            index = payload
            size = sizes.expovariate(1.0 / mean_us)
            if index + 1 < tasks:
                push(now + arrivals.expovariate(rate), _ARRIVAL, index + 1)
            if policy == "central_fcfs":
                free = [j for j in range(n) if nodes[j].busy < nodes[j].workers]
                if free:
                    fastest = max(nodes[j].speed for j in free)
                    j = choices.choice([j for j in free if nodes[j].speed == fastest])
                    per_node[j] += 1
                    start(j, now, now, index, size)
                else:
                    central.append((now, index, size))
            else:
                place(pick(), now, index, size)
        elif kind == _DONE:
            j, arrival, index = payload
            latency[index] = now - arrival
            done += 1
            node = nodes[j]
            node.busy -= 1
            if policy == "central_fcfs" and central:
                arrival, index, size = central.popleft()
                per_node[j] += 1
                start(j, now, arrival, index, size)
            elif node.queue:
                arrival, index, size = node.queue.popleft()
                start(j, now, arrival, index, size)
        elif kind == _BROADCAST:
            snapshot = [nd.outstanding for nd in nodes]
            if delay_us > 0:
                push(now + delay_us, _PUBLISH, snapshot)
            else:
                seen = snapshot
            if done < tasks:
                push(now + period_us, _BROADCAST)
        else:  # _PUBLISH
            seen = payload
    return Result(latency[warmup:], per_node, now)
