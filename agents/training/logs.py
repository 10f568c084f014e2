"""What a training run writes about itself, one row of named metrics per iteration: metrics.csv, TensorBoard.

The names and where they come from are :mod:`dcgym.agents.training.metrics`'s; this module reads them from
``Algorithm.train()``'s result (:func:`iteration_metrics`) and writes them (:class:`MetricsCsv`,
:func:`summary_writer`). It loads neither Ray nor RLlib.

TensorBoard events are written with ``torch.utils.tensorboard.SummaryWriter``
(which needs the ``tensorboard`` package), or with ``tensorboardX`` (Ray's
dependency, the same event format) when ``tensorboard`` is not installed;
their step is ``timesteps``.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CSV_FIRST", "PREFIX", "MetricsCsv", "iteration_metrics", "summary_writer"]

PREFIX = "dcgym_"
"""The callback logs an environment's metric NAME as ``dcgym_NAME`` on the env runners (``charts/NAME`` here)."""

CSV_FIRST = ("iteration", "timesteps", "episodes", "time_s")
"""The first columns of metrics.csv; the other columns follow in name order."""

_BOOKKEEPING = {  # learner statistics that are not about learning
    "weights_seq_no",
    "diff_num_grad_updates_vs_sampler_policy",
    "module_train_batch_size_mean",
    "num_trainable_parameters",
    "num_non_trainable_parameters",
    "last_target_update_ts",
    "num_target_updates",
}


def _scalar(value: Any) -> float | None:
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return None


def iteration_metrics(result: Mapping[str, Any]) -> dict[str, float]:
    """The named metrics (module docstring) of one ``Algorithm.train()`` result."""
    runners = result.get("env_runners", {}) or {}
    m: dict[str, float | None] = {
        "iteration": result.get("training_iteration"),
        "timesteps": result.get("num_env_steps_sampled_lifetime", runners.get("num_env_steps_sampled_lifetime")),
        "episodes": runners.get("num_episodes_lifetime"),
        "time_s": result.get("time_total_s"),
    }
    agent_returns = runners.get("agent_episode_returns_mean")
    if isinstance(agent_returns, Mapping) and agent_returns:
        m["charts/return"] = float(np.mean([float(v) for v in agent_returns.values()]))
    m["charts/team_return"] = runners.get("episode_return_mean")
    m["charts/episode_length"] = runners.get("episode_len_mean")
    for key, value in runners.items():
        if isinstance(key, str) and key.startswith(PREFIX):
            m["charts/" + key.removeprefix(PREFIX)] = value
    steps, seconds = runners.get("num_env_steps_sampled"), result.get("time_this_iter_s")
    if _scalar(steps) is not None and _scalar(seconds):
        m["charts/env_steps_per_s"] = float(steps) / float(seconds)
    per_stat: dict[str, list[float]] = {}
    for module, stats in (result.get("learners", {}) or {}).items():
        if module == "__all_modules__" or not isinstance(stats, Mapping):
            continue
        for key, value in stats.items():
            x = _scalar(value)
            if x is None or key in _BOOKKEEPING or key.startswith("num_") or key.endswith("learning_rate"):
                continue
            per_stat.setdefault(key, []).append(x)
    for key, xs in per_stat.items():
        m[f"losses/{key}"] = float(np.mean(xs))
    return {k: float(v) for k, v in m.items() if _scalar(v) is not None}


class MetricsCsv:
    """metrics.csv: one row per iteration; new columns rewrite the file with the wider header."""

    def __init__(self, path: str | Path, keep_through: int | None = None) -> None:
        self.path = Path(path)
        self.rows: list[dict[str, float]] = []
        self.columns: list[str] = list(CSV_FIRST)
        if self.path.is_file():
            with self.path.open(newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    parsed = {k: float(v) for k, v in row.items() if v not in ("", None)}
                    if keep_through is None or parsed.get("iteration", 0) <= keep_through:
                        self.rows.append(parsed)
            self.columns = self._order({k for row in self.rows for k in row})
            self._rewrite()  # drops rows past the checkpoint a run resumes from

    def _order(self, keys: set[str]) -> list[str]:
        return [k for k in CSV_FIRST] + sorted(keys - set(CSV_FIRST))

    def append(self, metrics: Mapping[str, float]) -> None:
        self.rows.append(dict(metrics))
        if set(metrics) - set(self.columns):
            self.columns = self._order(set(self.columns) | set(metrics))
            self._rewrite()
            return
        with self.path.open("a", newline="", encoding="utf-8") as f:
            csv.DictWriter(f, self.columns).writerow(metrics)

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".csv.tmp")
        with tmp.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
        tmp.replace(self.path)


def summary_writer(log_dir: str | Path, purge_step: int | None = None):
    """A TensorBoard ``SummaryWriter``: torch's if ``tensorboard`` is installed, else tensorboardX's; else None."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            logging.getLogger(__name__).warning("no TensorBoard events: pip install tensorboard")
            return None
    return SummaryWriter(str(log_dir), purge_step=purge_step)
