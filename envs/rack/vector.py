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

Seeding, next-step autoreset and the ``copy`` argument are every batched
environment's (:mod:`dcgym.envs.vector`): the step that ends a copy's episode
returns its last observation with ``truncations`` set, the next one resets it
(rack episodes never terminate, see rack_v0, so only truncation triggers it).
The engine writes every step into arrays allocated once
(:attr:`~dcgym.envs.rack.game.RackGame.out`); ``copy=False`` returns them
themselves, so a step allocates nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.spaces import Box
from gymnasium.vector.utils import batch_space

from dcgym.envs.error import InvalidActionError, InvalidConfigError
from dcgym.envs.rack.game import RackEnvConfig, RackGame
from dcgym.envs.rack.wrappers import central_spaces, copy_info
from dcgym.envs.validation import validate
from dcgym.envs.vector import BatchedEnv, SingleAgentVectorEnv

__all__ = ["INFO_KEYS", "RackCentralVectorEnv", "RackDispatchVectorEnv", "RackVectorEnv"]

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


class RackVectorEnv(BatchedEnv):
    """B copies of rack_v0 with arrays of shape (B, N, ...): observations, actions, rewards.

    ``reset(seed=s)`` seeds copy k with ``s + k`` (a list gives one seed per
    copy). ``step(actions)`` takes actions (B, N, 2N) and returns
    observations (B, N, obs_dim), rewards, terminations and truncations
    (B, N) (every agent of a copy gets its team reward) and a dict of the
    :data:`INFO_KEYS` arrays. ``copy`` (default true) returns copies of the
    arrays; false, the arrays the next step overwrites. Keyword arguments are
    rack_v0's.
    """

    metadata = {"name": "rack_v0", **BatchedEnv.metadata}

    def __init__(self, num_envs: int, copy: bool = True, *, dispatcher: bool = False, **kwargs: Any) -> None:
        super().__init__(num_envs, copy)
        self.config = validate(RackEnvConfig, kwargs)
        if self.config.action_type == "fill":
            raise InvalidConfigError("action_type", "fill", "logits or probabilities (fill actions are rack_v0's)")
        self.game = RackGame(self.config, self.num_envs, dispatcher=dispatcher)
        n, clip = self.game.num_nodes, self.config.obs_clip
        self.num_agents = n
        self.possible_agents = [f"node_{i}" for i in range(n)]
        self.single_observation_space = Box(0.0, clip, (self.game.obs_dim,), np.float32)
        width = n if dispatcher else 2 * n  # dispatcher: RackDispatch-v0's game, one row of N weights per copy
        if self.config.action_type == "logits":
            self.single_action_space = Box(-self.config.max_logit, self.config.max_logit, (width,), np.float32)
        else:
            self.single_action_space = Box(0.0, 1.0, (width,), np.float32)
        self.observation_space = batch_space(batch_space(self.single_observation_space, n), self.num_envs)
        actions = self.single_action_space if dispatcher else batch_space(self.single_action_space, n)
        self.action_space = batch_space(actions, self.num_envs)
        shape = (self.num_envs, n)
        out = self.game.out
        self._rewards, self._truncations = np.zeros(shape), np.zeros(shape, dtype=bool)
        self._terminations = np.zeros(shape, dtype=bool)  # rack episodes never terminate
        self._infos = {key: out[key] for key in INFO_KEYS}

    def close(self) -> None:
        self.game.sims = [None] * self.num_envs

    def _reset_copy(self, k: int, seed: int | None, options: Mapping[str, Any]) -> None:
        self.game.reset(k, self.engine_seed(k, seed), options.get("load"))

    def _check_actions(self, actions: Any, acting: np.ndarray | None) -> np.ndarray:
        actions = np.asarray(actions)
        if actions.shape != self.action_space.shape:
            n = self.num_agents
            what = (
                f"its dispatcher's {n} {self.game.unit}"
                if self.game.dispatcher
                else (f"{n} nodes x ({n} migration then {n} stealing {self.game.unit})")
            )
            raise InvalidActionError(
                f"actions: got shape {actions.shape}; expected {self.action_space.shape}: for each of the "
                f"{self.num_envs} copies, {what}"
            )
        return actions

    def _advance(self, actions: np.ndarray, acting: np.ndarray | None) -> None:
        if acting is None:
            self.game.step(actions)
        elif acting.any():
            which = np.flatnonzero(acting)
            self.game.step(actions[which], which)

    def _result(self, reset: bool) -> tuple:
        out = self.game.out
        if reset:
            return out["obs"], self._infos
        np.copyto(self._rewards, out["reward"][:, None])
        np.copyto(self._truncations, out["truncated"][:, None])
        return out["obs"], self._rewards, self._terminations, self._truncations, self._infos

    def _done(self) -> np.ndarray:
        return self.game.out["truncated"]


class RackCentralVectorEnv(SingleAgentVectorEnv):
    """``dcgym/RackCentral-v0`` batched: B copies, one central agent each, one engine call per step.

    Observations (B, N x obs_dim) and actions (B, N x 2N) are
    RackCentral-v0's (see :class:`dcgym.envs.rack.wrappers.RackCentralEnv`);
    rewards, terminations and truncations have shape (B,); infos are each copy's
    RackCentral-v0 info merged as Gymnasium's sync vector env merges them.
    Next-step autoreset, as :class:`RackVectorEnv`. ``max_episode_steps``
    (what ``gymnasium.make_vec`` passes from the registered id) is the
    episode length, ``max_steps``.
    """

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        self.batch = self.rack = RackVectorEnv(num_envs, **self.max_steps(kwargs, max_episode_steps))
        self._spaces(*central_spaces(self.rack.game))
        self._scale = self.rack.config.max_logit if self.rack.config.action_type == "logits" else 1.0

    def _actions(self, actions: Any) -> np.ndarray:
        n = self.rack.num_agents
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != self.action_space.shape:
            raise InvalidActionError(
                f"actions: got shape {actions.shape}; expected {self.action_space.shape}: for each copy, "
                f"{n} nodes x ({n} migration then {n} stealing {self.rack.game.unit})"
            )
        return actions.reshape(self.num_envs, n, 2 * n) * self._scale

    def _agent(self, value: np.ndarray, what: str) -> np.ndarray:
        return value.reshape(self.num_envs, -1) if what == "obs" else value[:, 0]

    def _copy_info(self, k: int, episode_end: bool) -> dict[str, Any]:
        return copy_info(self.rack.game.out, k)  # RackCentral-v0's: the same at an episode's end


class RackDispatchVectorEnv(SingleAgentVectorEnv):
    """``dcgym/RackDispatch-v0`` batched: B copies of the dispatcher's game, one engine call per step.

    Observations (B, N) and actions (B, N) are RackDispatch-v0's (see
    :class:`dcgym.envs.rack.wrappers.RackDispatchEnv`: the loads the dispatcher
    heard; dispatch logits over ``max_logit``, or weights); rewards and
    truncations have shape (B,); infos are each copy's RackDispatch-v0 info
    merged as Gymnasium's sync vector env merges them. Next-step autoreset, as
    :class:`RackVectorEnv`.
    """

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        kwargs = self.max_steps(kwargs, max_episode_steps)
        kwargs.setdefault("migration_cost", 0.0)  # RackDispatch-v0's: a forwarded task counts as a migration
        if kwargs.get("obs_extras"):
            raise InvalidConfigError(
                "obs_extras", list(kwargs["obs_extras"]), "[] for RackDispatch-v0 (it observes the N loads only)"
            )
        self.batch = self.rack = RackVectorEnv(num_envs, dispatcher=True, **kwargs)
        n, config = self.rack.num_agents, self.rack.config
        low = -1.0 if config.action_type == "logits" else 0.0
        self._spaces(Box(0.0, config.obs_clip, (n,), np.float32), Box(low, 1.0, (n,), np.float32))
        self._scale = config.max_logit if config.action_type == "logits" else 1.0

    def _actions(self, actions: Any) -> np.ndarray:
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != self.action_space.shape:
            raise InvalidActionError(
                f"actions: got shape {actions.shape}; expected {self.action_space.shape}: for each copy, one "
                f"dispatch {self.rack.game.unit[:-1]} per node"
            )
        return actions * self._scale

    def _agent(self, value: np.ndarray, what: str) -> np.ndarray:
        return value[:, 0, : self.rack.num_agents] if what == "obs" else value[:, 0]

    def _copy_info(self, k: int, episode_end: bool) -> dict[str, Any]:
        return copy_info(self.rack.game.out, k)  # RackDispatch-v0's: the same at an episode's end
