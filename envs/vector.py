"""What every family's batched environment shares: seeds, next-step autoreset, output buffers, the Gymnasium form.

A batched environment holds B copies of one game (one scenario, one
configuration) and advances them together, with one engine call per step
where the family's engine has one. :class:`BatchedEnv` is the part every
family shares; a family says how to rebuild one copy and how to advance
copies, writing into arrays with one row per copy:

- **Seeds** (:mod:`dcgym.envs.seeding`): ``reset(seed=s)`` resets copy k
  with ``s + k``, as Gymnasium's vector environments do (a list gives one
  seed per copy, None draws), so copy k follows exactly the family's single
  environment reset with ``s + k`` under the same actions. Each copy keeps
  its own generator, as the single environment does.
- **Autoreset** in Gymnasium 1.x's default, next-step mode
  (``AutoresetMode.NEXT_STEP``): the step that ends a copy's episode returns
  its last arrays with its truncation (or termination) set; the *next* step
  ignores that copy's actions, resets it (engine seed drawn from the copy's
  generator, as ``reset()`` without a seed) and returns its first
  observation with reward 0 and neither flag set, while the other copies
  advance.
- **Outputs** are arrays with a leading axis of B copies, written in place
  at every step. With ``copy=True`` (the default, as Gymnasium's
  ``SyncVectorEnv``) ``reset`` and ``step`` return copies of them; with
  ``copy=False`` the arrays themselves, overwritten by the next step
  (PufferLib's shared buffers: a consumer that stores them at once, such as
  a rollout buffer, then costs no allocation per step).

:class:`SingleAgentVectorEnv` turns a batched game into a
``gymnasium.vector.VectorEnv`` of one agent, its batched spaces made by
``gymnasium.vector.utils.batch_space`` and its infos each copy's single
environment's, merged as Gymnasium's sync vector env merges them. A family's
batched environment (a multi-LB one, say) is a subclass of each:
:meth:`BatchedEnv._reset_copy`, :meth:`BatchedEnv._advance`,
:meth:`BatchedEnv._result` and :meth:`BatchedEnv._done` on one side, the
single spaces, what the agent reads and sends and one copy's info on the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dcgym.envs.error import InvalidConfigError, ResetNeededError
from dcgym.envs.seeding import copy_seeds, episode_seed

__all__ = ["BatchedEnv", "SingleAgentVectorEnv", "copied"]


class BatchedEnv:
    """B copies of one game stepped together (module docstring); a family subclasses it.

    The subclass implements :meth:`_reset_copy`, :meth:`_advance`, :meth:`_result` and :meth:`_done`, and may
    check the actions of the whole batch in :meth:`_check_actions` before any copy changes.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, copy: bool = True) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise InvalidConfigError("num_envs", num_envs, "a positive integer (the number of copies)")
        if not isinstance(copy, bool):
            raise InvalidConfigError("copy", copy, "true (return copies of the arrays) or false (the arrays)")
        self.num_envs = int(num_envs)
        self.copy = copy
        self.np_randoms: list[np.random.Generator | None] = [None] * self.num_envs
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._started = False

    # ------------------------------------------------------------------ API

    def reset(self, seed: Any = None, options: Mapping[str, Any] | None = None):
        """Reset every copy, copy k with ``seed + k`` (or ``seed[k]``, or a drawn seed); the first arrays."""
        seeds = copy_seeds(seed, self.num_envs)
        for k, s in enumerate(seeds):
            self._reset_copy(k, s, options or {})
        self._autoreset[:] = False
        self._started = True
        return self._returned(self._result(reset=True))

    def step(self, actions: Any):
        """Advance every copy one step, resetting instead those whose episode ended at the last step."""
        if not self._started:
            raise ResetNeededError("Call reset() before step()")
        acting = ~self._autoreset if self._autoreset.any() else None  # None: every copy acts (the common case)
        checked = self._check_actions(actions, acting)
        if acting is not None:
            for k in np.flatnonzero(self._autoreset):
                self._reset_copy(int(k), None, {})
        self._advance(checked, acting)
        result = self._result(reset=False)
        np.copyto(self._autoreset, self._done())
        return self._returned(result)

    def close(self) -> None:
        """Release every copy's engine."""

    # ------------------------------------------------------------------ what a family implements

    def _reset_copy(self, k: int, seed: int | None, options: Mapping[str, Any]) -> None:
        """Rebuild copy k for a new episode (``seed`` None: drawn) and write its first arrays into row k."""
        raise NotImplementedError

    def _check_actions(self, actions: Any, acting: np.ndarray | None) -> Any:
        """The actions checked before any copy changes (default: as given); ``acting`` as in :meth:`_advance`."""
        return actions

    def _advance(self, actions: Any, acting: np.ndarray | None) -> None:
        """Advance the copies ``acting`` (a (B,) mask, perhaps of none; None: every copy) one step with their rows
        of ``actions``, writing their rows."""
        raise NotImplementedError

    def _result(self, reset: bool) -> tuple:
        """What ``reset`` (observations, infos) or ``step`` (observations, rewards, terminations, truncations,
        infos) returns, as the arrays of every copy."""
        raise NotImplementedError

    def _done(self) -> np.ndarray:
        """(B,) bool: the copies whose episode ended at this step (reset at the next)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers for the families

    def engine_seed(self, k: int, seed: int | None) -> int:
        """Copy k's engine seed for a new episode: ``seed`` (restarting its generator there) or a draw from it."""
        self.np_randoms[k], engine = episode_seed(self.np_randoms[k], seed)
        return engine

    def _returned(self, result: tuple) -> tuple:
        return copied(result) if self.copy else result


def copied(result: tuple) -> tuple:
    """A copy of every array of a reset's or step's result: arrays, and dicts of arrays (by agent, infos)."""
    return tuple(
        {key: a.copy() for key, a in value.items()} if isinstance(value, dict) else value.copy() for value in result
    )


class SingleAgentVectorEnv(VectorEnv):
    """One agent of a :class:`BatchedEnv` as a ``gymnasium.vector.VectorEnv``: spaces batched by ``batch_space``.

    A subclass sets ``batch`` (the batched game), passes the single spaces to :meth:`_spaces`, and says how
    the agent's actions enter the game (:meth:`_actions`), which part of each output is the agent's
    (:meth:`_agent`) and what copy k's single environment would give as its info (:meth:`_copy_info`). ``max_episode_steps`` (what ``gymnasium.make_vec`` passes from the registered id) is the
    episode length, the environments' ``max_steps``.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}
    batch: BatchedEnv

    def _spaces(self, observation: Space, action: Space) -> None:
        self.num_envs = self.batch.num_envs
        self.render_mode = None
        self.single_observation_space, self.single_action_space = observation, action
        self.observation_space = batch_space(observation, self.num_envs)
        self.action_space = batch_space(action, self.num_envs)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None):
        obs, _ = self.batch.reset(seed=seed, options=options)
        return self._agent(obs, "obs"), self._vector_infos(np.zeros(self.num_envs, dtype=bool))

    def step(self, actions: Any):
        obs, rewards, terminations, truncations, _ = self.batch.step(self._actions(actions))
        agent = self._agent
        return (
            agent(obs, "obs"),
            agent(rewards, "reward"),
            agent(terminations, "termination"),
            agent(truncations, "truncation"),
            self._vector_infos(self.batch._done()),
        )

    def _vector_infos(self, ended: np.ndarray) -> dict[str, Any]:
        """Each copy's info as its single environment gives it (``ended``: the copies whose episode ended at this
        step), merged as Gymnasium's sync vector env merges its environments' infos: the same keys, masks and
        dtypes, so a trainer sees what it sees through ``vectorization_mode="sync"`` (tests/test_conformance.py)."""
        merged: dict[str, Any] = {}
        for k in range(self.num_envs):
            merged = self._add_info(merged, self._copy_info(k, bool(ended[k])), k)
        return merged

    def _copy_info(self, k: int, episode_end: bool) -> dict[str, Any]:
        """Copy k's info as its single environment gives it after this step (``episode_end``: the step ended its
        episode)."""
        raise NotImplementedError

    def close_extras(self, **kwargs: Any) -> None:
        if hasattr(self, "batch"):  # not when the constructor refused its arguments
            self.batch.close()

    def _actions(self, actions: Any) -> Any:
        """The agent's batched actions as the game takes them."""
        raise NotImplementedError

    def _agent(self, value: Any, what: str) -> Any:
        """The agent's part of one batched output (``what``: obs, reward, termination or truncation)."""
        raise NotImplementedError

    @staticmethod
    def max_steps(kwargs: dict[str, Any], max_episode_steps: int | None) -> dict[str, Any]:
        """The game's keyword arguments with ``max_steps`` from ``max_episode_steps`` unless given."""
        if max_episode_steps is not None:
            kwargs.setdefault("max_steps", max_episode_steps)
        return kwargs
