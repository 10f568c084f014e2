"""Exact M/G/1 results for one bottleneck link, over piecewise-linear size CDFs.

The engine's `single_link` topology is an M/G/1 queue: Poisson flow arrivals
at rate lam (flows/s), sizes S (bytes) drawn from a piecewise-linear CDF, one
link of C bytes/s. Here a size x is measured in seconds of work, x / C, so the
formulas read as in the textbooks; `Sizes` holds the distribution and its
partial moments. Pure Python + scipy; nothing is shared with the engine.

Sources: Kleinrock, Queueing Systems Vol. I (1975) ch. 5 and Vol. II (1976)
ch. 4; Harchol-Balter, Performance Modeling and Design of Computer Systems
(2013) ch. 23, 30, 32-33; Schrage and Miller, Operations Research 14(4), 1966.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import integrate

# The engine floors every drawn size at one byte (a flow carries at least one byte).
MIN_SIZE_BYTES = 1.0


@dataclass(frozen=True)
class Piece:
    """Probability `mass` spread uniformly on [lo, hi] (an atom when lo == hi)."""

    lo: float
    hi: float
    mass: float


class Sizes:
    """A flow-size distribution in seconds of work: bytes / capacity.

    `cdf` is the engine's list of (bytes, cumulative probability) points; sizes
    below MIN_SIZE_BYTES become MIN_SIZE_BYTES, as in the engine.
    """

    def __init__(self, cdf: list[tuple[float, float]], capacity_bytes_per_s: float):
        c = capacity_bytes_per_s
        floor = MIN_SIZE_BYTES
        pieces: list[Piece] = []
        below = 0.0  # probability of sizes under the floor
        for (x0, p0), (x1, p1) in zip(cdf, cdf[1:]):
            mass = p1 - p0
            if mass <= 0:
                continue
            if x1 <= floor:
                below += mass
                continue
            if x0 < floor:  # split the segment at the floor
                cut = mass * (floor - x0) / (x1 - x0)
                below += cut
                x0, mass = floor, mass - cut
            pieces.append(Piece(x0 / c, x1 / c, mass))
        if below > 0:
            pieces.insert(0, Piece(floor / c, floor / c, below))
        self.pieces = pieces
        self.capacity = c
        self.unfloored_mean_bytes = sum((p1 - p0) * (x0 + x1) / 2 for (x0, p0), (x1, p1) in zip(cdf, cdf[1:]))
        self._ends = [p.hi for p in pieces]

    # -- partial moments: integral of t^k dF(t) over [0, x] -----------------

    @staticmethod
    def _piece_moment(p: Piece, upto: float, k: int) -> float:
        """Integral of t^k dF over the part of piece p at or below `upto`."""
        if upto < p.lo:
            return 0.0
        if p.hi == p.lo:
            return p.mass * p.lo**k
        b = min(upto, p.hi)
        density = p.mass / (p.hi - p.lo)
        return density * (b ** (k + 1) - p.lo ** (k + 1)) / (k + 1)

    def partial(self, x: float, k: int) -> float:
        return sum(self._piece_moment(p, x, k) for p in self.pieces)

    def cdf(self, x: float) -> float:
        return self.partial(x, 0)

    def moment(self, k: int) -> float:
        return self.partial(math.inf, k)

    def truncated(self, x: float, k: int) -> float:
        """E[min(S, x)^k]."""
        return self.partial(x, k) + x**k * (1.0 - self.cdf(x))

    def breakpoints(self, upto: float) -> list[float]:
        return [e for e in self._ends if e < upto]


@dataclass(frozen=True)
class Link:
    """One link under Poisson arrivals: the engine's single_link at a given load."""

    sizes: Sizes
    load: float  # the config's load: lam = load x C / E[S] with E[S] of the unfloored CDF

    @property
    def lam(self) -> float:
        return self.load * self.sizes.capacity / self.sizes.unfloored_mean_bytes

    @property
    def rho(self) -> float:
        return self.lam * self.sizes.moment(1)

    def rho_upto(self, x: float) -> float:
        """rho(x) = lam * integral_0^x t dF(t): the load of flows no larger than x."""
        return self.lam * self.sizes.partial(x, 1)

    def rho_truncated(self, x: float) -> float:
        """rho_x = lam * E[min(S, x)]: the load of every flow's first x."""
        return self.lam * self.sizes.truncated(x, 1)


def ps_response(link: Link, x: float) -> float:
    """Processor sharing: E[T(x)] = x / (1 - rho) (Kleinrock Vol. II §4.4; Harchol-Balter ch. 30)."""
    return x / (1.0 - link.rho)


def ps_slowdown(link: Link) -> float:
    """Processor sharing: E[T(x)] / x = 1 / (1 - rho) for every x, hence for any set of sizes."""
    return 1.0 / (1.0 - link.rho)


def fb_response(link: Link, x: float) -> float:
    """Foreground-background (LAS): E[T(x)] = lam E[S_x^2] / (2 (1 - rho_x)^2) + x / (1 - rho_x),
    S_x = min(S, x), rho_x = lam E[S_x] (Kleinrock Vol. II §4.6; Harchol-Balter ch. 30)."""
    rx = link.rho_truncated(x)
    return link.lam * link.sizes.truncated(x, 2) / (2.0 * (1.0 - rx) ** 2) + x / (1.0 - rx)


def srpt_response(link: Link, x: float) -> float:
    """Preemptive SRPT (Schrage and Miller 1966; Harchol-Balter ch. 33):
    E[T(x)] = lam (int_0^x t^2 dF + x^2 (1 - F(x))) / (2 (1 - rho(x))^2) + int_0^x dt / (1 - rho(t))."""
    s = link.sizes
    rx = link.rho_upto(x)
    waiting = link.lam * (s.partial(x, 2) + x * x * (1.0 - s.cdf(x))) / (2.0 * (1.0 - rx) ** 2)
    points = s.breakpoints(x)
    residence, _ = integrate.quad(
        lambda t: 1.0 / (1.0 - link.rho_upto(t)), 0.0, x, points=points or None, limit=200, epsabs=0.0, epsrel=1e-10
    )
    return waiting + residence


def mlfq_first_level_response(link: Link, x: float, alpha1: float) -> float:
    """MLFQ (multilevel PS: strict priority between levels, PS inside): a flow that finishes in the first
    level (x <= alpha1) only ever competes with the first alpha1 of every flow, an M/G/1-PS queue of load
    rho_{alpha1} = lam E[min(S, alpha1)]: E[T(x)] = x / (1 - rho_{alpha1}) (Kleinrock Vol. II §4.7)."""
    assert x <= alpha1 * (1 + 1e-12)
    return x / (1.0 - link.rho_truncated(alpha1))


def pk_unfinished_work(link: Link) -> float:
    """Time-average unfinished work of any work-conserving discipline, in seconds of work:
    lam E[S^2] / (2 (1 - rho)) (Pollaczek-Khinchine; the FCFS wait seen by Poisson arrivals)."""
    return link.lam * link.sizes.moment(2) / (2.0 * (1.0 - link.rho))


def mean_over(func, link: Link, xs) -> float:
    """The mean of func(link, x) over the given sizes (seconds of work), with a cache for repeated sizes."""
    total = 0.0
    for x in xs:
        total += func(link, x)
    return total / len(xs)


def bins_by_quantile(link: Link, qs: list[float]) -> list[float]:
    """Size (seconds of work) at each cumulative probability in qs (inverse of the floored CDF)."""
    out = []
    for q in qs:
        acc = 0.0
        for p in link.sizes.pieces:
            if acc + p.mass >= q:
                frac = (q - acc) / p.mass if p.mass > 0 else 0.0
                out.append(p.lo + frac * (p.hi - p.lo))
                break
            acc += p.mass
        else:
            out.append(link.sizes.pieces[-1].hi)
    return out


__all__ = [
    "Link",
    "Sizes",
    "bins_by_quantile",
    "fb_response",
    "mean_over",
    "mlfq_first_level_response",
    "pk_unfinished_work",
    "ps_response",
    "ps_slowdown",
    "srpt_response",
]
