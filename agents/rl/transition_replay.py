"""A replay memory of single transitions on preallocated numpy arrays, for off-policy learners.

RLlib's ``EpisodeReplayBuffer`` keeps the sampled episodes and, for every
mini-batch, slices ``SingleAgentEpisode`` objects one sampled step at a time
and hands the learner episodes that its connector pipeline turns back into
columns. For a learner that needs only (s, a, r, s', terminated) per sampled
step, that is per-sample Python work around a few array reads.
:class:`TransitionReplay` stores each sampled episode chunk's transitions in
bulk into a ring of preallocated arrays and samples a mini-batch with one
fancy index per column, already in the columns a learner's loss reads
(``Columns.OBS``, ``ACTIONS``, ``REWARDS``, ``NEXT_OBS``, ``TERMINATEDS``).

Observations are arrays or dicts of arrays (a ``Dict`` observation space,
such as an action mask next to the observation): each array is stored in its
own ring, and a mini-batch's observations come back as the same dict.

Sampling is uniform over the stored transitions, with replacement, from a
seeded ``numpy.random.Generator``: the same seed and the same additions give
the same batches, bit for bit.

:class:`ModuleReplays` keeps one :class:`TransitionReplay` per RLlib module
and fills them from an env runner's episodes, single-agent or multi-agent
(each agent's transitions in the ring of the module it is mapped to).

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
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

__all__ = ["ModuleReplays", "TransitionReplay"]


def _map(fn, *trees: Any) -> Any:
    """``fn`` over the arrays of equally nested dicts of arrays (dict observations), or over arrays."""
    if isinstance(trees[0], dict):
        return {key: _map(fn, *(tree[key] for tree in trees)) for key in trees[0]}
    return fn(*trees)


def _length(tree: Any) -> int:
    return _length(next(iter(tree.values()))) if isinstance(tree, dict) else len(tree)


def _check(capacity: Any, n_step: Any) -> None:
    """ValueError naming a capacity or an n_step that is not an integer >= 1."""
    if not (isinstance(capacity, int) and capacity >= 1):
        raise ValueError(f"capacity ({capacity!r}) must be an integer >= 1")
    if not (isinstance(n_step, int) and n_step >= 1):
        raise ValueError(f"n_step ({n_step!r}) must be an integer >= 1")


class TransitionReplay:
    """A ring of ``capacity`` transitions; :meth:`add_episodes` stores, :meth:`sample` draws a mini-batch.

    The arrays are allocated at the first addition, shaped and typed like its observations and actions
    (``numpy.zeros``: the operating system backs the pages as they are written).
    """

    def __init__(
        self, capacity: int, *, n_step: int = 1, gamma: float = 0.99, seed: int | np.random.Generator | None = None
    ) -> None:
        _check(capacity, n_step)
        self.capacity = capacity
        self.n_step = n_step
        self.gamma = float(gamma)
        self.rng = np.random.default_rng(seed)  # a Generator is used as given (shared by a ModuleReplays' rings)
        self._columns: dict[str, Any] = {}  # column -> array, or dict of arrays for dict observations
        self._size = 0
        self._next = 0  # where the next transition goes
        self._pending: dict[Any, tuple[Any, np.ndarray, np.ndarray]] = {}  # episode key -> (obs, actions, rewards)

    def __len__(self) -> int:
        return self._size

    # ------------------------------------------------------------------ adding

    def add_episodes(self, episodes: list[Any]) -> None:
        """Store the transitions of RLlib ``SingleAgentEpisode`` chunks (as an env runner's ``sample()`` returns)."""
        for episode in episodes:
            self.add_episode(episode)

    def add_episode(self, episode: Any, key: Any = None) -> None:
        """Store one ``SingleAgentEpisode`` chunk; ``key`` names its episode across chunks (default: its id)."""
        if len(episode) == 0:
            return
        self.add_chunk(
            episode.id_ if key is None else key,
            _map(np.asarray, episode.get_observations()),
            np.asarray(episode.get_actions()),
            np.asarray(episode.get_rewards(), dtype=np.float64),
            terminated=episode.is_terminated,
            done=episode.is_done,
        )

    def add_chunk(
        self, key: Any, obs: Any, actions: np.ndarray, rewards: np.ndarray, *, terminated: bool, done: bool
    ) -> None:
        """Store T steps of one episode: ``obs`` holds T + 1 observations (an array, or a dict of arrays; the last
        is the one after the last action), ``actions`` and ``rewards`` T each; ``key`` names the episode across its
        chunks; ``done``: the episode ended with this chunk, ``terminated``: it ended in a terminal state (no
        bootstrap)."""
        if _length(obs) != len(rewards) + 1 or len(actions) != len(rewards):
            raise ValueError(
                f"a chunk of {len(rewards)} steps needs {len(rewards) + 1} observations and as many actions"
            )
        pending = self._pending.pop(key, None)
        if pending is not None:  # the steps of the episode's earlier chunk still waiting for n - 1 more
            obs = _map(lambda before, now: np.concatenate([before[:-1], now]), pending[0], obs)
            actions = np.concatenate([pending[1], actions])
            rewards = np.concatenate([pending[2], rewards])
        steps = len(rewards)
        ready = steps if done else max(steps - self.n_step + 1, 0)
        if not done and ready < steps:
            self._pending[key] = (_map(lambda o: o[ready:], obs), actions[ready:], rewards[ready:])
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
                Columns.OBS: _map(lambda o: o[:ready], obs),
                Columns.ACTIONS: actions[:ready],
                Columns.REWARDS: returns.astype(np.float32),
                Columns.NEXT_OBS: _map(lambda o: o[ends], obs),
                Columns.TERMINATEDS: terminated & (ends == steps),
                "n_step": m.astype(np.int32),
            }
        )

    def _write(self, columns: dict[str, Any]) -> None:
        count = len(columns[Columns.REWARDS])
        if not self._columns:
            self._columns = _map(lambda v: np.zeros((self.capacity, *v.shape[1:]), dtype=v.dtype), columns)
        if count > self.capacity:  # only the newest ``capacity`` transitions would survive
            columns = _map(lambda v: v[-self.capacity :], columns)
            count = self.capacity
        head = min(count, self.capacity - self._next)  # up to the end of the arrays, the rest from index 0

        def write(store: np.ndarray, values: np.ndarray) -> None:
            store[self._next : self._next + head] = values[:head]
            store[: count - head] = values[head:]

        _map(write, self._columns, columns)
        self._next = (self._next + count) % self.capacity
        self._size = min(self._size + count, self.capacity)

    # ------------------------------------------------------------------ sampling

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        """``batch_size`` transitions drawn uniformly with replacement: observations, actions, (n-step) rewards,
        next observations, terminated flags, and ``"n_step"`` (each transition's m) when ``n_step`` > 1."""
        if self._size == 0:
            raise ValueError("sample() from an empty TransitionReplay: add episodes first")
        index = self.rng.integers(0, self._size, size=batch_size)
        return {
            k: _map(lambda v: v[index], column)
            for k, column in self._columns.items()
            if k != "n_step" or self.n_step > 1
        }


class ModuleReplays:
    """One :class:`TransitionReplay` per RLlib module, filled from an env runner's ``sample()``.

    A single-agent episode's transitions go to ``DEFAULT_MODULE_ID``'s ring; each agent of a multi-agent episode
    adds its own transitions (an episode of its own across chunks: n-step returns never mix two agents) to the
    ring of the module it is mapped to. ``capacity`` counts env steps, as RLlib's episode replay buffers do: a
    module's ring keeps ``capacity`` transitions of each agent mapped to it (agents counted in the first episode
    that reaches the module). All rings draw from one generator seeded by ``seed``, modules in the order they first
    appeared: the same seed and the same additions give the same batches.
    """

    def __init__(self, capacity: int, *, n_step: int = 1, gamma: float = 0.99, seed: int | None = None) -> None:
        _check(capacity, n_step)
        self.capacity = capacity
        self.n_step = n_step
        self.gamma = float(gamma)
        self.rng = np.random.default_rng(seed)
        self.replays: dict[str, TransitionReplay] = {}

    def __len__(self) -> int:
        """Transitions stored over all modules."""
        return sum(len(replay) for replay in self.replays.values())

    def add_episodes(self, episodes: list[Any]) -> None:
        """Store the transitions of ``SingleAgentEpisode`` or ``MultiAgentEpisode`` chunks."""
        for episode in episodes:
            if not hasattr(episode, "agent_episodes"):
                self._replay(DEFAULT_MODULE_ID, 1).add_episode(episode)
                continue
            modules = {aid: episode.module_for(aid) for aid in episode.agent_episodes}
            for aid, agent_episode in episode.agent_episodes.items():
                agents = sum(module == modules[aid] for module in modules.values())
                self._replay(modules[aid], agents).add_episode(agent_episode, key=(episode.id_, aid))

    def _replay(self, module_id: str, agents: int) -> TransitionReplay:
        replay = self.replays.get(module_id)
        if replay is None:
            replay = TransitionReplay(self.capacity * agents, n_step=self.n_step, gamma=self.gamma, seed=self.rng)
            self.replays[module_id] = replay
        return replay

    def sample(self, batch_size: int) -> dict[str, dict[str, Any]]:
        """``batch_size`` transitions of each module that has any (:meth:`TransitionReplay.sample`), by module."""
        if len(self) == 0:
            raise ValueError("sample() from an empty ModuleReplays: add episodes first")
        return {module: replay.sample(batch_size) for module, replay in self.replays.items() if len(replay)}
