"""Evaluate policies on a scenario of any family: the library behind ``evaluate.py``.

Every policy runs at every load with every seed for ``tasks`` units of work
(the family's: tasks on a rack, flows on a multi-LB cluster or a flow network) in the C++
engine; the family's warm-up is excluded from the statistics and reported.
The runs are independent jobs: serial in this process (``workers=0``) or in
parallel on Ray (a local cluster, or an existing one at ``address``), with
the same numbers bit for bit either way. The result is one document
(:mod:`dcgym.agents.evaluation.document`) whose rows are the family's
(docs/results.md).

A policy is a heuristic name the family knows (``po2``,
``jbt:threshold=30``, ``ecmp``), a checkpoint or run folder written by
``train.py`` (run through its environment: ``<algorithm> (trained)``), or a
policy file (``FILE.dcpol`` or ``zoo:NAME``: run inside the engine, ``<stem>
(file)``); :mod:`dcgym.agents.policies` tells the sources apart, and
:mod:`dcgym.agents.evaluation.family` says how a family turns each into runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from dcgym.agents.evaluation.document import build_document
from dcgym.agents.evaluation.estimate import check_size, parallel_runs
from dcgym.agents.evaluation.family import Options, family_of
from dcgym.agents.evaluation.runner import run_all
from dcgym.agents.policies.checkpoints import checkpoint_scenario, find_checkpoint, read_meta
from dcgym.agents.policies.sources import classify
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import load_scenario
from dcgym.envs.schema import Load, Seed
from dcgym.envs.validation import validate

log = logging.getLogger(__name__)

__all__ = [
    "Loads",
    "Seeds",
    "Tasks",
    "Workers",
    "evaluate",
    "evaluate_checkpoint",
    "parse_seeds",
    "seed_list",
    "warn_late_changes",
]

Tasks = Annotated[int, Field(ge=1, le=10**12)]
Loads = Annotated[list[Load], Field(min_length=1)]
Seeds = Annotated[list[Seed], Field(min_length=1)]
Workers = Annotated[int, Field(ge=0, le=4096)]
SamplePeriod = Annotated[float, Field(ge=0, allow_inf_nan=False)]
MAX_SEED_COUNT = 10_000
"""Most seeds ``--seeds N`` asks for (each is a run per policy and load)."""


def evaluate(
    scenario: Any,
    policies: Any = None,
    loads: Sequence[float] | None = None,
    tasks: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    *,
    seeds: Sequence[int] | None = None,
    workers: int | None = None,
    address: str | None = None,
    sample_period_us: float | None = None,
    explore: bool = False,
    drained: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Run every policy at every load with every seed and return the results document.

    ``scenario`` is a scenario object or a name or path for
    :func:`dcgym.envs.scenario.load_scenario`; ``policies`` (one or a list)
    default to the scenario's own policy and ``loads`` to its grid;
    ``tasks`` to the family's default run length. ``seed`` (one) or
    ``seeds`` (several) default to seed 1. ``workers``: 0 runs serially in
    this process; N > 0 on a local Ray cluster of N CPUs (or the running Ray
    session, or the cluster at ``address``); None picks serial for a single
    run and Ray with every core otherwise. ``sample_period_us`` samples the
    loads over time (rack; it replaces the scenario's period, 0 = no samples). Trained policies act deterministically unless
    ``explore``. ``drained`` (rack, lb heuristics) measures a fixed set of arrivals, each until it ends: what a
    score against a bound needs (docs/benchmarking.md). Every argument and every engine config is checked before
    the first run, so bad input raises InvalidConfigError (or the engine's
    ValueError) without wasting a run; so is the evaluation's size, refused
    above hours or gigabytes unless ``force``
    (:mod:`dcgym.agents.evaluation.estimate`).
    """
    spec = scenario if isinstance(scenario, (str, Path)) else scenario.name
    if isinstance(scenario, (str, Path)):
        scenario = load_scenario(scenario)
    family = family_of(scenario.kind)
    work = family.default_work_for(scenario) if tasks is None else validate(Tasks, tasks, "tasks")
    seeds_ = seed_list(seed, seeds)
    workers = None if workers is None else validate(Workers, workers, "workers")
    if sample_period_us is not None:
        sample_period_us = validate(SamplePeriod, sample_period_us, "sample_period_us")
    if policies is None:
        policies = family.default_policies(scenario)
    elif isinstance(policies, (str, Mapping, Path)) or not isinstance(policies, Sequence):
        policies = [policies]
    grid = list(scenario.loads) if loads is None else validate(family.load_grid, list(loads), "loads")
    if len(set(grid)) != len(grid):
        raise InvalidConfigError("loads", grid, "distinct values (a repeated one would repeat its runs)")
    specs = [classify(p) for p in policies]
    warn_late_changes(family, scenario, grid, work)
    if drained and family.kind not in ("rack", "lb"):
        raise InvalidConfigError("drained", True, "a rack or lb scenario (flow runs are always drained)")
    jobs = family.jobs(scenario, spec, specs, grid, seeds_, work, Options(sample_period_us, explore, drained))
    labels = list(dict.fromkeys(job.policy for job in jobs))
    if len(labels) != len(specs):
        raise InvalidConfigError(
            "policy", [str(p) for p in policies], "distinct policies (a repeated one would repeat its runs)"
        )
    kept = sum(family.timeline_values(scenario, job) for job in jobs)
    check_size(family, len(jobs), work, parallel_runs(workers, len(jobs), address), kept, force)
    outputs = run_all(jobs, workers, address, progress, scenario.name or "scenario")
    doc = build_document(family, scenario, seeds_, work, jobs, outputs)
    if drained:  # only then, so that every other document stays as it was
        doc["drained"] = True
    return doc


def evaluate_checkpoint(
    run_or_checkpoint: str | Path,
    loads: Sequence[float] | None = None,
    tasks: int | None = None,
    seed: int | None = None,
    *,
    heuristics: Sequence[str] = (),
    scenario: str | Path | None = None,
    seeds: Sequence[int] | None = None,
    workers: int | None = 0,
    address: str | None = None,
    explore: bool = False,
    progress: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Evaluate a trained policy (a checkpoint, or a run folder's newest) and ``heuristics`` on one scenario.

    ``scenario`` defaults to the one the policy was trained on (with the
    training's scenario overrides), ``loads`` to its grid, ``tasks`` to the
    experiment's ``evaluation.tasks`` (arrivals per run, warm-up included;
    flows on a multi-LB scenario) and the seed to 1. Returns the results
    document of :func:`evaluate`, the trained policy
    named ``<algorithm> (trained)``.
    """
    experiment = read_meta(find_checkpoint(run_or_checkpoint))["experiment"]
    if scenario is None:
        name, overrides = checkpoint_scenario(run_or_checkpoint)
        scenario = load_scenario(name, overrides) if overrides else name
    return evaluate(
        scenario,
        [str(run_or_checkpoint), *heuristics],
        loads,
        tasks=experiment["evaluation"]["tasks"] if tasks is None else tasks,
        seed=seed,
        seeds=seeds,
        progress=progress,
        workers=workers,
        address=address,
        explore=explore,
        force=force,
    )


def warn_late_changes(family: Any, scenario: Any, loads: Sequence[Any], work: int) -> None:
    """Log one warning per load whose runs end before changes over time of ``scenario`` (they never happen)."""
    for load in loads:
        late = family.late_changes(scenario, load, work)
        if not late:
            continue
        first, point = late[0], f"{family.load_name} {load}"
        if len(late) == 1:
            log.warning(
                "%s (%s) comes after the end of the runs at %s (%s): it never happens; --tasks %d or more would "
                "reach it",
                *(first.field, first.what, point, first.end, first.needed),
            )
        else:
            log.warning(
                "%s (%s) and %d later changes come after the end of the runs at %s (%s): they never happen; "
                "--tasks %d or more would reach the first, %d the last",
                *(first.field, first.what, len(late) - 1, point, first.end, first.needed, late[-1].needed),
            )


def parse_seeds(text: str) -> list[int]:
    """``"5"`` -> seeds 1..5; ``"1,2,7"`` -> those seeds. Raises InvalidConfigError naming ``seeds``."""
    allowed = "a count N (seeds 1..N) or a comma-separated list of distinct seeds >= 0"
    parts = [part.strip() for part in str(text).split(",")]
    try:
        numbers = [int(part) for part in parts if part]
    except ValueError:
        raise InvalidConfigError("seeds", text, allowed) from None
    if not numbers or (len(parts) == 1 and not 1 <= numbers[0] <= MAX_SEED_COUNT):
        raise InvalidConfigError("seeds", text, f"{allowed}; a count at most {MAX_SEED_COUNT}")
    return list(range(1, numbers[0] + 1)) if len(parts) == 1 else numbers


def seed_list(seed: int | None, seeds: Sequence[int] | None) -> list[int]:
    """The seeds of an evaluation from ``seed`` or ``seeds`` (at most one given; default seed 1)."""
    if seed is not None and seeds is not None:
        raise InvalidConfigError("seeds", list(seeds), f"nothing when seed ({seed}) is given: one or the other")
    if seeds is None:
        return [validate(Seed, 1 if seed is None else seed, "seed")]
    chosen = validate(Seeds, list(seeds), "seeds")
    if len(set(chosen)) != len(chosen):
        raise InvalidConfigError("seeds", chosen, "distinct seeds (a repeated seed repeats a run exactly)")
    return chosen
