"""How long and how large an evaluation would be, checked before its first run: a request that would take hours or
gigabytes is refused with one line saying what it would take, unless forced.

The time is a lower bound: every run's units of work at the fastest rate measured for its family (the cheapest
scenario and heuristic, one run on one core of a 2-core machine), over the runs in parallel. Bigger scenarios and
trained policies stepped from Python are slower (up to a thousand times), so a request refused here would take
at least this long; one let through may still take longer. The memory is what the parent process holds at the
end: every run's result and the timelines kept for the plots (:meth:`EvaluationFamily.timeline_values`), as Python
numbers in the document and its JSON text.
"""

from __future__ import annotations

from typing import Any

from dcgym.agents.evaluation.runner import resolved_workers
from dcgym.envs.error import InvalidConfigError, Verbatim

__all__ = ["BYTES_PER_RUN", "BYTES_PER_VALUE", "MAX_BYTES", "MAX_HOURS", "check_size", "parallel_runs"]

MAX_HOURS = 2.0
"""Longest evaluation (estimated wall-clock hours, a lower bound) run without ``force``."""

MAX_BYTES = 4 * 2**30
"""Largest evaluation (estimated bytes held at the end) run without ``force``."""

BYTES_PER_VALUE = 64
"""A kept number: a Python float in a list (32 bytes) and its text in the JSON document and files."""

BYTES_PER_RUN = 200_000
"""A run's row and its histogram's nonzero bins, generously."""


def check_size(
    family: Any,
    runs: int,
    work: int,
    parallel: int,
    kept: float = 0.0,
    force: bool = False,
    field: str = "tasks",
) -> tuple[float, float]:
    """(hours, bytes) ``runs`` runs of ``work`` units each would take on ``parallel`` workers, keeping ``kept``
    timeline numbers; InvalidConfigError naming ``field`` (or ``timeline``) when above :data:`MAX_HOURS` (or
    :data:`MAX_BYTES`) and not ``force``."""
    hours = runs * work / family.fastest_rate / max(parallel, 1) / 3600
    size = runs * BYTES_PER_RUN + kept * BYTES_PER_VALUE
    if force:
        return hours, size
    if hours > MAX_HOURS:
        raise InvalidConfigError(
            field,
            work,
            f"an evaluation estimated under {MAX_HOURS:g} hours, or force (--force): {runs:,} runs of {work:,} "
            f"{family.work} would take at least {hours:,.1f} hours on {max(parallel, 1)} worker(s) (at most "
            f"{family.fastest_rate:,.0f} {family.work} a second per run); fewer {family.work}, loads, seeds or "
            "policies",
        )
    if size > MAX_BYTES:
        raise InvalidConfigError(
            "timeline" if kept else "runs",
            Verbatim(f"{runs:,} runs keeping {kept:,.0f} timeline samples' numbers" if kept else f"{runs:,} runs"),
            f"an evaluation estimated under {MAX_BYTES / 2**30:g} GB, or force (--force): this one would hold "
            f"about {size / 2**30:,.1f} GB; a longer --timeline period, fewer {family.work}, loads or seeds",
        )
    return hours, size


def parallel_runs(workers: int | None, runs: int, address: str | None) -> int:
    """Runs at a time with ``workers`` as evaluate takes it (:func:`dcgym.agents.evaluation.runner.run_all`)."""
    return max(resolved_workers(workers, runs, address), 1)  # 0: serial, one at a time
