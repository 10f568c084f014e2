"""Batched flow environments: B copies of flow_v0's game advanced by one engine call per step.

:class:`FlowVectorEnv` is the two-agent batch: per agent, arrays with a
leading axis of B copies. :class:`FlowSrlaVectorEnv` and
:class:`FlowLrlaVectorEnv` are the same batch as ``gymnasium.vector.VectorEnv``
of ``dcgym/FlowSrla-v0`` and ``dcgym/FlowLrla-v0``, registered as their
vector entry points::

    envs = gymnasium.make_vec("dcgym/FlowSrla-v0", num_envs=8, vectorization_mode="vector_entry_point")

Every copy steps in one ``step_auto_batch`` call (C++, GIL released; with
``threads`` > 1 on several threads, same numbers), through the same
:class:`~dcgym.envs.flow.game.FlowGame` code as flow_v0, so copy k after
``reset(seed=s)`` follows exactly the trajectory of
``flow_v0.parallel_env(...).reset(seed=s + k)`` under the same actions.

Seeding, next-step autoreset and the ``copy`` argument are every batched
environment's (:mod:`dcgym.envs.vector`): the step that ends a copy's episode
returns its last observation with ``truncations`` set, the next one resets it.
Flow episodes never terminate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector.utils import batch_space

from dcgym.envs.error import InvalidActionError
from dcgym.envs.flow.game import AGENTS, FlowGame
from dcgym.envs.vector import BatchedEnv, SingleAgentVectorEnv

__all__ = ["INFO_KEYS", "FlowLrlaVectorEnv", "FlowSrlaVectorEnv", "FlowVectorEnv"]

INFO_KEYS = ("sim_time_s", "flows_finished", "mean_fct_ms", "active_flows")
"""The info arrays of a batched step, each with leading axis B (flow_v0's Info section)."""


class FlowVectorEnv(BatchedEnv):
    """B copies of flow_v0: observations, actions and rewards per agent with a leading axis B.

    ``reset(seed=s)`` seeds copy k with ``s + k`` (a list gives one seed per
    copy). ``step({"srla": (B, K - 1), "lrla": (B, 3 n_l)})`` (an agent left
    out does not act: held by the heuristic of its single-agent env) returns
    observations per agent, rewards, terminations and truncations per agent
    (B,), and a dict of the :data:`INFO_KEYS` arrays. ``threads`` steps the
    copies on that many threads. ``copy`` (default true) returns copies of
    the arrays; false, the arrays the next step overwrites. Keyword arguments
    are flow_v0's.
    """

    metadata = {"name": "flow_v0", **BatchedEnv.metadata}

    def __init__(self, num_envs: int, threads: int = 1, copy: bool = True, **kwargs: Any) -> None:
        super().__init__(num_envs, copy)
        self.game = FlowGame(kwargs, self.num_envs)
        self.threads = threads
        self.possible_agents = list(AGENTS)
        self.single_observation_spaces = dict(self.game.observation_spaces)
        self.single_action_spaces = dict(self.game.action_spaces)
        self.observation_spaces = {a: batch_space(s, self.num_envs) for a, s in self.single_observation_spaces.items()}
        self.action_spaces = {a: batch_space(s, self.num_envs) for a, s in self.single_action_spaces.items()}
        b = self.num_envs
        self._obs = self.game._empty_obs(b)
        self._rewards = np.zeros((b, len(AGENTS)))
        self._truncated = np.zeros(b, dtype=bool)
        self._reward = {a: np.zeros(b) for a in AGENTS}
        self._terminations = {a: np.zeros(b, dtype=bool) for a in AGENTS}  # flow episodes never terminate
        self._truncations = {a: np.zeros(b, dtype=bool) for a in AGENTS}

    def close(self) -> None:
        self.game.sims = [None] * self.num_envs
        self.game.agents = [None] * self.num_envs
        self.game.references = [None] * self.num_envs

    def _reset_copy(self, k: int, seed: int | None, options: Mapping[str, Any]) -> None:
        first = self.game.reset(k, self.engine_seed(k, seed), options.get("load"))
        for agent in AGENTS:
            self._obs[agent][k] = first[agent]
        self._rewards[k] = 0.0
        self._truncated[k] = False

    def _check_actions(self, actions: Mapping[str, np.ndarray], acting: np.ndarray | None):
        unknown = [a for a in actions if a not in AGENTS]
        if unknown:
            raise InvalidActionError(f"actions for unknown agents {', '.join(map(str, unknown))}; agents: srla, lrla")
        return self._checked(actions, "srla", self.game.check_srla), self._checked(
            actions, "lrla", self.game.check_lrla
        )

    def _advance(self, actions: tuple[np.ndarray | None, np.ndarray | None], acting: np.ndarray | None) -> None:
        srla, lrla = actions
        if acting is None:  # every copy: the engine writes into the arrays returned
            _, _, truncated = self.game.step(
                srla, lrla, range(self.num_envs), self.threads, out=(self._obs, self._rewards)
            )
            self._truncated[:] = truncated
            return
        which = np.flatnonzero(acting)
        if not which.size:
            return
        part, rewards, truncated = self.game.step(
            None if srla is None else srla[which],
            None if lrla is None else lrla[which],
            which.tolist(),
            threads=self.threads,
        )
        for agent in AGENTS:
            self._obs[agent][which] = part[agent]
        self._rewards[which], self._truncated[which] = rewards, truncated

    def _result(self, reset: bool) -> tuple:
        infos = self._infos()
        if reset:
            return self._obs, infos
        for i, agent in enumerate(AGENTS):
            np.copyto(self._reward[agent], self._rewards[:, i])
            np.copyto(self._truncations[agent], self._truncated)
        return self._obs, self._reward, self._terminations, self._truncations, infos

    def _done(self) -> np.ndarray:
        return self._truncated

    def _checked(self, actions: Mapping[str, np.ndarray], agent: str, check) -> np.ndarray | None:
        if agent not in actions:
            return None
        stacked = np.asarray(actions[agent])
        if stacked.ndim < 1 or stacked.shape[0] != self.num_envs:
            raise InvalidActionError(
                f"{agent}: actions must have a leading axis of {self.num_envs} copies, got shape {stacked.shape}"
            )
        fast = self._fast_check(stacked, agent)
        if fast is not None:
            return fast
        # Some copy's action is bad (or of an unusual type): check copy by copy for the message naming it.
        return np.stack([check(stacked[k], f"{agent} (copy {k})") for k in range(self.num_envs)])

    def _fast_check(self, stacked: np.ndarray, agent: str) -> np.ndarray | None:
        """The whole batch checked at once when every action is valid; None otherwise (the slow path names it)."""
        game = self.game
        if agent == "srla":
            if stacked.shape != (self.num_envs, game.levels - 1) or stacked.dtype.kind not in "fiu":
                return None
            a = stacked.astype(np.float64)
            return a if bool(np.all((a >= -1) & (a <= 1))) else None
        if stacked.shape != (self.num_envs, len(game.nvec)) or stacked.dtype.kind not in "iu":
            return None
        if not bool(np.all((stacked >= 0) & (stacked < game.nvec))):
            return None
        return stacked.astype(np.int64).reshape(self.num_envs, -1, 3)

    def _infos(self) -> dict[str, np.ndarray]:
        out: dict[str, list] = {key: [] for key in INFO_KEYS}
        for k in range(self.num_envs):
            sim = self.game.sims[k]
            interval = sim.interval()
            finished = int(interval["finished"])
            out["sim_time_s"].append(float(sim.now_s))
            out["flows_finished"].append(finished)
            out["mean_fct_ms"].append(float(interval["mean_fct_s"]) * 1e3 if finished else 0.0)
            out["active_flows"].append(int(sim.active_flows))
        return {key: np.asarray(values) for key, values in out.items()}


class _FlowSingleVectorEnv(SingleAgentVectorEnv):
    """One agent of B batched copies as a Gymnasium VectorEnv (the other agent held as in its single env); its
    infos are the single environments' (:meth:`_copy_info`), not :data:`INFO_KEYS` alone."""

    agent = ""

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        self.batch = self.flow = FlowVectorEnv(num_envs, **self.max_steps(kwargs, max_episode_steps))
        self._spaces(self.flow.single_observation_spaces[self.agent], self.flow.single_action_spaces[self.agent])

    def _actions(self, actions: Any) -> dict[str, Any]:
        return {self.agent: actions}

    def _copy_info(self, k: int, episode_end: bool) -> dict[str, Any]:
        return self.flow.game.info(k, episode_end=episode_end)  # with the episode's end metrics, as the single env

    def _agent(self, value: Any, what: str) -> Any:
        return value[self.agent]


class FlowSrlaVectorEnv(_FlowSingleVectorEnv):
    """``dcgym/FlowSrla-v0`` batched: B copies, sRLA acting in each, one engine call per step."""

    agent = "srla"


class FlowLrlaVectorEnv(_FlowSingleVectorEnv):
    """``dcgym/FlowLrla-v0`` batched: B copies, lRLA acting in each, one engine call per step."""

    agent = "lrla"
