"""Trained policies evaluated through their environments: the runs of a checkpoint, for every family.

A checkpoint's run (:class:`CheckpointJob`, made by :func:`checkpoint_jobs`) loads the trained policy
(:class:`~dcgym.agents.policies.checkpoints.TrainedPolicy`) in whichever process runs it and hands it to its
family's runner (``runner``, a ``module:function`` of the family's evaluation): on a rack scenario the
environment's engine measures latency mean/p50/p90/p99/p999, throughput, drops, migrations and steals over
``tasks`` arrivals after the scenario's warm-up, with the same seed (the same tasks) as the heuristics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcgym.agents.policies.checkpoints import (
    TrainedPolicy,
    check_fits,
    find_checkpoint,
    read_meta,
    trained_env_config,
)
from dcgym.agents.rl.envs import make_env
from dcgym.envs.families import load_entry_point

__all__ = ["CheckpointJob", "checkpoint_jobs", "run_checkpoint_job"]


@dataclass(frozen=True)
class CheckpointJob:
    """One evaluation run of a trained policy through its environment: plain data, so it travels to Ray workers."""

    policy: str  # the label in the results
    load: float
    seed: int
    checkpoint: str
    env_config: dict[str, Any]  # the environment's arguments, scenario and load included
    tasks: int  # units of work (tasks, flows, ...) of the run, warm-up included
    warmup: int
    runner: str  # "module:function" of the family's evaluation that runs it: f(job, TrainedPolicy) -> output
    groups: tuple[tuple[str, int, int, int], ...] = ()  # the rack's node groups, for timelines
    timeline: bool = False
    sample_period_us: float | None = None
    explore: bool = False

    def run(self) -> dict[str, Any]:
        """The run (:func:`run_checkpoint_job`)."""
        return run_checkpoint_job(self)


def run_checkpoint_job(job: CheckpointJob) -> dict[str, Any]:
    """Load the trained policy and hand it to the family's runner: the result row, histogram and timeline."""
    import torch  # torch: a checkpoint's run

    torch.set_num_threads(1)  # small networks: one thread is fastest, and Ray workers share the CPUs
    torch.manual_seed(job.seed)
    return load_entry_point(job.runner)(job, TrainedPolicy(job.checkpoint, explore=job.explore))


def checkpoint_jobs(
    spec: str | Path,
    label: str,
    scenario: Any,
    scenario_spec: str | Path,
    loads: Sequence[float],
    seeds: Sequence[int],
    *,
    tasks: int,
    warmup: int,
    runner: str,
    groups: tuple = (),
    sample_period_us: float | None = None,
    explore: bool = False,
) -> list[CheckpointJob]:
    """The runs of one trained policy on ``scenario`` (loaded from ``scenario_spec``), one per load and seed.

    On the scenario it was trained on (same name), the environment is the
    training one, scenario overrides included; on another, the training
    environment's arguments with that scenario (and no overrides).
    """
    path = find_checkpoint(spec)
    experiment = read_meta(path)["experiment"]
    config = trained_env_config(read_meta(path))
    config.pop("load_range", None)  # trained over a range of loads: evaluated at each load of the grid
    trained_on = Path(str(experiment["scenario"]))
    if scenario.name not in (str(trained_on), trained_on.stem):
        config["scenario"] = str(scenario_spec)
        config.pop("overrides", None)
    meta = read_meta(path)
    if meta.get("observation_sizes"):  # refuse a policy for another rack before any run
        env = make_env(experiment["env"], {**config, "load": loads[0]})
        check_fits(path, meta["observation_sizes"], env, partial=bool(meta.get("partial_agents")))
    period = getattr(scenario, "sample_period_us", 0.0) if sample_period_us is None else sample_period_us
    return [
        CheckpointJob(
            label,
            load,
            s,
            str(path),
            {**config, "load": load},
            tasks,
            warmup,
            runner,
            groups,
            bool(period and period > 0 and s == seeds[0]),
            sample_period_us,
            explore,
        )
        for load in loads
        for s in seeds
    ]
