"""The learning curve of a training run: each panel a metric against env steps, smoothed, the raw series faint.

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

from dcgym.agents.evaluation.plots import new_figure, save_figure, value_axis

__all__ = ["PANELS", "SMOOTHING", "plot_learning_curve", "smooth"]

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


def plot_learning_curve(rows: list[Mapping[str, float]], path: str | Path, title: str = "") -> Path:
    """Return, imbalance and p99 latency against env steps (train.py's metrics rows), one panel each; a PNG."""
    fig = new_figure(figsize=(10.5, 3.2), layout="constrained")
    axes = fig.subplots(1, len(PANELS), squeeze=False)[0]
    for ax, choices in zip(axes, PANELS):
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
