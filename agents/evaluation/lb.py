"""The multi-LB family's evaluation: balancer heuristics and trained lb_v0 policies, rows of flow completion times.

Every policy runs at every load with every seed for the same stretch of
simulated time: ``flows`` flows at the offered rate, rounded up to whole
decision periods, of which the first 10% (:data:`WARMUP_FRACTION`) are
warm-up, excluded from the statistics by the engine. A heuristic (``ecmp``,
``wcmp``, ``lsq``, ``sed``, ``oracle``) runs in ``LbSim`` directly;
a trained policy runs through its environment (lb_v0, or lb_central_v0 for a
centralized one), setting every LB's weights each decision period.

A policy file (``FILE.dcpol`` or ``zoo:NAME``, an ``mlp`` exported from a
Distr-LB, Centr-LB or RLB-SAC run) runs the same way: each decision period,
lb_v0 in Python hands every LB's observation to the C++ deployment runtime
(``RuntimePolicy``, cpp_core/include/dcgym/runtime/mlp.hpp), whose outputs
become the LBs' weights: the weights themselves for continuous weights
(K = N outputs), the argmax of each server's block of 3 logits for weight
levels (K = 3 N). A file with one network over every LB's observation (M N
12 inputs, K = 3 M N or M N) is a centralized policy and gets lb_v0's
``state()``. A file does not store how the LBs apply the weights: the spec's
options say it, with lb_v0's default ``weights``:
``zoo:NAME:dispatch=sed``; a bare ``zoo:NAME`` takes the options of its
card's evaluate command (how it was trained), so the leaderboard's
``zoo:NAME`` runs it right.

Rows (:class:`LbRow`) hold flow completion times in seconds: the mean and
the 50th, 90th, 95th, 99th and 99.9th percentiles (p95 from the engine's
histogram, like the others, bucket midpoints within 0.2%). As in the
paper (App. C.1), a flow rejected by a full server completes after the
scenario's timeout (40 s), and ``fct_s`` counts it at that time: its
percentiles are then censored at the timeout, not measured, which
``censored`` and ``flows_rejected`` say; ``fct_served_s`` holds the same
statistics over the served flows only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dcgym.agents.evaluation import plots
from dcgym.agents.evaluation.document import finite
from dcgym.agents.evaluation.family import (
    Column,
    EvaluationFamily,
    LateChange,
    Options,
    Percentiles,
    Source,
    Spec,
)
from dcgym.agents.evaluation.stats import merged_quantiles, nonzero_histogram
from dcgym.cpp_core import LbSim, check_lb_config
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.lb.scenario import LbScenario

__all__ = [
    "WARMUP_FRACTION",
    "LbEvaluation",
    "LbJob",
    "LbPolicyFileJob",
    "LbRow",
    "horizon",
    "lb_policy_file_jobs",
    "run_checkpoint",
    "run_policy_file",
]

WARMUP_FRACTION = 0.1
"""Fraction of a run's flows that are warm-up (multi-LB scenarios have no warmup_fraction field)."""

_PERCENTILES = ("mean", "p50", "p90", "p95", "p99", "p999")
_ENGINE_PERCENTILES = ("mean", "p50", "p90", "p99", "p999")  # what LbSim.results() summarizes
_US = 1e-6  # seconds per microsecond: the engine counts microseconds, the rows seconds


class FctSeconds(Percentiles):
    """Flow completion time statistics in seconds, with the p95 the multi-LB paper reports (null without a flow)."""

    p95: float | None


class LbRow(BaseModel):
    """One run of one policy at one load with one seed on a multi-LB scenario (times in seconds)."""

    model_config = ConfigDict(extra="forbid")
    policy: str = Field(description="the policy's label (every LB runs it)")
    load: float = Field(description="offered load, a fraction of the cluster's capacity (docs/lb.md)")
    seed: int = Field(description="the seed of every random stream of the run")
    throughput_flows_per_s: float | None = Field(description="measured flows ended per second of measured time")
    offered_flows_per_s: float = Field(description="the arrival rate the load stands for, flows per second")
    fct_s: FctSeconds = Field(description="completion time of every measured flow, a rejected one at the timeout, s")
    fct_served_s: FctSeconds = Field(description="completion time of the measured flows that were served, s")
    flows_completed: int = Field(description="measured flows ended (served or rejected): the sample of fct_s")
    flows_rejected: int = Field(description="measured flows rejected by a full server (counted at the timeout)")
    flows_in_flight: int = Field(description="flows still in the cluster when the run ended (in no statistic)")
    flows_warmup: int = Field(description="first flows excluded from every statistic")
    rejected_fraction: float | None = Field(description="flows_rejected / flows_completed")
    censored: bool = Field(
        description="some flow was rejected: fct_s's upper percentiles may be the timeout, not a measured time"
    )
    events: int | None = Field(description="engine events processed (null for a trained policy's run)")
    sim_time_s: float = Field(description="simulated time at the end of the run, s")
    wall_s: float = Field(description="wall-clock seconds of the run")


def _arrival_rate_per_us(scenario: Any, load: float) -> float:
    """Flows per us that ``scenario`` offers at ``load`` (every LB together)."""
    return LbSim(scenario.engine_config(load, seed=1)).arrival_rate_per_us


def horizon(scenario: LbScenario, load: float, flows: int, warmup: int) -> tuple[float, float]:
    """(end of warm-up, end of run) in microseconds: whole decision periods covering the expected arrivals."""
    rate = _arrival_rate_per_us(scenario, load)
    period = scenario.decision_period_us
    return math.ceil(warmup / rate / period) * period, math.ceil(flows / rate / period) * period


def _stats(summary: Mapping[str, Any], count: int, histogram: Mapping[str, Any]) -> dict[str, float]:
    """Mean and percentiles in seconds: the engine's summary, and p95 from the run's histogram."""
    stats = {k: (float(summary[k]) * _US if count else math.nan) for k in _ENGINE_PERCENTILES}
    stats["p95"] = merged_quantiles([histogram], [0.95])[0] * _US if count else math.nan
    return {k: stats[k] for k in _PERCENTILES}


def _row(
    policy: str,
    load: float,
    seed: int,
    sim: LbSim,
    dropped: int,
    warmup_flows: int,
    offered_per_us: float,
    measured_us: float,
    events: int | None,
    wall_s: float,
) -> dict[str, Any]:
    """A result row from the engine at the end of a run; ``dropped``: rejections after warm-up."""
    r = sim.results()
    count = int(r["fct_us"]["count"])
    served = int(r["fct_served_us"]["count"])
    return finite(
        {
            "policy": policy,
            "load": load,
            "seed": seed,
            "throughput_flows_per_s": count / (measured_us * _US) if measured_us > 0 else math.nan,
            "offered_flows_per_s": offered_per_us / _US,
            "fct_s": _stats(r["fct_us"], count, _histogram(sim)),
            "fct_served_s": _stats(r["fct_served_us"], served, _histogram(sim, served=True)),
            "flows_completed": count,
            "flows_rejected": int(dropped),
            "flows_in_flight": int(r["flows_in_flight"]),
            "flows_warmup": int(warmup_flows),
            "rejected_fraction": dropped / count if count else math.nan,
            "censored": dropped > 0,
            "events": events,
            "sim_time_s": r["sim_time_us"] * _US,
            "wall_s": wall_s,
        }
    )


def _histogram(sim: LbSim, served: bool = False) -> dict[str, Any]:
    return nonzero_histogram(*sim.fct_histogram(served))


@dataclass(frozen=True)
class LbJob:
    """One heuristic run on a multi-LB scenario: plain data, so it travels to Ray workers."""

    policy: str
    load: float
    seed: int
    config: dict[str, Any]
    warmup_us: float
    end_us: float

    def run(self) -> dict[str, Any]:
        """Run the engine to the end of warm-up and to the end; the result row and the FCT histogram."""
        start = time.perf_counter()
        sim = LbSim(self.config)
        sim.run_until(self.warmup_us)
        at_warmup = sim.results()
        sim.run_until(self.end_us)
        r = sim.results()
        row = _row(
            self.policy,
            self.load,
            self.seed,
            sim,
            r["flows_rejected"] - at_warmup["flows_rejected"],
            r["flows_warmup"],
            r["arrival_rate_per_us"],
            self.end_us - self.warmup_us,
            r["events"],
            time.perf_counter() - start,
        )
        return {"result": row, "histogram": _histogram(sim), "timeline": None}


class _WithWarmup:
    """A scenario whose engine configs exclude the first ``warmup`` flows from the statistics."""

    def __init__(self, scenario: LbScenario, warmup: int) -> None:
        self._scenario, self._warmup = scenario, warmup

    def engine_config(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self._scenario.engine_config(*args, **kwargs, warmup_flows=self._warmup)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scenario, name)


def run_checkpoint(job: Any, policy: Any) -> dict[str, Any]:
    """A trained policy's run through the environment it was trained on (``job`` a CheckpointJob)."""
    from dcgym.agents.training.algorithms import make_env

    env = make_env(policy.experiment.env, {**job.env_config, "max_steps": 2**62})
    policy.check_env(env)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    return _run_env(job, env, lambda observations: policy.act(observations, spaces))


def _run_env(job: Any, env: Any, act: Any) -> dict[str, Any]:
    """Run ``env`` (lb_v0 or lb_central_v0) for the job's horizon, ``act(observations) -> actions`` each period."""
    start = time.perf_counter()
    warmup_us, end_us = horizon(env.scenario, job.load, job.tasks, job.warmup)
    env.scenario = _WithWarmup(env.scenario, job.warmup)  # reset() builds the engine from the scenario
    observations, infos = env.reset(seed=job.seed)
    period = env.period_us
    dropped = 0
    for k in range(round(end_us / period)):
        observations, _, _, _, infos = env.step(act(observations))
        if (k + 1) * period > warmup_us:
            dropped += next(iter(infos.values()))["step_flows_rejected"]
    sim = env.sim
    capacity = sum(g.count * g.workers * g.speed for g in env.scenario.servers)
    offered = job.load * capacity / env.mean_flow_time_us
    row = _row(
        job.policy,
        job.load,
        job.seed,
        sim,
        dropped,
        job.warmup,
        offered,
        end_us - warmup_us,
        None,
        time.perf_counter() - start,
    )
    return {"result": row, "histogram": _histogram(sim), "timeline": None}


# ------------------------------------------------------------------------------ policy files

POLICY_FILE_OPTIONS = {"dispatch": "weights"}
"""What a policy file does not store, from the spec's options (``zoo:NAME:dispatch=sed``), lb_v0's default."""


@dataclass(frozen=True)
class LbPolicyFileJob:
    """One run of an ``mlp`` policy file through lb_v0 (module docstring): plain data, so it travels to Ray."""

    policy: str  # the label in the results
    load: float
    seed: int
    data: bytes
    env_config: dict[str, Any]  # lb_v0's arguments (scenario, load, action type, dispatch)
    centralized: bool
    tasks: int
    warmup: int

    def run(self) -> dict[str, Any]:
        """The run (:func:`run_policy_file`)."""
        return run_policy_file(self)


def run_policy_file(job: LbPolicyFileJob) -> dict[str, Any]:
    """Drive lb_v0 with the policy file's C++ runtime each decision period (module docstring)."""
    from dcgym.cpp_core._engine import RuntimePolicy
    from dcgym.envs.lb import lb_v0

    runtime = RuntimePolicy.from_bytes(job.data)
    env = lb_v0.parallel_env(**{**job.env_config, "max_steps": 2**62})
    agents = env.possible_agents
    discrete = job.env_config.get("action_type") == "discrete"

    def act(observations: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if job.centralized:
            out = np.asarray(runtime.outputs(env.state().reshape(-1), 0)).reshape(len(agents), -1)
        else:
            out = np.stack([np.asarray(runtime.outputs(observations[a].reshape(-1), i)) for i, a in enumerate(agents)])
        if discrete:  # each server's block of logits -> its weight level
            return {a: out[i].reshape(env.num_servers, -1).argmax(axis=1) for i, a in enumerate(agents)}
        return {a: np.clip(out[i], 0.0, 1.0) for i, a in enumerate(agents)}

    return _run_env(job, env, act)


def lb_policy_file_jobs(
    spec: str,
    scenario: LbScenario,
    loads: Sequence[float],
    seeds: Sequence[int],
    tasks: int,
    warmup: int,
) -> list[LbPolicyFileJob]:
    """The runs of one policy file on ``scenario``: the file and its shapes checked against lb_v0 first."""
    from dcgym.agents.export.format import MlpPolicy, from_bytes
    from dcgym.agents.export.zoo import ZOO_PREFIX, card_options, resolve_zoo, split_options
    from dcgym.cpp_core._engine import RuntimePolicy
    from dcgym.envs.lb import lb_v0

    where, option_text = split_options(str(spec))
    path = resolve_zoo(where) if where.startswith(ZOO_PREFIX) else Path(where)
    if where.startswith(ZOO_PREFIX) and not option_text:  # a bare zoo:NAME runs as its card says
        option_text = card_options(where.removeprefix(ZOO_PREFIX), path.parent)
    label = f"{path.stem} ({'zoo' if where.startswith(ZOO_PREFIX) else 'file'})"
    options = dict(POLICY_FILE_OPTIONS)
    for item in filter(None, option_text.split(",")):
        key, _, value = item.partition("=")
        if key not in options:
            raise InvalidConfigError("policy", str(spec), "options " + ", ".join(f"{k}=..." for k in options))
        options[key] = value
    if not path.is_file():
        raise InvalidConfigError("policy", str(spec), "an existing policy file or zoo:NAME")
    data = path.read_bytes()
    try:
        RuntimePolicy.from_bytes(data)  # the deployment runtime's own checks
        policy = from_bytes(data)
    except (ValueError, RuntimeError) as exc:
        raise InvalidConfigError("policy", str(spec), f"a valid policy file ({' '.join(str(exc).split())})") from None
    if not isinstance(policy, MlpPolicy):
        raise InvalidConfigError("policy", str(spec), f"an mlp policy file on a multi-LB scenario; got {policy.kind}")
    m, n = scenario.lbs, scenario.num_servers
    d = n * len(lb_v0.OBSERVATION_FEATURES)
    shapes = {  # (inputs, agents) -> centralized; outputs -> action type
        (d, m): False,
        (m * d, 1): True,
    }
    centralized = shapes.get((policy.num_inputs, policy.num_agents))
    per_agent = n * (m if centralized else 1)
    kinds = {per_agent: "continuous", len(lb_v0.WEIGHT_LEVELS) * per_agent: "discrete"}
    if centralized is None or policy.num_outputs not in kinds:
        raise InvalidConfigError(
            "policy",
            str(spec),
            f"a policy for {m} LBs over {n} servers: {m} agents of {d} inputs (or 1 of {m * d}) and "
            f"{n} or {3 * n} outputs per LB; the file has {policy.num_agents} agents, {policy.num_inputs} inputs, "
            f"{policy.num_outputs} outputs",
        )
    config = {
        "scenario": scenario,  # the object: it keeps any overrides
        "action_type": kinds[policy.num_outputs],
        "dispatch": options["dispatch"],
    }
    lb_v0.parallel_env(**{**config, "load": loads[0]})  # refuses a bad dispatch before any run
    return [
        LbPolicyFileJob(label, load, s, data, {**config, "load": load}, centralized, tasks, warmup)
        for load in loads
        for s in seeds
    ]


class LbEvaluation(EvaluationFamily):
    """Multi-LB clusters: flow completion times in seconds, throughput in flows per second."""

    kind = "lb"
    work = "flows"
    default_work = 5000
    row_model = LbRow
    summary_metrics: ClassVar[tuple[str, ...]] = (
        "throughput_flows_per_s",
        *(f"fct_s.{p}" for p in _PERCENTILES),
        *(f"fct_served_s.{p}" for p in ("mean", "p95", "p99")),
        "flows_rejected",
        "rejected_fraction",
    )
    headline = ("fct_s.mean", "mean flow completion time (s)", 3)
    cdf_field = "fct_cdf_s"
    cdf_scale = _US
    censoring_note = (
        "* censored: some flows were rejected and count at the timeout, so fct_s's tail is the "
        "timeout, not a measured time (fct_served_s leaves them out)"
    )

    def default_policies(self, scenario: Any) -> list[Any]:
        return [scenario.policy if isinstance(scenario.policy, str) else ",".join(scenario.policy)]

    def work_to_cover(self, scenario: Any, load: float) -> int:
        if not scenario.capacity_changes:
            return 0
        rate = _arrival_rate_per_us(scenario, load)
        return math.ceil(2 * scenario.capacity_changes[-1].at_us * rate / (1 - WARMUP_FRACTION))

    def late_changes(self, scenario: Any, load: float, work: int) -> list[LateChange]:
        if not scenario.capacity_changes:
            return []
        rate = _arrival_rate_per_us(scenario, load)
        end_us = work / rate
        return [
            LateChange(
                f"capacity_changes.{k}",
                f"server group {change.group} at speed {change.speed:g} from {change.at_us / 1e6:g} s",
                f"about {end_us / 1e6:.3g} s of simulated time for {work} flows",
                math.ceil(1.1 * change.at_us * rate),
            )
            for k, change in enumerate(scenario.capacity_changes)
            if change.at_us > end_us
        ]

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
        from dcgym.agents.training.checkpoints import checkpoint_jobs, checkpoint_labels

        if options.sample_period_us is not None:
            raise InvalidConfigError(
                "sample_period_us",
                options.sample_period_us,
                "nothing on a multi-LB scenario: its engine samples no loads over time",
            )
        trained = [s.given for s in specs if s.source is Source.CHECKPOINT]
        labels = dict(zip(map(id, trained), checkpoint_labels(trained))) if trained else {}
        warmup = math.floor(WARMUP_FRACTION * work)
        jobs: list[Any] = []
        for spec in specs:
            if spec.source is Source.POLICY_FILE:
                jobs += lb_policy_file_jobs(spec.given, scenario, loads, seeds, work, warmup)
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
            if not isinstance(spec.given, str):
                raise self.refuse(spec, "an LB policy name (ecmp, wcmp, lsq, sed, oracle) or a checkpoint")
            scenario.check_policy(spec.given)
            for load in loads:
                warmup_us, end_us = horizon(scenario, load, work, warmup)
                for s in seeds:
                    config = scenario.engine_config(load=load, seed=s, policy=spec.given, warmup_flows=warmup)
                    check_lb_config(config)
                    jobs.append(LbJob(spec.given, load, s, config, warmup_us, end_us))
        return jobs

    def columns(self, doc: Mapping[str, Any]) -> list[Column]:
        return [
            Column("mean FCT (s)", "fct_s.mean", 3),
            Column("p95 FCT (s)", "fct_s.p95", 3),
            Column("p99 FCT (s)", "fct_s.p99", 3),
            Column("p99 served (s)", "fct_served_s.p99", 3),
            Column("throughput (flows/s)", "throughput_flows_per_s", 1),
            Column("rejected", "flows_rejected", 0),
        ]

    def plots(self, doc: Mapping[str, Any], out: Path) -> dict[str, Path]:
        return {
            "fct": plots.plot_metric_vs_load(doc, out / "fct_vs_load.png", "fct_s.mean", "mean FCT (s)"),
            "cdf": plots.plot_cdf(doc, out / "fct_cdf.png", "fct_cdf_s", "flow completion time (s)"),
        }


RUN_CHECKPOINT = "dcgym.agents.evaluation.lb:run_checkpoint"
"""How a multi-LB checkpoint job runs (its ``runner``)."""
