"""A runner's copies of rack_v0 stepped by one engine call, where RLlib steps them one after the other.

RLlib's ``MultiAgentEnvRunner`` runs ``num_envs_per_env_runner`` copies of a
multi-agent environment as its ``SyncVectorMultiAgentEnv``: each copy, a
PettingZoo environment wrapped as an RLlib ``MultiAgentEnv``, is stepped in
turn. :class:`RackCopies` is that vector environment for ``rack_v0``, with the
copies held by one :class:`~dcgym.envs.rack.vector.RackVectorEnv` and
advanced together (C++, GIL released). It returns what the sync vector env
returns, bit for bit: per copy the agents' observations, rewards,
terminations and truncations (with ``__all__``) and rack_v0's infos
(:func:`~dcgym.envs.rack.rack_v0.agent_infos`); copy k reset with seed s is
reset with ``s + k``, as RLlib's; and next-step autoreset, the step after a
copy's truncation resetting it with zero rewards. It keeps the sync vector
env's wrapped copies as ``envs`` for what RLlib reads of them (spaces,
agents), and never steps them.

:func:`batched_copies` gives it for a runner whose environment is rack_v0 with
more than one copy and actions a batch takes (not the ``fill`` actions), and
None otherwise (the sync vector env stays).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv

from dcgym.agents.rl.envs import RLLIB_ENV_IDS
from dcgym.envs.rack.rack_v0 import agent_infos
from dcgym.envs.rack.vector import RackVectorEnv

__all__ = ["RackCopies", "batched_copies"]


class RackCopies(VectorMultiAgentEnv):
    """``num_envs`` copies of rack_v0 with ``env_config``, as RLlib's sync vector env of them (module docstring);
    ``synced`` is that sync vector env, whose copies this one stands in for."""

    def __init__(self, synced: VectorMultiAgentEnv, env_config: Mapping[str, Any]) -> None:
        super().__init__()
        self.batch = RackVectorEnv(synced.num_envs, copy=False, **env_config)
        self.num_envs = synced.num_envs
        self.envs = synced.envs
        self.metadata, self.render_mode = synced.metadata, synced.render_mode
        self.single_observation_spaces = synced.single_observation_spaces
        self.single_action_spaces = synced.single_action_spaces
        self.single_observation_space = synced.single_observation_space
        self.single_action_space = synced.single_action_space
        self.observation_space, self.action_space = synced.observation_space, synced.action_space
        self.agents = list(self.batch.possible_agents)
        self._resetting = np.zeros(self.num_envs, dtype=bool)
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
            if self._resetting[k]:  # the sync vector env's autoreset step: the reset's observation and infos
                reward, ended = 0.0, False
                infos = self._infos(out, k)
            else:
                reward, ended = float(rewards[k, 0]), bool(truncations[k, 0])
                infos = self._infos(out, k, episode_end=ended)
            flags = dict.fromkeys(self.agents, False)
            result[0].append(self._obs(obs, k))
            result[1].append(dict.fromkeys(self.agents, reward))
            result[2].append({**flags, "__all__": False})
            result[3].append({**dict.fromkeys(self.agents, ended), "__all__": ended})
            result[4].append(infos)
        np.copyto(self._resetting, self.batch._done())
        return result

    def close_extras(self, **kwargs: Any) -> None:
        self.batch.close()
        for env in self.envs:
            env.close()

    def _obs(self, obs: np.ndarray, k: int) -> dict[str, np.ndarray]:
        return dict(zip(self.agents, obs[k].copy()))  # the batch's arrays are overwritten next step

    def _infos(self, out: dict[str, np.ndarray], k: int, episode_end: bool = False) -> dict[str, dict[str, Any]]:
        return agent_infos(self.batch.game, self.agents, out, k, episode_end)


def batched_copies(runner: Any) -> RackCopies | None:
    """The batched stand-in for ``runner.env`` (its sync vector env of rack_v0 copies), or None where there is
    none: another environment, one copy, or rack_v0's ``fill`` actions."""
    config = runner.config
    env_config = dict(config.env_config or {})
    if config.env != RLLIB_ENV_IDS["rack_v0"] or runner.num_envs < 2 or env_config.get("action_type") == "fill":
        return None
    return RackCopies(runner.env, env_config)
