"""Plots of an evaluation document (:mod:`dcgym.agents.evaluation`): p99 vs load, latency CDFs, load over time.

Each function reads only the document, so a saved ``results.json`` can be
re-plotted. Matplotlib's object API (no pyplot): safe in workers and threads.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

log = logging.getLogger(__name__)


def _title(doc: Mapping[str, Any]) -> str:
    seeds = doc.get("seeds") or [doc.get("seed")]
    runs = f"seed {seeds[0]}" if len(seeds) == 1 else f"{len(seeds)} seeds, 95% CI"
    return f"{doc['scenario']}: {doc['tasks']:,} tasks per run, {runs}"


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    log.info("wrote %s", path)
    return path


def _policies(doc: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(r["policy"] for r in doc["results"]))


def _summary(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-(policy, load) summary; for a document without one, each run as its own summary."""
    if "summary" in doc:
        return list(doc["summary"])
    return [
        {"policy": r["policy"], "load": r["load"],
         "latency_us": {k: {"mean": v, "ci95": None} for k, v in r["latency_us"].items()}}
        for r in doc["results"]
    ]


def plot_p99_vs_load(doc: Mapping[str, Any], path: str | Path) -> Path:
    """p99 latency against load, one line per policy with its confidence band, log-scale latency; a PNG."""
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    summary = _summary(doc)
    for policy in _policies(doc):
        points = sorted(
            (s["load"], s["latency_us"]["p99"]["mean"], s["latency_us"]["p99"]["ci95"])
            for s in summary
            if s["policy"] == policy and s["latency_us"]["p99"]["mean"] is not None
        )
        if not points:
            continue
        loads, p99, ci = zip(*points)
        (line,) = ax.plot(loads, p99, marker="o", label=policy)
        if any(c is not None for c in ci):
            low = [max(m - (c or 0), m * 1e-3) for m, c in zip(p99, ci)]  # stays positive on a log axis
            high = [m + (c or 0) for m, c in zip(p99, ci)]
            ax.fill_between(loads, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_yscale("log")
    ax.set_xlabel("load (fraction of capacity)")
    ax.set_ylabel("p99 latency (us)")
    ax.set_title(_title(doc), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend()
    return _save(fig, path)


def plot_latency_cdf(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Latency CDF per policy (all seeds' tasks together), one panel per load, log-scale latency; a PNG."""
    summary = _summary(doc)
    loads = list(dict.fromkeys(s["load"] for s in summary))
    cols = min(len(loads), 4)
    rows = -(-len(loads) // cols)
    fig = Figure(figsize=(3.6 * cols, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    probabilities = doc.get("cdf_probabilities", [])
    for ax, load in zip(axes.flat, loads):
        for policy in _policies(doc):
            cell = next((s for s in summary if s["policy"] == policy and s["load"] == load), None)
            quantiles = (cell or {}).get("latency_cdf_us") or []
            points = [(q, p) for q, p in zip(quantiles, probabilities) if q is not None]
            if points:
                ax.step(*zip(*points), where="post", label=policy)
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_title(f"load {load:g}", fontsize=9)
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("CDF")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(loads):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6))
    fig.suptitle(_title(doc), fontsize=9)
    return _save(fig, path)


def plot_load_over_time(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Mean outstanding tasks per worker of each node group over time; a panel per policy and load; a PNG."""
    timelines = list(doc.get("timelines") or [])
    policies = list(dict.fromkeys(t["policy"] for t in timelines)) or [""]
    loads = list(dict.fromkeys(t["load"] for t in timelines)) or [0.0]
    fig = Figure(figsize=(max(6.4, 4.2 * len(loads)), 2.6 * len(policies)), layout="constrained")
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
    return _save(fig, path)


def plot_learning_curve(rows: list[Mapping[str, float]], path: str | Path, title: str = "") -> Path:
    """Return, imbalance and p99 latency against env steps, one panel each (train.py's metrics rows); a PNG."""
    panels = [("charts/return", "return per agent"), ("charts/imbalance", "load imbalance"),
              ("charts/p99_us", "p99 latency (us)")]
    fig = Figure(figsize=(10.5, 3.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (key, label) in zip(axes, panels):
        points = [(r.get("timesteps", r.get("iteration", 0.0)), r[key]) for r in rows if r.get(key) is not None]
        if points:
            ax.plot(*zip(*points), marker="." if len(points) < 50 else None)
        if key == "charts/p99_us" and points and min(p[1] for p in points) > 0:
            ax.set_yscale("log")
        ax.set_xlabel("env steps")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    return _save(fig, path)
