"""The rack family's evaluation: dispatch heuristics, trained rack_v0 policies and Malcolm's policy files.

A heuristic runs in :class:`dcgym.cpp_core.RackSim` directly (:class:`Job`);
a checkpoint runs through rack_v0, its policy setting every node's tables
each heartbeat (:func:`run_checkpoint`), except one of Malcolm's fill actor, which runs as its ``fill`` file; a policy file runs inside the
engine through the C++ RackController (:class:`PolicyFileJob`); how each
source acts is :mod:`dcgym.agents.policies.rack`'s.
All three see the same tasks at the same seed (the engine's streams derive
from it) and report the same row (:class:`RackRow`): the first
``warmup_fraction`` of a run's arrivals are excluded from its statistics.

Percentiles are over the measured tasks that completed. Tasks dropped at a
full queue and tasks still in the system when the run ends are left out of
them: ``censored_fraction`` says what share of the measured tasks that is. A
row is ``censored`` when more than 0.1% of the measured tasks were dropped
(the tail of the highest percentile reported, p99.9: percentiles there may
be too low) or more than 1% are still in the rack at the end (a backlog that
grew: the rack is overloaded). A stable run of a few hundred thousand tasks
ends with far fewer in flight (Little's law), so it is not flagged.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dcgym.agents.evaluation import plots
from dcgym.agents.evaluation.checkpoints import checkpoint_jobs
from dcgym.agents.evaluation.document import finite
from dcgym.agents.evaluation.family import Change, Column, EvaluationFamily, Options, Percentiles
from dcgym.agents.evaluation.stats import nonzero_histogram
from dcgym.agents.policies.checkpoints import checkpoint_labels
from dcgym.agents.policies.rack import (
    DEFAULT_OPTIONS,
    PolicyFile,
    PolicyFileError,
    checkpoint_fill_file,
    controller_inputs,
    drive_controller,
    drive_env,
    game_engine_config,
    load_policy_file,
)
from dcgym.agents.policies.sources import Source, Spec
from dcgym.agents.progress import drain, run_in_pieces
from dcgym.cpp_core import RackController, RackSim, check_rack_config
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import DEFAULT_SCENARIO

log = logging.getLogger(__name__)

__all__ = [
    "DROPPED_ABOVE",
    "IN_FLIGHT_ABOVE",
    "Job",
    "PolicyFileJob",
    "RackEvaluation",
    "RackRow",
    "policy_file_jobs",
    "run_checkpoint",
    "run_record",
]

DROPPED_ABOVE = 0.001
"""A row is censored when more than this share of its measured tasks was dropped."""

IN_FLIGHT_ABOVE = 0.01
"""... or when more than this share is still in the rack at the end of the run."""

MAX_SAMPLES = 1_000_000
"""Load samples one run may keep (``--timeline``): each holds every node's load, so more would take gigabytes."""

_PERCENTILES = ("mean", "p50", "p90", "p99", "p999")
_TYPE_STATS = ("mean", "p50", "p99")


class RackRow(BaseModel):
    """One run of one policy at one load with one seed on a rack scenario (times in microseconds)."""

    model_config = ConfigDict(extra="forbid")
    policy: str = Field(description="the policy's label")
    load: float = Field(description="offered load, a fraction of the rack's capacity")
    seed: int = Field(description="the seed of every random stream of the run")
    throughput_ktps: float | None = Field(description="measured tasks completed per millisecond of measured time")
    offered_ktps: float = Field(description="the arrival rate the load stands for, thousands of tasks per second")
    latency_us: Percentiles = Field(description="arrival to completion of the measured tasks that completed, us")
    latency_by_type_us: dict[str, dict[str, float | None]] | None = Field(
        None, description="mean, p50 and p99 per task type, us (scenarios with types)"
    )
    tasks_completed: int = Field(description="measured tasks completed: the sample of latency_us")
    tasks_dropped: int = Field(description="measured tasks dropped at a full queue (no latency)")
    tasks_in_flight: int = Field(description="tasks still in the rack when the run ended (no latency)")
    tasks_warmup: int = Field(description="first arrivals excluded from every statistic")
    censored_fraction: float | None = Field(
        description="(dropped + in flight) / (completed + dropped + in flight): the measured tasks the "
        "percentiles leave out"
    )
    censored: bool = Field(
        description="more than 0.1% of the measured tasks dropped or more than 1% in flight at "
        "the end: the tail percentiles may be too low"
    )
    migrations: int = Field(description="tasks migrated between nodes after the warm-up")
    steals: int = Field(description="tasks stolen after the warm-up")
    failed_steals: int = Field(description="steal requests that found nothing after the warm-up")
    events: int | None = Field(description="engine events processed")
    sim_time_us: float = Field(description="simulated time at the end of the run, us")
    wall_s: float = Field(
        description="wall-clock seconds of the run (the only field that differs between identical runs)"
    )


@dataclass(frozen=True)
class Job:
    """One engine run of a heuristic: a policy at a load with a seed. Plain data, so it travels to Ray workers."""

    policy: str
    load: float
    seed: int
    config: dict[str, Any]
    tasks: int
    warmup: int
    groups: tuple[tuple[str, int, int, int], ...]  # (label, first node, nodes, workers) per node group
    timeline: bool  # keep this run's load samples
    types: tuple[str, ...] = ()  # the scenario's task type names, in order; empty without types
    drained: bool = False  # the config measures tasks - warmup arrivals, and the run drains them (Options)

    def run(self) -> dict[str, Any]:
        """Run the engine to the end of warm-up and to the end (drained: until the measured tasks have ended):
        the row, histogram and timeline."""
        start = time.perf_counter()
        sim = RackSim(self.config)
        run_in_pieces(sim.run_tasks, self.warmup)
        at_warmup = sim.results()
        measured_from_us = sim.now_us
        run_in_pieces(sim.run_tasks, self.tasks - self.warmup)
        if self.drained:
            drain(lambda: sim.now_us, sim.run_until, lambda: sim.results()["tasks_measured_pending"])
        return run_record(self, sim, at_warmup, measured_from_us, time.perf_counter() - start)


def run_record(job: Any, sim: RackSim, at_warmup: dict[str, Any], measured_from_us: float, wall_s: float) -> dict:
    """The result of one run, its latency histogram and timeline, from the finished simulation and its results at
    the end of the warm-up; shared by heuristics, trained policies and policy files."""
    r = sim.results()
    lower, counts = sim.latency_histogram()
    timeline = _timeline(sim, job) if job.timeline else None
    latency = r["latency_us"]
    measured_us = r["sim_time_us"] - measured_from_us
    types = getattr(job, "types", ())
    completed = latency["count"]
    dropped = r["tasks_dropped"] - at_warmup["tasks_dropped"]
    # Drained, tasks past the measured set are in no statistic: only measured ones still in flight censor the run.
    in_flight = r["tasks_measured_pending"] if getattr(job, "drained", False) else r["tasks_in_flight"]
    offered = completed + dropped + in_flight
    censored = (dropped + in_flight) / offered if offered else math.nan
    row = {
        "policy": job.policy,
        "load": job.load,
        "seed": job.seed,
        "throughput_ktps": completed / measured_us * 1e3 if measured_us > 0 else math.nan,
        "offered_ktps": r["arrival_rate_per_us"] * 1e3,
        "latency_us": {k: latency[k] for k in _PERCENTILES},
        **({"latency_by_type_us": _by_type(types, r, latency)} if types else {}),
        "tasks_completed": completed,
        "tasks_dropped": dropped,
        "tasks_in_flight": in_flight,
        "tasks_warmup": r["tasks_warmup"],
        "censored_fraction": censored,
        "censored": bool(offered and (dropped > DROPPED_ABOVE * offered or in_flight > IN_FLIGHT_ABOVE * offered)),
        "migrations": r["migrations"] - at_warmup["migrations"],
        "steals": r["steals"] - at_warmup["steals"],
        "failed_steals": r["failed_steals"] - at_warmup["failed_steals"],
        "events": r["events"],
        "sim_time_us": r["sim_time_us"],
        "wall_s": wall_s,
    }
    return {"result": finite(row), "histogram": nonzero_histogram(lower, counts), "timeline": timeline}


def _by_type(names: tuple[str, ...], r: dict[str, Any], latency: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Latency statistics per task type, by name: the engine's per-class latencies are indexed by type."""
    by_class = r["latency_by_class_us"] or [latency]  # the engine keeps no per-class histogram for one type
    return {name: {k: stats[k] for k in _TYPE_STATS} for name, stats in zip(names, by_class, strict=True)}


def _timeline(sim: RackSim, job: Any) -> dict[str, Any]:
    """Mean outstanding tasks per worker in each node group, at every sample."""
    times, loads = sim.take_samples()
    groups = []
    for label, first, count, workers in job.groups:
        per_worker = loads[:, first : first + count].astype(np.float64).mean(axis=1) / workers
        nodes = [first, first + count - 1]
        groups.append({"label": label, "nodes": nodes, "outstanding_per_worker": per_worker.tolist()})
    return {"policy": job.policy, "load": job.load, "seed": job.seed, "times_us": times.tolist(), "groups": groups}


def run_checkpoint(job: Any, policy: Any) -> dict[str, Any]:
    """A trained policy's run through rack_v0 (``job`` a CheckpointJob, :func:`dcgym.agents.policies.rack.drive_env`):
    as :class:`Job`, from the first heartbeat by which the warm-up arrivals have arrived."""
    start = time.perf_counter()
    driven = drive_env(policy, job.env_config, job.seed, job.warmup, job.tasks, job.sample_period_us)
    return run_record(job, *driven, time.perf_counter() - start)


@dataclass(frozen=True)
class PolicyFileJob:
    """One in-engine run of a policy file: plain data (the file's bytes included), so it travels to Ray workers."""

    policy: str  # the label in the results
    load: float
    seed: int
    data: bytes
    config: dict[str, Any]  # the engine config (game_engine_config)
    options: dict[str, Any]  # the controller's
    tasks: int
    warmup: int
    groups: tuple[tuple[str, int, int, int], ...] = ()  # as Job
    timeline: bool = False
    types: tuple[str, ...] = ()
    rate_factor: float = 1.0  # the highest arrival rate over the run (dynamics) / the initial one
    drained: bool = False  # as Job

    def run(self) -> dict[str, Any]:
        """The policy in the engine (:func:`dcgym.agents.policies.rack.drive_controller`): row, histogram, timeline."""
        start = time.perf_counter()
        driven = drive_controller(
            self.data, self.config, self.options, self.rate_factor, self.warmup, self.tasks, self.drained
        )
        return run_record(self, *driven, time.perf_counter() - start)


def policy_file_jobs(
    file: PolicyFile,
    scenario: Any,
    loads: Sequence[float],
    seeds: Sequence[int],
    tasks: int,
    warmup: int,
    groups: tuple = (),
    sample_period_us: float | None = None,
    drained: bool = False,
) -> list[PolicyFileJob]:
    """The runs of one policy file on ``scenario``, one per load and seed; everything checked before any run."""
    options, params = controller_inputs(file, scenario)
    period = scenario.sample_period_us if sample_period_us is None else sample_period_us
    peaks = [c.load for c in scenario.dynamics if c.kind == "load"]
    jobs = []
    for load in loads:
        for s in seeds:
            config = game_engine_config(
                scenario,
                load,
                s,
                warmup,
                sample_period_us,
                heartbeat_us=file.heartbeat_us,
                load_metric=file.load_metric,
            )
            if drained:
                config["measure_tasks"] = tasks - warmup
            check_rack_config(config)
            jobs.append(
                PolicyFileJob(
                    file.label,
                    load,
                    s,
                    file.data,
                    config,
                    options,
                    tasks,
                    warmup,
                    groups,
                    bool(period and period > 0 and s == seeds[0]),
                    tuple(scenario.type_names),
                    max([1.0, *(p / load for p in peaks)]),
                    drained,
                )
            )
    try:  # the controller's own checks (options, parameter shapes), on the first run's config
        RackController(jobs[0].config, options, **params)
    except ValueError as exc:
        raise PolicyFileError(file.path, str(exc)) from None
    return jobs


def _check_samples(scenario: Any, loads: Sequence[float], tasks: int, period_us: float, given: bool) -> None:
    """InvalidConfigError naming ``--timeline`` (or the scenario's ``sample_period_us``) if a run would keep more
    than :data:`MAX_SAMPLES` load samples: its expected length (``tasks`` arrivals at the lowest load's rate) over
    the period, with the shortest period that fits."""
    run_us = tasks / _arrival_rate_per_us(scenario, min(loads))
    if run_us / period_us > MAX_SAMPLES:
        raise InvalidConfigError(
            "sample_period_us (--timeline)" if given else "sample_period_us",
            period_us,
            f"a period of at least {math.ceil(run_us / MAX_SAMPLES):g} us for runs of {tasks:,} tasks (about "
            f"{run_us:,.0f} us each; at most {MAX_SAMPLES:,} load samples per run)",
        )


def _arrival_rate_per_us(scenario: Any, load: float) -> float:
    """Tasks per us that ``scenario`` offers at ``load``."""
    return RackSim(scenario.engine_config(load, seed=1)).results()["arrival_rate_per_us"]


class RackEvaluation(EvaluationFamily):
    """Racks: latency in microseconds, throughput in thousands of tasks per second."""

    kind = "rack"
    work = "tasks"
    default_work = 1_000_000
    run_length = "tasks on a rack"
    default_scenario = DEFAULT_SCENARIO
    default_heuristics = ("po2", "jsq", "sed")  # SED: the strongest per-task rule on heterogeneous racks
    fastest_rate = 4e6  # mm16 with po2: 3.6 million tasks a second
    row_model = RackRow
    summary_metrics: ClassVar[tuple[str, ...]] = (
        "throughput_ktps",
        *(f"latency_us.{p}" for p in _PERCENTILES),
        "tasks_dropped",
        "censored_fraction",
        "migrations",
        "steals",
    )
    headline = ("latency_us.p99", "p99 latency (µs)", 1)
    card_metric = ("latency_us.p99", "p99 latency (us)", ",.1f")
    cdf_field = "latency_cdf_us"
    censoring_note = (
        "* censored: more than 0.1% of the measured tasks were dropped, or more than 1% were unfinished "
        "at the end; the percentiles leave them out (left out: censored_fraction)"
    )

    def summary_paths(self, rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        if not all("latency_by_type_us" in r for r in rows):
            return self.summary_metrics
        types = rows[0]["latency_by_type_us"]
        by_type = tuple(f"latency_by_type_us.{name}.{p}" for name in types for p in _TYPE_STATS)
        return self.summary_metrics[:6] + by_type + self.summary_metrics[6:]

    def default_policies(self, scenario: Any) -> list[Any]:
        return [scenario.dispatch]

    def runs_on(self, scenario: Any, policy: str) -> bool:
        """Whether the heuristic runs on the scenario's rack (water_fill needs node entry, jbsq a switch, ...)."""
        try:
            scenario.check_policy(policy)
        except InvalidConfigError:
            return False
        return True

    def warmup_fraction(self, scenario: Any) -> float:
        return scenario.warmup_fraction

    def changes(self, scenario: Any, load: float) -> list[Change]:
        return [
            Change(f"dynamics.{k}", f"{change.kind} at {change.at_us:g} us", change.at_us)
            for k, change in enumerate(scenario.dynamics)
        ]

    def arrival_rate(self, scenario: Any, load: float) -> float:
        return _arrival_rate_per_us(scenario, load)

    def time_text(self, at: float) -> str:
        return f"{at:.0f} us"

    def zoo_usage(self, name: str, experiment: Mapping[str, Any]) -> str:
        """In the engine, with the options of rack_v0 the file does not store (those trained with, when not the
        defaults)."""
        env_args = dict(experiment.get("env_args") or {})
        options = [f"{k}={env_args[k]}" for k, v in DEFAULT_OPTIONS.items() if k in env_args and env_args[k] != v]
        spec = f"zoo:{name}" + (":" + ",".join(options) if options else "")
        note = " (the scenario with the overrides above, as a YAML file)" if env_args.get("overrides") else ""
        return (
            f"Evaluate in the engine: `python evaluate.py --policy {spec} --scenario {experiment['scenario']} "
            f"--policy po2`{note}."
        )

    def jobs(
        self,
        scenario: Any,
        scenario_spec: str | Path,
        specs: Sequence[Spec],
        loads: Sequence[float],
        seeds: Sequence[int],
        work: int,
        options: Options,
    ) -> list[Any]:
        warmup = self.warmup(scenario, work)
        groups = tuple(
            (
                f"{g.count} x {g.workers} workers" + (f" x speed {g.speed:g}" if g.speed != 1 else ""),
                ids.start,
                g.count,
                g.workers,
            )
            for g, ids in zip(scenario.nodes, scenario.node_ids())
        )
        trained = [s.given for s in specs if s.source is Source.CHECKPOINT]
        trained_labels = dict(zip(map(id, trained), checkpoint_labels(trained))) if trained else {}
        if options.drained and any(s.source is Source.CHECKPOINT for s in specs):
            raise InvalidConfigError("drained", True, "heuristics and policy files (checkpoints run undrained)")
        files = _policy_files([s.given for s in specs if s.source is Source.POLICY_FILE])
        trained_fills = {id(t): checkpoint_fill_file(t, trained_labels[id(t)]) for t in trained}
        period = scenario.sample_period_us if options.sample_period_us is None else options.sample_period_us
        if period > 0:
            _check_samples(scenario, loads, work, period, options.sample_period_us is not None)
        jobs: list[Any] = []
        for spec in specs:
            fill = trained_fills.get(id(spec.given))
            if fill is not None:  # a checkpoint of Malcolm's fill actor: its file, in the engine
                jobs += policy_file_jobs(fill, scenario, loads, seeds, work, warmup, groups, options.sample_period_us)
            elif spec.source is Source.CHECKPOINT:
                jobs += checkpoint_jobs(
                    spec.given,
                    trained_labels[id(spec.given)],
                    scenario,
                    scenario_spec,
                    loads,
                    seeds,
                    tasks=work,
                    warmup=warmup,
                    runner=RUN_CHECKPOINT,
                    groups=groups,
                    sample_period_us=options.sample_period_us,
                    explore=options.explore,
                )
            elif spec.source is Source.POLICY_FILE:
                jobs += policy_file_jobs(
                    files[id(spec.given)],
                    scenario,
                    loads,
                    seeds,
                    work,
                    warmup,
                    groups,
                    options.sample_period_us,
                    options.drained,
                )
            else:
                policy = scenario.policy(spec.given)
                for load in loads:
                    for s in seeds:
                        config = scenario.engine_config(load, s, policy, warmup, options.sample_period_us)
                        if options.drained:
                            config["measure_tasks"] = work - warmup
                        check_rack_config(config)
                        keep = period > 0 and s == seeds[0]
                        types = tuple(scenario.type_names)
                        jobs.append(
                            Job(policy.label, load, s, config, work, warmup, groups, keep, types, options.drained)
                        )
        return jobs

    def timeline_values(self, scenario: Any, job: Any) -> float:
        """A kept timeline's samples (its expected run length over the period, at most :data:`MAX_SAMPLES`), each
        a time and every node group's load."""
        period = job.config.get("sample_period_us", 0) if getattr(job, "timeline", False) else 0
        if not period:
            return 0.0
        samples = min(MAX_SAMPLES, job.tasks / _arrival_rate_per_us(scenario, job.load) / period)
        return samples * (1 + len(job.groups))

    def columns(self, doc: Mapping[str, Any]) -> list[Column]:
        summary = doc["summary"]
        types = list(next((s["latency_by_type_us"] for s in summary if "latency_by_type_us" in s), {}))
        counts = [c for c in ("migrations", "steals") if any(s[c]["mean"] for s in summary)]
        return [
            Column("p99 (µs)", "latency_us.p99"),
            *(Column(f"p99 {t} (µs)", f"latency_by_type_us.{t}.p99") for t in types),
            Column("mean (µs)", "latency_us.mean"),
            Column("throughput (k tasks/s)", "throughput_ktps"),
            Column("dropped", "tasks_dropped", 0),
            *(Column(c, c, 0) for c in counts),
            *([Column("left out (%)", "censored_fraction", 2, 100.0)] if any(s["censored"] for s in summary) else []),
        ]

    def plots(self, doc: Mapping[str, Any], out: Path) -> dict[str, Path]:
        paths = {
            "p99": plots.plot_metric_vs_load(doc, out / "p99_vs_load.png", "latency_us.p99", "p99 latency (µs)"),
            "cdf": plots.plot_cdf(doc, out / "latency_cdf.png", "latency_cdf_us", "latency (µs)"),
        }
        if doc.get("timelines"):
            paths["timeline"] = plots.plot_load_over_time(doc, out / "load_over_time.png")
        return paths


RUN_CHECKPOINT = "dcgym.agents.evaluation.rack:run_checkpoint"
"""How a rack checkpoint job runs (its ``runner``)."""


def _policy_files(specs: list[Any]) -> dict[int, Any]:
    """The loaded and checked policy file of each spec, by the spec object's id; labels made distinct."""
    if not specs:
        return {}
    files = [load_policy_file(s) for s in specs]
    labels = [f.label for f in files]
    files = [replace(f, label=str(s)) if labels.count(f.label) > 1 else f for s, f in zip(specs, files)]
    return {id(s): f for s, f in zip(specs, files)}
