"""The Oracle: the cheapest allocation meeting every QoS target, by exhaustive search over the model's steady state.

OSML's ORACLE is "exhaustive offline sampling" for the best allocation
(§6.1); PARTIES' Oracle likewise. Here the samples are the model's own
stationary p99 (:meth:`ColoServer.steady_state`: no noise, no backlog, warm
caches), so the Oracle knows the loads and the model exactly; the run then
shows what that allocation does online, with noise.

**Cost** of an allocation: cores + ways (one unit of each weighs the same);
among the cheapest, the one with the smallest max p99 / target. Unused cores
and ways stay idle.

**Objective** ``slack`` (the fastest ideal): the allocation with the most
slack, found by bisection on the margin (:func:`most_slack`): the largest
margin m for which some allocation meets every target x (1 - m), and the
cheapest such allocation. Its queues drain fastest after a launch, so it
bounds convergence time and the share of samples within QoS from the side a
scheduler cannot beat at the same loads; the cheapest allocation bounds the
cores and ways a scheduler needs at QoS.

**Search** (:func:`cheapest`): a service's latency alone on the server is a
lower bound of its latency next to others (the others only add memory
traffic and hyperthread neighbours), so each service's *frontier* alone, the
fewest ways meeting its target at each core count, prunes the joint search:
only joint allocations whose every part meets its target alone are
candidates. Candidates are evaluated jointly in order of total cost, level by
level, until a level holds a feasible one. To keep a search of three to five
services within a second, a service's candidates reach at most
``extra_ways`` (2) ways above its frontier at each core count (what the
others' interference may cost; ``extra_ways: -1`` searches every point, and a
test checks that against brute force on a small server).
"""

from __future__ import annotations

import numpy as np

from dcgym.agents.heuristics.colo.base import Scheduler, equal_split
from dcgym.envs.colo.server import ColoServer
from dcgym.envs.error import InvalidConfigError

__all__ = ["OBJECTIVES", "Oracle", "Solution", "cheapest", "frontiers", "most_slack"]

OBJECTIVES = ("cost", "slack")
"""The Oracle's objectives: the cheapest allocation meeting the targets, or the one with the most slack."""
SLACK_STEPS = 6
"""Bisection steps of :func:`most_slack` over the margin in [margin, 1): the margin found is within 1/64 of the best."""
SLACK_PROBE = 20_000
"""Joint allocations a bisection probe of :func:`most_slack` evaluates at most: a probe that finds none meeting the
targets by then counts as infeasible (the slack found is then a little less than the most)."""

MAX_CANDIDATES = 500_000
"""Joint allocations evaluated at most before the search gives up (an infeasible or huge mix)."""


class Solution:
    """The Oracle's answer: per-service cores and ways, their worst p99 / target, and whether it meets QoS."""

    def __init__(self, cores: np.ndarray, ways: np.ndarray, ratio: float, feasible: bool, evaluated: int) -> None:
        self.cores, self.ways, self.ratio, self.feasible, self.evaluated = cores, ways, ratio, feasible, evaluated

    @property
    def cost(self) -> int:
        return int(self.cores.sum() + self.ways.sum())


def frontiers(server: ColoServer, rps: np.ndarray, target_ms: np.ndarray, members: np.ndarray) -> dict[int, np.ndarray]:
    """Per member: fewest ways meeting its target alone at each core count 0..C (W + 1 where none does)."""
    n, C, W = server.num_services, server.total_cores, server.total_ways
    grid_c, grid_w = np.meshgrid(np.arange(1, C + 1), np.arange(1, W + 1), indexing="ij")
    out = {}
    for i in members:
        cores = np.zeros((C * W, n))
        ways = np.zeros((C * W, n))
        cores[:, i], ways[:, i] = grid_c.ravel(), grid_w.ravel()
        alone = np.where(np.arange(n) == i, rps, 0.0)
        ok = (server.steady_state(cores, ways, alone)[:, i] <= target_ms[i]).reshape(C, W)
        first = np.where(ok.any(axis=1), ok.argmax(axis=1) + 1, W + 1)
        out[int(i)] = np.concatenate([[W + 1], np.minimum.accumulate(first[::-1])[::-1]])  # monotone in cores
    return out


def cheapest(
    server: ColoServer,
    rps: np.ndarray,
    members: np.ndarray,
    margin: float = 0.0,
    extra_ways: int | None = 2,
    limit: int = MAX_CANDIDATES,
) -> Solution:
    """The cheapest allocation of the ``members`` (service indices) at loads ``rps`` meeting every target x (1 -
    margin), by the frontier-pruned search of the module docstring. A member's candidates are its points meeting its
    target alone with at most ``extra_ways`` ways above its frontier (None: any, the exact search). Infeasible: the
    best seen, with feasible False."""
    n, C, W = server.num_services, server.total_cores, server.total_ways
    members = np.asarray(members, dtype=np.int64)
    target = server.qos_ms * (1.0 - margin)
    front = frontiers(server, rps, target, members)
    extra = W if extra_ways is None else int(extra_ways)
    # Each member's candidate points (cores, ways), grouped by cost cores + ways.
    levels: list[dict[int, np.ndarray]] = []
    for i in members:
        f = front[int(i)]
        points = [(c, w) for c in range(1, C + 1) for w in range(int(f[c]), min(W, int(f[c]) + extra) + 1)]
        by_cost: dict[int, list[tuple[int, int]]] = {}
        for c, w in points:
            by_cost.setdefault(c + w, []).append((c, w))
        levels.append({k: np.asarray(v, dtype=np.int64) for k, v in by_cost.items()})
    best = Solution(np.zeros(n, np.int64), np.zeros(n, np.int64), np.inf, False, 0)
    if any(not lv for lv in levels):
        return best
    low = sum(min(lv) for lv in levels)
    evaluated = 0
    for budget in range(low, C + W + 1):
        pts = _combos(levels, budget, C, W)  # (K, m, 2)
        if not len(pts):
            continue
        cores = np.zeros((len(pts), n))
        ways = np.zeros((len(pts), n))
        cores[:, members], ways[:, members] = pts[:, :, 0], pts[:, :, 1]
        ratio = (server.steady_state(cores, ways, rps)[:, members] / target[members]).max(axis=1)
        ratio = np.where(np.isnan(ratio), np.inf, ratio)
        evaluated += len(pts)
        k = int(np.argmin(ratio))
        if ratio[k] <= 1.0:
            return Solution(cores[k].astype(np.int64), ways[k].astype(np.int64), float(ratio[k]), True, evaluated)
        if ratio[k] < best.ratio:
            best = Solution(cores[k].astype(np.int64), ways[k].astype(np.int64), float(ratio[k]), False, evaluated)
        if evaluated >= limit:
            break
    best.evaluated = evaluated
    return best


def most_slack(
    server: ColoServer, rps: np.ndarray, members: np.ndarray, margin: float = 0.0, extra_ways: int | None = 2
) -> Solution:
    """The cheapest allocation meeting every target x (1 - m) for the largest margin m >= ``margin`` that some
    allocation meets (among the first :data:`SLACK_PROBE` a probe evaluates), by bisection (:data:`SLACK_STEPS`) over :func:`cheapest`, its ratio against the targets x (1 -
    ``margin``) as :func:`cheapest`'s; infeasible at ``margin``: that answer."""
    best = cheapest(server, rps, members, margin, extra_ways)
    if not best.feasible:
        return best
    low, high = margin, 1.0
    for _ in range(SLACK_STEPS):
        mid = 0.5 * (low + high)
        solution = cheapest(server, rps, members, mid, extra_ways, limit=SLACK_PROBE)
        if solution.feasible:
            solution.ratio *= (1.0 - mid) / (1.0 - margin)  # its worst p99 against the targets x (1 - margin)
            best, low = solution, mid
        else:
            high = mid
    return best


def _combos(levels: list[dict[int, np.ndarray]], budget: int, C: int, W: int) -> np.ndarray:
    """Every joint choice of one point per member with total cost ``budget`` within C cores and W ways: (K, m, 2)."""
    costs = [sorted(lv) for lv in levels]
    m = len(levels)
    out: list[np.ndarray] = []

    def split(k: int, left: int, chosen: tuple[int, ...]) -> None:
        if k == m - 1:
            if left in levels[k]:
                out.append(_product([levels[j][c] for j, c in enumerate((*chosen, left))], C, W))
            return
        rest_min = sum(cs[0] for cs in costs[k + 1 :])
        for c in costs[k]:
            if c + rest_min > left:
                break
            split(k + 1, left - c, (*chosen, c))

    split(0, budget, ())
    out = [o for o in out if len(o)]
    return np.concatenate(out) if out else np.zeros((0, m, 2), dtype=np.int64)


def _product(points: list[np.ndarray], C: int, W: int) -> np.ndarray:
    """The cartesian product of per-member point arrays (each (p_k, 2)) as (K, m, 2), within C cores and W ways."""
    joint = points[0][:, None, :]
    for p in points[1:]:
        k, q = len(joint), len(p)
        joint = np.concatenate([np.repeat(joint, q, axis=0), np.tile(p, (k, 1))[:, None, :]], axis=1)
        keep = (joint[:, :, 0].sum(axis=1) <= C) & (joint[:, :, 1].sum(axis=1) <= W)
        joint = joint[keep]
    return joint


class Oracle(Scheduler):
    """Applies :func:`cheapest` whenever the running services or their loads change (module docstring)."""

    name = "oracle"
    PARAMS = {
        "interval_s": "seconds between checks for a change of services or loads (1)",
        "margin": "targets are met with this relative margin, p99 <= (1 - margin) x target (0.1)",
        "extra_ways": "candidates reach this many ways above a service's frontier alone (2; -1: any, exact)",
        "objective": "cost: the cheapest allocation meeting the targets; slack: the one with the most slack (cost)",
    }

    def __init__(
        self, interval_s: float | None = None, margin: float = 0.1, extra_ways: int = 2, objective: str = "cost"
    ) -> None:
        super().__init__(interval_s)
        if objective not in OBJECTIVES:
            raise InvalidConfigError("objective", objective, "one of " + ", ".join(OBJECTIVES))
        self.objective = objective
        if not (isinstance(margin, (int, float)) and 0 <= margin < 1):
            raise InvalidConfigError("margin", margin, "a fraction in [0, 1)")
        if isinstance(extra_ways, bool) or not isinstance(extra_ways, int) or extra_ways < -1:
            raise InvalidConfigError("extra_ways", extra_ways, "an integer >= 0, or -1 for any")
        self.margin = float(margin)
        self.extra_ways = None if extra_ways == -1 else extra_ways

    def reset(self, server: ColoServer, rng: np.random.Generator) -> None:
        super().reset(server, rng)
        self._rps = np.zeros(server.num_services)
        self.solution: Solution | None = None

    def act(self, server: ColoServer) -> None:
        rps = np.where(server.running, server.rps, 0.0)
        if not self.arrivals(server) and np.allclose(rps, self._rps, rtol=1e-9):
            return
        self._rps = rps
        members = np.flatnonzero(server.running)
        if not len(members):
            return
        search = most_slack if self.objective == "slack" else cheapest
        self.solution = search(server, rps, members, self.margin, self.extra_ways)
        if self.solution.feasible:
            server.allocate(self.solution.cores, self.solution.ways)
        else:  # nothing meets every target: the split that comes closest, else an equal one
            running = server.running
            if np.isfinite(self.solution.ratio):
                server.allocate(self.solution.cores, self.solution.ways)
            else:
                server.allocate(equal_split(server.total_cores, running), equal_split(server.total_ways, running))
