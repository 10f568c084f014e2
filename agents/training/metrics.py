"""What a training run measures and where it goes: an RLlib callback, metric names, CSV / TensorBoard / W&B.

Every iteration becomes one row of named metrics (CleanRL's prefixes; :mod:`dcgym.agents.training.logs` writes
them):

| metric | meaning |
|---|---|
| ``iteration``, ``timesteps``, ``episodes``, ``time_s`` | training iterations, env steps and episodes so far, seconds of training |
| ``charts/return`` | mean episode return per agent (RLlib's ``agent_episode_returns_mean``, averaged over agents) |
| ``charts/team_return`` | mean episode return summed over agents (RLlib's ``episode_return_mean``) |
| ``charts/episode_length`` | mean steps per episode |
| ``charts/<name>`` | each metric the environment reports (below), averaged over the episode's steps or taken at its end |
| ``charts/env_steps_per_s`` | env steps sampled per second of the iteration |
| ``losses/<stat>`` | each learner statistic (``policy_loss``, ``vf_loss``, ``entropy``, ``qf_loss``, ...), averaged over modules |

What an environment reports is its own (the callback knows no family): the
info every agent shares carries ``metrics``, a mapping of per-step values
(averaged over the episode's steps), and at the episode's last step
``episode_metrics`` (taken as they are). rack_v0 reports ``imbalance`` (the
mean over node pairs of (x_i - x_j)^2 of the true loads, load units),
``migrations``, ``steals``, ``dropped`` per step and ``p99_us``,
``mean_latency_us`` of the episode's tasks; lb_v0 ``imbalance`` (the mean over
LBs of Var of the LB's load estimates, D^2), ``rejected`` per step and
``p99_fct_s``, ``mean_fct_s`` of the episode's flows.

Episode metrics are means over the last ``metrics_num_episodes_for_smoothing``
(100) episodes, as RLlib's returns are; they are blank until an episode ends.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ray.rllib.callbacks.callbacks import RLlibCallback

from dcgym.agents.training.logs import PREFIX

__all__ = ["DcgymMetrics"]


class DcgymMetrics(RLlibCallback):
    """Logs the metrics each environment reports in its shared info (module docstring), per episode.

    Everything is read when the episode ends, from its chunks' infos (each chunk's first info is the previous
    chunk's last, or the reset's: not a step), so that an env runner that builds episodes in bulk
    (:class:`~dcgym.agents.rl.bulk_env_runner.BulkEnvRunner`) and RLlib's step-by-step one log the same numbers.
    """

    def on_episode_end(self, *, episode, env_runner, metrics_logger, prev_episode_chunks=(), **kwargs) -> None:
        sums: dict[str, float] = {}
        steps = 0
        end: dict = {}
        for chunk in [*(prev_episode_chunks or ()), episode]:
            # The shared info is in every agent's: one agent's episode has it (a multi-agent episode's get_infos
            # deep-copies every agent's info at every step, 60 us per step of a 14-node rack).
            agent = next(iter(chunk.agent_episodes.values()), None) if hasattr(chunk, "agent_episodes") else chunk
            if agent is None:
                continue
            for info in agent.get_infos(slice(1, len(agent) + 1)):
                if not isinstance(info, Mapping) or not info:
                    continue
                steps += 1
                for name, value in (info.get("metrics") or {}).items():
                    sums[name] = sums.get(name, 0.0) + float(value)
                end = dict(info.get("episode_metrics") or end)
        if not steps:
            return
        window = getattr(env_runner.config, "metrics_num_episodes_for_smoothing", 100)
        values = {name: total / steps for name, total in sums.items()} | end
        for name, value in values.items():
            if value is not None and math.isfinite(value):
                metrics_logger.log_value(PREFIX + name, float(value), reduce="mean", window=window)
