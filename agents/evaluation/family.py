"""What a family tells the shared evaluation: its jobs, metrics, table and plots; and the registry of families.

:func:`dcgym.agents.evaluation.evaluate` knows no family. It loads the
scenario, looks up the scenario's family here, classifies each policy spec
by where the policy comes from (:class:`Source`: a heuristic name, a
checkpoint or run folder written by ``train.py``, or a policy file) and asks
the family for the runs (:meth:`EvaluationFamily.jobs`). The runs are plain
data with a ``run()`` method, so they travel to Ray workers; each returns
``{"result": row, "histogram": ..., "timeline": ...}``. The shared code
then builds the document from the family's declared metrics
(:attr:`EvaluationFamily.summary_metrics`) and hands it back to the family
for its console table and plots.

Adding a family: a module with a subclass of :class:`EvaluationFamily` and
one entry in :data:`FAMILIES`.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import family as env_family
from dcgym.envs.schema import Load

__all__ = [
    "FAMILIES",
    "Column",
    "EvaluationFamily",
    "LateChange",
    "Options",
    "Percentiles",
    "Source",
    "Spec",
    "classify",
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


class Source(enum.Enum):
    """Where a policy comes from."""

    HEURISTIC = "heuristic"  # a name the family's engine or heuristics know: po2, jsq, ecmp, ...
    CHECKPOINT = "checkpoint"  # a checkpoint or run folder written by train.py, run through its environment
    POLICY_FILE = "policy file"  # an exported policy (FILE.dcpol or zoo:NAME), run inside the engine


@dataclass(frozen=True)
class Spec:
    """A policy spec as the user gave it, with its source."""

    given: Any
    source: Source


def classify(spec: Any) -> Spec:
    """The source of a policy spec: a policy file (``zoo:NAME``, ``*.dcpol``, a path to a file), a checkpoint or
    run folder (a path to a folder, or a name of one), else a heuristic (a name, a mapping or a parsed policy)."""
    from dcgym.agents.export.zoo import is_policy_file_spec
    from dcgym.agents.training.checkpoints import is_checkpoint_spec

    if isinstance(spec, (str, Path)) and is_policy_file_spec(spec):
        return Spec(spec, Source.POLICY_FILE)
    if isinstance(spec, (str, Path)) and is_checkpoint_spec(spec):
        return Spec(spec, Source.CHECKPOINT)
    return Spec(spec, Source.HEURISTIC)


@dataclass(frozen=True)
class Options:
    """Settings of an evaluation besides policies, loads, seeds and work: a family uses those it supports."""

    sample_period_us: float | None = None  # rack: load samples for load-over-time plots
    explore: bool = False  # trained policies sample their actions


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


class EvaluationFamily:
    """How one family is evaluated. Subclasses fill in the class attributes and the methods."""

    kind: ClassVar[str]
    """The scenario kind (:data:`dcgym.envs.families.FAMILIES`)."""
    work: ClassVar[str]
    """What ``tasks`` counts in this family (``tasks``, ``flows``): the unit of a run's length."""
    default_work: ClassVar[int]
    """Units of work per run when the caller gives none."""
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
    load_name: ClassVar[str] = "load"
    """What one point of the load axis is called in messages (the colo family's is a mix index: ``mix``)."""
    load_grid: ClassVar[Any] = Annotated[list[Load], Field(min_length=1)]
    """What a caller's ``loads`` may hold (fractions of capacity; a family whose load axis is something else, such
    as the colo family's mix indices, says so here)."""

    def default_work_for(self, scenario: Any) -> int:
        """Units of work per run on ``scenario`` when the caller gives none: :attr:`default_work` unless the
        family reads it from the scenario."""
        return self.default_work

    def work_to_cover(self, scenario: Any, load: float) -> int:
        """Units of work a run of ``scenario`` at ``load`` needs to see its changes over time twice over (the
        leaderboard's minimum run length); 0 for a family whose scenarios do not change or whose runs cover
        them anyway."""
        return 0

    def late_changes(self, scenario: Any, load: Any, work: int) -> list[LateChange]:
        """The changes over time of ``scenario`` that a run of ``work`` units at ``load`` ends before (evaluate logs
        a warning for each); none for a family whose scenarios do not change."""
        return []

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

    def runs_on(self, scenario: Any, policy: str) -> bool:
        """Whether the baseline named ``policy`` runs on ``scenario`` (the leaderboard skips those that do not)."""
        return True

    def refuse(self, spec: Spec, why: str) -> InvalidConfigError:
        """The error for a policy this family cannot run."""
        return InvalidConfigError("policy", str(spec.given), f"{why} (scenario kind {self.kind})")


FAMILIES: dict[str, str] = {
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
    if name not in FAMILIES:
        raise InvalidConfigError("kind", kind, "a family with an evaluation: " + ", ".join(FAMILIES))
    if name not in _LOADED:
        module, _, attribute = FAMILIES[name].partition(":")
        _LOADED[name] = getattr(importlib.import_module(module), attribute)()
    return _LOADED[name]
