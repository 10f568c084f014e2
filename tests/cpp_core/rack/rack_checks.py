"""Config builders and statistical checks shared by the rack engine's tests.

The statistics follow test_theory.py: a check runs one config under R
independent seeds, takes the mean of the per-run estimates and its standard
error SE = std / sqrt(R), and asserts |mean - expected| <= Z * SE (+ a stated
deterministic error). With Z = 4.5 a correct engine fails one check with
probability below 4e-4 for R = 16 (Student t, 15 degrees of freedom) and
below 3e-3 for R = 8; the seeds are fixed, so outcomes are reproducible. Every
check also bounds SE itself (`max_rel_se`), so that it cannot pass by being
noisy: the bound states which deviation the run length can detect.
"""

from __future__ import annotations

import functools
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dcgym.cpp_core import RackSim

Z = 4.5
SEEDS = range(1, 17)
THREADS = min(4, os.cpu_count() or 1)
HYPEREXP = {"dist": "hyperexp", "phases": [[0.5, 0.5], [0.5, 1.5]]}  # mean 1 us, SCV 1.5


def nodes(speeds=(1.0,), workers: int = 1, capacity: int = -1, count: int = 1) -> list[dict]:
    """Node groups: one group of `count` nodes per speed."""
    return [{"count": count, "workers": workers, "speed": float(s), "queue_capacity": capacity} for s in speeds]


def rack(
    groups: list[dict],
    *,
    service: dict | None = None,
    load: float = 0.5,
    seed: int = 1,
    warmup: int = 10_000,
    dispatch: dict | None = None,
    **extra,
) -> dict:
    """An engine config dict; `extra` adds top-level fields (entry, load_info, migration, dynamics...)."""
    return {
        "nodes": groups,
        "service": service or {"dist": "exp", "mean_us": 1.0},
        "load": load,
        "seed": seed,
        "warmup_tasks": warmup,
        "intra_node": {"discipline": "fcfs"},
        "dispatch": dispatch or {"policy": "random"},
        **extra,
    }


def run_seeds(config: dict, tasks: int, seeds=SEEDS) -> list[dict]:
    """results() of `config` run for `tasks` arrivals under each seed (cached: checks may share runs)."""
    return _run_seeds(json.dumps(config, sort_keys=True), tasks, tuple(seeds))


@functools.cache
def _run_seeds(config_json: str, tasks: int, seeds: tuple[int, ...]) -> list[dict]:
    config = json.loads(config_json)

    def one(seed: int) -> dict:
        sim = RackSim({**config, "seed": seed})
        sim.run_tasks(tasks)
        return sim.results()

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, seeds))


def run(config: dict, tasks: int) -> RackSim:
    sim = RackSim(config)
    sim.run_tasks(tasks)
    return sim


def latency(results: list[dict], key: str = "mean") -> np.ndarray:
    return np.array([r["latency_us"][key] for r in results])


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


def check_same_mean(a, b, *, max_rel_se: float, what: str) -> None:
    """Two independent samples of per-run estimates have the same mean: |ma - mb| <= Z * hypot(SEa, SEb)."""
    (ma, sa), (mb, sb) = mean_and_se(a), mean_and_se(b)
    se = math.hypot(sa, sb)
    assert se <= max_rel_se * abs(mb), f"{what}: combined SE {se:.4g} exceeds {max_rel_se:.2%} of {mb:.6g}"
    assert abs(ma - mb) <= Z * se, (
        f"{what}: {ma:.6g} (SE {sa:.3g}) vs {mb:.6g} (SE {sb:.3g}), {(ma - mb) / mb:+.3%}, tolerance {Z * se:.3g}"
    )


def arrivals_per_node(results: dict) -> np.ndarray:
    """Tasks each node has received (kept or migrated in): completed, dropped or still there."""
    n = results["nodes"]
    return (n["completed"] + n["dropped"] + n["outstanding"]).astype(np.int64)


def canonical(x):
    """results() with floats as hex strings and arrays as bytes: == is bit-for-bit equality."""
    if isinstance(x, dict):
        return {k: canonical(v) for k, v in x.items()}
    if isinstance(x, list):
        return [canonical(v) for v in x]
    if isinstance(x, np.ndarray):
        return (str(x.dtype), x.shape, x.tobytes())
    if isinstance(x, float):
        return x.hex()
    return x
