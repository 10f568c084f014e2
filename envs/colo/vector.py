"""B copies of colo_v0 stepped together: arrays of shape (B, N, ...) and one engine call per step.

:class:`ColoVectorEnv` holds B copies of one colo_v0 game (same scenario, mix
and interval). Its arrays have one row per copy and one column per service of
the mix (``possible_agents``), present or not:

| array | shape | what |
|---|---|---|
| observations | (B, N, 9) float32 | colo_v0's 8 counters and a flag, 1 for a service present (or ending at this step); zeros otherwise |
| ``info["action_mask"]`` | (B, N, 49) int8 | colo_v0's masks (an absent service: only 24, no change) |
| actions | (B, N) integers in [0, 48] | colo_v0's actions (an absent service's entry is ignored) |
| rewards | (B, N) float64 | colo_v0's rewards (0 for an absent service and at arrival) |
| terminations | (B, N) bool | the service ended at this step |
| truncations | (B, N) bool | the copy's episode reached max_steps (present services) |

Every step applies the actions with colo_v0's rules (removals first, then
additions in agent order up to what is idle) as array operations over the
copies, advances every engine with one :func:`dcgym.cpp_core.step_colo_batch`
call (GIL released), and reads the counters; arrivals and departures, rare,
go through colo_v0's own code. So copy k after ``reset(seed=s)`` follows
exactly ``colo_v0.parallel_env(...).reset(seed=s + k)`` under the same
actions (a test checks it).

Seeding and next-step autoreset are every batched environment's
(:mod:`dcgym.envs.vector`): the step that ends a copy's episode (truncation,
or every service ended) returns its last arrays; the next ``step`` ignores
that copy's actions, resets it with colo_v0's ``reset()`` (the engine seed,
and a random mix, drawn from the copy's generator, which is colo_v0's own)
and returns its first observation with zero rewards. The arrays are new at
every step (``copy`` changes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from gymnasium.spaces import Box, MultiDiscrete

from dcgym.cpp_core import step_colo_batch
from dcgym.envs.colo.colo_v0 import (
    _COLUMNS,
    _DECODED,
    _LATENCY,
    _MASKS,
    _STATE,
    ACTIONS,
    FLOAT32_MAX,
    MAX_DELTA,
    NO_CHANGE,
    OBSERVATION_FEATURES,
    ColoEnv,
    osml_rewards,
    qos_rewards,
)
from dcgym.envs.colo.server import COUNTERS, ENDED, RUNNING, WARMING
from dcgym.envs.error import InvalidActionError
from dcgym.envs.vector import BatchedEnv, SingleAgentVectorEnv

__all__ = ["ColoCentralVectorEnv", "ColoVectorEnv", "CopyView"]

_DC = np.array([d[0] for d in _DECODED], dtype=np.int64)
_DW = np.array([d[1] for d in _DECODED], dtype=np.int64)
_TABLE = np.zeros((MAX_DELTA + 1, MAX_DELTA + 1, MAX_DELTA + 1, MAX_DELTA + 1, ACTIONS), dtype=np.int8)
for (_lc, _hc, _lw, _hw), _m in _MASKS.items():
    _TABLE[-_lc, _hc, -_lw, _hw] = _m
_ABSENT = np.zeros(ACTIONS, dtype=np.int8)
_ABSENT[NO_CHANGE] = 1


class CopyView(NamedTuple):
    """What colo_v0 itself returns for one copy of a :class:`ColoVectorEnv` after its last reset or step."""

    shown: np.ndarray
    """(N,) bool: the services in colo_v0's observations (present, or ending at this step)."""
    masks: np.ndarray
    """(N, 49) int8: their action masks; a service not shown: only no change."""
    infos: dict[str, dict[str, Any]]
    """colo_v0's infos of the services shown."""
    rewards: dict[str, float]
    """Their rewards (empty at a reset)."""


class ColoVectorEnv(BatchedEnv):
    """B copies of colo_v0 (module docstring); keyword arguments are colo_v0's."""

    metadata = {"name": "colo_v0", **BatchedEnv.metadata}

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        super().__init__(num_envs, copy=False)  # every step's arrays are new: nothing to copy
        self.envs = [ColoEnv(**kwargs) for _ in range(self.num_envs)]
        first = self.envs[0]
        self.possible_agents = list(first.possible_agents)
        self.num_agents = len(self.possible_agents)
        self.max_steps = first.max_steps
        self._ticks = first._ticks
        b_, n = self.num_envs, self.num_agents
        self.cores = np.zeros((b_, n), dtype=np.int64)
        self.ways = np.zeros((b_, n), dtype=np.int64)
        self.idle = np.zeros((b_, 2), dtype=np.int64)
        self.present = np.zeros((b_, n), dtype=bool)
        self._latency = np.zeros((b_, n))
        self._steps = np.zeros(b_, dtype=np.int64)
        self._buffer = np.zeros((b_, n, len(COUNTERS)))
        self._ended = np.zeros(b_, dtype=bool)
        self._last: tuple = ()

    def close(self) -> None:
        for env in self.envs:
            env.close()

    # ------------------------------------------------------------------ the batched game

    def _reset_copy(self, k: int, seed: int | None, options: Mapping[str, Any]) -> None:
        self.envs[k].reset(seed=seed, options=dict(options))
        self._rebuild([k])
        self._ended[k] = False

    def _check_actions(self, actions: Any, acting: np.ndarray | None) -> np.ndarray:
        """(B, N) action indices; those of absent services (and of copies resetting: none present) unchecked."""
        a = np.asarray(actions)
        b_, n = self.num_envs, self.num_agents
        if a.shape != (b_, n) or a.dtype.kind not in "iu":
            raise InvalidActionError(
                f"actions must be integer indices of shape ({b_}, {n}) (copies x services), got "
                f"{a.dtype} of shape {a.shape}"
            )
        bad = np.argwhere(self.present & ((a < 0) | (a >= ACTIONS)))
        if len(bad):
            b, i = bad[0]
            raise InvalidActionError(
                f"copy {b}, {self.possible_agents[i]}: action {a[b, i]} is not an action index; allowed: an "
                f"integer in [0, {ACTIONS - 1}]"
            )
        return a

    def _advance(self, a: np.ndarray, acting: np.ndarray | None) -> None:
        """Apply the actions, advance the acting copies' engines by one interval in one call, observe (every copy)."""
        active = np.ones(self.num_envs, dtype=bool) if acting is None else acting
        granted = self._apply(np.where(self.present & active[:, None], a, NO_CHANGE))
        step_colo_batch([env.server.sim for k, env in enumerate(self.envs) if active[k]], self._ticks)
        self._steps[active] += 1
        counters = self._read()
        phases = counters[:, :, _STATE]
        ended = self.present & (phases == ENDED) & active[:, None]
        arrived = np.zeros_like(ended)
        for b in np.flatnonzero(
            ended.any(axis=1) | (((phases == WARMING) | (phases == RUNNING)) & ~self.present).any(1)
        ):
            if active[b]:
                arrived[b] = self._lifecycle(b, ended[b])
        counters = self._read() if arrived.any() or ended.any() else counters
        latency = counters[:, :, _LATENCY]
        first = self.envs[0]
        if first.reward == "paper":
            reward = osml_rewards(latency, self._latency, granted.sum(axis=2))
        else:
            reward = qos_rewards(latency, np.asarray(first._qos), granted.sum(axis=2))
        was = self.present | ended
        rewards = np.where(was & ~arrived & active[:, None], reward, 0.0)
        self._latency = np.where(active[:, None], latency, self._latency)
        truncated = (self._steps >= self.max_steps) & active
        truncations = (self.present | ended) & truncated[:, None]
        everyone_left = ~self.present.any(axis=1) & active
        self._ended = truncated | everyone_left
        obs = self._observe(counters, self.present | ended)
        info = self._info(granted)
        self.present &= ~self._ended[:, None]
        self._last = (obs, rewards, ended, truncations, info)

    def _result(self, reset: bool) -> tuple:
        if reset:
            return self._observe(), self._info(np.zeros((self.num_envs, self.num_agents, 2), dtype=np.int64))
        return self._last

    def _done(self) -> np.ndarray:
        return self._ended

    def copy_view(self, k: int, reset: bool = False) -> CopyView:
        """Copy k as colo_v0 returns it after the last step (``reset``: after its reset, as the copies that reset
        at this step are): which services it shows, their masks, infos and rewards."""
        env = self.envs[k]
        obs, rewards, _, _, info = self._last if self._last and not reset else (None,) * 5
        if obs is None:
            obs, info = self._result(reset=True)
        shown = obs[k, :, -1] > 0
        cores, ways, (idle_c, idle_w) = info["cores"][k], info["ways"][k], info["idle"][k]
        low_c = np.minimum(MAX_DELTA, cores - np.minimum(1, cores))
        low_w = np.minimum(MAX_DELTA, ways - np.minimum(1, ways))
        masks = _TABLE[low_c, min(MAX_DELTA, int(idle_c)), low_w, min(MAX_DELTA, int(idle_w))]
        masks[~shown] = _ABSENT
        latency, now, qos = self._latency[k], env.server.sim.now_s, env._qos
        infos = {}
        for i in np.flatnonzero(shown):
            infos[self.possible_agents[i]] = {
                "granted": (int(info["granted"][k, i, 0]), int(info["granted"][k, i, 1])),
                "latency_ms": float(latency[i]),
                "qos_ms": qos[i],
                "qos_met": bool(latency[i] <= qos[i]),
                "cores": int(cores[i]),
                "ways": int(ways[i]),
                "idle_cores": int(idle_c),
                "idle_ways": int(idle_w),
                "sim_time_s": now,
            }
        paid = {} if rewards is None else {self.possible_agents[i]: float(rewards[k, i]) for i in np.flatnonzero(shown)}
        return CopyView(shown, masks, infos, paid)

    # ------------------------------------------------------------------ internals

    def _rebuild(self, copies: Sequence[int]) -> None:
        """Arrays from the copies' colo_v0 state (those listed)."""
        for b in copies:
            env = self.envs[b]
            self.cores[b], self.ways[b], self.idle[b] = env._cores, env._ways, env._idle
            self.present[b] = [a in env.agents for a in self.possible_agents]
            self._latency[b] = env._latency
            self._steps[b] = env._steps

    def _sync(self, b: int) -> ColoEnv:
        """Copy b's arrays into its colo_v0 state (before colo_v0's own code handles an arrival or departure)."""
        env = self.envs[b]
        env._cores, env._ways, env._idle = self.cores[b].tolist(), self.ways[b].tolist(), self.idle[b].tolist()
        env.agents = [a for i, a in enumerate(self.possible_agents) if self.present[b, i]]
        return env

    def _apply(self, actions: np.ndarray) -> np.ndarray:
        """colo_v0's rules over every copy at once; the granted (dcores, dways), shape (B, N, 2)."""
        dc, dw = _DC[actions], _DW[actions]
        before_c, before_w = self.cores.copy(), self.ways.copy()
        for held, delta, r in ((self.cores, dc, 0), (self.ways, dw, 1)):
            take = np.minimum(np.maximum(-delta, 0), held - np.minimum(1, held))
            held -= take
            self.idle[:, r] += take.sum(axis=1)
            for i in range(self.num_agents):  # additions in agent order, up to what is idle then
                add = np.minimum(np.maximum(delta[:, i], 0), self.idle[:, r])
                held[:, i] += add
                self.idle[:, r] -= add
        granted = np.stack([self.cores - before_c, self.ways - before_w], axis=2)
        for b in np.flatnonzero(granted.any(axis=(1, 2))):
            self.envs[b].server.sim.set_allocations(self.cores[b], self.ways[b])
        return granted

    def _lifecycle(self, b: int, ended: np.ndarray) -> np.ndarray:
        """Departures and arrivals of copy b through colo_v0's code; which services arrived."""
        env = self._sync(b)
        for i in np.flatnonzero(ended):
            env._idle[0] += env._cores[i]
            env._idle[1] += env._ways[i]
            env._cores[i] = env._ways[i] = 0
        env.agents = [a for i, a in enumerate(self.possible_agents) if self.present[b, i] and not ended[i]]
        if not env.agents:
            env._wait_for_services()
        new = env._arrive(env.server.counters[:, _STATE].tolist() if env.agents else env.server.phases)
        self.cores[b], self.ways[b], self.idle[b] = env._cores, env._ways, env._idle
        arrived = np.array([a in new for a in self.possible_agents])
        self.present[b] = [a in env.agents for a in self.possible_agents]
        return arrived

    def _read(self) -> np.ndarray:
        for b, env in enumerate(self.envs):
            self._buffer[b] = env.server.counters
        return self._buffer

    def _observe(self, counters: np.ndarray | None = None, shown: np.ndarray | None = None) -> np.ndarray:
        """(B, N, 9): the counters of the services present (or ending at this step) and a 1 for them; zeros else."""
        counters = self._read() if counters is None else counters
        shown = self.present if shown is None else shown
        obs = np.zeros((self.num_envs, self.num_agents, len(OBSERVATION_FEATURES) + 1), dtype=np.float32)
        obs[:, :, :-1] = counters[:, :, _COLUMNS]
        obs[:, :, -1] = shown
        obs[~shown] = 0.0
        return obs

    def _info(self, granted: np.ndarray) -> dict[str, np.ndarray]:
        c, w = self.cores, self.ways
        low_c = np.minimum(MAX_DELTA, c - np.minimum(1, c))
        low_w = np.minimum(MAX_DELTA, w - np.minimum(1, w))
        high_c = np.minimum(MAX_DELTA, self.idle[:, 0])[:, None].repeat(self.num_agents, axis=1)
        high_w = np.minimum(MAX_DELTA, self.idle[:, 1])[:, None].repeat(self.num_agents, axis=1)
        mask = _TABLE[low_c, high_c, low_w, high_w]
        mask[~self.present] = _ABSENT
        return {"action_mask": mask, "granted": granted, "cores": c.copy(), "ways": w.copy(), "idle": self.idle.copy()}


class ColoCentralVectorEnv(SingleAgentVectorEnv):
    """``dcgym/ColoCentral-v0`` batched: B copies, one central agent each, one engine call per step.

    Observations (B, N, 9) and actions (B, N) are ColoCentral-v0's (see
    :class:`dcgym.envs.colo.wrappers.ColoCentralEnv`); rewards (the sum of the
    services' colo_v0 rewards, added in agent order as ColoCentral-v0 adds
    them), terminations (every service ended) and truncations have shape (B,);
    infos are each copy's ColoCentral-v0 info (``action_mask``, ``services``:
    colo_v0's per-service infos, ``rewards``) merged as Gymnasium's sync vector
    env merges them. Next-step autoreset, as :class:`ColoVectorEnv`.
    """

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        self.batch = self.colo = ColoVectorEnv(num_envs, **self.max_steps(kwargs, max_episode_steps))
        n = self.colo.num_agents
        self._spaces(
            Box(0.0, FLOAT32_MAX, (n, len(OBSERVATION_FEATURES) + 1), np.float32), MultiDiscrete(np.full(n, ACTIONS))
        )
        self._resetting = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None):
        self._resetting[:] = True
        return super().reset(seed=seed, options=options)

    def step(self, actions: Any):
        np.copyto(self._resetting, self.colo._autoreset)  # these copies reset at this step: their info is reset()'s
        return super().step(actions)

    def _actions(self, actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if a.shape != self.action_space.shape or a.dtype.kind not in "iu":
            raise InvalidActionError(
                f"actions: got {a.dtype} of shape {a.shape}; expected integer indices of shape "
                f"{self.action_space.shape}: for each copy, one per service ({', '.join(self.colo.possible_agents)})"
            )
        return a

    def _agent(self, value: np.ndarray, what: str) -> np.ndarray:
        if what == "obs":
            return value
        if what == "reward":
            total = np.zeros(self.num_envs)
            for i in range(self.colo.num_agents):  # ColoCentral-v0's sum, in agent order (absent services add 0)
                total += value[:, i]
            return total
        truncated = self.colo._last[3].any(axis=1)  # a copy reset at this step has neither flag (ColoVectorEnv)
        return truncated if what == "truncation" else self.colo._done() & ~truncated  # termination: all ended

    def _copy_info(self, k: int, episode_end: bool) -> dict[str, Any]:
        """ColoCentral-v0's info for copy k: the masks of the services shown (present, or ending at this step),
        colo_v0's infos for them, and their rewards (none at a reset)."""
        view = self.colo.copy_view(k, reset=bool(self._resetting[k]))
        return {"action_mask": view.masks, "services": view.infos, "rewards": view.rewards}
