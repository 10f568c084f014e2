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

**Autoreset** follows Gymnasium 1.x's default, next-step mode: the step that
ends a copy's episode returns its last observation with ``truncations`` set;
the *next* ``step`` ignores that copy's actions, resets it (engine seed drawn
from the copy's own ``np_random``, as ``reset()`` without a seed does) and
returns its first observation with reward 0. Flow episodes never terminate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Box, MultiDiscrete
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv

from dcgym.envs.error import InvalidActionError, ResetNeededError
from dcgym.envs.flow.game import AGENTS, FlowGame

__all__ = ["INFO_KEYS", "FlowLrlaVectorEnv", "FlowSrlaVectorEnv", "FlowVectorEnv"]

INFO_KEYS = ("sim_time_s", "flows_finished", "mean_fct_ms", "active_flows")
"""The info arrays of a batched step, each with leading axis B (flow_v0's Info section)."""


class FlowVectorEnv:
    """B copies of flow_v0: observations, actions and rewards per agent with a leading axis B.

    ``reset(seed=s)`` seeds copy k with ``s + k`` (a list gives one seed per
    copy). ``step({"srla": (B, K - 1), "lrla": (B, 3 n_l)})`` (an agent left
    out does not act: held by the heuristic of its single-agent env) returns
    observations per agent, rewards, terminations and truncations per agent
    (B,), and a dict of the :data:`INFO_KEYS` arrays. ``threads`` steps the
    copies on that many threads. Keyword arguments are flow_v0's.
    """

    metadata = {"name": "flow_v0", "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, threads: int = 1, **kwargs: Any) -> None:
        self.game = FlowGame(kwargs, num_envs)
        self.num_envs = num_envs
        self.threads = threads
        self.possible_agents = list(AGENTS)
        self.single_observation_spaces = dict(self.game.observation_spaces)
        self.single_action_spaces = dict(self.game.action_spaces)
        self.np_randoms = [seeding.np_random()[0] for _ in range(num_envs)]
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._started = False

    def reset(self, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None):
        """Reset every copy: (observations per agent (B, ...), infos)."""
        seeds = self._seeds(seed)
        load = (options or {}).get("load")
        obs = self.game._empty_obs(self.num_envs)
        for k in range(self.num_envs):
            first = self.game.reset(k, self._engine_seed(k, seeds[k]), load)
            for agent in AGENTS:
                obs[agent][k] = first[agent]
        self._autoreset[:] = False
        self._started = True
        return obs, self._infos()

    def step(self, actions: Mapping[str, np.ndarray]):
        """Advance every copy one interval (autoresetting those whose episode ended at the last step)."""
        if not self._started:
            raise ResetNeededError("Call reset() before step()")
        unknown = [a for a in actions if a not in AGENTS]
        if unknown:
            raise InvalidActionError(f"actions for unknown agents {', '.join(map(str, unknown))}; agents: srla, lrla")
        srla = self._checked(actions, "srla", self.game.check_srla)
        lrla = self._checked(actions, "lrla", self.game.check_lrla)
        resets = np.flatnonzero(self._autoreset)
        which = np.flatnonzero(~self._autoreset)
        obs = self.game._empty_obs(self.num_envs)
        rewards = np.zeros((self.num_envs, 2))
        truncated = np.zeros(self.num_envs, dtype=bool)
        for k in resets:
            first = self.game.reset(int(k), self._engine_seed(int(k), None))
            for agent in AGENTS:
                obs[agent][k] = first[agent]
        if which.size:
            part, r, t = self.game.step(
                None if srla is None else srla[which],
                None if lrla is None else lrla[which],
                which.tolist(),
                threads=self.threads,
            )
            for agent in AGENTS:
                obs[agent][which] = part[agent]
            rewards[which], truncated[which] = r, t
        self._autoreset = truncated.copy()
        terminations = {a: np.zeros(self.num_envs, dtype=bool) for a in AGENTS}
        truncations = {a: truncated.copy() for a in AGENTS}
        reward = {a: rewards[:, i].copy() for i, a in enumerate(AGENTS)}
        return obs, reward, terminations, truncations, self._infos()

    def close(self) -> None:
        self.game.sims = [None] * self.num_envs
        self.game.agents = [None] * self.num_envs

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
        """Seed copy k's np_random with ``seed`` and return it, or draw an engine seed from it (flow_v0's rule)."""
        if seed is not None:
            self.np_randoms[k] = seeding.np_random(seed)[0]
            return seed
        return int(self.np_randoms[k].integers(2**63))


class _FlowSingleVectorEnv(VectorEnv):
    """One agent of B batched copies as a Gymnasium VectorEnv (the other agent held as in its single env)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}
    agent = ""

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        if max_episode_steps is not None:
            kwargs.setdefault("max_steps", max_episode_steps)
        threads = kwargs.pop("threads", 1)
        self.flow = FlowVectorEnv(num_envs, threads=threads, **kwargs)
        self.num_envs = num_envs
        self.render_mode = None
        self.single_observation_space = self.flow.single_observation_spaces[self.agent]
        self.single_action_space = self.flow.single_action_spaces[self.agent]
        obs = self.single_observation_space
        self.observation_space = Box(0.0, 1.0, (num_envs, *obs.shape), np.float32)
        act = self.single_action_space
        if isinstance(act, MultiDiscrete):
            self.action_space = MultiDiscrete(np.tile(act.nvec, (num_envs, 1)))
        else:
            self.action_space = Box(-1.0, 1.0, (num_envs, *act.shape), np.float32)
        self._index = AGENTS.index(self.agent)

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        obs, infos = self.flow.reset(seed=seed, options=options)
        return obs[self.agent], _masked(infos)

    def step(self, actions: np.ndarray):
        obs, rewards, terms, truncs, infos = self.flow.step({self.agent: actions})
        a = self.agent
        return obs[a], rewards[a], terms[a], truncs[a], _masked(infos)

    def close_extras(self, **kwargs: Any) -> None:
        self.flow.close()


class FlowSrlaVectorEnv(_FlowSingleVectorEnv):
    """``dcgym/FlowSrla-v0`` batched: B copies, sRLA acting in each, one engine call per step."""

    agent = "srla"


class FlowLrlaVectorEnv(_FlowSingleVectorEnv):
    """``dcgym/FlowLrla-v0`` batched: B copies, lRLA acting in each, one engine call per step."""

    agent = "lrla"


def _masked(infos: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Gymnasium's vector info layout: every key with a ``_key`` mask of the copies that set it (all)."""
    out: dict[str, np.ndarray] = {}
    for key, value in infos.items():
        out[key] = value
        out["_" + key] = np.ones(value.shape[0], dtype=bool)
    return out
