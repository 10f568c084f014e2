"""Shared plumbing of the paper-figure reproductions (benchmarks/reproduce_*.py).

Each reproduction builds a list of :class:`Point` (an engine config, the
labels it is plotted under, a seed), runs them with :func:`run_points`
(at most two processes), averages over seeds with :func:`by_label`, and
writes a PNG and a markdown page into ``--out`` (docs/reproductions).
Nothing here knows about a particular paper.
"""

from __future__ import annotations

import argparse
import copy
import math
import multiprocessing
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display on the benchmark machines
import matplotlib.pyplot as plt  # noqa: E402

from dcgym.cpp_core import RackSim  # noqa: E402
from dcgym.envs.scenario import load_scenario  # noqa: E402

WARMUP_FRACTION = 0.1  # arrivals simulated but left out of the statistics (start-empty bias)
MAX_JOBS = 2  # other jobs share the machine


def cli(doc: str, tasks: int, seeds: int) -> argparse.Namespace:
    """The common command line: --tasks, --seeds, --out, --jobs."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=tasks, help=f"arrivals simulated per point (default {tasks:,})")
    p.add_argument("--seeds", type=int, default=seeds, help=f"seeds per point, 1..N (default {seeds})")
    p.add_argument("--out", type=Path, default=Path("docs/reproductions"), help="folder for the PNG and markdown")
    p.add_argument(
        "--jobs", type=int, default=MAX_JOBS, help=f"worker processes, at most {MAX_JOBS} (default {MAX_JOBS})"
    )
    args = p.parse_args()
    if args.tasks < 1000:
        p.error(f"--tasks must be >= 1000, got {args.tasks}")
    if args.seeds < 1:
        p.error(f"--seeds must be >= 1, got {args.seeds}")
    if not 1 <= args.jobs <= MAX_JOBS:
        p.error(f"--jobs must be in [1, {MAX_JOBS}], got {args.jobs}")
    return args


def config(scenario: str, load: float, seed: int, policy: str | dict | None = None, **overrides: Any) -> dict:
    """The engine config of a packaged scenario, with top-level keys replaced or (for dicts) updated."""
    cfg = copy.deepcopy(load_scenario(scenario).engine_config(load=load, seed=seed, policy=policy))
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key].update(value)
        else:
            cfg[key] = value
    return cfg


@dataclass(frozen=True)
class Point:
    """One simulation: labels identify its curve and x value; seeds of equal labels are averaged."""

    labels: tuple
    cfg: dict = field(hash=False, compare=False)


def run_one(cfg: dict, tasks: int, samples: bool = False) -> dict:
    """Run `tasks` arrivals (the first 10% warm-up) and keep what the reproductions read."""
    cfg = dict(cfg, warmup_tasks=int(tasks * WARMUP_FRACTION))
    sim = RackSim(cfg)
    sim.run_tasks(tasks)
    r = sim.results()
    out = {
        "p50": r["latency_us"]["p50"],
        "p99": r["latency_us"]["p99"],
        "p999": r["latency_us"]["p999"],
        "mean": r["latency_us"]["mean"],
        "dropped": r["tasks_dropped"],
        "in_flight": r["tasks_in_flight"],
        "arrived": r["tasks_arrived"],
        "migrations": r["migrations"],
        "sim_time_us": r["sim_time_us"],
        "utilization": r["nodes"]["utilization"].tolist(),
        "outstanding": r["nodes"]["outstanding"].tolist(),
        "p99_by_class": [c["p99"] for c in r["latency_by_class_us"]],
    }
    if samples:
        times, loads = sim.take_samples()
        out["sample_times"], out["samples"] = times, loads
    return out


def _run(job: tuple[dict, int, bool]) -> dict:
    return run_one(*job)


def run_points(points: Sequence[Point], tasks: int, jobs: int, samples: bool = False) -> list[dict]:
    """Results of every point, in order; prints progress and the wall time."""
    start = time.perf_counter()
    work = [(p.cfg, tasks, samples) for p in points]
    if jobs == 1:
        results = [_run(w) for w in work]
    else:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_run, work, chunksize=1)
    print(f"{len(points)} runs of {tasks:,} tasks in {time.perf_counter() - start:.1f} s")
    return results


@dataclass
class Stat:
    """A metric over seeds: the mean and the range."""

    mean: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat:
        v = list(values)
        return cls(statistics.fmean(v), min(v), max(v), len(v))

    def fmt(self, digits: int = 0) -> str:
        if not math.isfinite(self.mean):
            return "n/a"
        s = f"{self.mean:,.{digits}f}"
        return (
            s
            if self.n == 1 or self.hi - self.lo < 0.5 * 10**-digits
            else f"{s} ({self.lo:,.{digits}f}-{self.hi:,.{digits}f})"
        )


def by_label(points: Sequence[Point], results: Sequence[dict], metric: str = "p99") -> dict[tuple, Stat]:
    """The metric per label tuple, over the seeds run with those labels."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for p, r in zip(points, results, strict=True):
        groups[p.labels].append(r[metric] if isinstance(metric, str) else metric(r))
    return {k: Stat.of(v) for k, v in groups.items()}


def knee(loads: Sequence[float], p99: Sequence[float], limit: float) -> float | None:
    """The highest load of the grid below which every p99 is <= limit (None if the first already exceeds it)."""
    best = None
    for x, y in zip(loads, p99, strict=True):
        if y > limit:
            break
        best = x
    return best


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_page(out: Path, name: str, text: str, fig: plt.Figure | None = None) -> None:
    """docs/reproductions/<name>.md (and <name>.png)."""
    out.mkdir(parents=True, exist_ok=True)
    if fig is not None:
        fig.savefig(out / f"{name}.png", dpi=110, bbox_inches="tight")
        plt.close(fig)
    (out / f"{name}.md").write_text(text.strip() + "\n")
    print(f"wrote {out / name}.md" + (f" and {name}.png" if fig is not None else ""))
