"""Exact queueing formulas the engine is tested against.

Every function states the model it solves and where the formula comes from.
Times are in units of the mean service time unless a function takes the
rates explicitly; all of them are pure Python (math + scipy root finding) and
share no code with the engine.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, stats

# ---------------------------------------------------------------------------
# M/M/1 and M/M/c (FCFS)
# ---------------------------------------------------------------------------


def mm1_response_quantile(lam: float, mu: float, q: float) -> float:
    """q-quantile of the FCFS M/M/1 response time, which is Exp(mu - lam).

    Kleinrock, Queueing Systems Vol. 1 (1975), Ch. 3 (M/M/1): the sojourn time
    of FCFS M/M/1 is exponential with rate mu - lam.
    """
    return -math.log1p(-q) / (mu - lam)


def erlang_c(c: int, offered: float) -> float:
    """Erlang C: probability that an arrival waits in M/M/c (offered = lam / mu < c).

    A. K. Erlang (1917); Kleinrock Vol. 1, Ch. 3 (M/M/m). Computed from the
    Erlang B recursion B(k) = a B(k-1) / (k + a B(k-1)), B(0) = 1, and
    C = c B / (c - a (1 - B)), which avoids the factorials of the textbook
    form.
    """
    if not 0 < offered < c:
        raise ValueError(f"offered load must be in (0, c={c}), got {offered}")
    b = 1.0
    for k in range(1, c + 1):
        b = offered * b / (k + offered * b)
    return c * b / (c - offered * (1.0 - b))


def mmc_mean_wait(c: int, lam: float, mu: float) -> float:
    """Mean FCFS wait in M/M/c: C(c, lam/mu) / (c mu - lam) (Kleinrock Vol. 1, Ch. 3)."""
    return erlang_c(c, lam / mu) / (c * mu - lam)


def mmc_mean_response(c: int, lam: float, mu: float) -> float:
    """Mean response time of M/M/c: the mean wait plus 1/mu."""
    return mmc_mean_wait(c, lam, mu) + 1.0 / mu


def mmc_response_tail(t: float, c: int, lam: float, mu: float) -> float:
    """P(T > t) for the FCFS M/M/c response time T = W + S.

    W is 0 with probability 1 - C and Exp(a), a = c mu - lam, otherwise
    (Kleinrock Vol. 1, Ch. 3); S ~ Exp(mu) is independent of W. The sum of
    Exp(a) and Exp(mu) is hypoexponential with tail
    (a e^{-mu t} - mu e^{-a t}) / (a - mu), and (1 + mu t) e^{-mu t} when a = mu.
    """
    cw = erlang_c(c, lam / mu)
    a = c * mu - lam
    if abs(a - mu) < 1e-9 * mu:
        hypo = (1.0 + mu * t) * math.exp(-mu * t)
    else:
        hypo = (a * math.exp(-mu * t) - mu * math.exp(-a * t)) / (a - mu)
    return (1.0 - cw) * math.exp(-mu * t) + cw * hypo


def mmc_response_quantile(q: float, c: int, lam: float, mu: float) -> float:
    """q-quantile of the M/M/c response time: the root of P(T > t) = 1 - q (brentq)."""
    hi = 1.0 / mu
    while mmc_response_tail(hi, c, lam, mu) > 1.0 - q:
        hi *= 2.0
    return optimize.brentq(lambda t: mmc_response_tail(t, c, lam, mu) - (1.0 - q), 0.0, hi, xtol=1e-12, rtol=1e-12)


# ---------------------------------------------------------------------------
# M/G/1
# ---------------------------------------------------------------------------


def pk_mean_wait(lam: float, es: float, es2: float) -> float:
    """Pollaczek-Khinchine mean wait of FCFS M/G/1: lam E[S^2] / (2 (1 - rho)), rho = lam E[S].

    Pollaczek (1930), Khinchine (1932); Kleinrock Vol. 1 (1975), Ch. 5.
    """
    rho = lam * es
    if not rho < 1:
        raise ValueError(f"unstable queue: rho = {rho}")
    return lam * es2 / (2.0 * (1.0 - rho))


def ps_conditional_response(x: float, rho: float) -> float:
    """E[T | S = x] = x / (1 - rho) in M/G/1 egalitarian processor sharing.

    Sakata, Noguchi and Oizumi (1971); Kleinrock, Queueing Systems Vol. 2
    (1976), Ch. 4 (processor sharing). Averaging over x gives E[T] = E[S]/(1 - rho).
    """
    return x / (1.0 - rho)


def gm1_sigma(interarrival_lst, mu: float) -> float:
    """Root sigma in (0, 1) of sigma = A*(mu (1 - sigma)) for the GI/M/1 queue.

    A* is the Laplace-Stieltjes transform of the interarrival time. An arrival
    finds the server busy with probability sigma, and the FCFS response time is
    Exp(mu (1 - sigma)) (Kleinrock Vol. 1, Ch. 6, the queue G/M/m).
    """
    g = lambda s: interarrival_lst(mu * (1.0 - s)) - s
    return optimize.brentq(g, 1e-15, 1.0 - 1e-12, xtol=1e-15, rtol=1e-14)


def erlang_k_lst(k: int, rate: float):
    """LST of the Erlang-k interarrival time of mean 1/rate: (k rate / (k rate + s))^k.

    Round robin over k nodes hands each node every k-th arrival of a Poisson
    stream of total rate k * rate, so each node is an E_k/M/1 queue.
    """
    return lambda s: (k * rate / (k * rate + s)) ** k


def po2_mean_field_response(rho: float, terms: int = 64) -> float:
    """Mean response of power-of-two-choices over N -> infinity M/M/1 nodes (mean service 1).

    The fraction of nodes with at least i tasks is rho^(2^i - 1) at the fixed
    point (Vvedenskaya, Dobrushin and Karpelevich 1996; Mitzenmacher 2001,
    IEEE TPDS 12(10)), so by Little's law E[T] = sum_{i>=1} rho^(2^i - 2).
    """
    total = 0.0
    for i in range(1, terms):
        e = 2**i - 2
        term = rho**e
        total += term
        if term < 1e-18:
            break
    return total


# ---------------------------------------------------------------------------
# Moments of the engine's service distributions (closed forms, independent of
# the engine's own Distribution.mean / second_moment)
# ---------------------------------------------------------------------------


def moment(cfg: dict, k: int) -> float:
    """E[S^k] of a service distribution given as the engine's config dict.

    exp: k! m^k. det: v^k. multimodal: sum p v^k. hyperexp: sum p k! m^k.
    lognormal with mean m and shape sigma: mu = ln m - sigma^2/2 and
    E[S^k] = exp(k mu + k^2 sigma^2 / 2). bounded Pareto(alpha, L, H), density
    alpha L^alpha x^(-alpha-1) / (1 - (L/H)^alpha) on [L, H] (Harchol-Balter,
    Performance Modeling and Design of Computer Systems, 2013, Ch. 20).
    empirical: a piecewise-linear CDF is a mixture of uniforms on each segment
    (and atoms where two points share a value); E[U^k] on [a, b] is
    (b^(k+1) - a^(k+1)) / ((k+1)(b-a)).
    """
    kind = cfg["dist"]
    if kind == "exp":
        return math.factorial(k) * cfg["mean_us"] ** k
    if kind == "det":
        return cfg["value_us"] ** k
    if kind == "multimodal":
        return sum(p * v**k for p, v in cfg["modes"])
    if kind == "hyperexp":
        return sum(p * math.factorial(k) * m**k for p, m in cfg["phases"])
    if kind == "lognormal":
        s = cfg["sigma"]
        mu = math.log(cfg["mean_us"]) - 0.5 * s * s
        return math.exp(k * mu + 0.5 * k * k * s * s)
    if kind == "bounded_pareto":
        a, lo, hi = cfg["alpha"], cfg["low_us"], cfg["high_us"]
        norm = a * lo**a / (1.0 - (lo / hi) ** a)
        e = k - a
        if abs(e) < 1e-12:
            return norm * math.log(hi / lo)
        return norm * (hi**e - lo**e) / e
    if kind == "empirical":
        total = 0.0
        pts = cfg["cdf"]
        for (x0, f0), (x1, f1) in zip(pts, pts[1:]):
            p = f1 - f0
            if p == 0:
                continue
            seg = x0**k if x1 == x0 else (x1 ** (k + 1) - x0 ** (k + 1)) / ((k + 1) * (x1 - x0))
            total += p * seg
        return total
    raise ValueError(f"unknown distribution {kind!r}")


def moment_by_quadrature(cfg: dict, k: int) -> float:
    """E[S^k] by numerical integration of the density (a cross-check of `moment`).

    Only for the continuous kinds whose density is simple to write down:
    lognormal, bounded_pareto and empirical.
    """
    kind = cfg["dist"]
    if kind == "lognormal":
        s = cfg["sigma"]
        mu = math.log(cfg["mean_us"]) - 0.5 * s * s
        # integrate over z ~ N(0, 1): x = exp(mu + s z)
        f = lambda z: math.exp(k * (mu + s * z)) * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        return integrate.quad(f, -40, 40, limit=400, epsabs=0, epsrel=1e-11)[0]
    if kind == "bounded_pareto":
        a, lo, hi = cfg["alpha"], cfg["low_us"], cfg["high_us"]
        c = a * lo**a / (1.0 - (lo / hi) ** a)
        # substitute x = e^y to keep the integrand smooth over many decades
        f = lambda y: math.exp(k * y) * c * math.exp(-a * y)
        return integrate.quad(f, math.log(lo), math.log(hi), limit=400, epsabs=0, epsrel=1e-11)[0]
    if kind == "empirical":
        total = 0.0
        pts = cfg["cdf"]
        for (x0, f0), (x1, f1) in zip(pts, pts[1:]):
            if f1 == f0:
                continue
            if x1 == x0:
                total += (f1 - f0) * x0**k
            else:
                dens = (f1 - f0) / (x1 - x0)
                total += integrate.quad(lambda x, d=dens: x**k * d, x0, x1, epsabs=0, epsrel=1e-12)[0]
        return total
    raise ValueError(f"no density for {kind!r}")


def cdf(cfg: dict):
    """The distribution function P(S <= x) of a continuous service distribution, vectorised.

    exp: 1 - e^(-x/m). lognormal: Phi((ln x - mu) / sigma), mu = ln m - sigma^2/2.
    bounded Pareto: (1 - (L/x)^alpha) / (1 - (L/H)^alpha) on [L, H].
    empirical: linear interpolation between the given points.
    """
    kind = cfg["dist"]
    if kind == "exp":
        return stats.expon(scale=cfg["mean_us"]).cdf
    if kind == "lognormal":
        s = cfg["sigma"]
        return stats.lognorm(s=s, scale=math.exp(math.log(cfg["mean_us"]) - 0.5 * s * s)).cdf
    if kind == "bounded_pareto":
        a, lo, hi = cfg["alpha"], cfg["low_us"], cfg["high_us"]
        return lambda x: np.clip((1 - (lo / np.clip(x, lo, hi)) ** a) / (1 - (lo / hi) ** a), 0.0, 1.0)
    if kind == "empirical":
        xs, ps = zip(*cfg["cdf"])
        return lambda x: np.interp(x, xs, ps)
    raise ValueError(f"no continuous CDF for {kind!r}")


def class_probabilities(cfg: dict) -> list[float]:
    """Probability of each class (mode or phase) of a mixture; [1.0] otherwise."""
    if cfg["dist"] == "multimodal":
        return [p for p, _ in cfg["modes"]]
    if cfg["dist"] == "hyperexp":
        return [p for p, _ in cfg["phases"]]
    return [1.0]
