"""lb_v0: the multi-LB game of *Multi-Agent RL for Network Load Balancing in Data Center* (Yao et al., CIKM 2022).

## Description

M load balancers share one cluster of N application servers (App. C.1, Fig.
5a). Flows arrive as one Poisson process and each goes to one LB, which picks a
server for it with probability proportional to the weights its agent set;
servers run the flow's CPU and IO stages (blocked processor sharing, PS) and
reject it when they hold more than ``backlog`` jobs (the flow then ends after a
40 s timeout). An LB sees only its own flows: its per-server counters and the
reservoir samples of their flow durations and completion times (App. C.2.4).
Every ``decision_period_us`` of simulated time (Table 9: 0.5 s in simulation,
0.25 s at large scale) each agent sets its LB's weights for the next period.
The engine is :class:`dcgym.cpp_core.LbSim` with every LB on
its ``weights`` policy (or ``sed``, argument ``dispatch``; docs/lb.md); one
step runs a whole decision period in C++.

    env = parallel_env(scenario="lb_large", reward="vbf", action_type="discrete")
    obs, infos = env.reset(seed=1)
    while env.agents:
        obs, rewards, terminations, truncations, infos = env.step(
            {agent: env.action_space(agent).sample() for agent in env.agents})

## Agents

``lb_0`` ... ``lb_{M-1}``, one per load balancer of a ``kind: lb``
scenario (``lb_sim``: 2, ``lb_large``: 6). All act at every step.

## Observation Space

``Box(0, inf, (N, 12), float32)``: one row per server, the LB's own view over
the decision period that just ended (period k is (kP, (k+1)P]; buffers hold
that period only, and a server without samples reads 0 with a 0 sample
fraction). D is the mean flow service time that defines the load (E[CPU] +
E[IO] at speed 1 with ``load_basis: total``, E[CPU] with ``cpu``; 1 s in
``lb_sim``, 25 ms in ``lb_large``); the reservoirs hold
``reservoir_size`` (32) samples.

| column | feature | unit |
|---|---|---|
| 0 | ``flows_in_progress``: the LB's own flows at (or on their way to or from) the server | flows |
| 1 | ``dispatched``: flows the LB sent to the server during the period | flows |
| 2 | ``fd_samples``: flow-duration samples held / ``reservoir_size`` | fraction, [0, 1] |
| 3-6 | ``fd_mean``, ``fd_p90``, ``fd_std``, ``fd_decayed``: flow duration (age of the LB's flows in progress, sampled between its arrivals; ages above ``fd_min_us`` = 10 ms only) | D |
| 7 | ``fct_samples``: flow-completion-time samples held / ``reservoir_size`` | fraction, [0, 1] |
| 8-11 | ``fct_mean``, ``fct_p90``, ``fct_std``, ``fct_decayed``: completion time of the LB's flows as it sees them end | D |

``p90`` is numpy's linearly interpolated percentile, ``std`` the population
standard deviation, ``decayed`` the mean weighted by 2^(-age / 1 s).
:meth:`LbEnv.state` stacks every LB's observation, shape (M, N, 12), for
centralized critics and QMIX mixers. The first observation (after ``reset``)
is all zeros: episodes start empty.

## Action Space

One weight per server. ``dispatch`` says how the LB uses the weights for
the flows of the next period:

- ``"weights"`` (default): each flow goes to server j with probability
  w_j / sum(w) (weighted random, as WCMP).
- ``"sed"``: each flow goes to the server with the least (local count + 1) /
  w_j, ties at random: the weights are SED's divisors. This is how the
  authors' load balancers apply their agents' weights (their testbed's RL
  methods run the data plane's SED with the agents' weights; their
  simulator's RL balancers score servers the same way), so SED's own
  weights (workers x speed) are one point of the action space.

``action_type`` chooses:

- ``"discrete"`` (default, the paper's and the authors' ``DISCRETE_ACTION_SPACE``):
  ``MultiDiscrete([3] * N)``; index 0, 1, 2 = weight 1.0, 1.5, 2.0 (``WEIGHT_LEVELS``).
- ``"continuous"``: ``Box(0, 1, (N,), float32)``, the weights themselves; an
  all-zero vector means no preference (uniform), so every point of the space
  is a valid action. RLlib rescales its [-1, 1] outputs to these bounds.

Actions outside the space (wrong shape, NaN, negative or above 1, a
non-integer or out-of-range index, a missing or unknown agent) raise
:class:`dcgym.envs.error.InvalidActionError` naming the agent and the entry,
before any weight is applied.

## Rewards

Each LB is rewarded with a fairness function F of *its own* per-server load
estimates x = (x_1, ..., x_N) (the per-LB reward F_i(l_i) of App. B.3,
Theorem 14, under which the game is a Markov potential game). The estimate
of server j is the LB's decayed average flow duration on j in units of D,
column ``fd_decayed`` of the LB's observation: App. E.2.1 uses "the average
flow duration (as an estimation of the queuing and processing delay) on each
server", and the authors' environment computes its reward from
``flow_duration_avg_decay`` (``src/lb/env.py``, ``reward_field``).
``load_estimate`` picks another column. ``reward`` selects F:

| reward | F(x) | source |
|---|---|---|
| ``vbf`` (default) | -Var(x) (population variance) | Def. 2, App. B.1 |
| ``log_vbf`` | -log(Var(x) + 1e-6) | App. E.2.1 (the authors' ``var_log``; +1e-6 keeps it finite) |
| ``vbf_log_vbf`` | vbf + log_vbf | App. E.2.1 |
| ``pbf`` | prod(x) / max(x); 0 if max(x) = 0 | App. B.2, eq. 29 |
| ``pbf_normalized`` | prod(x / max(x)); 1 if max(x) = 0 | the authors' ``calcul_fair_product`` (scale-free) |
| ``makespan`` | -max(x) | App. E.2.1 (MS) |
| ``jain`` | sum(x)^2 / (N sum(x^2)); 1 if x = 0 | Jain's index (RLB-SAC baseline) |
| ``cv`` | -std(x) / mean(x); 0 if mean(x) = 0 | App. E.2.1 |

``reward="fct"`` is not a fairness function: each LB is rewarded with minus
the mean completion time of *its own* flows that ended during the period,
in units of D (``-lb_fct_mean_us / D``, from the ``fct_count`` and
``fct_mean`` columns of its observation: about -1 for flows that never
queue, so returns are O(1) per step). A period in which none of its flows
ended repeats its previous reward (-1 before the first). Fairness of load
estimates is only a proxy for what the evaluation measures;
benchmarks/multilb_static_weights.py ``rewards`` compares how each reward
ranks fixed weight patterns, with and without exploration noise.

The reward is computed from the observation the agent receives (float32),
so ``F(obs[agent][:, OBSERVATION_FEATURES.index(load_estimate)])`` reproduces
it exactly. ``pbf`` depends on the scale of x (degree N - 1); the others are
scale-free except ``vbf``, ``log_vbf`` and ``makespan``, which the unit D
keeps comparable across scenarios.

## Termination/Truncation

No terminal state: the arrivals never stop, so ``terminations`` are always
False. Every agent is truncated after ``max_steps`` steps (default: the
scenario's ``episode_us`` / ``decision_period_us``, Table 9's 60 s episodes:
120 steps in ``lb_sim``, 240 in ``lb_large``).

## Info

Every agent's info holds, at the end of the step: ``sim_time_us``;
``step_flows_ended`` / ``step_flows_rejected`` / ``step_fct_mean_us`` (every
flow, of any LB, whose completion time was recorded during the step; a
rejected flow counts with its 40 s timeout; 0.0 when none ended);
``fct_us`` (the episode so far, all LBs: count, mean, min, p50, p90, p99,
p999, max, as ``LbSim.results()``); ``lb_fct_samples`` /
``lb_fct_mean_us`` (this LB's own FCT reservoir samples of the period);
``load_estimate`` (x, the reward's input); ``weights`` (the weights in
force during the step, normalized to sum 1: the dispatch probabilities with
``dispatch="weights"``); ``metrics`` (what training logs
per step: ``imbalance``, the mean over LBs of Var(x), and ``rejected``); at
the episode's last step ``episode_metrics`` (``p99_fct_s``, ``mean_fct_s``
of the episode's flows).

## Arguments

| argument | default | meaning |
|---|---|---|
| ``scenario`` | ``"lb_sim"`` | a packaged ``kind: lb`` scenario name, a YAML path, or an ``LbScenario`` |
| ``load`` | None | offered load (fraction of the CPU capacity); None = the scenario grid's load closest to 0.845 (App. E.1's operating point: 0.845 in ``lb_sim``, 0.833 in ``lb_large``); ``options={"load": x}`` in reset changes it for one episode |
| ``load_range`` | None | ``[low, high]``: each episode's load drawn uniformly (from the engine seed), for one policy trained across the load grid; replaces ``load`` |
| ``reward`` | ``"vbf"`` | one of ``REWARD_NAMES``: ``REWARDS`` (table above) or ``"fct"`` |
| ``action_type`` | ``"discrete"`` | ``"discrete"`` or ``"continuous"`` |
| ``load_estimate`` | ``"fd_decayed"`` | the observation column the reward reads (one of ``OBSERVATION_FEATURES``) |
| ``dispatch`` | ``"weights"`` | how an LB uses its weights: ``"weights"`` (probability proportional) or ``"sed"`` (SED's divisors); Action Space |
| ``max_steps`` | None | steps per episode; None = from the scenario's ``episode_us`` |
| ``overrides`` | None | dotted scenario overrides, as ``load_lb_scenario`` |
| ``render_mode`` | None | ``"ansi"`` (one line per server) or ``"rgb_array"`` (server load over the last steps) |

Seeding: ``reset(seed=s)`` rebuilds the engine with seed s itself, so the
flows are those of the engine run directly with that seed (common random
numbers with the heuristics); ``reset()`` draws the engine seed from the
generator the last seeded reset created. ``engine_seed`` is the seed of the
current episode. ``reset(options={"load": x})`` runs one episode at load x;
other option keys are ignored.

## Version History

- v0: initial version; ``dispatch`` added (default unchanged).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec
from pydantic import ConfigDict, Field

from dcgym.cpp_core import LbSim, step_lb_batch
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError
from dcgym.envs.lb.scenario import LbScenario
from dcgym.envs.scenario import scenario_for
from dcgym.envs.schema import EpisodeLoads, Load, MaxSteps
from dcgym.envs.seeding import episode_seed
from dcgym.envs.validation import one_of, validate

__all__ = [
    "ACTION_TYPES",
    "StepPhases",
    "drive",
    "step_copies",
    "LbEnvConfig",
    "DISPATCHES",
    "DEFAULT_LOAD_TARGET",
    "LOG_VBF_EPS",
    "OBSERVATION_FEATURES",
    "REWARDS",
    "REWARD_NAMES",
    "fct_rewards",
    "WEIGHT_LEVELS",
    "LbEnv",
    "cv",
    "env",
    "jain",
    "log_vbf",
    "makespan",
    "parallel_env",
    "pbf",
    "pbf_normalized",
    "raw_env",
    "vbf",
    "vbf_log_vbf",
]

WEIGHT_LEVELS = np.array([1.0, 1.5, 2.0])
"""The weights a discrete action picks from, per server (the paper's QMIX heads; the authors' env)."""

ACTION_TYPES = ("discrete", "continuous")

DISPATCHES = {"weights": "weights", "sed": "sed"}
"""How an LB applies its agent's weights -> the engine policy that does it (module docstring, Action Space)."""

LOG_VBF_EPS = 1e-6
"""Added to Var(x) (in D^2) before the logarithm of ``log_vbf``, so equal estimates give a finite reward."""

_ENGINE_FEATURES: tuple[str, ...] = tuple(LbSim.observation_features)
OBSERVATION_FEATURES: tuple[str, ...] = tuple(
    f.removesuffix("_us").replace("_count", "_samples") for f in _ENGINE_FEATURES
)
"""Column names of an observation (the engine's features, times in units of D, counts as reservoir fill)."""

DEFAULT_LOAD_TARGET = 0.845
"""App. E.1: traffic "normalised to consume on average 84.5% resources"; ``load=None`` picks the grid load closest."""

_HISTORY = 64  # steps shown by the rgb_array rendering
_CELL = 8  # pixels per (server, step) cell


# ------------------------------------------------------------------ rewards: F over the load estimates x


def vbf(x: np.ndarray) -> float:
    """Variance-based fairness, -Var(x) (Def. 2; App. B.1)."""
    return -float(np.var(x))


def log_vbf(x: np.ndarray) -> float:
    """-log(Var(x) + LOG_VBF_EPS): resolves variances close to zero (App. E.2.1)."""
    return -float(np.log(np.var(x) + LOG_VBF_EPS))


def vbf_log_vbf(x: np.ndarray) -> float:
    """VBF + log VBF, App. E.2.1's empirical combination for faster convergence."""
    return vbf(x) + log_vbf(x)


def pbf(x: np.ndarray) -> float:
    """Product-based fairness prod(x) / max(x) (App. B.2, eq. 29); 0 when every estimate is 0."""
    top = float(np.max(x))
    return float(np.prod(x)) / top if top > 0 else 0.0


def pbf_normalized(x: np.ndarray) -> float:
    """prod(x / max(x)), the authors' scale-free product fairness; 1 when every estimate is 0."""
    top = float(np.max(x))
    return float(np.prod(x / top)) if top > 0 else 1.0


def makespan(x: np.ndarray) -> float:
    """-max(x) (MS in App. E.2.1)."""
    return -float(np.max(x))


def jain(x: np.ndarray) -> float:
    """Jain's index sum(x)^2 / (N sum(x^2)); 1 when every estimate is 0 (the authors' convention)."""
    squares = float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / (len(x) * squares) if squares > 0 else 1.0


def cv(x: np.ndarray) -> float:
    """Minus the coefficient of variation, -std(x) / mean(x); 0 when every estimate is 0."""
    mean = float(np.mean(x))
    return -float(np.std(x)) / mean if mean > 0 else 0.0


REWARDS: dict[str, Callable[[np.ndarray], float]] = {
    "vbf": vbf,
    "log_vbf": log_vbf,
    "vbf_log_vbf": vbf_log_vbf,
    "pbf": pbf,
    "pbf_normalized": pbf_normalized,
    "makespan": makespan,
    "jain": jain,
    "cv": cv,
}
"""The fairness functions an agent's reward can be (module docstring, Rewards)."""


def fct_rewards(obs: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """Every LB's ``fct`` reward from the observations (M, N, 12): minus the mean, in D, of the FCTs of its flows
    that ended in the period (``fct_mean`` weighted by ``fct_samples``); ``previous`` where none did."""
    column = OBSERVATION_FEATURES.index
    samples = obs[:, :, column("fct_samples")].astype(np.float64)
    total = np.einsum("ij,ij->i", samples, obs[:, :, column("fct_mean")].astype(np.float64))
    n = samples.sum(axis=1)
    return np.where(n > 0, -total / np.where(n > 0, n, 1.0), previous)


FCT_REWARD = "fct"
"""The reward aligned with flow completion: minus the mean FCT of the LB's flows that ended in the period, in D."""
REWARD_NAMES = (*REWARDS, FCT_REWARD)
"""Every reward lb_v0 computes: the fairness functions and ``fct``."""


# ------------------------------------------------------------------ the environment


LOAD_STREAM = 0x10AD
"""Second word of the RNG seed that draws an episode's load from ``load_range`` (the first is the engine seed)."""


class LbEnvConfig(EpisodeLoads):
    """Every argument of the multi-LB environments (lb_v0, lb_central_v0); see the module docstring, Arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    load_stream: ClassVar[int] = LOAD_STREAM

    scenario: str | Path | LbScenario = Field("lb_sim", description="a kind: lb scenario name, a YAML path or object")
    load: Load | None = Field(None, description="offered load; None: the scenario grid's load closest to 0.845")
    load_range: tuple[Load, Load] | None = Field(
        None, description="if set, each episode's load is drawn uniformly from [low, high] (from the engine seed)"
    )
    reward: one_of(REWARD_NAMES) = Field("vbf", description="the reward: a fairness function F (REWARDS) or fct")
    action_type: one_of(ACTION_TYPES) = Field("discrete", description="discrete weight levels or continuous weights")
    load_estimate: one_of(OBSERVATION_FEATURES) = Field("fd_decayed", description="the column the reward reads")
    max_steps: MaxSteps = Field(None, description="steps per episode; None: the scenario's episode_us")
    overrides: dict[str, Any] | None = Field(None, description="dotted scenario overrides, as load_lb_scenario")
    render_mode: one_of(("ansi", "rgb_array"), optional=True) = Field(None, description="how render() draws")
    dispatch: one_of(DISPATCHES) = Field("weights", description="how an LB uses its weights (DISPATCHES)")


class LbEnv(ParallelEnv, EzPickle):
    """The multi-LB game as a PettingZoo ParallelEnv (module docstring)."""

    metadata = {"name": "lb_v0", "render_modes": ["ansi", "rgb_array"], "is_parallelizable": True, "render_fps": 4}

    def __init__(self, **kwargs: Any) -> None:
        EzPickle.__init__(self, **kwargs)
        self.config = c = validate(LbEnvConfig, kwargs)
        self.scenario = scenario_for("lb", c.scenario, c.overrides)
        self.reward_name, self.action_type, self.load_estimate = c.reward, c.action_type, c.load_estimate
        self.dispatch = c.dispatch
        self._policy = DISPATCHES[self.dispatch]
        self.render_mode = c.render_mode
        load, max_steps = c.load, c.max_steps
        sc = self.scenario
        if load is None:
            load = min(sc.loads, key=lambda x: abs(x - DEFAULT_LOAD_TARGET))
        self.period_us = sc.decision_period_us
        self.max_steps = self._check_max_steps(max_steps)
        probe = LbSim(sc.engine_config(load=load, seed=0, policy=self._policy))  # validates everything once
        self.load = float(load)
        self.num_servers, self.num_lbs = probe.num_servers, probe.num_lbs
        self.workers = np.array([g.workers for g in sc.servers for _ in range(g.count)], dtype=np.int64)
        self.server_groups = np.repeat(np.arange(len(sc.servers)), [g.count for g in sc.servers])
        """Each server's group: its index in the scenario's ``servers``."""
        capacity = sum(g.count * g.workers * g.speed for g in sc.servers)
        self.mean_flow_time_us = self.load * capacity / probe.arrival_rate_per_us  # D: load = rate x D / capacity
        self._scale = np.array(
            [
                1.0 / self.mean_flow_time_us
                if f.endswith("_us")
                else 1.0 / sc.observation.reservoir_size
                if f.endswith("_count")
                else 1.0
                for f in _ENGINE_FEATURES
            ]
        )
        self._x_column = OBSERVATION_FEATURES.index(self.load_estimate)
        self._fct_count, self._fct_mean = _ENGINE_FEATURES.index("fct_count"), _ENGINE_FEATURES.index("fct_mean_us")

        self.possible_agents = [f"lb_{i}" for i in range(self.num_lbs)]
        self.agents: list[str] = []
        n, k = self.num_servers, len(OBSERVATION_FEATURES)
        obs_space = spaces.Box(0.0, np.inf, (n, k), np.float32)
        if self.action_type == "discrete":
            act_space: spaces.Space = spaces.MultiDiscrete(np.full(n, len(WEIGHT_LEVELS)))
        else:
            act_space = spaces.Box(0.0, 1.0, (n,), np.float32)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self.state_space = spaces.Box(0.0, np.inf, (self.num_lbs, n, k), np.float32)

        self._sim: LbSim | None = None
        self._engine_seed: int | None = None
        self._episode_load = self.load
        self._np_random: np.random.Generator | None = None
        self._steps = 0
        self._raw = np.zeros((self.num_lbs, n, k))  # the engine's observations (counts, microseconds)
        self._obs = np.zeros((self.num_lbs, n, k), np.float32)
        self._fct_total = (0, 0.0)  # (count, sum) of the episode's recorded FCTs so far
        self._rejected = 0
        self._loads: deque[np.ndarray] = deque(maxlen=_HISTORY)
        self._results: dict[str, Any] = {}

    def _check_max_steps(self, max_steps: int | None) -> int:
        if max_steps is None:
            if self.scenario.episode_us is None:
                allowed = (
                    f"a positive integer: scenario {self.scenario.name or '(object)'} has no episode_us "
                    "to derive the episode length from"
                )
                raise InvalidConfigError("max_steps", None, allowed)
            return max(1, round(self.scenario.episode_us / self.period_us))
        return max_steps

    # ------------------------------------------------------------- PettingZoo API

    def observation_space(self, agent: str) -> spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def sim(self) -> LbSim | None:
        """The engine of the current episode (None before the first reset)."""
        return self._sim

    @property
    def engine_seed(self) -> int | None:
        """The engine seed of the current episode (None before the first reset)."""
        return self._engine_seed

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Rebuild the engine, empty, with ``seed`` (or the next seed of the episode generator)."""
        self._np_random, seed = episode_seed(self._np_random, seed)
        drawn = self.load if self.config.load_range is None else self.config.episode_load(seed)
        load = (options or {}).get("load", drawn)
        config = self.scenario.engine_config(load=load, seed=seed, policy=self._policy)  # validates the load
        self._sim = LbSim(config)
        self._engine_seed, self._episode_load = int(seed), float(load)
        self.agents = list(self.possible_agents)
        self._steps = 0
        self._fct_total, self._rejected = (0, 0.0), 0
        self._last_fct = np.full(self.num_lbs, -1.0)  # the fct reward before any flow ended: flows that never queue
        self._loads.clear()
        weights = np.stack([self._sim.weights(i) for i in range(self.num_lbs)])
        obs = self._observe()
        infos = self._infos(weights / weights.sum(axis=1, keepdims=True))
        return {a: obs[i] for i, a in enumerate(self.agents)}, infos

    def step(self, actions: Mapping[str, Any]):
        """Apply every LB's weights, run one decision period, observe."""
        return drive(self.step_phases(actions))

    def step_phases(self, actions: Mapping[str, Any]) -> StepPhases:
        """:meth:`step` in two phases, so that a batch of copies can run their engines in one call
        (:func:`step_copies`): apply the weights, yield the engine and the time to run it to, then (resumed once it
        ran) observe and return what :meth:`step` returns."""
        if self._sim is None:
            raise ResetNeededError("Call reset() before step()")
        if not self.agents:
            raise ResetNeededError(f"The episode ended (truncated after max_steps = {self.max_steps}); call reset()")
        weights = self._weights(actions)
        for i, w in enumerate(weights):
            self._sim.set_weights(i, w)
        self._steps += 1
        yield self._sim, self._steps * self.period_us
        obs = self._observe()
        if self.reward_name == FCT_REWARD:
            rewards = {a: float(r) for a, r in zip(self.agents, self._fct_rewards(obs))}
        else:
            x = obs[:, :, self._x_column].astype(np.float64)
            fairness = REWARDS[self.reward_name]
            rewards = {a: fairness(x[i]) for i, a in enumerate(self.agents)}
        truncated = self._steps >= self.max_steps
        infos = self._infos(weights / weights.sum(axis=1, keepdims=True), episode_end=truncated)
        observations = {a: obs[i] for i, a in enumerate(self.agents)}
        terminations = dict.fromkeys(self.agents, False)
        truncations = dict.fromkeys(self.agents, truncated)
        if truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _fct_rewards(self, obs: np.ndarray) -> np.ndarray:
        self._last_fct = fct_rewards(obs, self._last_fct)
        return self._last_fct

    def state(self) -> np.ndarray:
        """Every LB's latest observation, shape (M, N, 12) (``state_space``), for centralized critics."""
        return self._obs.copy()

    def render(self) -> str | np.ndarray | None:
        """``ansi``: one line per server; ``rgb_array``: jobs / workers per server over the last 64 steps."""
        if self.render_mode is None:
            return None
        if self._sim is None:
            raise ResetNeededError("Call reset() before render()")
        return self._render_ansi() if self.render_mode == "ansi" else self._render_rgb()

    def close(self) -> None:
        self._sim = None

    # ------------------------------------------------------------- internals

    def _weights(self, actions: Mapping[str, Any]) -> np.ndarray:
        """Every agent's action as a weight vector, all checked before any is applied."""
        if not isinstance(actions, Mapping):
            raise InvalidActionError(f"actions must be a dict from agent to action, got {type(actions).__name__}")
        missing = [a for a in self.agents if a not in actions]
        unknown = [a for a in actions if a not in self.agents]
        if missing:
            raise InvalidActionError(
                f"no action for {', '.join(missing)}; step() takes one action per agent in "
                f"env.agents ({', '.join(self.agents)})"
            )
        if unknown:
            raise InvalidActionError(
                f"actions for unknown agents {', '.join(map(str, unknown))}; the agents are {', '.join(self.agents)}"
            )
        return np.stack([self._agent_weights(a, actions[a]) for a in self.agents])

    def _agent_weights(self, agent: str, action: Any) -> np.ndarray:
        n = self.num_servers
        try:
            a = np.asarray(action)
        except (TypeError, ValueError):  # ragged nested sequences
            raise InvalidActionError(f"{agent}: action must be an array of shape ({n},), got {action!r}") from None
        if a.shape != (n,):
            raise InvalidActionError(
                f"{agent}: action must have shape ({n},), one entry per server, got shape {a.shape}"
            )
        if self.action_type == "discrete":
            levels = ", ".join(f"{i} = weight {w:g}" for i, w in enumerate(WEIGHT_LEVELS))
            if a.dtype.kind not in "iu":
                raise InvalidActionError(f"{agent}: action must hold integer indices ({levels}), got dtype {a.dtype}")
            bad = np.flatnonzero((a < 0) | (a >= len(WEIGHT_LEVELS)))
            if bad.size:
                j = bad[0]
                raise InvalidActionError(f"{agent}: action[{j}] = {a[j]} is not a weight index; allowed: {levels}")
            return WEIGHT_LEVELS[a]
        if a.dtype.kind not in "iuf":
            raise InvalidActionError(f"{agent}: action must hold numbers (weights in [0, 1]), got dtype {a.dtype}")
        w = a.astype(np.float64)
        bad = np.flatnonzero(~(np.isfinite(w) & (w >= 0) & (w <= 1)))
        if bad.size:
            j = bad[0]
            raise InvalidActionError(f"{agent}: action[{j}] = {float(w[j])!r}; allowed: a weight in [0, 1]")
        return w if w.sum() > 0 else np.ones(n)

    def _observe(self) -> np.ndarray:
        self._results = self._sim.results()
        self._loads.append(self._results["servers"]["jobs"] / self.workers)
        self._raw = self._sim.observations()
        self._obs = (self._raw * self._scale).astype(np.float32)
        return self._obs

    def _infos(self, probabilities: np.ndarray, episode_end: bool = False) -> dict[str, dict[str, Any]]:
        r = self._results
        count = int(r["fct_us"]["count"])
        fct = {k: (v if count else 0.0) for k, v in r["fct_us"].items()}  # the engine gives NaN with no flows
        fct["count"] = count
        total = float(fct["mean"]) * count
        ended = count - self._fct_total[0]
        step_mean = (total - self._fct_total[1]) / ended if ended else 0.0
        rejected = int(r["flows_rejected"]) - self._rejected
        self._fct_total, self._rejected = (count, total), int(r["flows_rejected"])
        raw = self._raw
        estimates = self._obs[:, :, self._x_column].astype(np.float64)
        metrics = {"imbalance": float(np.mean(np.var(estimates, axis=1))), "rejected": rejected}
        ends = {"p99_fct_s": fct["p99"] / 1e6, "mean_fct_s": fct["mean"] / 1e6} if episode_end and count else None
        infos = {}
        for i, agent in enumerate(self.possible_agents):
            samples = raw[i, :, self._fct_count]
            n_samples = int(round(samples.sum()))
            lb_mean = float(samples @ raw[i, :, self._fct_mean]) / n_samples if n_samples else 0.0
            infos[agent] = {
                "sim_time_us": float(self._sim.now_us),
                "step_flows_ended": ended,
                "step_flows_rejected": rejected,
                "step_fct_mean_us": step_mean,
                "fct_us": dict(fct),
                "lb_fct_samples": n_samples,
                "lb_fct_mean_us": lb_mean,
                "load_estimate": estimates[i],
                "weights": probabilities[i].copy(),
                "metrics": metrics,
                **({"episode_metrics": ends} if ends else {}),
            }
        return infos

    def _render_ansi(self) -> str:
        r = self._results
        fct = r["fct_us"]
        lines = [
            f"lb_v0 {self.scenario.name}  t = {self._sim.now_us / 1e6:.2f} s  step {self._steps}/{self.max_steps}  "
            f"load {self._episode_load:g}  flows ended {fct['count']} (rejected {r['flows_rejected']})  "
            f"mean FCT {fct['mean'] / 1e6:.3f} s",
            "server  jobs / workers (bar: 0 to 2 x workers)  jobs  workers  weight per LB",
        ]
        weights = np.stack([self._sim.weights(i) for i in range(self.num_lbs)])
        weights = weights / weights.sum(axis=1, keepdims=True)
        width = 20
        for j, (jobs, workers) in enumerate(zip(r["servers"]["jobs"], self.workers)):
            filled = int(round(min(jobs / workers, 2.0) / 2.0 * width))
            bar = "#" * filled + "." * (width - filled)
            bar = bar[: width // 2] + "|" + bar[width // 2 :]  # the mark is at jobs = workers
            w = " ".join(f"{p:.2f}" for p in weights[:, j])
            lines.append(f"s{j:<5d}  [{bar}]  {jobs:4d}  {workers:7d}  {w}")
        return "\n".join(lines)

    def _render_rgb(self) -> np.ndarray:
        """Servers as rows, the last 64 steps as columns (newest right): green idle, yellow at capacity, red 2x."""
        grid = np.full((self.num_servers, _HISTORY), np.nan)
        if self._loads:
            history = np.stack(list(self._loads), axis=1)
            grid[:, _HISTORY - history.shape[1] :] = history
        v = np.clip(np.nan_to_num(grid, nan=0.0) / 2.0, 0.0, 1.0)[..., None]
        green, yellow, red = np.array([40, 160, 60]), np.array([240, 210, 40]), np.array([200, 30, 30])
        rgb = np.where(v < 0.5, green + (yellow - green) * (v / 0.5), yellow + (red - yellow) * ((v - 0.5) / 0.5))
        rgb[np.isnan(grid)] = 30  # no data yet
        image = rgb.astype(np.uint8)
        return np.repeat(np.repeat(image, _CELL, axis=0), _CELL, axis=1)


raw_env = LbEnv


def parallel_env(**kwargs: Any) -> LbEnv:
    """The parallel environment (the native form); arguments as in the module docstring."""
    return LbEnv(**kwargs)


def env(**kwargs: Any):
    """The AEC form (agents act in turn, the decision period runs once all have acted), order-enforced."""
    return parallel_to_aec(LbEnv(**kwargs))


MultiLbEnv = LbEnv
"""The class's name before the family was called ``lb`` (kept so old code imports; use :class:`LbEnv`)."""


StepPhases = Generator[tuple[LbSim, float], None, tuple]
"""A step in two phases (:meth:`LbEnv.step_phases`): it yields once, the engine and the time to run it to."""


def drive(phases: StepPhases) -> tuple:
    """Run a step's phases alone: its engine to the time it yields, then the rest; the step's result."""
    return step_copies([phases])[0]


def step_copies(steps: list[StepPhases]) -> list[tuple]:
    """The steps of several copies (each :meth:`LbEnv.step_phases`), their engines run in one call
    (``step_lb_batch``, the GIL released): what each step returns, as if each had run alone."""
    targets = [next(phases) for phases in steps]
    step_lb_batch([sim for sim, _ in targets], [time for _, time in targets])
    results = []
    for phases in steps:
        try:
            next(phases)
        except StopIteration as done:
            results.append(done.value)
            continue
        raise RuntimeError("a step's phases yield once")
    return results
