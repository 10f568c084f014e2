"""Evaluate dispatch policies on a rack scenario: the library behind ``evaluate.py``.

Every policy runs at every load for ``tasks`` arrivals in the C++ engine; the
first ``warmup_fraction`` of them are excluded from the statistics (and their
count reported). The results document is the one of DESIGN.md ("evaluate.py"):

    {scenario, seed, tasks, dcgym_version,
     results: [{policy, load, throughput_ktps, offered_ktps, latency_us {mean, p50, p90, p99, p999},
                tasks_completed, tasks_dropped, tasks_warmup, migrations, steals, events, sim_time_us, wall_s}]}

Latencies are in microseconds and carry the engine histogram's relative
error (well under 1%). A statistic with no sample is ``None`` (``null`` in
JSON), never NaN. The same seed gives the same document except ``wall_s``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
from matplotlib.figure import Figure
from pydantic import Field
from tqdm import tqdm

from dcgym.agents.heuristics import Policy, parse_policy
from dcgym.cpp_core import RackSim, check_rack_config
from dcgym.envs.scenario import Load, RackScenario, load_scenario
from dcgym.envs.validation import validate

log = logging.getLogger(__name__)

DEFAULT_TASKS = 1_000_000
"""Arrivals per run, warm-up included."""

PolicySpec = str | Mapping[str, Any] | Policy
Tasks = Annotated[int, Field(ge=1)]
Loads = Annotated[list[Load], Field(min_length=1)]
_PERCENTILES = ("mean", "p50", "p90", "p99", "p999")


def evaluate(
    scenario: RackScenario | str | Path,
    policies: PolicySpec | Sequence[PolicySpec] | None = None,
    loads: Sequence[float] | None = None,
    tasks: int = DEFAULT_TASKS,
    seed: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """Run every policy at every load and return the results document.

    ``scenario`` is a RackScenario or a name or path for :func:`load_scenario`;
    ``policies`` (one or a list, in any form :func:`parse_policy` accepts)
    default to the scenario's dispatch policy and ``loads`` to its grid.
    Every argument and every engine config is checked before the first run,
    so bad input raises InvalidConfigError (or the engine's ValueError)
    without wasting a run.
    """
    if not isinstance(scenario, RackScenario):
        scenario = load_scenario(scenario)
    tasks = validate(Tasks, tasks, "tasks")
    if isinstance(policies, (str, Mapping, Policy)):
        policies = [policies]
    parsed = [parse_policy(p) for p in policies] if policies else [scenario.dispatch]
    grid = scenario.loads if loads is None else validate(Loads, loads, "loads")
    warmup = scenario.warmup_tasks(tasks)
    runs = [(p, load, scenario.engine_config(load, seed, p, warmup)) for p in parsed for load in grid]
    for *_, config in runs:
        check_rack_config(config)
    results = []
    for policy, load, config in tqdm(runs, desc=scenario.name or "scenario", unit="run", disable=not progress):
        results.append(_run(policy, load, config, tasks, warmup))
        log.debug("%s at load %g: p99 %s us", policy, load, results[-1]["latency_us"]["p99"])
    return {
        "scenario": scenario.name,
        "seed": seed,
        "tasks": tasks,
        "dcgym_version": version("dcgym"),
        "results": results,
    }


def _run(policy: Policy, load: float, config: dict[str, Any], tasks: int, warmup: int) -> dict[str, Any]:
    """One engine run; throughput counts measured completions over the time after the warm-up."""
    start = time.perf_counter()
    sim = RackSim(config)
    sim.run_tasks(warmup)
    measured_from_us, dropped_in_warmup = sim.now_us, sim.results()["tasks_dropped"]
    sim.run_tasks(tasks - warmup)
    r = sim.results()
    wall_s = time.perf_counter() - start
    latency = r["latency_us"]
    measured_us = r["sim_time_us"] - measured_from_us
    return _finite(
        {
            "policy": policy.label,
            "load": load,
            "throughput_ktps": latency["count"] / measured_us * 1e3 if measured_us > 0 else math.nan,
            "offered_ktps": r["arrival_rate_per_us"] * 1e3,
            "latency_us": {k: latency[k] for k in _PERCENTILES},
            "tasks_completed": latency["count"],
            "tasks_dropped": r["tasks_dropped"] - dropped_in_warmup,
            "tasks_warmup": r["tasks_warmup"],
            "migrations": 0,
            "steals": 0,
            "events": r["events"],
            "sim_time_us": r["sim_time_us"],
            "wall_s": wall_s,
        }
    )


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def to_json(doc: Mapping[str, Any]) -> str:
    """The results document as JSON text (strict: no NaN)."""
    return json.dumps(doc, indent=2, allow_nan=False)


def results_table(doc: Mapping[str, Any]) -> pd.DataFrame:
    """One row per run, nested fields flattened (``latency_us_p99``), scenario and seed repeated."""
    table = pd.json_normalize(list(doc["results"]), sep="_")
    table.insert(0, "scenario", doc["scenario"])
    table.insert(1, "seed", doc["seed"])
    return table


def write_results(doc: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.json`` and ``results.csv`` into ``out_dir`` (created if needed); return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "csv": out / "results.csv"}
    paths["json"].write_text(to_json(doc) + "\n", encoding="utf-8")
    results_table(doc).to_csv(paths["csv"], index=False)
    for path in paths.values():
        log.info("wrote %s", path)
    return paths


def plot_p99_vs_load(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Plot p99 latency against load, one line per policy, log-scale latency; write a PNG to ``path``."""
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    for policy in dict.fromkeys(r["policy"] for r in doc["results"]):
        points = sorted(
            (r["load"], r["latency_us"]["p99"])
            for r in doc["results"]
            if r["policy"] == policy and r["latency_us"]["p99"] is not None
        )
        if points:
            ax.plot(*zip(*points), marker="o", label=policy)
    ax.set_yscale("log")
    ax.set_xlabel("load (fraction of capacity)")
    ax.set_ylabel("p99 latency (us)")
    ax.set_title(f"{doc['scenario']}: {doc['tasks']:,} tasks per run, seed {doc['seed']}")
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    log.info("wrote %s", path)
    return path
