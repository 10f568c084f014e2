"""The flow family's evaluation: scheduling heuristics and trained flow_v0 policies, rows of flow completion times.

Every policy runs at every load with every seed on the same flows (the
engine's streams derive from the seed): ``flows`` arrivals, of which the
first 10% (:data:`~dcgym.agents.evaluation.family.WARMUP_FRACTION`) are warm-up and the rest are *measured*.
Arrivals go on after the last measured one, so every measured flow shares
the network with steady-state traffic until it completes; the run stops
when every measured flow has completed, or after as much simulated time
again as the arrivals took (:data:`DRAIN_FACTOR`), whichever is first. A
measured flow still in flight then is left out of every statistic:
``flows_in_flight`` (and ``in_flight_large``: large flows starve first under
MLFQ and LAS) says how many, ``censored_fraction`` what share, and
``censored`` flags a row where more than 1% of the measured flows, or of the
measured large flows, are left out (:data:`CENSORED_ABOVE`).

A heuristic (``fair``, ``qsjf``, ``qlas``, ``pias``, ``las``, ``srpt``, with
parameters: docs/flow.md) runs in :class:`dcgym.cpp_core.FlowSim` directly; a
trained flow_v0 policy runs through the environment, acting every interval
(a checkpoint of one of AuTO's agents acts for that agent only, the other
held by the environment's rules, as in its training). A policy file of an
exported AuTO agent (FILE.dcpol: sRLA with the ``increasing`` head, lRLA
with ``multi_categorical``; both joined by ``+``) runs inside flow_v0's
engine, the C++ runtime deciding every interval with no Python in between
(:class:`FlowFileJob`, ``run_auto_policies``).

Rows (:class:`FlowRow`) hold FCTs in milliseconds (base RTT included),
overall and per size bucket (small <= 100 KB, medium <= 10 MB, large above;
KB = 1024 B), and slowdowns (FCT over the flow's FCT alone on its path).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
from dcgym.agents.policies.flow import auto_policy_files, trained_steps
from dcgym.agents.policies.sources import Source, Spec
from dcgym.agents.progress import run_in_pieces
from dcgym.agents.rl.envs import make_env
from dcgym.cpp_core import FlowSim, check_flow_config, flow_workloads, run_auto_policies
from dcgym.envs.error import InvalidConfigError

__all__ = [
    "BUCKETS",
    "CENSORED_ABOVE",
    "DRAIN_FACTOR",
    "FlowEvaluation",
    "FlowFileJob",
    "FlowJob",
    "FlowRow",
    "expected_arrivals",
    "measure",
    "run_checkpoint",
]

DRAIN_FACTOR = 1.0
"""After the last arrival counted, a run goes on for at most this times the time the arrivals took."""

CENSORED_ABOVE = 0.01
"""A row is censored when more than this share of its measured flows (or of its measured large flows) is left out."""

BUCKETS = ("small", "medium", "large")
"""Size buckets (stats.hpp): small <= 100 KB, medium <= 10 MB, large above (KB = 1024 B)."""

_SMALL, _MEDIUM = 100 * 1024, 10 * 1024 * 1024
_PERCENTILES = ("mean", "p50", "p90", "p99", "p999")


class FlowRow(BaseModel):
    """One run of one policy at one load with one seed on a flow scenario (FCTs in milliseconds)."""

    model_config = ConfigDict(extra="forbid")
    policy: str = Field(description="the policy's label")
    load: float = Field(
        description="offered load in the scenario's load_unit: each host's fraction of one link, or of all its "
        "ports (docs/flow.md)"
    )
    seed: int = Field(description="the seed of every random stream of the run")
    fct_ms: Percentiles = Field(description="flow completion time of the measured flows, base RTT included, ms")
    fct_small_ms: Percentiles = Field(description="FCT of the measured flows of at most 100 KB, ms")
    fct_medium_ms: Percentiles = Field(description="FCT of the measured flows of more than 100 KB, at most 10 MB, ms")
    fct_large_ms: Percentiles = Field(description="FCT of the measured flows of more than 10 MB, ms")
    slowdown: Percentiles = Field(
        description="FCT over the flow's FCT alone on its path (size / least link rate + base RTT), no unit"
    )
    flows_completed: int = Field(description="measured flows completed: the sample of every statistic")
    flows_in_flight: int = Field(description="measured flows still in flight when the run stopped (in no statistic)")
    in_flight_large: int = Field(description="of which large (more than 10 MB)")
    flows_warmup: int = Field(description="first arrivals excluded from every statistic")
    censored_fraction: float | None = Field(
        description="flows_in_flight / (flows_completed + flows_in_flight): the measured flows left out"
    )
    censored: bool = Field(
        description="more than 1% of the measured flows, or of the measured large flows, left out: the tail "
        "percentiles (of large flows above all) may be too low"
    )
    throughput_gbps: float = Field(
        description="bytes of the measured flows completed x 8 / time from the first measured arrival to the "
        "end, Gbps (the network's goodput for them)"
    )
    arrival_rate_per_s: float = Field(description="flows per second the load stands for (at the start)")
    busiest_link_util_pct: float = Field(
        description="utilisation of the busiest link from the first measured arrival to the end, % of its capacity"
    )
    mean_port_util_pct: float = Field(
        description="mean utilisation of the host ports (links with a host at one end) over the same time, % of "
        "capacity: what load the row is at, whatever the scenario's load_unit"
    )
    events: int | None = Field(description="engine events processed")
    sim_time_s: float = Field(description="simulated time at the end of the run, s")
    wall_s: float = Field(
        description="wall-clock seconds of the run (the only field that differs between identical runs)"
    )


# ------------------------------------------------------------------ one run


def _bucket_counts(sizes: np.ndarray) -> dict[str, int]:
    return {
        "small": int(np.count_nonzero(sizes <= _SMALL)),
        "medium": int(np.count_nonzero((sizes > _SMALL) & (sizes <= _MEDIUM))),
        "large": int(np.count_nonzero(sizes > _MEDIUM)),
    }


def measure(sim: FlowSim, flows: int, warmup: int, step: Any = None) -> dict[str, Any]:
    """Run ``sim`` (built with ``warmup_flows=warmup``, ``measure_flows=flows - warmup``) to ``flows`` arrivals,
    then until every measured flow has completed or DRAIN_FACTOR x the arrivals' time has passed.

    ``step(seconds)`` advances the run (default: ``sim.run_for``; a trained policy's runner passes its
    environment's step). Returns the counts the row needs: pending measured flows and the large ones among them.
    """
    advance = step or sim.run_for
    if step is None:
        run_in_pieces(sim.run_flows, flows)
    else:
        while sim.results()["flows_arrived"] < flows:
            advance()
    arrivals_s = sim.now_s
    deadline = arrivals_s * (1 + DRAIN_FACTOR)
    chunk = max(arrivals_s / 20, 1e-6)
    while sim.results()["flows_measured_pending"] > 0 and sim.now_s < deadline:
        if step is None:
            advance(min(chunk, deadline - sim.now_s))
        else:
            advance()
    return _left(sim, flows, warmup)


def _left(sim: FlowSim, flows: int, warmup: int) -> dict[str, Any]:
    """The measured flows still in flight when a run stopped, and the large ones among them."""
    table = sim.active_flows_table()
    index = np.asarray(table["index"])
    pending = (index >= warmup) & (index < flows)
    counts = _bucket_counts(np.asarray(table["size_bytes"])[pending])
    return {"in_flight": int(np.count_nonzero(pending)), "in_flight_large": counts["large"]}


def _percentiles(summary: Mapping[str, Any]) -> dict[str, float]:
    if not summary["count"]:
        return dict.fromkeys(_PERCENTILES, math.nan)
    return {k: float(summary[k]) * 1e3 for k in _PERCENTILES}


def row(policy: str, load: float, seed: int, sim: FlowSim, warmup: int, left: Mapping[str, int], wall_s: float) -> dict:
    """The result row of a finished run (``left``: :func:`measure`'s counts)."""
    r = sim.results()
    fct = r["fct_s"]
    completed = int(r["flows_measured"])
    in_flight = left["in_flight"]
    measured = completed + in_flight
    large = int(fct["large"]["count"]) + left["in_flight_large"]
    share = in_flight / measured if measured else math.nan
    large_share = left["in_flight_large"] / large if large else 0.0
    slowdown = r["slowdown"]["all"]
    return finite(
        {
            "policy": policy,
            "load": load,
            "seed": seed,
            "fct_ms": _percentiles(fct["all"]),
            **{f"fct_{b}_ms": _percentiles(fct[b]) for b in BUCKETS},
            "slowdown": {k: float(slowdown[k]) if slowdown["count"] else math.nan for k in _PERCENTILES},
            "flows_completed": completed,
            "flows_in_flight": in_flight,
            "in_flight_large": left["in_flight_large"],
            "flows_warmup": min(warmup, int(r["flows_arrived"])),
            "censored_fraction": share,
            "censored": bool(measured and (share > CENSORED_ABOVE or large_share > CENSORED_ABOVE)),
            "throughput_gbps": float(r["throughput_gbps"]),
            "arrival_rate_per_s": float(r["arrival_rate_per_s"]),
            "busiest_link_util_pct": 100.0 * float(r["busiest_link_utilization"]),
            "mean_port_util_pct": 100.0 * float(r["mean_port_utilization"]),
            "events": int(r["events"]),
            "sim_time_s": float(r["sim_time_s"]),
            "wall_s": wall_s,
        }
    )


def histogram(sim: FlowSim) -> dict[str, Any]:
    """The measured flows' slowdowns as the occupied buckets of the engine's histogram."""
    return nonzero_histogram(*sim.histogram("slowdown", "all"))


@dataclass(frozen=True)
class FlowJob:
    """One heuristic run on a flow scenario: plain data, so it travels to Ray workers."""

    policy: str
    load: float
    seed: int
    config: dict[str, Any]
    flows: int
    warmup: int
    balance: dict[str, Any] | None = None  # pathbal's moves (FlowPolicy.balance)

    def run(self) -> dict[str, Any]:
        """Run the engine (:func:`measure`); the result row and the slowdown histogram."""
        start = time.perf_counter()
        sim = FlowSim(self.config)
        left = measure(sim, self.flows, self.warmup, step=self._step(sim))
        out = row(self.policy, self.load, self.seed, sim, self.warmup, left, time.perf_counter() - start)
        return {"result": out, "histogram": histogram(sim), "timeline": None}

    def _step(self, sim: FlowSim) -> Callable[[], None] | None:
        return balancing(sim, self.balance, self.config["scheduling"]["levels"]) if self.balance else None


def balancing(sim: FlowSim, balance: Mapping[str, Any], levels: int) -> Callable[[], None]:
    """pathbal's step: one interval of the engine, then its moves (``FlowSim.balance_paths``, in C++); with
    ``demote`` the flows moved are pinned to the last of the ``levels``, from ``demote_bytes`` sent: the long flows
    short of it move first at MLFQ's level, then those past it move again, pinned (their path's cost counted at
    the last level)."""
    level = levels - 1 if balance["demote"] else -1
    long_bytes, pin_from, most = balance["long_bytes"], balance["demote_bytes"], balance["max_flows"]

    def step() -> None:
        sim.run_for(balance["interval_s"])
        if level >= 0 and pin_from > long_bytes:
            sim.balance_paths(long_bytes, most, -1)
            sim.balance_paths(pin_from, most, level)
        else:
            sim.balance_paths(long_bytes, most, level)

    return step


class _Measured:
    """A scenario whose engine configs exclude the first ``warmup`` arrivals and measure the next ones."""

    def __init__(self, scenario: Any, warmup: int, flows: int) -> None:
        self._scenario, self._warmup, self._flows = scenario, warmup, flows

    def engine_config(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self._scenario.engine_config(
            *args, **kwargs, warmup_flows=self._warmup, measure_flows=self._flows - self._warmup
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scenario, name)


def run_checkpoint(job: Any, policy: Any) -> dict[str, Any]:
    """A trained policy's run through flow_v0 (``job`` a CheckpointJob): as :class:`FlowJob`, the policy acting every
    interval (:func:`dcgym.agents.policies.flow.trained_steps`), from the first arrival to the end of the drain."""
    start = time.perf_counter()
    env = make_env("flow_v0", {**job.env_config, "max_steps": 2**62, "warmup_s": 0.0})
    policy.check_env(env)
    env.game.scenario = _Measured(env.game.scenario, job.warmup, job.tasks)  # reset() builds the engine from it
    observations, _ = env.reset(seed=job.seed)
    left = measure(env.sim, job.tasks, job.warmup, step=trained_steps(policy, env, observations))
    out = row(job.policy, job.load, job.seed, env.sim, job.warmup, left, time.perf_counter() - start)
    return {"result": out, "histogram": histogram(env.sim), "timeline": None}


@dataclass(frozen=True)
class FlowFileJob:
    """One run of exported AuTO agents (sRLA's thresholds, lRLA's choices, or both) on flow_v0's engine: the
    whole run in C++ (``run_auto_policies``), the runtime deciding every interval with no Python in between; an
    agent without a file is held by the environment's rules."""

    policy: str
    load: float
    seed: int
    env_config: dict[str, Any]
    paths: dict[str, str]
    flows: int
    warmup: int

    def run(self) -> dict[str, Any]:
        start = time.perf_counter()
        env = make_env("flow_v0", {**self.env_config, "max_steps": 2**62, "warmup_s": 0.0})
        env.game.scenario = _Measured(env.game.scenario, self.warmup, self.flows)
        env.reset(seed=self.seed)
        run_auto_policies(
            env.sim,
            env.game.agents[0],
            self.paths.get("srla"),
            self.paths.get("lrla"),
            env.game.interval_s,
            self.flows,
            DRAIN_FACTOR,
        )
        left = _left(env.sim, self.flows, self.warmup)
        out = row(self.policy, self.load, self.seed, env.sim, self.warmup, left, time.perf_counter() - start)
        return {"result": out, "histogram": histogram(env.sim), "timeline": None}


# ------------------------------------------------------------------ scenarios that change over time


def _mean_size(sizes: Any) -> float:
    points = flow_workloads()[sizes] if isinstance(sizes, str) else sizes.cdf
    return sum((b[1] - a[1]) * (a[0] + b[0]) / 2 for a, b in zip(points, points[1:]))


def expected_arrivals(scenario: Any, load: float, until_s: float) -> float:
    """Expected arrivals by ``until_s`` of simulated time at ``load``, through the scenario's dynamics."""
    w = scenario.workload
    load = scenario.link_load(load)
    groups = (
        [(g.hosts, g.sizes, g.relative_load) for g in w.groups] if w.groups else [(scenario.num_hosts, w.sizes, 1.0)]
    )
    per_host = 1 if scenario.topology.kind == "single_link" else None
    capacity = scenario.topology.link_gbps * 1.25e8
    state = [list(g) for g in groups]
    total, now = 0.0, 0.0

    def rate() -> float:
        return sum(
            load * rel * capacity * (1 if per_host else hosts) / _mean_size(sizes) for hosts, sizes, rel in state
        )

    for change in w.dynamics:
        if change.time_s >= until_s:
            break
        total += rate() * (change.time_s - now)
        now = change.time_s
        targets = range(len(state)) if change.group is None else [change.group]
        for g in targets:
            if change.sizes is not None:
                state[g][1] = change.sizes
            if change.relative_load is not None:
                state[g][2] = change.relative_load
    return total + rate() * (until_s - now)


def _arrivals_end_s(scenario: Any, load: float, flows: int) -> float:
    """When the ``flows``-th arrival is expected (bisection on :func:`expected_arrivals`, which only grows)."""
    lo, hi = 0.0, 1.0
    while expected_arrivals(scenario, load, hi) < flows:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_arrivals(scenario, load, mid) < flows else (lo, mid)
    return hi


def _describe(change: Any) -> str:
    """A change of the workload in a few words: what it sets, for which group, when."""
    parts = []
    if change.relative_load is not None:
        parts.append(f"relative_load {change.relative_load:g}")
    if change.sizes is not None:
        parts.append(f"sizes {change.sizes if isinstance(change.sizes, str) else 'given'}")
    who = "every group" if change.group is None else f"group {change.group}"
    return f"{', '.join(parts)} for {who} at {change.time_s:g} s"


# ------------------------------------------------------------------ the family


class FlowEvaluation(EvaluationFamily):
    """Flow scheduling: completion times in milliseconds, overall and per size bucket, and slowdowns."""

    kind = "flow"
    work = "flows"
    default_work = 100_000
    run_length = "flows on a flow scenario"
    default_scenario = "auto_websearch"  # AuTO's testbed, which the flow zoo's policies were trained on
    default_heuristics = ("qsjf", "qlas", "pias", "fair", "srpt")
    fastest_rate = 2e6  # single_link_websearch with the scenario's policy: 1.8 million flows a second
    row_model = FlowRow
    summary_metrics: ClassVar[tuple[str, ...]] = (
        *(f"fct_ms.{p}" for p in ("mean", "p50", "p99")),
        "fct_small_ms.mean",
        "fct_small_ms.p99",
        "fct_medium_ms.mean",
        "fct_large_ms.mean",
        "slowdown.mean",
        "slowdown.p99",
        "throughput_gbps",
        "busiest_link_util_pct",
        "mean_port_util_pct",
        "flows_completed",
        "censored_fraction",
    )
    headline = ("fct_ms.mean", "mean flow completion time (ms)", 3)
    card_metric = ("fct_ms.mean", "mean flow completion time (ms)", ",.2f")
    cdf_field = "slowdown_cdf"
    censoring_note = (
        "* censored: more than 1% of the measured flows (or of the large ones) were still in flight when the run "
        "stopped; the statistics leave them out (left out: censored_fraction)"
    )

    def default_policies(self, scenario: Any) -> list[Any]:
        """The scenario's policy, by its bare name when that names the same policy there (``qlas`` on a scenario
        running QLAS with its own thresholds), so it is one column beside the baselines."""
        own = scenario.policy()
        return [own.name if scenario.policy(own.name).params == own.params else own.label]

    def runs_on(self, scenario: Any, policy: str) -> bool:
        """Every baseline but ``las`` off ``single_link`` (exact LAS has one link)."""
        try:
            scenario.policy(policy)
        except InvalidConfigError:
            return False
        return True

    def changes(self, scenario: Any, load: float) -> list[Change]:
        return [
            Change(f"workload.dynamics.{k}", _describe(c), c.time_s) for k, c in enumerate(scenario.workload.dynamics)
        ]

    def arrivals(self, scenario: Any, load: float) -> Callable[[float], float]:
        return lambda time_s: expected_arrivals(scenario, load, time_s)

    def time_for(self, scenario: Any, load: float, work: int) -> float:
        return _arrivals_end_s(scenario, load, work)

    def zoo_usage(self, name: str, experiment: Mapping[str, Any]) -> str:
        """In the engine: an AuTO agent's file, the runtime deciding every interval."""
        return (
            f"Evaluate in the engine (the runtime deciding every interval): `python evaluate.py --policy zoo:{name} "
            f"--scenario {experiment['scenario']} --policy qsjf --policy pias`."
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
        if options.sample_period_us is not None:
            raise InvalidConfigError(
                "sample_period_us", options.sample_period_us, "nothing on a flow scenario (no load samples over time)"
            )
        if work < 10:
            raise InvalidConfigError("tasks", work, "at least 10 flows (10% of them are warm-up)")
        warmup = self.warmup(scenario, work)
        trained = [s.given for s in specs if s.source is Source.CHECKPOINT]
        labels = dict(zip(map(id, trained), checkpoint_labels(trained))) if trained else {}
        jobs: list[Any] = []
        for spec in specs:
            if spec.source is Source.POLICY_FILE:
                paths, label, settings = auto_policy_files(spec, scenario_spec, loads[0])
                for load in loads:
                    for s in seeds:
                        env_config = {"scenario": str(scenario_spec), "load": load, **settings}
                        jobs.append(FlowFileJob(label, load, s, env_config, paths, work, warmup))
                continue
            if spec.source is Source.CHECKPOINT:
                jobs += checkpoint_jobs(
                    spec.given,
                    labels[id(spec.given)],
                    scenario,
                    scenario_spec,
                    loads,
                    seeds,
                    tasks=work,
                    warmup=warmup,
                    runner=RUN_CHECKPOINT,
                    explore=options.explore,
                )
                continue
            policy = scenario.policy(spec.given)
            for load in loads:
                for s in seeds:
                    config = scenario.engine_config(load, s, policy, warmup_flows=warmup, measure_flows=work - warmup)
                    check_flow_config(config)
                    jobs.append(FlowJob(policy.label, load, s, config, work, warmup, policy.balance))
        return jobs

    def columns(self, doc: Mapping[str, Any]) -> list[Column]:
        censored = any(s["censored"] for s in doc["summary"])
        return [
            Column("mean FCT (ms)", "fct_ms.mean", 3),
            Column("p99 FCT (ms)", "fct_ms.p99", 2),
            Column("small mean (ms)", "fct_small_ms.mean", 3),
            Column("small p99 (ms)", "fct_small_ms.p99", 3),
            Column("medium mean (ms)", "fct_medium_ms.mean", 2),
            Column("large mean (ms)", "fct_large_ms.mean", 1),
            Column("mean slowdown", "slowdown.mean", 2),
            Column("busiest link (%)", "busiest_link_util_pct", 1),
            Column("mean port (%)", "mean_port_util_pct", 1),
            *([Column("left out (%)", "censored_fraction", 2, 100.0)] if censored else []),
        ]

    def plots(self, doc: Mapping[str, Any], out: Path) -> dict[str, Path]:
        paths = {
            "fct": plots.plot_metric_vs_load(doc, out / "fct_vs_load.png", "fct_ms.mean", "mean FCT (ms)"),
            "cdf": plots.plot_cdf(doc, out / "slowdown_cdf.png", "slowdown_cdf", "slowdown"),
        }
        for b in BUCKETS:
            label = f"mean FCT of {b} flows (ms)"
            paths[f"fct_{b}"] = plots.plot_metric_vs_load(doc, out / f"fct_{b}_vs_load.png", f"fct_{b}_ms.mean", label)
        return paths


RUN_CHECKPOINT = "dcgym.agents.evaluation.flow:run_checkpoint"
"""How a flow_v0 checkpoint job runs (its ``runner``)."""
