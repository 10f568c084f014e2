"""Runs and the statistical check of the flow engine's theory tests.

The statistics are those of the rack engine's tests: a check runs one config
under R = 16 independent seeds, takes the mean of the per-run estimates and
its standard error SE = std / sqrt(R), and asserts

    |mean - theory| <= Z * SE + bias * |theory|,   Z = 4.5,

where `bias` is a stated deterministic allowance (0 unless a test says why).
(mean - theory) / SE is Student-t with 15 degrees of freedom, and
P(|t_15| > 4.5) ~ 4e-4, so a correct engine fails one of the few dozen checks
with probability ~1%; the seeds are fixed, so outcomes are reproducible.
Every check also bounds SE itself (`max_rel_se`), so it cannot pass by being
noisy: the bound states which deviation the run length can detect.
"""

from __future__ import annotations

import functools
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dcgym.cpp_core import FlowSim

Z = 4.5
SEEDS = range(1, 17)
THREADS = min(2, os.cpu_count() or 1)  # the machine is shared: two runs at a time
GBPS = 1e9 / 8


def single_link(
    discipline: str, sizes, load: float, *, levels: int | None = None, thresholds=None, warmup: int = 0, **extra
) -> dict:
    sched = {"discipline": discipline}
    if levels is not None:
        sched["levels"] = levels
    if thresholds is not None:
        sched["thresholds_bytes"] = list(thresholds)
    return {
        "topology": {"kind": "single_link", "link_gbps": 1.0},
        "scheduling": sched,
        "workload": {"sizes": sizes, "load": load},
        "warmup_flows": warmup,
        **extra,
    }


def run_seeds(config: dict, flows: int, seeds=SEEDS) -> list[dict]:
    """Per seed: results(), and with record_flows the measured flows' sizes and FCTs (cached by config)."""
    return _run_seeds(json.dumps(config, sort_keys=True), flows, tuple(seeds))


@functools.cache
def _run_seeds(config_json: str, flows: int, seeds: tuple[int, ...]) -> list[dict]:
    config = json.loads(config_json)

    def one(seed: int) -> dict:
        sim = FlowSim({**config, "seed": seed})
        sim.run_flows(flows)
        out = {"results": sim.results()}
        if config.get("record_flows"):
            r = sim.records()
            keep = r["index"] >= config.get("warmup_flows", 0)
            out["size"], out["fct"] = r["size_bytes"][keep], r["fct_s"][keep]
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, seeds))


def mean_and_se(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def check_estimate(values, expected: float, *, max_rel_se: float, bias: float = 0.0, what: str) -> None:
    """The mean of per-seed estimates equals `expected` within Z * SE + bias * |expected|."""
    m, se = mean_and_se(values)
    assert se <= max_rel_se * abs(expected), (
        f"{what}: standard error {se:.4g} exceeds {max_rel_se:.2%} of the expected {expected:.6g}; run longer"
    )
    tol = Z * se + bias * abs(expected)
    assert abs(m - expected) <= tol, (
        f"{what}: mean of {len(values)} runs {m:.6g} vs expected {expected:.6g} "
        f"({(m - expected) / expected:+.3%}), tolerance {tol:.3g} = {Z} x SE {se:.3g} + bias"
    )


def per_bin(runs: list[dict], edges_bytes, theory_of_bytes) -> list[tuple[float, float, np.ndarray, np.ndarray]]:
    """For each size bin (lo, hi]: per-seed mean measured FCT and per-seed mean theoretical E[T(x)] over the
    very flows of that bin (the theory is conditional on the sizes drawn)."""
    out = []
    for lo, hi in zip(edges_bytes[:-1], edges_bytes[1:]):
        est, th = [], []
        for r in runs:
            m = (r["size"] > lo) & (r["size"] <= hi)
            est.append(r["fct"][m].mean())
            th.append(theory_of_bytes(r["size"][m]).mean())
        out.append((lo, hi, np.array(est), np.array(th)))
    return out


def tabulate(func, link, upto_bytes: float, extra_points=()):
    """func(link, x) on a fine grid of sizes in bytes, returned as a vectorised interpolant (bytes -> s):
    the formulas are smooth between the CDF's breakpoints, which the grid contains."""
    c = link.sizes.capacity
    grid = np.unique(np.concatenate([np.geomspace(1.0, upto_bytes, 600), np.asarray(extra_points, dtype=float)]))
    grid = grid[(grid >= 1.0) & (grid <= upto_bytes)]
    values = np.array([func(link, x / c) for x in grid])
    return lambda sizes: np.interp(sizes, grid, values)
