"""ColoCentral-v0: colo_v0 with one central agent resizing every service's partition (a Gymnasium environment).

## Observation Space

``Box(0, FLOAT32_MAX, (N, 9), float32)``, one row per service of the mix (N =
``len(possible_agents)``): the 8 Model-C counters of colo_v0 (its table) and
a last column that is 1 while the service is present (0 before it launches
and after it ends; its counters are then 0).

## Action Space

``MultiDiscrete([49] * N)``: each service's colo_v0 action (dcores, dways) =
(k // 7 - 3, k % 7 - 3); an absent service's entry is ignored. The masks of
the present services are ``info["action_mask"]``, shape (N, 49) (an absent
service's row allows only 24, no change).

## Rewards

The sum of the present services' colo_v0 rewards (OSML's Model-C reward).

## Termination/Truncation

Terminated when every service has ended; truncated after ``max_steps``
(colo_v0's). Arguments are colo_v0's.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from dcgym.envs.colo.colo_v0 import ACTIONS, FLOAT32_MAX, NO_CHANGE, OBSERVATION_FEATURES, ColoEnv
from dcgym.envs.error import InvalidActionError
from dcgym.envs.seeding import gymnasium_seed

__all__ = ["ColoCentralEnv"]


class ColoCentralEnv(gymnasium.Env):
    """Every service of colo_v0 driven by one agent (module docstring)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, **kwargs: Any) -> None:
        self.game = ColoEnv(**kwargs)
        self.render_mode = self.game.render_mode
        self.agents = self.game.possible_agents
        n = len(self.agents)
        self.observation_space = spaces.Box(0.0, FLOAT32_MAX, (n, len(OBSERVATION_FEATURES) + 1), np.float32)
        self.action_space = spaces.MultiDiscrete(np.full(n, ACTIONS))
        self._absent_mask = np.zeros(ACTIONS, np.int8)
        self._absent_mask[NO_CHANGE] = 1

    @property
    def engine_seed(self) -> int | None:
        """The engine seed of the current episode (``seed`` if given to reset, else drawn from np_random)."""
        return self.game.engine_seed

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, infos = self.game.reset(seed=gymnasium_seed(self, seed), options=options)
        return self._stack(obs), self._info(obs, infos, {})

    def step(self, action: Any):
        a = np.asarray(action)
        if a.shape != (len(self.agents),) or a.dtype.kind not in "iu":
            raise InvalidActionError(
                f"action must be {len(self.agents)} integer indices (one per service: {', '.join(self.agents)}), "
                f"got {action!r}"
            )
        actions = {agent: int(a[k]) for k, agent in enumerate(self.agents) if agent in self.game.agents}
        for agent, k in actions.items():
            if not 0 <= k < ACTIONS:
                raise InvalidActionError(f"{agent}: action {k} is not in [0, {ACTIONS - 1}]")
        obs, rewards, terminations, truncations, infos = self.game.step(actions)
        terminated = not self.game.agents and not any(truncations.values())
        truncated = any(truncations.values())
        return self._stack(obs), float(sum(rewards.values())), terminated, truncated, self._info(obs, infos, rewards)

    def render(self) -> str | None:
        return self.game.render()

    def _stack(self, obs: dict[str, Any]) -> np.ndarray:
        out = np.zeros(self.observation_space.shape, np.float32)
        for k, agent in enumerate(self.agents):
            if agent in obs:
                out[k, :-1] = obs[agent]["observation"]
                out[k, -1] = 1.0
        return out

    def _info(self, obs: dict[str, Any], infos: dict[str, Any], rewards: dict[str, float]) -> dict[str, Any]:
        mask = np.stack([obs[a]["action_mask"] if a in obs else self._absent_mask for a in self.agents])
        return {"action_mask": mask, "services": infos, "rewards": rewards}
