"""RLlib's multi-agent env runner with its sample counters logged once per ``sample()`` call, not per step.

RLlib's ``MultiAgentEnvRunner`` logs four metrics per agent and two per env step
as it steps (``num_agent_steps_sampled`` and its lifetime sum per agent, the same
per module, ``num_env_steps_sampled`` and its lifetime sum): 58 ``MetricsLogger``
calls per step of a 14-node rack, about 15% of ``sample()`` in a profile of
``ppo_rack``. :class:`CountingEnvRunner` counts them in a dict while sampling and
logs each sum once when ``sample()`` returns. The sums are the same (every
counter is a plain or lifetime sum), so results, checkpoints and progress read
the same numbers; actions, episodes and what the learner gets are untouched
(the runner's own ``num_env_steps_sampled_lifetime`` attribute, which
exploration schedules read, is kept by RLlib as before).

It also seeds its environments once, at their first reset, where RLlib reseeds
them at every whole-episode sample (:meth:`CountingEnvRunner._try_env_reset`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
)

__all__ = ["CountingEnvRunner"]

_LIFETIME = {
    NUM_ENV_STEPS_SAMPLED: NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES: NUM_EPISODES_LIFETIME,
    NUM_AGENT_STEPS_SAMPLED: NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED: NUM_MODULE_STEPS_SAMPLED_LIFETIME,
}
"""Each per-call counter and its lifetime sum, as RLlib names them."""


class CountingEnvRunner(MultiAgentEnvRunner):
    """``MultiAgentEnvRunner`` whose per-step sample counters are summed and logged at the end of ``sample()``, and
    whose environments are seeded once (:meth:`_try_env_reset`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._counts: Counter[tuple[str, ...]] = Counter()
        self._seeded = False
        super().__init__(*args, **kwargs)

    def make_env(self) -> None:
        self._seeded = False  # a new environment takes the runner's seed at its first reset
        super().make_env()

    def _try_env_reset(self, *, seed: int | None = None, options: dict | None = None):
        """The environments' reset, with the runner's seed only the first time.

        RLlib resets with the runner's seed at every ``sample(num_episodes=...)`` call (and after
        ``force_reset``): right for evaluation runners, which should replay the same episodes, wrong for training.
        The multi-LB learners sample whole episodes every iteration, so with RLlib's seeding each iteration replayed
        the same arrival traces (and, with ``load_range``, the same loads). Seeded once, each copy's later episodes
        draw their seeds from its own generator: new traces every iteration, the same ones again for the same
        runner seed (tests/agents/training/test_env_runner.py)."""
        if seed is not None:
            seed, self._seeded = (None if self._seeded else seed), True
        return super()._try_env_reset(seed=seed, options=options)

    def _increase_sampled_metrics(self, num_steps, next_obs, episode):
        counts = self._counts
        counts[(NUM_ENV_STEPS_SAMPLED,)] += num_steps
        if episode.is_done:
            counts[(NUM_EPISODES,)] += 1
        for aid in next_obs:
            counts[(NUM_AGENT_STEPS_SAMPLED, str(aid))] += 1
            counts[(NUM_MODULE_STEPS_SAMPLED, episode.module_for(aid))] += 1
        return num_steps

    def sample(self, *args: Any, **kwargs: Any):
        try:
            return super().sample(*args, **kwargs)
        finally:
            self._log_counts()

    def _log_counts(self) -> None:
        for (name, *sub), count in self._counts.items():
            key = (name, *sub) if sub else name
            lifetime = (_LIFETIME[name], *sub) if sub else _LIFETIME[name]
            self.metrics.log_value(key, count, reduce="sum")
            self.metrics.log_value(
                lifetime, count, reduce="lifetime_sum", with_throughput=name == NUM_ENV_STEPS_SAMPLED
            )
        self._counts.clear()
