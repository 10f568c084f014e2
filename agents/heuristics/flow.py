"""The flow family's baselines and PIAS's threshold optimizer.

The baselines are the engine's scheduling policies
(:data:`dcgym.envs.flow.policies.FLOW_POLICIES`: fair sharing, QSJF, QLAS,
PIAS, LAS, SRPT), every one routing by ECMP; their names and parameters are
part of the scenario schema, since the engine runs them. What a ranked
policy (QSJF, QLAS, PIAS) needs is a set of thresholds; PIAS's sets are
published for 8 queues only, so this module also finds thresholds:

- :func:`model_thresholds`: PIAS's threshold model (§4.2 of the NSDI paper,
  AuTO §4.1, eq. 7): queue j carries the bytes flows send between
  alpha_{j-1} and alpha_j (MLFQ) or the flows whose size falls there
  (QSJF); each queue is an M/M/1 queue of 1460-byte packets on the
  capacity the queues above leave; the thresholds minimise the mean over
  flows of the delays of the queues a flow passes. Minimised on a log grid
  (coordinate descent from several starts). Its optimum can collapse:
  thresholds coincide (data mining's 4-queue MLFQ set uses 3 queues), so
  fewer queues are used than there are. The 4-queue presets and the 8-queue
  QSJF presets of :mod:`dcgym.envs.flow.thresholds` are its answers at
  load 0.8.
- :func:`descend`: the coordinate descent both searches use, one threshold
  at a time over a log grid of packets (within its neighbours), until a
  sweep changes nothing; the model's cost is the model's delays, the
  simulator's (:func:`dcgym.agents.evaluation.flow_thresholds.search_thresholds`)
  the mean FCT of a scenario's flows measured as the evaluation measures them.
  On AuTO's testbed the simulator's search improves the model's sets by
  0.01-0.7% of mean FCT (docs/flow.md has the command,
  ``benchmarks/flow_thresholds.py``, and both methods' answers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dcgym.envs.flow.policies import FLOW_POLICIES
from dcgym.envs.flow.thresholds import PACKET_BYTES

__all__ = [
    "BASELINES",
    "descend",
    "model_objective",
    "model_thresholds",
    "packet_grid",
    "starts",
]

BASELINES: dict[str, str] = {name: info.summary for name, info in FLOW_POLICIES.items()}
"""Fair sharing, QSJF, QLAS, PIAS, LAS (single_link only) and SRPT; each routes by ECMP."""


def packet_grid(steps_per_octave: int = 4, top_packets: int = 2**16) -> np.ndarray:
    """Thresholds in packets on a log grid: 2^(k / steps_per_octave) rounded, distinct, from 1 to top_packets."""
    k = np.arange(0, int(round(math.log2(top_packets) * steps_per_octave)) + 1)
    return np.unique(np.round(2.0 ** (k / steps_per_octave)).astype(np.int64))


# ------------------------------------------------------------------ PIAS's M/M/1 model


class _Cdf:
    """A piecewise-linear size CDF (from probability 0) with the integrals the model needs."""

    def __init__(self, points: Sequence[Sequence[float]]) -> None:
        self.x = np.array([p[0] for p in points], dtype=np.float64)
        self.p = np.array([p[1] for p in points], dtype=np.float64)
        self.mean = self.truncated(float(self.x[-1]))

    def F(self, x: float) -> float:
        return float(np.interp(x, self.x, self.p, left=0.0, right=1.0))

    def truncated(self, t: float) -> float:
        """E[min(S, t)]: the integral of 1 - F from 0 to t (exact: F is linear between breakpoints)."""
        xs = np.concatenate([[0.0], self.x[(self.x > 0) & (self.x < t)], [t]])
        tail = 1 - np.interp(xs, self.x, self.p, left=0.0, right=1.0)
        return float(np.sum(np.diff(xs) * (tail[:-1] + tail[1:]) / 2))

    def first_moment(self, t: float) -> float:
        """E[S; S <= t] = t F(t) - integral of F from 0 to t."""
        return t * self.F(t) - (t - self.truncated(t))


def model_objective(thresholds: Sequence[float], points: Any, load: float, kind: str) -> float:
    """PIAS's model (module docstring): the mean over flows of the summed M/M/1 delays, in packet times.

    ``thresholds`` in bytes (K - 1, non-decreasing), ``points`` the size CDF, ``load`` the link's offered
    fraction, ``kind`` ``mlfq`` or ``qsjf``. Infinite when some queue is overloaded. Units: the link serves
    one packet per unit of time; queue j gets mu_j = mu_{j-1} - lambda_{j-1} (what the queues above leave),
    holds lambda_j = flows per unit x packets a flow brings to it, and delays T_j = 1 / (mu_j - lambda_j).
    """
    cdf = points if isinstance(points, _Cdf) else _Cdf(points)
    edges = [0.0, *map(float, thresholds), float(cdf.x[-1])]
    flows = load * PACKET_BYTES / cdf.mean  # flows per packet time
    mu = 1.0
    delays, shares = [], []
    for a, b in zip(edges, edges[1:]):
        b = max(a, b)
        carried = cdf.truncated(b) - cdf.truncated(a) if kind == "mlfq" else cdf.first_moment(b) - cdf.first_moment(a)
        lam = flows * carried / PACKET_BYTES
        if lam >= mu:
            return math.inf
        delays.append(1.0 / (mu - lam))
        shares.append(cdf.F(b) - cdf.F(a))
        mu -= lam
    if kind == "mlfq":
        return float(sum(g * sum(delays[: i + 1]) for i, g in enumerate(shares)))
    return float(sum(g * d for g, d in zip(shares, delays)))


def model_thresholds(
    points: Sequence[Sequence[float]], load: float, levels: int, kind: str = "mlfq", grid: np.ndarray | None = None
) -> list[int]:
    """PIAS's model minimised over thresholds on a log grid of packets (coordinate descent, several starts)."""
    grid = packet_grid(8) if grid is None else np.asarray(grid)
    cdf = _Cdf(points)

    def cost(packets: Sequence[int]) -> float:
        return model_objective([p * PACKET_BYTES for p in packets], cdf, load, kind)

    best: tuple[float, list[int]] = (math.inf, [])
    for start in starts(grid, levels - 1):
        current, _ = descend(list(start), grid, cost)
        value = cost(current)
        if value < best[0]:
            best = (value, current)
    return best[1]


def starts(grid: np.ndarray, n: int) -> list[list[int]]:
    """Evenly spread starting sets over the grid (and near its bottom and top)."""
    m = len(grid)
    spreads = [np.linspace(0.1, 0.9, n), np.linspace(0.02, 0.3, n), np.linspace(0.5, 0.98, n)]
    return [[int(grid[int(round(f * (m - 1)))]) for f in spread] for spread in spreads]


def descend(current: list[int], grid: np.ndarray, cost, sweeps: int = 20) -> tuple[list[int], int]:
    """Coordinate descent over non-decreasing grid values; the final set and the evaluations made."""
    evaluations = 0
    value = cost(current)
    evaluations += 1
    for _ in range(sweeps):
        changed = False
        for i in range(len(current)):
            low = current[i - 1] if i > 0 else grid[0]
            high = current[i + 1] if i + 1 < len(current) else grid[-1]
            for candidate in grid[(grid >= low) & (grid <= high)]:
                if candidate == current[i]:
                    continue
                trial = [*current[:i], int(candidate), *current[i + 1 :]]
                v = cost(trial)
                evaluations += 1
                if v < value - 1e-12 * abs(value):
                    value, current, changed = v, trial, True
        if not changed:
            break
    return current, evaluations
