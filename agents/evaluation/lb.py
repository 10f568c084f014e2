"""The multi-LB family's evaluation: balancer heuristics and trained lb_v0 policies, rows of flow completion times.

Every policy runs at every load with every seed for the same stretch of
simulated time: ``flows`` flows at the offered rate, rounded up to whole
decision periods, of which the first 10% (the evaluation's
:data:`~dcgym.agents.evaluation.family.WARMUP_FRACTION`) are warm-up,
excluded from the statistics by the engine. A heuristic (``ecmp``,
``wcmp``, ``lsq``, ``sed``, ``oracle``) runs in ``LbSim`` directly;
a trained policy runs through its environment (lb_v0, or lb_central_v0 for a
centralized one), setting every LB's weights each decision period.

A policy file (``FILE.dcpol`` or ``zoo:NAME``, an ``mlp`` exported from a
Distr-LB, Centr-LB or RLB-SAC run) runs the same way, the C++ deployment
runtime deciding the LBs' weights each decision period
(:mod:`dcgym.agents.policies.lb`: how a file's outputs become weights, with
the dispatch rule the file records: the one it was trained under).

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

from pydantic import BaseModel, ConfigDict, Field

from dcgym.agents.evaluation import plots
from dcgym.agents.evaluation.checkpoints import checkpoint_jobs
from dcgym.agents.evaluation.document import finite
from dcgym.agents.evaluation.family import Change, Column, EvaluationFamily, Options, Percentiles
from dcgym.agents.evaluation.stats import merged_quantiles, nonzero_histogram
from dcgym.agents.policies.checkpoints import checkpoint_labels
from dcgym.agents.policies.lb import LbPolicyFile, file_actions, fixed_weights, load_lb_policy_file
from dcgym.agents.policies.sources import Source, Spec
from dcgym.agents.progress import drain, run_in_pieces, run_until_in_pieces
from dcgym.agents.rl.envs import make_env
from dcgym.cpp_core import LbSim, check_lb_config
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.lb import lb_v0
from dcgym.envs.lb.scenario import LbScenario

__all__ = [
    "LbEvaluation",
    "LbJob",
    "LbPolicyFileJob",
    "LbRow",
    "horizon",
    "run_checkpoint",
]

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
    drained_flows: int = 0  # > 0: the config measures the arrivals after warm-up up to this many, and the run drains

    def run(self) -> dict[str, Any]:
        """Run the engine to the end of warm-up and to the end (drained: until the measured flows have ended); the
        result row and the FCT histogram."""
        start = time.perf_counter()
        sim = LbSim(self.config)
        if self.drained_flows:
            run_in_pieces(sim.run_flows, self.config["warmup_flows"])  # in pieces for Ctrl-C, as rack's
            at_warmup, warmup_us = sim.results(), sim.now_us
            run_in_pieces(sim.run_flows, self.drained_flows - self.config["warmup_flows"])
            drain(lambda: sim.now_us, sim.run_until, lambda: sim.results()["flows_measured_pending"])
            row = self._row(sim, at_warmup, sim.now_us - warmup_us, start)
        else:
            per_arrival = 1.0 / max(sim.arrival_rate_per_us, 1e-300)  # pieces of run_until for Ctrl-C
            run_until_in_pieces(sim.run_until, 0.0, self.warmup_us, per_arrival)
            at_warmup = sim.results()
            run_until_in_pieces(sim.run_until, self.warmup_us, self.end_us, per_arrival)
            row = self._row(sim, at_warmup, self.end_us - self.warmup_us, start)
        return {"result": row, "histogram": _histogram(sim), "timeline": None}

    def _row(self, sim: LbSim, at_warmup: Mapping[str, Any], measured_us: float, start: float) -> dict[str, Any]:
        r = sim.results()
        row = _row(
            self.policy,
            self.load,
            self.seed,
            sim,
            r["flows_rejected"] - at_warmup["flows_rejected"],
            r["flows_warmup"],
            r["arrival_rate_per_us"],
            measured_us,
            r["events"],
            time.perf_counter() - start,
        )
        if self.drained_flows:  # flows past the measured set are in no statistic
            row["flows_in_flight"] = int(r["flows_measured_pending"])
            row["censored"] = row["censored"] or row["flows_in_flight"] > 0
        return row


class _WithWarmup:
    """A scenario whose engine configs exclude the first ``warmup`` flows from the statistics (and with
    ``measure`` > 0 measure only the next ``measure``)."""

    def __init__(self, scenario: LbScenario, warmup: int, measure: int = 0) -> None:
        self._scenario, self._warmup, self._measure = scenario, warmup, measure

    def engine_config(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        config = self._scenario.engine_config(*args, **kwargs, warmup_flows=self._warmup)
        return {**config, "measure_flows": self._measure} if self._measure else config

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scenario, name)


def run_checkpoint(job: Any, policy: Any) -> dict[str, Any]:
    """A trained policy's run through the environment it was trained on (``job`` a CheckpointJob)."""
    env = make_env(policy.env, {**job.env_config, "max_steps": 2**62})
    policy.check_env(env)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    return _run_env(job, env, lambda observations: policy.act(observations, spaces))


def _run_env(job: Any, env: Any, act: Any) -> dict[str, Any]:
    """Run ``env`` (lb_v0 or lb_central_v0) for the job's horizon, ``act(observations) -> actions`` each period."""
    start = time.perf_counter()
    warmup_us, end_us = horizon(env.scenario, job.load, job.tasks, job.warmup)
    drained = getattr(job, "drained", False)
    # reset() builds the engine from the scenario
    env.scenario = _WithWarmup(env.scenario, job.warmup, job.tasks - job.warmup if drained else 0)
    observations, infos = env.reset(seed=job.seed)
    period = env.period_us
    dropped = 0
    for k in range(round(end_us / period)):
        observations, _, _, _, infos = env.step(act(observations))
        if (k + 1) * period > warmup_us:
            dropped += next(iter(infos.values()))["step_flows_rejected"]
    sim = env.sim
    if drained:  # whole decision periods until every measured flow has arrived and ended
        state = {"observations": observations, "dropped": dropped}

        def step_until(t: float) -> None:
            while sim.now_us < t:
                state["observations"], _, _, _, step_infos = env.step(act(state["observations"]))
                state["dropped"] += next(iter(step_infos.values()))["step_flows_rejected"]

        def left() -> int:
            r = sim.results()
            return r["flows_measured_pending"] + max(0, job.tasks - r["flows_arrived"])

        drain(lambda: sim.now_us, step_until, left)
        dropped, end_us = state["dropped"], sim.now_us
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
    if drained:  # flows past the measured set are in no statistic
        row["flows_in_flight"] = int(sim.results()["flows_measured_pending"])
        row["censored"] = row["censored"] or row["flows_in_flight"] > 0
    return {"result": row, "histogram": _histogram(sim), "timeline": None}


# ------------------------------------------------------------------------------ policy files


@dataclass(frozen=True)
class LbPolicyFileJob:
    """One run of an ``mlp`` policy file through lb_v0 (:mod:`dcgym.agents.policies.lb`): plain data, so it travels
    to Ray workers."""

    policy: str  # the label in the results
    load: float
    seed: int
    file: LbPolicyFile
    tasks: int
    warmup: int
    drained: bool = False  # measure flows warmup .. tasks - 1, each until it ends (Options)

    def run(self) -> dict[str, Any]:
        """Drive lb_v0 with the policy file's C++ runtime each decision period."""
        env = lb_v0.parallel_env(**{**self.file.env_config, "load": self.load, "max_steps": 2**62})
        return _run_env(self, env, file_actions(self.file, env))


class LbEvaluation(EvaluationFamily):
    """Multi-LB clusters: flow completion times in seconds, throughput in flows per second."""

    kind = "lb"
    work = "flows"
    default_work = 5000
    run_length = "flows on a multi-LB cluster"
    default_scenario = "lb_sim"  # the multi-LB zoo's and the paper's simulation setting
    default_heuristics = ("ecmp", "wcmp", "lsq", "sed")
    fastest_rate = 1.5e6  # lb_sim with sed: 1.4 million flows a second
    row_model = LbRow
    summary_metrics: ClassVar[tuple[str, ...]] = (
        "throughput_flows_per_s",
        *(f"fct_s.{p}" for p in _PERCENTILES),
        *(f"fct_served_s.{p}" for p in ("mean", "p95", "p99")),
        "flows_rejected",
        "rejected_fraction",
    )
    headline = ("fct_s.mean", "mean flow completion time (s)", 3)
    card_metric = ("fct_s.p99", "p99 flow completion time (s)", ",.3f")
    cdf_field = "fct_cdf_s"
    cdf_scale = _US
    censoring_note = (
        "* censored: some flows were rejected and count at the timeout, so fct_s's tail is the "
        "timeout, not a measured time (fct_served_s leaves them out)"
    )

    def default_policies(self, scenario: Any) -> list[Any]:
        return [scenario.policy if isinstance(scenario.policy, str) else ",".join(scenario.policy)]

    def changes(self, scenario: Any, load: float) -> list[Change]:
        return [
            Change(
                f"capacity_changes.{k}",
                f"server group {change.group} at speed {change.speed:g} from {change.at_us / 1e6:g} s",
                change.at_us,
            )
            for k, change in enumerate(scenario.capacity_changes)
        ]

    def arrival_rate(self, scenario: Any, load: float) -> float:
        return _arrival_rate_per_us(scenario, load)

    def time_text(self, at: float) -> str:
        return f"{at / 1e6:.3g} s"

    def zoo_usage(self, name: str, experiment: Mapping[str, Any]) -> str:
        """lb_v0 driven by the C++ runtime, with the ``dispatch`` the file records (the one it was trained with)."""
        spec = f"zoo:{name}"
        return (
            f"Evaluate (lb_v0 driven by the C++ runtime each decision period): `python evaluate.py --policy {spec} "
            f"--scenario {experiment['scenario']} --policy sed`."
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
                "sample_period_us",
                options.sample_period_us,
                "nothing on a multi-LB scenario: its engine samples no loads over time",
            )
        trained = [s.given for s in specs if s.source is Source.CHECKPOINT]
        labels = dict(zip(map(id, trained), checkpoint_labels(trained))) if trained else {}
        warmup = self.warmup(scenario, work)
        if options.drained and any(s.source is Source.CHECKPOINT for s in specs):
            raise InvalidConfigError("drained", True, "heuristics and policy files (checkpoints run undrained)")
        jobs: list[Any] = []
        for spec in specs:
            if spec.source is Source.POLICY_FILE:
                file = load_lb_policy_file(spec.given, scenario, loads[0])
                jobs += [
                    LbPolicyFileJob(file.label, load, s, file, work, warmup, options.drained)
                    for load in loads
                    for s in seeds
                ]
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
            name, runs_on = fixed_weights(spec.given, scenario)  # sed:weights=1;1.5: static weights per group
            runs_on.check_policy(name)
            for load in loads:
                warmup_us, end_us = horizon(scenario, load, work, warmup)
                for s in seeds:
                    config = runs_on.engine_config(load=load, seed=s, policy=name, warmup_flows=warmup)
                    drained = work if options.drained else 0
                    if drained:
                        config["measure_flows"] = work - warmup
                    check_lb_config(config)
                    jobs.append(LbJob(spec.given, load, s, config, warmup_us, end_us, drained))
        return jobs

    def columns(self, doc: Mapping[str, Any]) -> list[Column]:
        return [
            Column("mean FCT (s)", "fct_s.mean", 3),
            Column("p95 FCT (s)", "fct_s.p95", 3),
            Column("p99 FCT (s)", "fct_s.p99", 3),
            Column("p99 served (s)", "fct_served_s.p99", 3),
            Column("throughput (flows/s)", "throughput_flows_per_s", 1),
            Column("rejected", "flows_rejected", 0),
            *(
                [Column("rejected (%)", "rejected_fraction", 2, 100.0)]
                if any(c["censored"] for c in doc["summary"])
                else []
            ),
        ]

    def plots(self, doc: Mapping[str, Any], out: Path) -> dict[str, Path]:
        return {
            "fct": plots.plot_metric_vs_load(doc, out / "fct_vs_load.png", "fct_s.mean", "mean FCT (s)"),
            "cdf": plots.plot_cdf(doc, out / "fct_cdf.png", "fct_cdf_s", "flow completion time (s)"),
        }


RUN_CHECKPOINT = "dcgym.agents.evaluation.lb:run_checkpoint"
"""How a multi-LB checkpoint job runs (its ``runner``)."""
