"""The learning curve of a training run: each panel a metric against env steps (and, on its top axis, the
training's wall time), smoothed, the raw series faint.

Each metric is drawn twice: its raw values thin and faint, and an exponential
moving average over :data:`SMOOTHING` of the run's length on top. The value
axis spans the 1st to 99th percentile of the raw series (with a margin), so
one outlier (an episode that dropped every task) does not flatten the rest;
the outliers stay in the CSV.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.ticker import EngFormatter

from dcgym.agents.evaluation.plots import new_figure, save_figure, value_axis

__all__ = ["PANELS", "SMOOTHING", "plot_learning_curve", "smooth", "wall_time_axis"]

PANELS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("charts/return", "return per agent"),),
    (("charts/imbalance", "load imbalance"),),
    (("charts/p99_us", "p99 latency (µs)"), ("charts/p99_fct_s", "p99 flow completion time (s)")),
)
"""Each panel: the (metric, axis label) choices it shows, the first the run has (environments report their own)."""

SMOOTHING = 0.05
"""The moving average's span as a fraction of the points (at least 1 point)."""


def smooth(values: np.ndarray) -> np.ndarray:
    """An exponential moving average of ``values`` with a span of :data:`SMOOTHING` of their number."""
    import pandas as pd  # only here: importing pandas takes a second, and every train.py would pay it

    span = max(1.0, SMOOTHING * len(values))
    return pd.Series(values, dtype=float).ewm(span=span, adjust=True).mean().to_numpy()


def _piecewise_linear(x: np.ndarray, y: np.ndarray):
    """y(x) through the points, continued on the end segments' slopes (an axis asks beyond the data)."""

    def f(v):
        v = np.asarray(v, dtype=float)
        inside = np.interp(v, x, y)
        low = y[0] + (v - x[0]) * (y[1] - y[0]) / (x[1] - x[0])
        high = y[-1] + (v - x[-1]) * (y[-1] - y[-2]) / (x[-1] - x[-2])
        return np.where(v < x[0], low, np.where(v > x[-1], high, inside))

    return f


def wall_time_axis(ax, rows: list[Mapping[str, float]]):
    """A top axis on ``ax`` (env steps) reading the training's wall time (train.py's ``time_s``), in seconds, or
    minutes past 10; None when the rows cannot map one to the other (under two points, or not both rising)."""
    points = [(r.get("timesteps"), r.get("time_s")) for r in rows]
    points = [(float(a), float(b)) for a, b in points if a is not None and b is not None]
    if len(points) < 2:
        return None
    steps, seconds = (np.asarray(v) for v in zip(*points))
    if not (np.all(np.diff(steps) > 0) and np.all(np.diff(seconds) > 0)):
        return None
    unit, scale = ("min", 60.0) if seconds[-1] > 600 else ("s", 1.0)
    times = seconds / scale
    top = ax.secondary_xaxis("top", functions=(_piecewise_linear(steps, times), _piecewise_linear(times, steps)))
    top.set_xlabel(f"training wall time ({unit})", fontsize=8)
    top.tick_params(labelsize=7)
    return top


def plot_learning_curve(rows: list[Mapping[str, float]], path: str | Path, title: str = "") -> Path:
    """Return, imbalance and p99 latency against env steps and wall time (train.py's metrics rows), one panel
    each; a PNG."""
    fig = new_figure(figsize=(10.5, 3.4), layout="constrained")
    axes = fig.subplots(1, len(PANELS), squeeze=False)[0]
    for ax, choices in zip(axes, PANELS):
        wall_time_axis(ax, rows)
        key, label = next(((k, lb) for k, lb in choices if any(r.get(k) is not None for r in rows)), choices[0])
        points = [(r.get("timesteps", r.get("iteration", 0.0)), r[key]) for r in rows if r.get(key) is not None]
        if points:
            steps, values = (np.asarray(v, dtype=float) for v in zip(*points))
            (raw,) = ax.plot(steps, values, linewidth=0.6, alpha=0.3)
            ax.plot(steps, smooth(values), color=raw.get_color(), linewidth=1.6)
            low, high = np.percentile(values, [1, 99])
            margin = 0.1 * (high - low) or 0.1 * abs(high) or 1.0
            if len(values) >= 20:  # a short series shows everything
                ax.set_ylim(low - margin, high + margin)
            if key.startswith("charts/p99"):
                value_axis(ax, [float(v) for v in values])
            else:  # "-20 M", not a "1e7" above the axis, where the wall time's axis is
                ax.yaxis.set_major_formatter(EngFormatter(sep=" "))
        else:  # a short run: no episode has ended yet (the metric is per episode)
            ax.text(
                0.5,
                0.5,
                f"no {label} yet:\nno episode ended\nin {len(rows)} iterations",
                ha="center",
                va="center",
                transform=ax.transAxes,
                fontsize=9,
                color="0.4",
            )
        ax.set_xlabel("env steps")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)
