"""Single-agent Gymnasium environments over flow_v0's game: ``dcgym/FlowSrla-v0`` and ``dcgym/FlowLrla-v0``.

Each trains one of AuTO's agents alone while a heuristic holds the other:

- ``FlowSrla-v0``: sRLA sets the MLFQ thresholds; long flows stay where MLFQ
  puts them (no pinned level, no cap, their ECMP path): lRLA held by the
  network's own rules.
- ``FlowLrla-v0``: lRLA sets level, cap and path of the oldest long flows; the
  thresholds stay the policy's (the scenario's preset, e.g. QLAS with
  PIAS's method's 4-queue set): sRLA held by PIAS.

Both run on :class:`~dcgym.envs.flow.game.FlowGame`, as flow_v0 (see its
module docstring for observations, actions, rewards, units and seeding), and
take its keyword arguments::

    import gymnasium, dcgym.envs
    env = gymnasium.make("dcgym/FlowSrla-v0", scenario="auto_websearch", load=0.8)
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils import EzPickle

from dcgym.envs.error import ResetNeededError
from dcgym.envs.flow.game import FlowGame
from dcgym.envs.flow.render import History, render_ansi, render_rgb
from dcgym.envs.seeding import GameEpisodes

__all__ = ["FlowLrlaEnv", "FlowSrlaEnv"]


class _FlowSingleAgent(GameEpisodes, gymnasium.Env, EzPickle):
    """What the two single-agent flow environments share: seeding, reset, step, info, render.

    A pickle holds the constructor's arguments (EzPickle): it unpickles as a new environment, before reset.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 10}
    agent: str = ""

    def __init__(self, **kwargs: Any) -> None:
        EzPickle.__init__(self, **kwargs)
        self.game = FlowGame(kwargs)
        self.render_mode = self.game.config.render_mode
        self.observation_space = self.game.observation_spaces[self.agent]
        self.action_space = self.game.action_spaces[self.agent]
        self._index = 0 if self.agent == "srla" else 1
        self._history = History()
        self._ended = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs = self._new_episode(seed, options)
        self._history.clear()
        if self.render_mode == "rgb_array":  # the only mode that draws the history
            self._history.add(self.game.sims[0])
        self._ended = False
        return obs[self.agent], self.game.info(0)

    def step(self, action: Any):
        if self.game.sims[0] is None or self._ended:
            raise ResetNeededError(
                "Call reset() before step()" if self.game.sims[0] is None else "The episode is over: call reset()"
            )
        if self.agent == "srla":
            obs, rewards, truncated = self.game.step(self.game.check_srla(action, "action")[None], None, [0])
        else:
            obs, rewards, truncated = self.game.step(None, self.game.check_lrla(action, "action")[None], [0])
        if self.render_mode == "rgb_array":  # the only mode that draws the history
            self._history.add(self.game.sims[0])
        self._ended = bool(truncated[0])
        info = self.game.info(0, episode_end=self._ended)
        return obs[self.agent][0], float(rewards[0, self._index]), False, self._ended, info

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "You are calling render method without specifying any render mode: pass render_mode='ansi' or "
                "'rgb_array' to gymnasium.make(...)"
            )
            return None
        if self.game.sims[0] is None:
            raise ResetNeededError("Call reset() before render()")
        if self.render_mode == "ansi":
            return render_ansi(self.game, 0, self.spec.id if self.spec else type(self).__name__)
        return render_rgb(self.game, self._history)

    def close(self) -> None:
        self.game.sims[0] = None
        self.game.references[0] = None
        self.game.agents[0] = None


class FlowSrlaEnv(_FlowSingleAgent):
    """AuTO's short-flow agent alone: the MLFQ thresholds every interval (§4.1).

    ## Description

    flow_v0 with only ``srla`` acting: each step it sets the K - 1 MLFQ
    thresholds for the next interval; long flows keep the level MLFQ gives
    them, no rate cap, their ECMP path. The batched form is
    :class:`dcgym.envs.flow.vector.FlowSrlaVectorEnv`
    (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``).

    ## Observation Space

    flow_v0's ``srla`` observation: ``Box(0, 1, (m_s x 7,), float32)``.

    ## Action Space

    flow_v0's ``srla`` action: ``Box(-1, 1, (K - 1,), float32)``, mapped to
    increasing thresholds by gaps in log bytes of weights exp(8 a).

    ## Rewards

    T_{t-1} / T_t, the ratio of consecutive intervals' mean FCT (§4.1).

    ## Termination/Truncation

    Never terminates; truncates after ``max_steps``.

    ## Arguments

    flow_v0's keyword arguments, with the same defaults.

    ## Version History

    - v0: initial release.
    """

    agent = "srla"


class FlowLrlaEnv(_FlowSingleAgent):
    """AuTO's long-flow agent alone: level, rate cap and path of the oldest long flows every interval (§4.2).

    ## Description

    flow_v0 with only ``lrla`` acting; the thresholds stay the policy's (the
    scenario's, e.g. QLAS with its 4-queue preset). The batched form is
    :class:`dcgym.envs.flow.vector.FlowLrlaVectorEnv`.

    ## Observation Space

    flow_v0's ``lrla`` observation: ``Box(0, 1, (n_l x 6 + m_l x 7,), float32)``.

    ## Action Space

    flow_v0's ``lrla`` action: ``MultiDiscrete([K, C, P] x n_l)``.

    ## Rewards

    The ratio of consecutive intervals' mean throughput of finished long
    flows, capped (§4.2).

    ## Termination/Truncation

    Never terminates; truncates after ``max_steps``.

    ## Arguments

    flow_v0's keyword arguments, with the same defaults.

    ## Version History

    - v0: initial release.
    """

    agent = "lrla"
