"""What a family tells the shared evaluation: its jobs, metrics, table and plots; and the registry of families.

:func:`dcgym.agents.evaluation.evaluate` knows no family. It loads the
scenario, looks up the scenario's family here, classifies each policy spec
by where the policy comes from (:class:`dcgym.agents.policies.Source`: a heuristic
name, a checkpoint or run folder written by ``train.py``, or a policy file) and asks
the family for the runs (:meth:`EvaluationFamily.jobs`). The runs are plain
data with a ``run()`` method, so they travel to Ray workers; each returns
``{"result": row, "histogram": ..., "timeline": ...}``. The shared code
then builds the document from the family's declared metrics
(:attr:`EvaluationFamily.summary_metrics`) and hands it back to the family
for its console table and plots.

Adding a family: a module with a subclass of :class:`EvaluationFamily` and
one entry in :data:`EVALUATIONS`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dcgym.agents.policies.sources import Spec
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import family as env_family
from dcgym.envs.schema import Load

__all__ = [
    "EVALUATIONS",
    "WARMUP_FRACTION",
    "Change",
    "Column",
    "EvaluationFamily",
    "LateChange",
    "Options",
    "Percentiles",
    "family_of",
]


class Percentiles(BaseModel):
    """Mean and percentiles of a sample, in the unit the field holding them names (null without a sample)."""

    model_config = ConfigDict(extra="forbid")
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None


WARMUP_FRACTION = 0.1
"""Share of a run's work that is warm-up, left out of every statistic (a rack scenario sets its own)."""


@dataclass(frozen=True)
class Options:
    """Settings of an evaluation besides policies, loads, seeds and work: a family uses those it supports."""

    sample_period_us: float | None = None  # rack: load samples for load-over-time plots
    explore: bool = False  # trained policies sample their actions
    drained: bool = False  # rack, lb: measure a fixed set of arrivals, each until it ends (drain)


@dataclass(frozen=True)
class Column:
    """One column of the console table: header, dotted path into a summary cell, digits shown, scale applied."""

    header: str
    path: str
    digits: int = 1
    scale: float = 1.0


@dataclass(frozen=True)
class LateChange:
    """A change over time in a scenario that a run ends before, so it never happens (evaluate warns of each)."""

    field: str
    """Where the change is in the scenario file (``dynamics.0``, ``capacity_changes.0``, ``mixes.0.1.launch_s``)."""
    what: str
    """The change, with its time in the family's unit (``split at 500000 us``)."""
    end: str
    """How far a run gets (``about 230000 us of simulated time for 20000 tasks``)."""
    needed: int
    """The run length (``--tasks``) that would reach the change."""


@dataclass(frozen=True)
class Change:
    """A change over time that a scenario makes, as its family declares it."""

    field: str
    """Where the change is in the scenario file (``dynamics.0``, ``capacity_changes.0``, ``mixes.0.1.launch_s``)."""
    what: str
    """The change, with its time in the family's unit (``split at 500000 us``)."""
    at: float
    """When it happens, in the family's unit of simulated time (:meth:`EvaluationFamily.time_text`)."""


class EvaluationFamily:
    """How one family is evaluated. Subclasses fill in the class attributes and the methods.

    A family whose scenarios change over time declares the changes (:meth:`changes`) and its arrival rate
    (:meth:`arrival_rate`, or the work a run has done by a time: :meth:`arrivals`, :meth:`time_for`); the run
    length that covers the changes
    (:meth:`work_to_cover`) and the changes a shorter run misses (:meth:`late_changes`) follow from them.
    """

    kind: ClassVar[str]
    """The scenario kind (a family of :data:`dcgym.envs.families.FAMILIES`)."""
    work: ClassVar[str]
    """What ``tasks`` counts in this family (``tasks``, ``flows``): the unit of a run's length."""
    default_work: ClassVar[int]
    """Units of work per run when the caller gives none."""
    run_length: ClassVar[str]
    """What a run's length counts here, in words for help texts (``tasks on a rack``)."""
    default_scenario: ClassVar[str]
    """The packaged scenario a policy of this family is evaluated on when the caller names none."""
    default_heuristics: ClassVar[tuple[str, ...]]
    """The baselines a trained policy is compared with after training when the experiment names none."""
    fastest_rate: ClassVar[float]
    """The most units of work a second one run has done (the cheapest scenario and heuristic, on one core of a
    2-core machine): the run-length estimate's lower bound (:mod:`dcgym.agents.evaluation.estimate`)."""
    row_model: ClassVar[type[BaseModel]]
    """The fields of one result row, each with its unit in its name and a description (docs/results.md)."""
    summary_metrics: ClassVar[tuple[str, ...]]
    """Dotted paths of the row fields averaged over seeds (with a 95% interval) in each summary cell."""
    cdf_field: ClassVar[str | None] = None
    """Summary key of the quantiles of every seed's histogram together (None: no histogram)."""
    cdf_scale: ClassVar[float] = 1.0
    """Factor from the engine histogram's unit to the document's (the lb engine counts us, rows say s)."""
    censoring_note: ClassVar[str] = ""
    """One line under the console table on what the percentiles leave out (shown when a cell is censored)."""
    headline: ClassVar[tuple[str, str, int]]
    """The leaderboard's metric: (dotted path in a summary cell, its label with unit, digits)."""
    headline_higher_is_better: ClassVar[bool] = False
    """Whether the leaderboard's best cell is the largest headline value (default: the smallest)."""
    card_metric: ClassVar[tuple[str, str, str]]
    """The statistic a zoo card's table shows: (dotted path in a summary cell, what it is, number format)."""
    load_name: ClassVar[str] = "load"
    """What one point of the load axis is called in messages (the colo family's is a mix index: ``mix``)."""
    load_grid: ClassVar[Any] = Annotated[list[Load], Field(min_length=1)]
    """What a caller's ``loads`` may hold (fractions of capacity; a family whose load axis is something else, such
    as the colo family's mix indices, says so here)."""

    def default_work_for(self, scenario: Any) -> int:
        """Units of work per run on ``scenario`` when the caller gives none: :attr:`default_work` unless the
        family reads it from the scenario."""
        return self.default_work

    def run_length_help(self) -> str:
        """What ``--tasks`` counts here and its default, for help texts (``tasks on a rack (default 1000000)``)."""
        return f"{self.run_length} (default {self.default_work})"

    def warmup_fraction(self, scenario: Any) -> float:
        """Share of a run's work that is warm-up on ``scenario`` (:data:`WARMUP_FRACTION` unless the family's
        scenarios say)."""
        return WARMUP_FRACTION

    def warmup(self, scenario: Any, work: int) -> int:
        """Units of warm-up at the start of a run of ``work`` units on ``scenario``."""
        return math.floor(self.warmup_fraction(scenario) * work)

    # ------------------------------------------------------------------ changes over time

    def changes(self, scenario: Any, load: Any) -> list[Change]:
        """The changes over time ``scenario`` makes at ``load``, in order of time; none by default."""
        return []

    def arrival_rate(self, scenario: Any, load: Any) -> float:
        """Units of work (arrivals) per unit of time of :attr:`Change.at` that ``scenario`` offers at ``load``, for a
        family whose rate stays what it is (needed only by a family whose scenarios change)."""
        raise NotImplementedError

    def arrivals(self, scenario: Any, load: Any) -> Callable[[float], float]:
        """The expected units of work of a run of ``scenario`` at ``load`` by a time: at :meth:`arrival_rate` unless
        the family's rate changes over a run."""
        rate = self.arrival_rate(scenario, load)
        return lambda at: at * rate

    def time_for(self, scenario: Any, load: Any, work: int) -> float:
        """When a run of ``scenario`` at ``load`` is expected to have done ``work`` units (the end of the run)."""
        return work / self.arrival_rate(scenario, load)

    def time_text(self, at: float) -> str:
        """A time in the family's unit, in words for messages (``230000 us``)."""
        return f"{at:.3g} s"

    def run_end(self, scenario: Any, load: Any, work: int) -> str:
        """How far a run of ``work`` units gets, for messages."""
        return f"about {self.time_text(self.time_for(scenario, load, work))} of simulated time for {work} {self.work}"

    def work_to_cover(self, scenario: Any, load: Any) -> int:
        """Units of work a run of ``scenario`` at ``load`` needs to see its changes over time twice over: to one
        period of changes past the last one (twice the last change's time for a single change), warm-up included
        (the leaderboard's minimum run length); 0 for a scenario that does not change."""
        times = sorted({c.at for c in self.changes(scenario, load)})
        if not times:
            return 0
        period = times[-1] - times[-2] if len(times) > 1 else times[-1]
        work = self.arrivals(scenario, load)(times[-1] + period)
        return math.ceil(work / (1 - self.warmup_fraction(scenario)))

    def late_changes(self, scenario: Any, load: Any, work: int) -> list[LateChange]:
        """The changes over time of ``scenario`` that a run of ``work`` units at ``load`` ends before (evaluate logs
        a warning for each), each with the run length that would reach it: the work by 10% past its time."""
        changes = self.changes(scenario, load)
        if not changes:
            return []
        by = self.arrivals(scenario, load)
        late = [change for change in changes if by(change.at) >= work]
        if not late:
            return []
        end = self.run_end(scenario, load, work)
        return [LateChange(change.field, change.what, end, math.ceil(by(1.1 * change.at))) for change in late]

    # ------------------------------------------------------------------ the zoo

    def zoo_usage(self, name: str, experiment: Mapping[str, Any]) -> str:
        """A zoo card's line on how ``zoo:NAME`` is evaluated, for a policy trained as ``experiment`` says (its
        resolved experiment: env, scenario, env_args, ...)."""
        return f"Evaluate: `python evaluate.py --policy zoo:{name} --scenario {experiment['scenario']}`."

    # ------------------------------------------------------------------ runs and results

    def summary_paths(self, rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        """The metrics of a summary cell over ``rows`` (one cell's runs): :attr:`summary_metrics` by default."""
        return self.summary_metrics

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
        """Every run of every policy at every load with every seed, checked before any runs."""
        raise NotImplementedError

    def columns(self, doc: Mapping[str, Any]) -> list[Column]:
        """The console table's columns after policy and load."""
        raise NotImplementedError

    def plots(self, doc: Mapping[str, Any], out: Path) -> dict[str, Path]:
        """Write the family's plots of ``doc`` into ``out``; their paths by name."""
        raise NotImplementedError

    def default_policies(self, scenario: Any) -> list[Any]:
        """The policies evaluated when none is given: the scenario's own."""
        raise NotImplementedError

    def timeline_values(self, scenario: Any, job: Any) -> float:
        """Numbers a run's timeline keeps for the plots (at most; the memory estimate): none by default."""
        return 0.0

    def runs_on(self, scenario: Any, policy: str) -> bool:
        """Whether the baseline named ``policy`` runs on ``scenario`` (the leaderboard skips those that do not)."""
        return True

    def refuse(self, spec: Spec, why: str) -> InvalidConfigError:
        """The error for a policy this family cannot run."""
        return InvalidConfigError("policy", str(spec.given), f"{why} (scenario kind {self.kind})")


EVALUATIONS: dict[str, str] = {
    "rack": "dcgym.agents.evaluation.rack:RackEvaluation",
    "lb": "dcgym.agents.evaluation.lb:LbEvaluation",
    "colo": "dcgym.agents.evaluation.colo:ColoEvaluation",
    "flow": "dcgym.agents.evaluation.flow:FlowEvaluation",
}
"""The evaluation of each family: ``module:class``, imported when first needed."""

_LOADED: dict[str, EvaluationFamily] = {}


def family_of(kind: str) -> EvaluationFamily:
    """The evaluation of the family of scenario ``kind``; InvalidConfigError naming ``kind`` otherwise."""
    name = env_family(kind).name
    if name not in EVALUATIONS:
        raise InvalidConfigError("kind", kind, "a family with an evaluation: " + ", ".join(EVALUATIONS))
    if name not in _LOADED:
        module, _, attribute = EVALUATIONS[name].partition(":")
        _LOADED[name] = getattr(importlib.import_module(module), attribute)()
    return _LOADED[name]
