"""A small, slow, independent fluid flow simulator to test the C++ engine against.

Written from the model's definition (docs/flow.md), not from the engine: no
rate groups, no virtual clocks, no incremental solver. At every event it
recomputes every rate from scratch and moves every flow's bytes sent forward.

The model: links of given capacities (bytes/s); a flow crosses a list of
links. Flows sit on strict-priority levels (0 highest); each level gets
max-min fair rates, by progressive filling, on what the levels above leave;
a flow's rate cap is a constraint of its own. A flow's level is pinned (a
given priority), its size class (qsjf: the number of thresholds below its
size), or its MLFQ level (the number of thresholds <= its bytes sent).
Actions at given times change a flow's level (pinning it), cap or path.

Plain Python floats: a few thousand events per second, so keep cases small.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

INF = math.inf


@dataclass
class Flow:
    arrival: float
    size: float
    links: tuple  # link keys
    cap: float = INF
    level: int | None = None  # pinned level, or None: the discipline decides
    sent: float = 0.0
    done: float | None = None


@dataclass
class Action:
    time: float
    flow: int  # index in the flow list
    level: int | None = None
    cap: float | None = None  # INF removes the cap
    links: tuple | None = None


def priority_max_min(capacity: dict, flows: list[Flow], levels: list[int]) -> list[float]:
    """Rates of `flows` (level of each in `levels`): strict priority, max-min by progressive filling."""
    rates = [0.0] * len(flows)
    left = dict(capacity)
    for level in sorted(set(levels)):
        members = [i for i, lv in enumerate(levels) if lv == level]
        remaining = {k: left[k] for k in left}
        used = {k: 0.0 for k in left}
        unfrozen = set(members)
        while unfrozen:
            count = {}
            for i in unfrozen:
                for k in flows[i].links:
                    count[k] = count.get(k, 0) + 1
            share, link = min(((remaining[k] / n, k) for k, n in count.items()), key=lambda t: t[0])
            cap, capped = min(((flows[i].cap, i) for i in unfrozen), key=lambda t: t[0])
            if cap < share:
                freeze, rate = [capped], cap
            else:
                freeze, rate = [i for i in unfrozen if link in flows[i].links], max(0.0, share)
            for i in freeze:
                rates[i] = rate
                unfrozen.discard(i)
                for k in flows[i].links:
                    remaining[k] -= rate
                    used[k] += rate
        for k in left:
            left[k] = max(0.0, left[k] - used[k])
    return rates


@dataclass
class Simulation:
    capacity: dict
    flows: list[Flow]
    discipline: str = "fair"  # fair, qsjf or mlfq
    thresholds: list[float] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)

    def level(self, f: Flow) -> int:
        if f.level is not None:
            return f.level
        if self.discipline == "mlfq":
            # Demoted from level l once sent >= thresholds[l]; a hair of slack absorbs rounding.
            return bisect.bisect_right(self.thresholds, f.sent * (1 + 1e-12) + 1e-9)
        if self.discipline == "qsjf":
            return bisect.bisect_left(self.thresholds, f.size)
        return 0

    def mark(self, f: Flow) -> float:
        m = f.size
        if f.level is None and self.discipline == "mlfq":
            lv = self.level(f)
            if lv < len(self.thresholds):
                m = min(m, self.thresholds[lv])
        return m

    def run(self) -> list[float]:
        """Returns every flow's fluid FCT (completion - arrival), in seconds."""
        order = sorted(range(len(self.flows)), key=lambda i: (self.flows[i].arrival, i))
        actions = sorted(self.actions, key=lambda a: a.time)
        active: list[int] = []
        now, next_flow, next_action = 0.0, 0, 0
        while next_flow < len(order) or active or next_action < len(actions):
            live = [self.flows[i] for i in active]
            rates = priority_max_min(self.capacity, live, [self.level(f) for f in live])
            t_mark = INF
            for f, r in zip(live, rates):
                if r > 0:
                    t_mark = min(t_mark, now + (self.mark(f) - f.sent) / r)
            t_arrival = self.flows[order[next_flow]].arrival if next_flow < len(order) else INF
            t_action = actions[next_action].time if next_action < len(actions) else INF
            t = min(t_mark, t_arrival, t_action)
            if t == INF:
                raise RuntimeError("flows left that can never finish")
            for f, r in zip(live, rates):
                f.sent = min(f.size, f.sent + r * (t - now))
            now = t
            for i in list(active):  # completions (marks that are thresholds just change levels)
                f = self.flows[i]
                if f.sent >= f.size * (1 - 1e-12):
                    f.done = now
                    active.remove(i)
            while next_action < len(actions) and actions[next_action].time <= now:
                a = actions[next_action]
                f = self.flows[a.flow]
                if f.done is None and a.flow in active:
                    if a.level is not None:
                        f.level = a.level
                    if a.cap is not None:
                        f.cap = a.cap
                    if a.links is not None:
                        f.links = a.links
                next_action += 1
            while next_flow < len(order) and self.flows[order[next_flow]].arrival <= now:
                active.append(order[next_flow])
                next_flow += 1
        return [f.done - f.arrival for f in self.flows]


# --------------------------------------------------------------------------- topologies


def big_switch(hosts: int, c: float) -> tuple[dict, callable]:
    """Capacities and routes of a big switch: host h sends on ('up', h) and receives on ('down', h)."""
    cap = {("up", h): c for h in range(hosts)} | {("down", h): c for h in range(hosts)}
    return cap, lambda src, dst, path: (("up", src), ("down", dst))


def planes(hosts: int, count: int, c: float) -> tuple[dict, callable]:
    """`count` parallel big switches; path p is plane p."""
    cap = {(d, h, p): c for d in ("up", "down") for h in range(hosts) for p in range(count)}
    return cap, lambda src, dst, path: (("up", src, path), ("down", dst, path))


def leaf_spine(racks: int, per_rack: int, spines: int, c: float, oversubscription: float) -> tuple[dict, callable]:
    """Hosts under ToRs, every ToR linked to every spine at per_rack c / (spines oversubscription)."""
    fabric = per_rack * c / (spines * oversubscription)
    n = racks * per_rack
    cap = {("up", h): c for h in range(n)} | {("down", h): c for h in range(n)}
    cap |= {("tor", r, s): fabric for r in range(racks) for s in range(spines)}
    cap |= {("spine", s, r): fabric for r in range(racks) for s in range(spines)}

    def route(src, dst, path):
        rs, rd = src // per_rack, dst // per_rack
        if rs == rd:
            return (("up", src), ("down", dst))
        return (("up", src), ("tor", rs, path), ("spine", path, rd), ("down", dst))

    return cap, route


def single_link(c: float) -> tuple[dict, callable]:
    return {"link": c}, lambda src, dst, path: ("link",)
