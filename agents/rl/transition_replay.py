"""A replay memory of single transitions on preallocated numpy arrays, for one-agent off-policy learners.

RLlib's ``EpisodeReplayBuffer`` keeps the sampled episodes and, for every
mini-batch, slices ``SingleAgentEpisode`` objects one sampled step at a time
and hands the learner episodes that its connector pipeline turns back into
columns. For a learner that needs only (s, a, r, s', terminated) per sampled
step, that is per-sample Python work around a few array reads.
:class:`TransitionReplay` stores each sampled episode chunk's transitions in
bulk into a ring of preallocated arrays and samples a mini-batch with one
fancy index per column, already in the columns a learner's loss reads
(``Columns.OBS``, ``ACTIONS``, ``REWARDS``, ``NEXT_OBS``, ``TERMINATEDS``).

Sampling is uniform over the stored transitions, with replacement, from a
seeded ``numpy.random.Generator``: the same seed and the same additions give
the same batches, bit for bit.

n-step returns (``n_step`` > 1): the transition of step t is stored once the
n - 1 steps after it are known, as

    r_t + γ r_{t+1} + ... + γ^{m-1} r_{t+m-1},  s'_t = s_{t+m},  m = n_step_t,

with m = n, or fewer where the episode ended first (m = T - t for the last
steps of an episode of T steps); ``terminated`` is the episode's at step
t + m. The steps of an episode whose chunk ends before n more steps are known
wait for the episode's next chunk (the chunks of one episode share its id).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.core.columns import Columns

__all__ = ["TransitionReplay"]


class TransitionReplay:
    """A ring of ``capacity`` transitions; :meth:`add_episodes` stores, :meth:`sample` draws a mini-batch.

    The arrays are allocated at the first addition, shaped and typed like its observations and actions
    (``numpy.zeros``: the operating system backs the pages as they are written).
    """

    def __init__(self, capacity: int, *, n_step: int = 1, gamma: float = 0.99, seed: int | None = None) -> None:
        if not (isinstance(capacity, int) and capacity >= 1):
            raise ValueError(f"capacity ({capacity!r}) must be an integer >= 1")
        if not (isinstance(n_step, int) and n_step >= 1):
            raise ValueError(f"n_step ({n_step!r}) must be an integer >= 1")
        self.capacity = capacity
        self.n_step = n_step
        self.gamma = float(gamma)
        self.rng = np.random.default_rng(seed)
        self._columns: dict[str, np.ndarray] = {}
        self._size = 0
        self._next = 0  # where the next transition goes
        self._pending: dict[Any, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # episode id -> (obs, act, rew)

    def __len__(self) -> int:
        return self._size

    # ------------------------------------------------------------------ adding

    def add_episodes(self, episodes: list[Any]) -> None:
        """Store the transitions of RLlib ``SingleAgentEpisode`` chunks (as an env runner's ``sample()`` returns)."""
        for episode in episodes:
            if len(episode) == 0:
                continue
            self.add_chunk(
                episode.id_,
                np.asarray(episode.get_observations()),
                np.asarray(episode.get_actions()),
                np.asarray(episode.get_rewards(), dtype=np.float64),
                terminated=episode.is_terminated,
                done=episode.is_done,
            )

    def add_chunk(
        self, key: Any, obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray, *, terminated: bool, done: bool
    ) -> None:
        """Store T steps of one episode: ``obs`` holds T + 1 observations (the last is the one after the last
        action), ``actions`` and ``rewards`` T each; ``key`` names the episode across its chunks; ``done``: the
        episode ended with this chunk, ``terminated``: it ended in a terminal state (no bootstrap)."""
        if len(obs) != len(rewards) + 1 or len(actions) != len(rewards):
            raise ValueError(
                f"a chunk of {len(rewards)} steps needs {len(rewards) + 1} observations and as many actions"
            )
        pending = self._pending.pop(key, None)
        if pending is not None:  # the steps of the episode's earlier chunk still waiting for n - 1 more
            obs = np.concatenate([pending[0][:-1], obs])
            actions = np.concatenate([pending[1], actions])
            rewards = np.concatenate([pending[2], rewards])
        steps = len(rewards)
        ready = steps if done else max(steps - self.n_step + 1, 0)
        if not done and ready < steps:
            self._pending[key] = (obs[ready:], actions[ready:], rewards[ready:])
        if ready == 0:
            return
        t = np.arange(ready)
        m = np.minimum(self.n_step, steps - t)
        returns = np.zeros(ready, np.float64)
        for k in range(self.n_step):
            returns += np.where(k < m, self.gamma**k * rewards[np.minimum(t + k, steps - 1)], 0.0)
        ends = t + m
        self._write(
            {
                Columns.OBS: obs[:ready],
                Columns.ACTIONS: actions[:ready],
                Columns.REWARDS: returns.astype(np.float32),
                Columns.NEXT_OBS: obs[ends],
                Columns.TERMINATEDS: terminated & (ends == steps),
                "n_step": m.astype(np.int32),
            }
        )

    def _write(self, columns: dict[str, np.ndarray]) -> None:
        count = len(columns[Columns.REWARDS])
        if not self._columns:
            self._columns = {k: np.zeros((self.capacity, *v.shape[1:]), dtype=v.dtype) for k, v in columns.items()}
        if count > self.capacity:  # only the newest ``capacity`` transitions would survive
            columns = {k: v[-self.capacity :] for k, v in columns.items()}
            count = self.capacity
        head = min(count, self.capacity - self._next)  # up to the end of the arrays, the rest from index 0
        for key, values in columns.items():
            store = self._columns[key]
            store[self._next : self._next + head] = values[:head]
            store[: count - head] = values[head:]
        self._next = (self._next + count) % self.capacity
        self._size = min(self._size + count, self.capacity)

    # ------------------------------------------------------------------ sampling

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        """``batch_size`` transitions drawn uniformly with replacement: observations, actions, (n-step) rewards,
        next observations, terminated flags, and ``"n_step"`` (each transition's m) when ``n_step`` > 1."""
        if self._size == 0:
            raise ValueError("sample() from an empty TransitionReplay: add episodes first")
        index = self.rng.integers(0, self._size, size=batch_size)
        return {k: v[index] for k, v in self._columns.items() if k != "n_step" or self.n_step > 1}
