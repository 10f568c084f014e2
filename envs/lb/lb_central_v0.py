"""lb_central_v0: the multi-LB game played by one agent that sets every load balancer's weights (Centr-LB).

## Description

The centralized baseline of *Multi-Agent RL for Network Load Balancing in
Data Center* (Yao et al., CIKM 2022, App. E.2.1-E.2.2, "Centr-LB"): one controller sees
what every LB measures and sets the weights of all of them. It is
:mod:`dcgym.envs.lb.lb_v0` with its M agents merged into one: the same
engine, scenarios, rewards, dispatch and seeding; one step is one decision
period.

    env = parallel_env(scenario="lb_sim", reward="vbf", dispatch="sed")
    obs, infos = env.reset(seed=1)
    obs, rewards, terminations, truncations, infos = env.step({"central": env.action_space("central").sample()})

## Agents

One, ``central``.

## Observation Space

``Box(0, inf, (M, N, 12), float32)``: every LB's lb_v0 observation, stacked
in LB order (lb_v0's ``state()``).

## Action Space

The M LBs' lb_v0 actions concatenated, LB 0 first: ``MultiDiscrete([3] *
(M N))`` with ``action_type="discrete"``, ``Box(0, 1, (M N,))`` with
``"continuous"``.

## Rewards

The mean over the LBs of their lb_v0 rewards (each LB's fairness F over its
own load estimates): the team reward a single controller maximizes.

## Termination

As lb_v0: never terminated, truncated after ``max_steps``.

## Info

lb_v0's info of ``lb_0`` (the fields every LB shares: FCTs, rejections,
metrics), with ``weights`` and ``load_estimate`` of every LB, shape (M, N).

## Arguments

lb_v0's (the same names, defaults and errors).

## Version History

- v0: initial version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from dcgym.envs.error import InvalidActionError
from dcgym.envs.lb.lb_v0 import LbEnv, StepPhases, drive

__all__ = ["AGENT", "CentralLbEnv", "env", "parallel_env", "raw_env"]

AGENT = "central"
"""The one agent's id."""


class CentralLbEnv(ParallelEnv, EzPickle):
    """lb_v0 with one agent acting for every LB (module docstring); arguments as lb_v0's."""

    metadata = {"name": "lb_central_v0", "render_modes": ["ansi", "rgb_array"], "is_parallelizable": True}

    def __init__(self, **kwargs: Any) -> None:
        EzPickle.__init__(self, **kwargs)
        self.lb = LbEnv(**kwargs)
        self.render_mode = self.lb.render_mode
        inner = self.lb.action_space(self.lb.possible_agents[0])
        m, n = self.lb.num_lbs, self.lb.num_servers
        if isinstance(inner, spaces.MultiDiscrete):
            action = spaces.MultiDiscrete(np.tile(inner.nvec, m))
        else:
            action = spaces.Box(0.0, 1.0, (m * n,), np.float32)
        self.possible_agents = [AGENT]
        self.agents: list[str] = []
        self.observation_spaces = {AGENT: self.lb.state_space}
        self.action_spaces = {AGENT: action}

    # The lb_v0 facts an evaluation reads (scenario, engine, period, D) are the inner game's.
    @property
    def scenario(self):
        return self.lb.scenario

    @scenario.setter
    def scenario(self, value) -> None:
        self.lb.scenario = value

    @property
    def sim(self):
        return self.lb.sim

    @property
    def engine_seed(self) -> int | None:
        return self.lb.engine_seed

    @property
    def period_us(self) -> float:
        return self.lb.period_us

    @property
    def mean_flow_time_us(self) -> float:
        return self.lb.mean_flow_time_us

    @property
    def num_lbs(self) -> int:
        return self.lb.num_lbs

    @property
    def num_servers(self) -> int:
        return self.lb.num_servers

    def observation_space(self, agent: str) -> spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        _, infos = self.lb.reset(seed=seed, options=options)
        self.agents = [AGENT]
        return {AGENT: self.lb.state()}, {AGENT: self._info(infos)}

    def step(self, actions: Mapping[str, Any]):
        return drive(self.step_phases(actions))

    def step_phases(self, actions: Mapping[str, Any]) -> StepPhases:
        """:meth:`step` in lb_v0's two phases (:meth:`dcgym.envs.lb.lb_v0.LbEnv.step_phases`)."""
        if not isinstance(actions, Mapping) or set(actions) != {AGENT}:
            given = sorted(map(str, actions)) if isinstance(actions, Mapping) else type(actions).__name__
            raise InvalidActionError(f"step() takes {{'{AGENT}': action}}, got {given}")
        action = np.asarray(actions[AGENT])
        m, n = self.lb.num_lbs, self.lb.num_servers
        if action.shape != (m * n,):
            raise InvalidActionError(f"{AGENT}: action must have shape ({m * n},), one entry per LB and server")
        split = {agent: action[i * n : (i + 1) * n] for i, agent in enumerate(self.lb.agents)}
        _, rewards, terminations, truncations, infos = yield from self.lb.step_phases(split)
        done = not self.lb.agents
        if done:
            self.agents = []
        reward = float(np.mean(list(rewards.values())))
        return (
            {AGENT: self.lb.state()},
            {AGENT: reward},
            {AGENT: any(terminations.values())},
            {AGENT: any(truncations.values())},
            {AGENT: self._info(infos)},
        )

    def state(self) -> np.ndarray:
        return self.lb.state()

    def render(self):
        return self.lb.render()

    def close(self) -> None:
        self.lb.close()

    def _info(self, infos: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        agents = self.lb.possible_agents
        info = dict(infos[agents[0]])
        for key in ("weights", "load_estimate"):
            info[key] = np.stack([infos[a][key] for a in agents])
        return info


raw_env = CentralLbEnv


def parallel_env(**kwargs: Any) -> CentralLbEnv:
    """The parallel environment; arguments as lb_v0's."""
    return CentralLbEnv(**kwargs)


def env(**kwargs: Any):
    """The AEC form (one agent, so the same game)."""
    return parallel_to_aec(CentralLbEnv(**kwargs))
