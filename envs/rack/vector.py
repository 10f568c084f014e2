"""Batched rack environments: B copies of rack_v0 advanced by one engine call per step.

:class:`RackVectorEnv` is the multi-agent batch: arrays with leading axes
(B copies, N agents). :class:`RackCentralVectorEnv` is the same batch as a
``gymnasium.vector.VectorEnv`` of ``dcgym/RackCentral-v0`` (one agent setting
every node's tables, flattened), registered as that id's vector entry point::

    envs = gymnasium.make_vec("dcgym/RackCentral-v0", num_envs=8, vectorization_mode="vector_entry_point")

Both step every copy with one engine call (C++, GIL released),
through the same :class:`~dcgym.envs.rack.game.RackGame` code as rack_v0, so
copy k after ``reset(seed=s)`` follows exactly the trajectory of
``rack_v0.parallel_env(...).reset(seed=s + k)`` under the same actions.

**Autoreset** follows Gymnasium 1.x's default, next-step mode
(``gymnasium.vector.AutoresetMode.NEXT_STEP``): the step that ends a copy's
episode returns its last observation with ``truncations`` set; the *next*
``step`` ignores that copy's actions, resets it (engine seed drawn from the
copy's own ``np_random``, as ``reset()`` without a seed does) and returns its
first observation with reward 0 and no termination or truncation. Rack
episodes never terminate (see rack_v0), so only truncation triggers it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Box
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv

from dcgym.envs.error import InvalidActionError, ResetNeededError
from dcgym.envs.rack.game import RackEnvConfig, RackGame
from dcgym.envs.validation import validate

__all__ = ["INFO_KEYS", "RackCentralVectorEnv", "RackVectorEnv"]

INFO_KEYS = (
    "migrate",
    "steal",
    "migrations",
    "steals",
    "failed_steals",
    "dropped",
    "latency_mean_us",
    "latency_p99_us",
    "completed",
    "true_loads",
    "sim_time_us",
)
"""The info arrays of a batched step, each with leading axis B (see rack_v0's Info section)."""


class RackVectorEnv:
    """B copies of rack_v0 with arrays of shape (B, N, ...): observations, actions, rewards.

    ``reset(seed=s)`` seeds copy k with ``s + k`` (a list gives one seed per
    copy). ``step(actions)`` takes actions (B, N, 2N) and returns
    observations (B, N, obs_dim), rewards, terminations and truncations
    (B, N) (every agent of a copy gets its team reward) and a dict of the
    :data:`INFO_KEYS` arrays. Keyword arguments are rack_v0's.
    """

    metadata = {"name": "rack_v0", "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        self.config = validate(RackEnvConfig, kwargs)
        self.game = RackGame(self.config, num_envs)
        self.num_envs = num_envs
        n, clip = self.game.num_nodes, self.config.obs_clip
        self.num_agents = n
        self.possible_agents = [f"node_{i}" for i in range(n)]
        self.single_observation_space = Box(0.0, clip, (self.game.obs_dim,), np.float32)
        if self.config.action_type == "logits":
            self.single_action_space = Box(-self.config.max_logit, self.config.max_logit, (2 * n,), np.float32)
        else:
            self.single_action_space = Box(0.0, 1.0, (2 * n,), np.float32)
        self.observation_space = Box(0.0, clip, (num_envs, n, self.game.obs_dim), np.float32)
        low, high = self.single_action_space.low[0], self.single_action_space.high[0]
        self.action_space = Box(low, high, (num_envs, n, 2 * n), np.float32)
        self.np_randoms = [seeding.np_random()[0] for _ in range(num_envs)]
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._all = np.arange(num_envs)
        self._started = False

    def reset(self, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None):
        """Reset every copy: (observations (B, N, obs_dim), infos)."""
        seeds = self._seeds(seed)
        load = (options or {}).get("load")
        parts = [([k], self.game.reset(k, self._engine_seed(k, seeds[k]), load)) for k in range(self.num_envs)]
        self._autoreset[:] = False
        self._started = True
        out = _assemble(parts, self.num_envs)
        return out["obs"], _infos(out)

    def step(self, actions: np.ndarray):
        """Advance every copy one heartbeat (autoresetting those whose episode ended at the last step)."""
        if not self._started:
            raise ResetNeededError("Call reset() before step()")
        actions = np.asarray(actions)
        n = self.num_agents
        if actions.shape[1:] != self.action_space.shape[1:] or actions.shape[0] != self.num_envs:
            raise InvalidActionError(
                f"actions: got shape {actions.shape}; expected {self.action_space.shape}: for each of the "
                f"{self.num_envs} copies and {n} nodes, {n} migration then {n} stealing {self.game.unit}"
            )
        resets = np.flatnonzero(self._autoreset).tolist()
        if not resets:
            out = self.game.step(actions, self._all)
        else:
            which = np.flatnonzero(~self._autoreset).tolist()
            parts = [([k], self.game.reset(k, self._engine_seed(k, None))) for k in resets]
            if which:
                parts.append((which, self.game.step(actions[which], which)))
            out = _assemble(parts, self.num_envs)
        self._autoreset = out["truncated"].copy()
        shape = (self.num_envs, n)
        rewards, truncations = np.empty(shape), np.empty(shape, dtype=bool)
        rewards[:] = out["reward"][:, None]
        truncations[:] = out["truncated"][:, None]
        return out["obs"], rewards, np.zeros(shape, dtype=bool), truncations, _infos(out)

    def close(self) -> None:
        self.game.sims = [None] * self.num_envs

    def _seeds(self, seed: int | Sequence[int] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + k for k in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"seed: got {len(seeds)} seeds; expected one per copy ({self.num_envs}) or one int")
        return seeds

    def _engine_seed(self, k: int, seed: int | None) -> int:
        """Seed copy k's np_random with ``seed`` and return it, or draw an engine seed from it (rack_v0's rule)."""
        if seed is not None:
            self.np_randoms[k] = seeding.np_random(seed)[0]
            return seed
        return int(self.np_randoms[k].integers(2**63))


def _assemble(parts: list[tuple[Sequence[int], dict[str, np.ndarray]]], b: int) -> dict[str, np.ndarray]:
    """Arrays of all B copies from the arrays of groups of copies."""
    if len(parts) == 1 and list(parts[0][0]) == list(range(b)):
        return parts[0][1]
    first = parts[0][1]
    out = {key: np.empty((b, *value.shape[1:]), dtype=value.dtype) for key, value in first.items()}
    for which, part in parts:
        for key, value in part.items():
            out[key][list(which)] = value
    return out


def _infos(out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: out[key] for key in INFO_KEYS}


class RackCentralVectorEnv(VectorEnv):
    """``dcgym/RackCentral-v0`` batched: B copies, one central agent each, one engine call per step.

    Observations (B, N x obs_dim) and actions (B, N x 2N) are
    RackCentral-v0's (see :class:`dcgym.envs.rack.wrappers.RackCentralEnv`);
    rewards, terminations and truncations have shape (B,); infos hold the
    :data:`INFO_KEYS` arrays with Gymnasium's ``_key`` masks (always true).
    Next-step autoreset, as :class:`RackVectorEnv`. ``max_episode_steps``
    (what ``gymnasium.make_vec`` passes from the registered id) is the
    episode length, ``max_steps``.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        from dcgym.envs.rack.wrappers import central_spaces

        if max_episode_steps is not None:
            kwargs.setdefault("max_steps", max_episode_steps)

        self.rack = RackVectorEnv(num_envs, **kwargs)
        self.num_envs = num_envs
        self.render_mode = None
        self.single_observation_space, self.single_action_space = central_spaces(self.rack.game)
        self.observation_space = Box(
            0.0, self.rack.config.obs_clip, (num_envs, *self.single_observation_space.shape), np.float32
        )
        low, high = self.single_action_space.low[0], self.single_action_space.high[0]
        self.action_space = Box(low, high, (num_envs, *self.single_action_space.shape), np.float32)
        self._scale = self.rack.config.max_logit if self.rack.config.action_type == "logits" else 1.0

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        obs, infos = self.rack.reset(seed=seed, options=options)
        return obs.reshape(self.num_envs, -1), _masked(infos)

    def step(self, actions: np.ndarray):
        n = self.rack.num_agents
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != self.action_space.shape:
            raise InvalidActionError(
                f"actions: got shape {actions.shape}; expected {self.action_space.shape}: for each copy, "
                f"{n} nodes x ({n} migration then {n} stealing {self.rack.game.unit})"
            )
        obs, rewards, terms, truncs, infos = self.rack.step(actions.reshape(self.num_envs, n, 2 * n) * self._scale)
        return obs.reshape(self.num_envs, -1), rewards[:, 0], terms[:, 0], truncs[:, 0], _masked(infos)

    def close_extras(self, **kwargs: Any) -> None:
        self.rack.close()


def _masked(infos: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Gymnasium's vector info layout: every key with a ``_key`` mask of the copies that set it (all)."""
    out: dict[str, np.ndarray] = {}
    for key, value in infos.items():
        out[key] = value
        out["_" + key] = np.ones(value.shape[0], dtype=bool)
    return out
