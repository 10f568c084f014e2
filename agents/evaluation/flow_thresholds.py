"""PIAS's thresholds searched in the simulator: coordinate descent on the mean FCT a scenario's flows get.

One threshold at a time over a log grid of packets (within its neighbours,
:func:`dcgym.agents.heuristics.flow.descend`), each candidate set measured as the evaluation measures a run
(:func:`dcgym.agents.evaluation.flow.measure`: arrivals, 10% warm-up, every measured flow to completion) with
common random numbers over seeds, until a sweep changes nothing. On AuTO's testbed it improves the threshold
model's sets by 0.01-0.7% of mean FCT (docs/flow.md has the command, ``benchmarks/flow_thresholds.py``, and both
methods' answers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dcgym.agents.evaluation.family import WARMUP_FRACTION
from dcgym.agents.evaluation.flow import measure
from dcgym.agents.heuristics.flow import descend, packet_grid, starts
from dcgym.cpp_core import FlowSim
from dcgym.envs.flow.policies import FLOW_POLICIES
from dcgym.envs.flow.thresholds import PACKET_BYTES

__all__ = ["SearchResult", "search_thresholds"]


@dataclass(frozen=True)
class SearchResult:
    """What :func:`search_thresholds` found."""

    packets: list[int]
    mean_fct_ms: float
    evaluations: int


def search_thresholds(
    scenario: Any,
    load: float,
    policy: str = "qlas",
    levels: int | None = None,
    flows: int = 50_000,
    seeds: Sequence[int] = (1, 2),
    grid: np.ndarray | None = None,
    start: Sequence[int] | None = None,
    sweeps: int = 4,
) -> SearchResult:
    """Thresholds (packets) minimising the mean FCT of ``scenario`` at ``load`` under ``policy`` (qlas, pias or
    qsjf) with ``levels`` levels (default: the scenario's), by coordinate descent over ``grid`` (packets; default
    4 points per octave from 1 to 65536) from ``start`` (default: spread over the grid). Each evaluation runs
    ``flows`` arrivals per seed (10% warm-up) and measures them to completion, as the evaluation does."""
    grid = packet_grid(4) if grid is None else np.asarray(grid)
    k = levels or (FLOW_POLICIES[policy].default_levels or scenario.priorities)
    warmup = math.floor(WARMUP_FRACTION * flows)
    cache: dict[tuple[int, ...], float] = {}

    def cost(packets: Sequence[int]) -> float:
        key = tuple(int(p) for p in packets)
        if key not in cache:
            spec = {"policy": policy, "priorities": k, "thresholds": [p * PACKET_BYTES for p in key]}
            total = 0.0
            for s in seeds:
                config = scenario.engine_config(load, s, spec, warmup_flows=warmup, measure_flows=flows - warmup)
                sim = FlowSim(config)
                measure(sim, flows, warmup)
                total += sim.results()["fct_s"]["all"]["mean"]
            cache[key] = total / len(seeds) * 1e3
        return cache[key]

    first = list(start) if start is not None else starts(grid, k - 1)[0]
    found, _ = descend(first, grid, cost, sweeps)
    return SearchResult(found, cost(found), len(cache))
