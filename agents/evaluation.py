"""Evaluate dispatch policies on a rack scenario: the library behind ``evaluate.py``.

Every policy runs at every load with every seed for ``tasks`` arrivals in the
C++ engine; the first ``warmup_fraction`` of them are excluded from the
statistics (and their count reported). The runs are independent jobs: run
serially in this process (``workers=0``) or in parallel on Ray (a local
cluster, or an existing one at ``address``), with the same numbers bit for
bit either way. The results document extends the one of DESIGN.md
("evaluate.py")::

    {scenario, seed, seeds, tasks, dcgym_version,
     results: [{policy, load, seed, throughput_ktps, offered_ktps, latency_us {mean, p50, p90, p99, p999},
                tasks_completed, tasks_dropped, tasks_warmup, migrations, steals, failed_steals,
                events, sim_time_us, wall_s}],                          one per (policy, load, seed)
     summary: [{policy, load, runs, throughput_ktps {mean, ci95, n}, latency_us {p99 {mean, ci95, n}, ...},
                tasks_dropped {...}, migrations {...}, steals {...}, latency_cdf_us [...]}],
     cdf_probabilities: [...],
     timelines: [{policy, load, seed, times_us, groups [{label, nodes, outstanding_per_worker}]}]}

``ci95`` is the half-width of a 95% Student-t interval over seeds (null for
one seed); ``latency_cdf_us`` holds the latency quantiles at
``cdf_probabilities`` over all seeds' tasks together. With task types
(RackSched §3.6), each result also has ``latency_by_type_us {NAME: {mean,
p50, p99}}`` and each summary the same of ``{mean, ci95, n}``. ``timelines``
(the first seed of each policy and load) is there when the scenario or the
caller sets a sampling period. Counts (tasks dropped, migrations, steals) exclude the
warm-up. Latencies are in microseconds and carry the engine histogram's
relative error (well under 1%). A statistic with no sample is ``None``
(``null`` in JSON), never NaN. The same seeds give the same document except
``wall_s``.

A policy spec that is a path (a checkpoint or run folder written by
``train.py``) is a trained policy: it runs through its environment with
:mod:`dcgym.agents.checkpoints` and gets the same result fields, named
``<algorithm> (trained)``. A policy spec that names a policy file (a
``.dcpol`` path, or ``zoo:NAME`` for the zoo's) is evaluated in the engine:
:mod:`dcgym.agents.export.in_engine` runs its Malcolm actor pair with the C++
RackController on the environment's engine config at the same seeds (the
same tasks), named ``<stem> (file)`` or ``<name> (zoo)``. A multistage
scenario (``kind: multistage``) runs its LB heuristics (ecmp, wcmp, lsq,
sed, oracle) and trained lb_v0 policies through
:mod:`dcgym.agents.lb_evaluation`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import Field
from tqdm import tqdm

from dcgym.agents.heuristics import Policy
from dcgym.agents.plots import plot_latency_cdf, plot_load_over_time, plot_p99_vs_load
from dcgym.agents.stats import CDF_PROBABILITIES, mean_ci, merged_quantiles, nonzero_histogram
from dcgym.cpp_core import RackSim, check_rack_config
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import Load, RackScenario, Seed, load_scenario
from dcgym.envs.validation import validate

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_TASKS", "Job", "evaluate", "parse_seeds", "plot_latency_cdf", "plot_load_over_time", "plot_p99_vs_load",
    "results_table", "run_job", "summary_table", "to_json", "write_plots", "write_results",
]

DEFAULT_TASKS = 1_000_000
"""Arrivals per run, warm-up included."""

PolicySpec = str | Mapping[str, Any] | Policy
Tasks = Annotated[int, Field(ge=1)]
Loads = Annotated[list[Load], Field(min_length=1)]
Seeds = Annotated[list[Seed], Field(min_length=1)]
Workers = Annotated[int, Field(ge=0, le=4096)]
SamplePeriod = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_PERCENTILES = ("mean", "p50", "p90", "p99", "p999")
_COUNTS = ("tasks_dropped", "migrations", "steals")
_TYPE_STATS = ("mean", "p50", "p99")


@dataclass(frozen=True)
class Job:
    """One engine run: a policy at a load with a seed. Plain data, so it travels to Ray workers."""

    policy: str
    load: float
    seed: int
    config: dict[str, Any]
    tasks: int
    warmup: int
    groups: tuple[tuple[str, int, int, int], ...]  # (label, first node, nodes, workers) per node group
    timeline: bool  # keep this run's load samples
    types: tuple[str, ...] = ()  # the scenario's task type names, in order; empty without types


def evaluate(
    scenario: RackScenario | str | Path,
    policies: PolicySpec | Sequence[PolicySpec] | None = None,
    loads: Sequence[float] | None = None,
    tasks: int = DEFAULT_TASKS,
    seed: int | None = None,
    progress: bool = True,
    *,
    seeds: Sequence[int] | None = None,
    workers: int | None = None,
    address: str | None = None,
    sample_period_us: float | None = None,
    explore: bool = False,
) -> dict[str, Any]:
    """Run every policy at every load with every seed and return the results document.

    ``scenario`` is a RackScenario or a name or path for :func:`load_scenario`;
    ``policies`` (one or a list, in any form :func:`parse_policy` accepts)
    default to the scenario's dispatch policy and ``loads`` to its grid.
    ``seed`` (one) or ``seeds`` (several) default to seed 1. ``workers``: 0
    runs serially in this process; N > 0 on a local Ray cluster of N CPUs (or
    the running Ray session, or the cluster at ``address``); None picks
    serial for a single run and Ray with every core otherwise.
    ``sample_period_us`` replaces the scenario's load-sampling period.
    A policy given as a path is a trained policy (module docstring); it acts
    deterministically unless ``explore``. A policy file (``.dcpol`` path or
    ``zoo:NAME``) runs in the engine (:mod:`dcgym.agents.export.in_engine`).
    Every argument and every engine config is checked before the first run,
    so bad input raises InvalidConfigError (or the engine's ValueError)
    without wasting a run.
    """
    if isinstance(policies, (str, Mapping, Policy, Path)):
        policies = [policies]
    trained = [p for p in policies or () if _is_checkpoint(p)]
    files = [p for p in policies or () if _is_policy_file(p)]
    spec = scenario if isinstance(scenario, (str, Path)) else scenario.name
    if isinstance(scenario, (str, Path)):
        scenario = load_scenario(scenario)
    if not isinstance(scenario, RackScenario):
        if files:
            raise InvalidConfigError("policy", str(files[0]), "a policy file only on a rack scenario (kind: rack): "
                                     "its Malcolm actor pair drives the rack's nodes")
        if getattr(scenario, "kind", None) == "multistage":
            from dcgym.agents.lb_evaluation import evaluate_lb

            if not policies:  # the scenario's own policy, as for racks
                policies = [scenario.policy if isinstance(scenario.policy, str) else ",".join(scenario.policy)]
            return evaluate_lb(scenario, policies, loads, tasks=tasks, seed=seed, seeds=seeds, progress=progress,
                               workers=workers, address=address, explore=explore, spec=spec)
        raise InvalidConfigError("scenario", scenario.name, "a rack scenario (kind: rack) or a multistage one")
    tasks = validate(Tasks, tasks, "tasks")
    seed_list = _seeds(seed, seeds)
    workers = None if workers is None else validate(Workers, workers, "workers")
    if sample_period_us is not None:
        sample_period_us = validate(SamplePeriod, sample_period_us, "sample_period_us")
    labels = _checkpoint_labels(trained)
    loaded = _policy_files(files)
    parsed = [labels[id(p)] if _is_checkpoint(p) else loaded[id(p)] if _is_policy_file(p) else scenario.policy(p)
              for p in policies] if policies else [scenario.dispatch]
    grid = scenario.loads if loads is None else validate(Loads, loads, "loads")
    for field, values in (("policy", [p if isinstance(p, str) else p.label for p in parsed]), ("loads", grid)):
        if len(set(values)) != len(values):
            raise InvalidConfigError(field, values, "distinct values (a repeated one would repeat its runs)")
    warmup = scenario.warmup_tasks(tasks)
    groups = tuple(
        (f"{g.count} x {g.workers} workers" + (f" x speed {g.speed:g}" if g.speed != 1 else ""), ids.start, g.count,
         g.workers)
        for g, ids in zip(scenario.nodes, scenario.node_ids())
    )
    jobs: list[Any] = []
    for given, p in zip(policies or [None], parsed):
        if isinstance(p, str):  # a trained policy
            from dcgym.agents.checkpoints import checkpoint_jobs

            jobs += checkpoint_jobs(given, p, scenario, spec, grid, seed_list, tasks, warmup, groups,
                                    sample_period_us, explore)
            continue
        if not isinstance(p, Policy):  # a policy file, run in the engine
            from dcgym.agents.export.in_engine import policy_file_jobs

            jobs += policy_file_jobs(p, scenario, grid, seed_list, tasks, warmup, groups, sample_period_us)
            continue
        for load in grid:
            for s in seed_list:
                config = scenario.engine_config(load, s, p, warmup, sample_period_us)
                keep = config["sample_period_us"] > 0 and s == seed_list[0]
                jobs.append(Job(p.label, load, s, config, tasks, warmup, groups, keep, tuple(scenario.type_names)))
    for job in jobs:
        if isinstance(job, Job):
            check_rack_config(job.config)
    outputs = _run_all(jobs, workers, address, progress, scenario.name or "scenario")
    return _document(scenario, seed_list, tasks, jobs, outputs)


def parse_seeds(text: str) -> list[int]:
    """``"5"`` -> seeds 1..5; ``"1,2,7"`` -> those seeds. Raises InvalidConfigError naming ``seeds``."""
    allowed = "a count N (seeds 1..N) or a comma-separated list of distinct seeds >= 0"
    parts = [part.strip() for part in str(text).split(",")]
    try:
        numbers = [int(part) for part in parts if part]
    except ValueError:
        raise InvalidConfigError("seeds", text, allowed) from None
    if not numbers or (len(parts) == 1 and numbers[0] < 1):
        raise InvalidConfigError("seeds", text, allowed)
    return list(range(1, numbers[0] + 1)) if len(parts) == 1 else numbers


def _is_checkpoint(spec: Any) -> bool:
    """Whether a policy spec is a path to a checkpoint or run folder (a trained policy) rather than a heuristic."""
    if not isinstance(spec, (str, Path)) or _is_policy_file(spec):
        return False
    from dcgym.agents.checkpoints import is_checkpoint_spec

    return is_checkpoint_spec(spec)


def _is_policy_file(spec: Any) -> bool:
    """Whether a policy spec names a policy file (a ``.dcpol`` path or ``zoo:NAME``), evaluated in the engine."""
    if not isinstance(spec, (str, Path)):
        return False
    from dcgym.agents.export.in_engine import is_policy_file_spec

    return is_policy_file_spec(spec)


def _policy_files(specs: list[Any]) -> dict[int, Any]:
    """The loaded and checked policy file of each spec, by the spec object's id; labels made distinct."""
    if not specs:
        return {}
    from dataclasses import replace

    from dcgym.agents.export.in_engine import load_policy_file

    files = [load_policy_file(s) for s in specs]
    labels = [f.label for f in files]
    files = [replace(f, label=str(s)) if labels.count(f.label) > 1 else f for s, f in zip(specs, files)]
    return {id(s): f for s, f in zip(specs, files)}


def _checkpoint_labels(specs: list[Any]) -> dict[int, str]:
    """The result label of each trained-policy spec, by the spec object's id."""
    if not specs:
        return {}
    from dcgym.agents.checkpoints import checkpoint_labels

    return {id(s): label for s, label in zip(specs, checkpoint_labels(specs))}


def _seeds(seed: int | None, seeds: Sequence[int] | None) -> list[int]:
    if seed is not None and seeds is not None:
        raise InvalidConfigError("seeds", list(seeds), f"nothing when seed ({seed}) is given: one or the other")
    if seeds is None:
        return [validate(Seed, 1 if seed is None else seed, "seed")]
    chosen = validate(Seeds, list(seeds), "seeds")
    if len(set(chosen)) != len(chosen):
        raise InvalidConfigError("seeds", chosen, "distinct seeds (a repeated seed repeats a run exactly)")
    return chosen


# ------------------------------------------------------------------------------------- running


def run_job(job: Job) -> dict[str, Any]:
    """One engine run: its result row, its latency histogram and (if asked) its load timeline."""
    if not isinstance(job, Job):  # a trained policy's run through its environment, or a multistage run
        return job.run()
    start = time.perf_counter()
    sim = RackSim(job.config)
    sim.run_tasks(job.warmup)
    at_warmup = sim.results()
    measured_from_us = sim.now_us
    sim.run_tasks(job.tasks - job.warmup)
    r = sim.results()
    return run_record(job, sim, at_warmup, measured_from_us, time.perf_counter() - start)


def run_record(job: Any, sim: RackSim, at_warmup: dict[str, Any], measured_from_us: float, wall_s: float) -> dict:
    """The result of one run (DESIGN.md fields), its latency histogram and timeline, from the finished
    simulation and its results at the end of the warm-up; shared by heuristics and trained policies."""
    r = sim.results()
    lower, counts = sim.latency_histogram()
    timeline = _timeline(sim, job) if job.timeline else None
    latency = r["latency_us"]
    measured_us = r["sim_time_us"] - measured_from_us
    types = getattr(job, "types", ())
    row = {
        "policy": job.policy,
        "load": job.load,
        "seed": job.seed,
        "throughput_ktps": latency["count"] / measured_us * 1e3 if measured_us > 0 else math.nan,
        "offered_ktps": r["arrival_rate_per_us"] * 1e3,
        "latency_us": {k: latency[k] for k in _PERCENTILES},
        **({"latency_by_type_us": _by_type(types, r, latency)} if types else {}),
        "tasks_completed": latency["count"],
        "tasks_dropped": r["tasks_dropped"] - at_warmup["tasks_dropped"],
        "tasks_warmup": r["tasks_warmup"],
        "migrations": r["migrations"] - at_warmup["migrations"],
        "steals": r["steals"] - at_warmup["steals"],
        "failed_steals": r["failed_steals"] - at_warmup["failed_steals"],
        "events": r["events"],
        "sim_time_us": r["sim_time_us"],
        "wall_s": wall_s,
    }
    return {"result": _finite(row), "histogram": nonzero_histogram(lower, counts), "timeline": timeline}


def _by_type(names: tuple[str, ...], r: dict[str, Any], latency: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Latency statistics per task type, by name: the engine's per-class latencies are indexed by type."""
    by_class = r["latency_by_class_us"] or [latency]  # the engine keeps no per-class histogram for one type
    return {name: {k: stats[k] for k in _TYPE_STATS} for name, stats in zip(names, by_class, strict=True)}


def _timeline(sim: RackSim, job: Job) -> dict[str, Any]:
    """Mean outstanding tasks per worker in each node group, at every sample."""
    times, loads = sim.take_samples()
    groups = []
    for label, first, count, workers in job.groups:
        per_worker = loads[:, first : first + count].astype(np.float64).mean(axis=1) / workers
        nodes = [first, first + count - 1]
        groups.append({"label": label, "nodes": nodes, "outstanding_per_worker": per_worker.tolist()})
    return {"policy": job.policy, "load": job.load, "seed": job.seed, "times_us": times.tolist(), "groups": groups}


def _run_all(jobs: list[Job], workers: int | None, address: str | None, progress: bool, name: str) -> list[dict]:
    if workers is None:
        workers = 0 if len(jobs) == 1 and address is None else _cores()
    bar = tqdm(total=len(jobs), desc=name, unit="run", disable=not progress)
    try:
        if workers == 0 and address is None:
            outputs = []
            for job in jobs:
                outputs.append(run_job(job))
                bar.update()
            return outputs
        return _run_on_ray(jobs, workers, address, bar)
    finally:
        bar.close()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _run_on_ray(jobs: list[Job], workers: int, address: str | None, bar: tqdm) -> list[dict]:
    """Run the jobs as Ray tasks, one CPU each; results come back in job order."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray  # only here: importing Ray takes a second

    started = not ray.is_initialized()
    if started and address is not None:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    elif started:
        ray.init(
            num_cpus=workers or _cores(), include_dashboard=False, log_to_driver=False,
            _node_ip_address="127.0.0.1", logging_level=logging.WARNING,
        )
    try:
        remote = ray.remote(num_cpus=1)(run_job)
        refs = [remote.remote(job) for job in jobs]
        position = {ref: k for k, ref in enumerate(refs)}
        outputs: list[dict | None] = [None] * len(jobs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                outputs[position[ref]] = ray.get(ref)
                bar.update()
        return outputs  # type: ignore[return-value]
    finally:
        if started:
            ray.shutdown()


# ------------------------------------------------------------------------------------ document


def _document(
    scenario: RackScenario, seeds: list[int], tasks: int, jobs: list[Job], outputs: list[dict]
) -> dict[str, Any]:
    results = [out["result"] for out in outputs]
    summary = []
    cells: dict[tuple[str, float], list[int]] = {}
    for k, job in enumerate(jobs):
        cells.setdefault((job.policy, job.load), []).append(k)
    for (policy, load), ks in cells.items():
        rows = [results[k] for k in ks]
        types = rows[0].get("latency_by_type_us") if all("latency_by_type_us" in r for r in rows) else None
        summary.append(
            {
                "policy": policy,
                "load": load,
                "runs": len(rows),
                "throughput_ktps": mean_ci([r["throughput_ktps"] for r in rows]),
                "latency_us": {p: mean_ci([r["latency_us"][p] for r in rows]) for p in _PERCENTILES},
                **({"latency_by_type_us": {
                    name: {p: mean_ci([r["latency_by_type_us"][name][p] for r in rows]) for p in _TYPE_STATS}
                    for name in types
                }} if types else {}),
                **{c: mean_ci([r[c] for r in rows]) for c in _COUNTS},
                "latency_cdf_us": merged_quantiles([outputs[k]["histogram"] for k in ks], CDF_PROBABILITIES),
            }
        )
    doc = {
        "scenario": scenario.name,
        "seed": seeds[0] if len(seeds) == 1 else None,
        "seeds": seeds,
        "tasks": tasks,
        "dcgym_version": version("dcgym"),
        "results": results,
        "summary": _finite(summary),
        "cdf_probabilities": list(CDF_PROBABILITIES),
    }
    timelines = [out["timeline"] for out in outputs if out["timeline"] is not None]
    if timelines:
        doc["timelines"] = timelines
    return doc


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
    """One row per run, nested fields flattened (``latency_us_p99``), the scenario repeated."""
    table = pd.json_normalize(list(doc["results"]), sep="_")
    table.insert(0, "scenario", doc["scenario"])
    return table


def summary_table(doc: Mapping[str, Any]) -> pd.DataFrame:
    """One row per policy and load: mean and 95% half-width of each statistic (``latency_us_p99_mean``)."""
    rows = [{k: v for k, v in s.items() if k != "latency_cdf_us"} for s in doc["summary"]]
    table = pd.json_normalize(rows, sep="_")
    table.insert(0, "scenario", doc["scenario"])
    return table


def write_results(doc: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.json``, ``results.csv`` and ``summary.csv`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "csv": out / "results.csv", "summary": out / "summary.csv"}
    paths["json"].write_text(to_json(doc) + "\n", encoding="utf-8")
    results_table(doc).to_csv(paths["csv"], index=False)
    summary_table(doc).to_csv(paths["summary"], index=False)
    for path in paths.values():
        log.info("wrote %s", path)
    return paths


def write_plots(doc: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``p99_vs_load.png``, ``latency_cdf.png`` and, with timelines, ``load_over_time.png``."""
    out = Path(out_dir)
    paths = {
        "p99": plot_p99_vs_load(doc, out / "p99_vs_load.png"),
        "cdf": plot_latency_cdf(doc, out / "latency_cdf.png"),
    }
    if doc.get("timelines"):
        paths["timeline"] = plot_load_over_time(doc, out / "load_over_time.png")
    return paths
