"""A runner's copies of a multi-agent game stepped by one engine call, where RLlib steps them one after the other.

RLlib's ``MultiAgentEnvRunner`` runs ``num_envs_per_env_runner`` copies of a
multi-agent environment as its ``SyncVectorMultiAgentEnv``: each copy, a
PettingZoo environment wrapped as an RLlib ``MultiAgentEnv``, is stepped in
turn. :class:`RackCopies` and :class:`ColoCopies` are that vector environment
for ``rack_v0`` and ``colo_v0``, with the copies held by one
:class:`~dcgym.envs.rack.vector.RackVectorEnv` or
:class:`~dcgym.envs.colo.vector.ColoVectorEnv` and advanced together (C++,
GIL released); :class:`LbCopies` steps the sync vector env's own copies of
``lb_v0`` or ``lb_central_v0``, each in its two phases (its Python before and
after the engine), with their engines run in one call (``step_lb_batch``).
They return what the sync vector env returns, bit for bit: per
copy the agents' observations, rewards, terminations and truncations (with
``__all__``) and the environment's own infos; copy k reset with seed s is
reset with ``s + k``, as RLlib's; and next-step autoreset, the step after a
copy's episode ends resetting it with zero rewards. They keep the sync vector
env's wrapped copies as ``envs`` for what RLlib reads of them (spaces,
agents), and never step them.

:func:`batched_copies` gives one for a runner whose environment is rack_v0
(actions a batch takes: not the ``fill`` actions), colo_v0, lb_v0 or
lb_central_v0 with more than one copy, and None otherwise (the sync vector
env stays).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv

from dcgym.agents.rl.envs import RLLIB_ENV_IDS
from dcgym.envs.colo.colo_v0 import NO_CHANGE
from dcgym.envs.colo.vector import ColoVectorEnv
from dcgym.envs.lb.lb_v0 import step_copies
from dcgym.envs.rack.rack_v0 import agent_infos
from dcgym.envs.rack.vector import RackVectorEnv

__all__ = ["ColoCopies", "LbCopies", "RackCopies", "batched_copies"]


class _Copies(VectorMultiAgentEnv):
    """What the stand-ins share: the sync vector env's spaces and copies, its autoreset step's results, closing."""

    batch: Any = None

    def __init__(self, synced: VectorMultiAgentEnv) -> None:
        super().__init__()
        self.num_envs = synced.num_envs
        self.envs = synced.envs
        self.metadata, self.render_mode = synced.metadata, synced.render_mode
        self.single_observation_spaces = synced.single_observation_spaces
        self.single_action_spaces = synced.single_action_spaces
        self.single_observation_space = synced.single_observation_space
        self.single_action_space = synced.single_action_space
        self.observation_space, self.action_space = synced.observation_space, synced.action_space
        self._resetting = np.zeros(self.num_envs, dtype=bool)

    def close_extras(self, **kwargs: Any) -> None:
        if self.batch is not None:
            self.batch.close()
        for env in self.envs:
            env.close()

    def _restarted(self, k: int) -> tuple[dict, dict, dict]:
        """The rewards, terminations and truncations of the sync vector env's autoreset step for copy k: zeros and
        False over its copy's ``possible_agents`` (RLlib's PettingZoo wrapper takes them from the agents present at
        its first reset)."""
        agents = self.envs[k].unwrapped.possible_agents
        return dict.fromkeys(agents, 0.0), *(_with_all(dict.fromkeys(agents, False)) for _ in range(2))


def _with_all(flags: dict[str, bool]) -> dict[str, bool]:
    """Per-agent flags with ``__all__``, as RLlib's PettingZoo wrapper adds it: whether every agent's is set."""
    return {**flags, "__all__": all(flags.values())}


class RackCopies(_Copies):
    """``num_envs`` copies of rack_v0 with ``env_config``, as RLlib's sync vector env of them (module docstring);
    ``synced`` is that sync vector env, whose copies this one stands in for."""

    def __init__(self, synced: VectorMultiAgentEnv, env_config: Mapping[str, Any]) -> None:
        super().__init__(synced)
        self.batch = RackVectorEnv(synced.num_envs, copy=False, **env_config)
        self.agents = list(self.batch.possible_agents)
        self._actions = np.zeros(self.batch.action_space.shape, dtype=np.float64)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed, options=options)
        obs, _ = self.batch.reset(seed=seed, options=options)
        self._resetting[:] = False
        out = self.batch.game.out
        return [self._obs(obs, k) for k in range(self.num_envs)], [self._infos(out, k) for k in range(self.num_envs)]

    def step(self, actions: list[dict[str, Any]]):
        for k, action in enumerate(actions):
            if not self._resetting[k]:  # a copy that resets at this step ignores its actions, as RLlib's
                self._actions[k] = [action[a] for a in self.agents]
        obs, rewards, _, truncations, _ = self.batch.step(self._actions)
        out = self.batch.game.out
        result: tuple[list, list, list, list, list] = ([], [], [], [], [])
        for k in range(self.num_envs):
            result[0].append(self._obs(obs, k))
            if self._resetting[k]:  # the sync vector env's autoreset step: the reset's observation and infos
                for part, value in zip(result[1:4], self._restarted(k), strict=True):
                    part.append(value)
                result[4].append(self._infos(out, k))
                continue
            ended = bool(truncations[k, 0])
            result[1].append(dict.fromkeys(self.agents, float(rewards[k, 0])))
            result[2].append(_with_all(dict.fromkeys(self.agents, False)))
            result[3].append(_with_all(dict.fromkeys(self.agents, ended)))
            result[4].append(self._infos(out, k, episode_end=ended))
        np.copyto(self._resetting, self.batch._done())
        return result

    def _obs(self, obs: np.ndarray, k: int) -> dict[str, np.ndarray]:
        return dict(zip(self.agents, obs[k].copy()))  # the batch's arrays are overwritten next step

    def _infos(self, out: dict[str, np.ndarray], k: int, episode_end: bool = False) -> dict[str, dict[str, Any]]:
        return agent_infos(self.batch.game, self.agents, out, k, episode_end)


class ColoCopies(_Copies):
    """``num_envs`` copies of colo_v0 with ``env_config``, as RLlib's sync vector env of them (module docstring):
    services come and go, so each copy's dicts hold the services colo_v0 shows (present, or ending at this
    step)."""

    def __init__(self, synced: VectorMultiAgentEnv, env_config: Mapping[str, Any]) -> None:
        super().__init__(synced)
        self.batch = ColoVectorEnv(synced.num_envs, **env_config)
        self.agents = list(self.batch.possible_agents)
        self._actions = np.zeros((self.num_envs, len(self.agents)), dtype=np.int64)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed, options=options)
        obs, _ = self.batch.reset(seed=seed, options=options)
        self._resetting[:] = False
        views = [self.batch.copy_view(k, reset=True) for k in range(self.num_envs)]
        return [self._obs(obs, k, v) for k, v in enumerate(views)], [v.infos for v in views]

    def step(self, actions: list[dict[str, Any]]):
        self._actions[:] = NO_CHANGE  # for the services without an action (absent, or their copy resetting)
        for k, action in enumerate(actions):
            for i, agent in enumerate(self.agents):
                if agent in action and not self._resetting[k]:
                    self._actions[k, i] = action[agent]
        obs, _, terminations, truncations, _ = self.batch.step(self._actions)
        result: tuple[list, list, list, list, list] = ([], [], [], [], [])
        ends = np.zeros(self.num_envs, dtype=bool)
        for k in range(self.num_envs):
            view = self.batch.copy_view(k, reset=bool(self._resetting[k]))
            result[0].append(self._obs(obs, k, view))
            result[4].append(view.infos)
            if self._resetting[k]:  # the sync vector env's autoreset step
                for part, value in zip(result[1:4], self._restarted(k), strict=True):
                    part.append(value)
                continue
            shown = np.flatnonzero(view.shown)
            result[1].append(view.rewards)
            result[2].append(_with_all({self.agents[i]: bool(terminations[k, i]) for i in shown}))
            result[3].append(_with_all({self.agents[i]: bool(truncations[k, i]) for i in shown}))
            ends[k] = result[2][-1]["__all__"] or result[3][-1]["__all__"]
        np.copyto(self._resetting, ends)
        return result

    def _obs(self, obs: np.ndarray, k: int, view: Any) -> dict[str, dict[str, np.ndarray]]:
        return {
            self.agents[i]: {"observation": obs[k, i, :-1].copy(), "action_mask": view.masks[i].copy()}
            for i in np.flatnonzero(view.shown)
        }


class LbCopies(_Copies):
    """The copies of lb_v0 or lb_central_v0 in RLlib's sync vector env, stepped with their engines run in one call:
    each copy's own step (``step_phases``: its Python before and after the engine, the same code as ``step``),
    so what each returns is what it returns stepped alone (module docstring)."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed, options=options)
        seeds = [None] * self.num_envs if seed is None else [seed + k for k in range(self.num_envs)]
        self._resetting[:] = False
        results = [env.reset(seed=s, options=options) for env, s in zip(self.envs, seeds, strict=True)]
        return [obs for obs, _ in results], [infos for _, infos in results]

    def step(self, actions: list[dict[str, Any]]):
        result: list[tuple] = [()] * self.num_envs
        stepping = []
        for k in range(self.num_envs):
            if self._resetting[k]:  # the sync vector env's autoreset step
                obs, infos = self.envs[k].reset()
                result[k] = (obs, *self._restarted(k), infos)
            else:
                stepping.append(k)
        steps = [self.envs[k].unwrapped.par_env.step_phases(actions[k]) for k in stepping]
        for k, (obs, rewards, terminations, truncations, infos) in zip(stepping, step_copies(steps), strict=True):
            result[k] = (obs, rewards, _with_all(terminations), _with_all(truncations), infos)
        for k in range(self.num_envs):
            self._resetting[k] = result[k][2]["__all__"] or result[k][3]["__all__"]
        return tuple([r[i] for r in result] for i in range(5))


def batched_copies(runner: Any) -> _Copies | None:
    """The batched stand-in for ``runner.env`` (its sync vector env of rack_v0, colo_v0, lb_v0 or lb_central_v0
    copies), or None where there is none: another environment, one copy, or rack_v0's ``fill`` actions."""
    config = runner.config
    env_config = dict(config.env_config or {})
    if runner.num_envs < 2:
        return None
    if config.env == RLLIB_ENV_IDS["rack_v0"] and env_config.get("action_type") != "fill":
        return RackCopies(runner.env, env_config)
    if config.env == RLLIB_ENV_IDS["colo_v0"]:
        return ColoCopies(runner.env, env_config)
    if config.env in (RLLIB_ENV_IDS["lb_v0"], RLLIB_ENV_IDS["lb_central_v0"]):
        return LbCopies(runner.env)
    return None
