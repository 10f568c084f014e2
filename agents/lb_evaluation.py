"""Evaluation on multistage (multi-LB) scenarios: LB heuristics and trained lb_v0 policies, same document.

:func:`dcgym.agents.evaluation.evaluate` comes here when the scenario is
``kind: multistage`` and a trained lb_v0 policy is among the policies. Every
policy runs at every load with every seed for the same stretch of simulated
time: ``tasks`` flows at the offered rate, rounded up to whole decision
periods, of which the first ``warmup_fraction`` (10%) are warm-up, excluded
from the statistics by the engine (``warmup_flows``). A heuristic
(``ecmp``, ``wcmp``, ``lsq``, ``sed``, ``oracle``) runs in
``MultistageSim`` directly; a trained policy runs through lb_v0, setting
every LB's weights each decision period.

The result rows have the fields of the rack evaluation, read for flows:
``latency_us`` is the flow completion time (a rejected flow counts with the
scenario's timeout, as in the paper), ``tasks_completed`` the flows ended,
``tasks_dropped`` the flows rejected, ``throughput_ktps`` thousands of flows
ended per second; ``migrations``, ``steals`` and ``failed_steals`` are 0.
The engine keeps no FCT histogram, so latency CDFs are empty.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.cpp_core import MultistageSim, check_multistage_config
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.lb_scenario import LbScenario

__all__ = ["WARMUP_FRACTION", "LbJob", "evaluate_lb", "horizon", "run_lb_checkpoint"]

WARMUP_FRACTION = 0.1
"""Fraction of a run's flows that are warm-up (multistage scenarios have no warmup_fraction field)."""

_EMPTY_HISTOGRAM = {"lower": np.zeros(0), "upper": np.zeros(0), "counts": np.zeros(0, np.int64)}
_PERCENTILES = ("mean", "p50", "p90", "p99", "p999")


def horizon(scenario: LbScenario, load: float, tasks: int, warmup: int) -> tuple[float, float]:
    """(end of warm-up, end of run) in microseconds: whole decision periods covering the expected arrivals."""
    rate = MultistageSim(scenario.engine_config(load=load, seed=0)).arrival_rate_per_us
    period = scenario.decision_period_us
    return math.ceil(warmup / rate / period) * period, math.ceil(tasks / rate / period) * period


def _row(policy: str, load: float, seed: int, fct: dict, dropped: int, warmup_flows: int, offered_per_us: float,
         measured_us: float, end_us: float, events: int | None, wall_s: float) -> dict[str, Any]:
    from dcgym.agents.evaluation import _finite

    count = int(fct["count"])
    return _finite({
        "policy": policy,
        "load": load,
        "seed": seed,
        "throughput_ktps": count / measured_us * 1e3 if measured_us > 0 else math.nan,
        "offered_ktps": offered_per_us * 1e3,
        "latency_us": {k: (float(fct[k]) if count else math.nan) for k in _PERCENTILES},
        "tasks_completed": count,
        "tasks_dropped": int(dropped),
        "tasks_warmup": int(warmup_flows),
        "migrations": 0,
        "steals": 0,
        "failed_steals": 0,
        "events": events,
        "sim_time_us": end_us,
        "wall_s": wall_s,
    })


@dataclass(frozen=True)
class LbJob:
    """One heuristic run on a multistage scenario: plain data, so it travels to Ray workers."""

    policy: str
    load: float
    seed: int
    config: dict[str, Any]
    warmup_us: float
    end_us: float

    def run(self) -> dict[str, Any]:
        """Run the engine to the end of warm-up and to the end; the result row."""
        start = time.perf_counter()
        sim = MultistageSim(self.config)
        sim.run_until(self.warmup_us)
        at_warmup = sim.results()
        sim.run_until(self.end_us)
        r = sim.results()
        row = _row(self.policy, self.load, self.seed, r["fct_us"], r["flows_rejected"] - at_warmup["flows_rejected"],
                   r["flows_warmup"], r["arrival_rate_per_us"], self.end_us - self.warmup_us, r["sim_time_us"],
                   r["events"], time.perf_counter() - start)
        return {"result": row, "histogram": _EMPTY_HISTOGRAM, "timeline": None}


class _WithWarmup:
    """A scenario whose engine configs exclude the first ``warmup`` flows from the statistics."""

    def __init__(self, scenario: LbScenario, warmup: int) -> None:
        self._scenario, self._warmup = scenario, warmup

    def engine_config(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self._scenario.engine_config(*args, **kwargs, warmup_flows=self._warmup)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scenario, name)


def run_lb_checkpoint(job, policy) -> dict[str, Any]:
    """A trained policy's run through lb_v0 (``job`` a :class:`dcgym.agents.checkpoints.CheckpointJob`)."""
    from dcgym.agents.algorithms import make_env

    start = time.perf_counter()
    env = make_env("lb_v0", {**job.env_config, "max_steps": 2**62})
    policy.check_env(env)
    warmup_us, end_us = horizon(env.scenario, job.load, job.tasks, job.warmup)
    env.scenario = _WithWarmup(env.scenario, job.warmup)  # reset() builds the engine from the scenario
    observations, infos = env.reset(seed=job.seed)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    period = env.period_us
    dropped = 0
    for k in range(round(end_us / period)):
        observations, _, _, _, infos = env.step(policy.act(observations, spaces))
        if (k + 1) * period > warmup_us:
            dropped += next(iter(infos.values()))["step_flows_rejected"]
    info = next(iter(infos.values()))
    capacity = sum(g.count * g.workers * g.speed for g in env.scenario.servers)
    offered = job.load * capacity / env.mean_flow_time_us
    row = _row(job.policy, job.load, job.seed, info["fct_us"], dropped, job.warmup, offered, end_us - warmup_us,
               info["sim_time_us"], None, time.perf_counter() - start)
    return {"result": row, "histogram": _EMPTY_HISTOGRAM, "timeline": None}


def evaluate_lb(
    scenario: LbScenario,
    policies: Sequence[Any],
    loads: Sequence[float] | None = None,
    tasks: int = 5000,
    seed: int | None = None,
    *,
    seeds: Sequence[int] | None = None,
    progress: bool = True,
    workers: int | None = None,
    address: str | None = None,
    explore: bool = False,
    spec: str | Path | None = None,
) -> dict[str, Any]:
    """The results document of ``policies`` (LB heuristic names and checkpoint paths) on a multistage scenario."""
    from dcgym.agents.checkpoints import checkpoint_jobs, checkpoint_labels, is_checkpoint_spec
    from dcgym.agents.evaluation import Loads, Tasks, Workers, _document, _run_all, _seeds
    from dcgym.envs.validation import validate

    tasks = validate(Tasks, tasks, "tasks")
    seed_list = _seeds(seed, seeds)
    workers = None if workers is None else validate(Workers, workers, "workers")
    grid = list(scenario.loads) if loads is None else validate(Loads, loads, "loads")
    trained = [p for p in policies if is_checkpoint_spec(p)]
    labels = dict(zip(map(id, trained), checkpoint_labels(trained)))
    names = []
    for p in policies:
        if id(p) in labels:
            names.append(labels[id(p)])
        elif isinstance(p, str):
            scenario.check_policy(p)
            names.append(p)
        else:
            raise InvalidConfigError("policy", p, "an LB policy name (ecmp, wcmp, lsq, sed, oracle) or a checkpoint")
    for field, values in (("policy", names), ("loads", grid)):
        if len(set(values)) != len(values):
            raise InvalidConfigError(field, values, "distinct values (a repeated one would repeat its runs)")
    warmup = math.floor(WARMUP_FRACTION * tasks)
    jobs: list[Any] = []
    for p, name in zip(policies, names):
        if id(p) in labels:
            jobs += checkpoint_jobs(p, name, scenario, spec or scenario.name, grid, seed_list, tasks, warmup,
                                    explore=explore)
            continue
        for load in grid:
            warmup_us, end_us = horizon(scenario, load, tasks, warmup)
            for s in seed_list:
                config = scenario.engine_config(load=load, seed=s, policy=p, warmup_flows=warmup)
                check_multistage_config(config)
                jobs.append(LbJob(name, load, s, config, warmup_us, end_us))
    outputs = _run_all(jobs, workers, address, progress, scenario.name or "scenario")
    return _document(scenario, seed_list, tasks, jobs, outputs)
