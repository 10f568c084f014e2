"""Shared plumbing of the flow reproductions (benchmarks/reproduce_pias.py, reproduce_auto_baselines.py).

A point is one policy at one load with one seed on a packaged flow scenario,
run as ``evaluate.py`` runs it (:class:`dcgym.agents.evaluation.flow.FlowJob`:
``flows`` arrivals, the first 10% warm-up, the rest measured to completion
or censored and counted). Points run on at most two processes; seeds of a
point are averaged.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dcgym.agents.evaluation.family import WARMUP_FRACTION
from dcgym.agents.evaluation.flow import FlowJob
from dcgym.envs.scenario import load_scenario

MAX_JOBS = 2  # other jobs share the machine


def cli(doc: str, flows: int, seeds: int) -> argparse.Namespace:
    """--flows, --seeds, --out, --jobs, --quick."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flows", type=int, default=flows, help=f"arrivals per point, 10%% warm-up (default {flows:,})")
    p.add_argument("--seeds", type=int, default=seeds, help=f"seeds per point, 1..N, averaged (default {seeds})")
    p.add_argument("--out", type=Path, default=Path("docs/reproductions"), help="folder for the PNG and markdown")
    p.add_argument("--jobs", type=int, default=MAX_JOBS, help=f"worker processes, at most {MAX_JOBS}")
    p.add_argument("--quick", action="store_true", help="a smoke run: 1,000 flows, one seed (numbers meaningless)")
    args = p.parse_args()
    if args.quick:
        args.flows, args.seeds = 1000, 1
    if args.flows < 100:
        p.error(f"--flows must be >= 100, got {args.flows}")
    if args.seeds < 1:
        p.error(f"--seeds must be >= 1, got {args.seeds}")
    if not 1 <= args.jobs <= MAX_JOBS:
        p.error(f"--jobs must be in [1, {MAX_JOBS}], got {args.jobs}")
    return args


def job(scenario: str, load: float, seed: int, policy: str, flows: int) -> FlowJob:
    s = load_scenario(scenario)
    warmup = math.floor(WARMUP_FRACTION * flows)
    p = s.policy(policy)
    config = s.engine_config(load, seed, p, warmup_flows=warmup, measure_flows=flows - warmup)
    return FlowJob(p.label, load, seed, config, flows, warmup)


def _run(j: FlowJob) -> dict[str, Any]:
    return j.run()["result"]


def run(points: Sequence[tuple[Any, FlowJob]], jobs: int) -> dict[Any, dict[str, Any]]:
    """Run every (key, job); rows of equal keys (seeds) averaged field by field (numbers only)."""
    if jobs > 1 and len(points) > 1:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            rows = pool.map(_run, [j for _, j in points])
    else:
        rows = [_run(j) for _, j in points]
    grouped: dict[Any, list[dict[str, Any]]] = {}
    for (key, _), r in zip(points, rows):
        grouped.setdefault(key, []).append(r)
    return {key: _mean(rs) for key, rs in grouped.items()}


def _mean(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in rows[0].items():
        if isinstance(v, dict):
            out[k] = _mean([r[k] for r in rows])
        elif isinstance(v, bool):
            out[k] = any(r[k] for r in rows)
        elif isinstance(v, (int, float)) and v is not None:
            values = [r[k] for r in rows if r[k] is not None and not (isinstance(r[k], float) and math.isnan(r[k]))]
            out[k] = statistics.fmean(values) if values else math.nan
        else:
            out[k] = v
    return out


def get(row: dict[str, Any], path: str) -> float:
    value: Any = row
    for part in path.split("."):
        value = value[part]
    return math.nan if value is None else float(value)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
