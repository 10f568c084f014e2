"""Plots of an evaluation document (:mod:`dcgym.agents.evaluation`): a metric vs load, CDFs, load over time.

Each function reads only the document, so a saved ``results.json`` can be
re-plotted. Matplotlib's object API (no pyplot): safe in workers and threads.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib ``Figure`` (object API, no pyplot). Matplotlib is imported here, on the first plot: it takes a
    second or two to import, and most commands (``-h``, ``list``, an engine run, a Ray worker) never plot."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def _title(doc: Mapping[str, Any]) -> str:
    seeds = doc.get("seeds") or [doc.get("seed")]
    runs = f"seed {seeds[0]}" if len(seeds) == 1 else f"{len(seeds)} seeds, 95% CI"
    work = next((k for k in ("tasks", "flows") if k in doc), "tasks")
    return f"{doc['scenario']}: {doc[work]:,} {work} per run, {runs}"


def save_figure(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    log.info("wrote %s", path)
    return path


def _policies(doc: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(r["policy"] for r in doc["results"]))


def _get(mapping: Mapping[str, Any], path: str) -> Any:
    value: Any = mapping
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _plain(value: float, _: Any = None) -> str:
    """A tick label as a plain number: 400, 1,500, 0.25 (never 4.05x10^2)."""
    return f"{value:,.6g}"


DENSE_DECADES = 2
"""Up to this many decades a log axis is labelled at 1, 2 and 5 per decade; beyond, at 1 per decade."""


def value_axis(ax: Any, values: list[float], axis: str = "y") -> None:
    """A log scale with plain-number ticks at 1, 2, 5 per decade when ``values`` span a factor of 10 or more
    (at 1 per decade beyond :data:`DENSE_DECADES` decades, where 1, 2, 5 labels run into each other on a small
    panel); a linear scale without offset otherwise (a narrower range on a log axis gets unreadable minor
    labels)."""
    from matplotlib import ticker

    positive = [v for v in values if v is not None and v > 0]
    target = ax.yaxis if axis == "y" else ax.xaxis
    if positive and max(positive) / min(positive) >= 10:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        dense = max(positive) / min(positive) <= 10**DENSE_DECADES
        target.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0) if dense else (1.0,)))
        target.set_major_formatter(ticker.FuncFormatter(_plain))
        target.set_minor_formatter(ticker.NullFormatter())
    else:
        target.set_major_formatter(ticker.FuncFormatter(_plain))


def plot_metric_vs_load(doc: Mapping[str, Any], path: str | Path, metric: str, label: str) -> Path:
    """A summary metric (dotted path, e.g. ``latency_us.p99``) against load, one line per policy with its
    confidence band; a censored cell (percentiles leave out dropped or unfinished work) is a hollow marker."""
    fig = new_figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    summary = list(doc["summary"])
    shown: list[float] = []
    any_censored = False
    for policy in _policies(doc):
        points = sorted(
            (s["load"], _get(s, metric)["mean"], _get(s, metric)["ci95"], bool(s.get("censored")))
            for s in summary
            if s["policy"] == policy and _get(s, metric) and _get(s, metric)["mean"] is not None
        )
        if not points:
            continue
        loads, means, ci, censored = zip(*points)
        shown += means
        (line,) = ax.plot(loads, means, marker="o", label=policy)
        hollow = [(x, y) for x, y, c in zip(loads, means, censored) if c]
        if hollow:
            any_censored = True
            ax.plot(
                *zip(*hollow),
                linestyle="none",
                marker="o",
                markersize=9,
                markerfacecolor="white",
                markeredgecolor=line.get_color(),
            )
        if any(c is not None for c in ci):
            low = [max(m - (c or 0), m * 1e-3) for m, c in zip(means, ci)]  # stays positive on a log axis
            high = [m + (c or 0) for m, c in zip(means, ci)]
            ax.fill_between(loads, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    value_axis(ax, shown)
    ax.set_xlabel("load (fraction of capacity)")
    ax.set_ylabel(label)
    ax.set_title(_title(doc), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if any_censored:
        ax.plot(
            [],
            [],
            linestyle="none",
            marker="o",
            markerfacecolor="white",
            markeredgecolor="gray",
            label="censored (drops or timeouts left out of the tail)",
        )
    if ax.lines:
        ax.legend(fontsize=8)
    return save_figure(fig, path)


PROBABILITY_TICKS = (0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999)
"""Where a CDF's logit axis is labelled."""


def plot_cdf(doc: Mapping[str, Any], path: str | Path, field: str, label: str) -> Path:
    """The CDF of every seed's samples together (summary ``field``), one panel per load, one line per policy: the
    panels share both axes, and the probability axis is a logit scale (0.5, 0.9, 0.99, 0.999 equally apart), so the
    tail a linear axis squeezes against 1 is as readable as the median."""
    summary = list(doc["summary"])
    loads = list(dict.fromkeys(s["load"] for s in summary))
    cols = min(len(loads), 4)
    rows = -(-len(loads) // cols)
    fig = new_figure(figsize=(3.6 * cols, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
    probabilities = doc.get("cdf_probabilities", [])
    shown: list[float] = []
    inside = [p for p in probabilities if 0 < p < 1]
    for ax, load in zip(axes.flat, loads):
        for policy in _policies(doc):
            cell = next((s for s in summary if s["policy"] == policy and s["load"] == load), None)
            quantiles = (cell or {}).get(field) or []
            points = [(q, p) for q, p in zip(quantiles, probabilities) if q is not None and 0 < p < 1]
            if points:
                censored = " (censored)" if cell and cell.get("censored") else ""
                ax.step(*zip(*points), where="post", label=policy + censored)
                shown += [q for q, _ in points]
        ax.set_title(f"load {load:g}", fontsize=9)
        ax.set_xlabel(label)
        ax.set_ylabel("CDF")
        ax.grid(True, which="both", alpha=0.3)
    first = axes.flat[0]
    value_axis(first, shown, "x")  # once: the panels share it
    if inside:
        from matplotlib import ticker

        first.set_yscale("logit")
        first.set_ylim(min(inside), max(inside))
        first.yaxis.set_major_locator(ticker.FixedLocator(PROBABILITY_TICKS))
        first.yaxis.set_major_formatter(ticker.FuncFormatter(_plain))
        first.yaxis.set_minor_formatter(ticker.NullFormatter())
        first.yaxis.set_minor_locator(ticker.NullLocator())  # the logit's minor ticks: 0.6 s a plot, unlabelled
    for ax in list(axes.flat)[len(loads) :]:
        ax.set_visible(False)
    handles, labels = first.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6))
    fig.suptitle(_title(doc), fontsize=9)
    return save_figure(fig, path)


def plot_p99_vs_load(doc: Mapping[str, Any], path: str | Path) -> Path:
    """p99 latency (µs) against load on a rack document."""
    return plot_metric_vs_load(doc, path, "latency_us.p99", "p99 latency (µs)")


def plot_latency_cdf(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Latency CDFs (µs) of a rack document."""
    return plot_cdf(doc, path, "latency_cdf_us", "latency (µs)")


def plot_load_over_time(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Mean outstanding tasks per worker of each node group over time; a panel per policy and load; a PNG."""
    timelines = list(doc.get("timelines") or [])
    policies = list(dict.fromkeys(t["policy"] for t in timelines)) or [""]
    loads = list(dict.fromkeys(t["load"] for t in timelines)) or [0.0]
    fig = new_figure(figsize=(max(6.4, 4.2 * len(loads)), 2.6 * len(policies)), layout="constrained")
    axes = fig.subplots(len(policies), len(loads), squeeze=False, sharex=True)
    for t in timelines:
        ax = axes[policies.index(t["policy"]), loads.index(t["load"])]
        seconds = [x / 1e6 for x in t["times_us"]]
        for group in t["groups"]:
            ax.plot(seconds, group["outstanding_per_worker"], linewidth=0.8, label=group["label"])
        ax.set_title(f"{t['policy']} at load {t['load']:g} (seed {t['seed']})", fontsize=9)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("outstanding / worker")
        ax.grid(True, alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6))
    fig.suptitle(_title(doc), fontsize=9)
    return save_figure(fig, path)


def plot_performance_profiles(
    profiles: Mapping[str, list[float]], taus: list[float], path: str | Path, title: str
) -> Path:
    """Performance profiles (:func:`dcgym.agents.evaluation.scores.performance_profile`): for each policy, the
    share of its runs scoring above tau, against tau (0 = the family's reference, 1 = its top)."""
    fig = new_figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    for policy, shares in profiles.items():
        ax.plot(taus, shares, label=policy)
    ax.axvline(0.0, color="grey", linewidth=0.6)
    ax.axvline(1.0, color="grey", linewidth=0.6)
    ax.set_xlabel("normalised score tau")
    ax.set_ylabel("share of runs with score > tau")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return save_figure(fig, path)
