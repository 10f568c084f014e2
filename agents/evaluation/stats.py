"""Statistics over evaluation runs: Student-t confidence intervals over seeds, merged latency histograms.

Each seed is one independent replication, so a statistic's spread over seeds
gives its confidence interval: mean +- t(0.975, n - 1) x s / sqrt(n), with s
the sample standard deviation (n >= 2). Latency CDFs merge the engine's
histograms (cpp_core/include/dcgym/kernel/histogram.hpp) over seeds; a
quantile is the midpoint of the bucket holding its rank, as in the engine,
so it carries the same relative error (at most 2^-9).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

CDF_PROBABILITIES: tuple[float, ...] = tuple(
    [round(k / 100, 6) for k in range(1, 100)]
    + [round(0.99 + k / 1000, 6) for k in range(1, 10)]
    + [round(0.999 + k / 10000, 6) for k in range(1, 10)]
)
"""Where latency CDFs are sampled: every percent, then finer into the tail up to p99.99."""


def mean_ci(values: Sequence[float | None], level: float = 0.95) -> dict[str, Any]:
    """``{mean, ci95, n}`` of the non-null values; ``ci95`` is the half-width (None below two values)."""
    xs = [float(v) for v in values if v is not None]
    n = len(xs)
    if n == 0:
        return {"mean": None, "ci95": None, "n": 0}
    mean = math.fsum(xs) / n
    if n < 2:
        return {"mean": mean, "ci95": None, "n": n}
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    from scipy import stats  # seconds to import: only when a cell has several seeds

    return {"mean": mean, "ci95": float(stats.t.ppf((1 + level) / 2, n - 1)) * sd / math.sqrt(n), "n": n}


def nonzero_histogram(lower: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """The occupied buckets of an engine histogram (``RackSim.latency_histogram()``): lower, upper edges, counts."""
    nz = np.flatnonzero(counts)
    upper = np.append(lower[1:], np.inf)[nz]
    return {"lower": lower[nz].astype(np.float64), "upper": upper, "counts": counts[nz].astype(np.int64)}


def merged_quantiles(histograms: Sequence[dict[str, np.ndarray]], probabilities: Sequence[float]) -> list[float | None]:
    """Quantiles of several runs' latencies together: the midpoint of the bucket holding each rank."""
    hists = [h for h in histograms if len(h["counts"])]
    if not hists:
        return [None] * len(probabilities)
    lower = np.concatenate([h["lower"] for h in hists])
    upper = np.concatenate([h["upper"] for h in hists])
    counts = np.concatenate([h["counts"] for h in hists])
    edges, first, inverse = np.unique(lower, return_index=True, return_inverse=True)
    merged = np.zeros(len(edges), dtype=np.int64)
    np.add.at(merged, inverse, counts)
    cum = np.cumsum(merged)
    ranks = np.maximum(1, np.ceil(np.asarray(probabilities) * cum[-1]))
    idx = np.searchsorted(cum, ranks)
    mid = (edges + np.where(np.isfinite(upper[first]), upper[first], edges)) / 2
    return [float(mid[i]) for i in idx]
