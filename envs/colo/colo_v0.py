"""colo_v0: the services of one server resize their own partitions, as OSML's Model-C does (FAST'23 §4.3).

## Description

Latency-critical services share one server's logical cores and LLC ways
(:class:`dcgym.cpp_core.ColoSim`, docs/colo.md). Each service present is an
agent: every ``interval_s`` of simulated time (OSML 1 s; PARTIES 0.5 s,
CLITE 2 s) it adds or removes up to three cores and three ways, and is
rewarded by OSML's Model-C reward. Services arrive and leave with the
scenario's workload (launch and end times): an agent appears in
``env.agents`` at the first step after its service launches and is
terminated at the step its service ends.

    env = parallel_env(scenario="osml_case_a", interval_s=1.0)
    obs, infos = env.reset(seed=1)
    while env.agents:
        actions = {a: env.action_space(a).sample(mask=obs[a]["action_mask"]) for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)

## Agents

One per service of the scenario's mix ``mix``, named after it (``moses``,
``img-dnn``; a repeated service gets ``_2``, ``_3``).

## Observation Space

``Dict(observation=Box(0, FLOAT32_MAX, (8,), float32), action_mask=Box(0, 1, (49,), int8))``:
OSML's Model-C state (``models/Model_C.py``), in OSML's units, of the last tick:

| index | counter | unit |
|---|---|---|
| 0 | CPU_Utilization | % of one logical core |
| 1 | Frequency | MHz |
| 2 | IPC | instructions per cycle |
| 3 | Misses | LLC misses, thousands per second |
| 4 | MBL | memory traffic, MB/s |
| 5 | Allocated_Cache | MB of LLC (ways x MB per way) |
| 6 | Allocated_Core | logical cores |
| 7 | Latency | p99 of the last latency window with sampling error, ms |

``action_mask[k]`` is 1 where action k keeps the service's cores and ways
within [1, what it holds + what is idle] (and action 24, no change, always).

## Action Space

``Discrete(49)``: action k is (dcores, dways) = (k // 7 - 3, k % 7 - 3), OSML's
Action_Function {<m, n> | m, n in [-3, 3]} (:func:`decode`). Actions apply
together: every removal first (a service keeps at least one core and one
way), then every addition, in agent order, granted up to what is idle then (a
masked action is clipped, not refused; ``info["granted"]`` says what was
applied). An action outside the space (not an integer in [0, 48], a missing
or unknown agent) raises :class:`dcgym.envs.error.InvalidActionError` naming
the agent and the value.

## Rewards

``reward="qos"`` (the default): resources freed earn one unit each, resources
added cost one, and a service above its QoS target pays a violation penalty
that outweighs anything a step can free:

    -(dcores + dways) - [Latency_t > QoS] x 7 x (1 + min((Latency_t - QoS) / QoS, 10))

The largest reclaim of one step (3 cores and 3 ways) earns 6, a violation
costs at least 7 (:data:`QOS_WEIGHT`) and grows with the relative excess over
the target (capped at 10x, so that a backlog's seconds-long p99 stays a
bounded number): no reclaim pays for a QoS violation it causes.

``reward="paper"``: OSML §4.3 (``program_mgr.py`` model_C_reward), with d =
Latency_t - Latency_{t-1} in ms and the granted changes:

    d < 0: log(1 - d) - (dcores + dways);  d > 0: -log(1 + d) - (dcores + dways);  d = 0: -(dcores + dways)

Under the paper's reward a removal pays until it raises the p99 by about
e^6 ms (400 ms): it trades QoS for resources (docs/results/osml.md).

## Termination/Truncation

An agent is terminated at the step its service ends (``end_s``). Every
agent is truncated after ``max_steps`` (default: the scenario's
``horizon_s`` / ``interval_s``), one whose service ends at that step too
(terminated and truncated), so that every agent of the last step is
truncated: RLlib's PettingZoo wrapper ends an episode only when all its
agents' flags of one kind are set. When no service is present the simulation
runs on to the next launch within the same step.

## Info

Per agent: ``granted`` (dcores, dways), ``latency_ms``, ``qos_ms``,
``qos_met`` (Latency <= target), ``cores``, ``ways``, ``idle_cores``,
``idle_ways``, ``sim_time_s``.

## Arguments

| argument | default | meaning |
|---|---|---|
| ``scenario`` | ``"osml_case_a"`` | a packaged ``kind: colo`` scenario name, a YAML path, or a ``ColoScenario`` |
| ``mix`` | 0 | which of the scenario's mixes runs (``options={"mix": k}`` in reset changes it for an episode with the same services); ``"random"``: each reset draws one of the mixes uniformly from the episode generator (every mix must have the same services; ``osml_dqn_mixes`` trains Model-C so) |
| ``interval_s`` | 1.0 | seconds of simulated time per step (a whole number of ticks) |
| ``max_steps`` | None | steps per episode; None = horizon_s / interval_s |
| ``overrides`` | None | dotted scenario overrides, as ``load_colo_scenario`` |
| ``render_mode`` | None | ``"ansi"``: one line per service |
| ``start`` | ``"equal"`` | what an arriving service receives: an equal share, or ``[cores, ways]`` (as far as idle) |
| ``reward`` | ``"qos"`` | Model-C's reward (Rewards): ``"qos"``, a QoS violation costs more than any reclaim; ``"paper"``, OSML §4.3's |

At reset the services present share the server equally (PARTIES' start); a
service launching later receives an equal share of the server, taken from
what is idle (at least one core and one way: from the service holding the
most when nothing is idle). ``reset(seed=s)`` runs the engine with seed s (common random
numbers with the schedulers of :mod:`dcgym.agents.heuristics.colo`).

## Version History

- v0: initial version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec
from pydantic import BaseModel, ConfigDict, Field, PlainValidator

from dcgym.envs.colo.scenario import ColoScenario
from dcgym.envs.colo.server import COUNTERS, ENDED, PENDING, RUNNING, WARMING, ColoServer
from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError
from dcgym.envs.scenario import scenario_for
from dcgym.envs.schema import MaxSteps
from dcgym.envs.seeding import check_seed, draw_seed, episode_generator
from dcgym.envs.validation import one_of, validate

__all__ = [
    "ACTIONS",
    "MAX_DELTA",
    "NO_CHANGE",
    "OBSERVATION_FEATURES",
    "FLOAT32_MAX",
    "ColoEnv",
    "ColoEnvConfig",
    "decode",
    "env",
    "QOS_WEIGHT",
    "REWARDS",
    "osml_reward",
    "parallel_env",
    "qos_reward",
    "raw_env",
]

MAX_DELTA = 3
"""Largest change of cores or ways in one action (OSML: m, n in [-3, 3])."""

ACTIONS = (2 * MAX_DELTA + 1) ** 2
"""49 actions."""

NO_CHANGE = ACTIONS // 2
"""Action 24: (0, 0)."""

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""The observations' upper bound: counters are finite (a starved service's latency is the model's cap)."""

OBSERVATION_FEATURES: tuple[str, ...] = (
    "CPU_Utilization",
    "Frequency",
    "IPC",
    "Misses",
    "MBL",
    "Allocated_Cache",
    "Allocated_Core",
    "Latency",
)
"""OSML's Model-C state, in order."""

_COLUMNS = np.array([COUNTERS.index(f) for f in OBSERVATION_FEATURES])
_LATENCY = COUNTERS.index("Latency")
_STATE = COUNTERS.index("State")
_DELTAS = np.arange(-MAX_DELTA, MAX_DELTA + 1)


def decode(action: int) -> tuple[int, int]:
    """(dcores, dways) of action ``action`` in [0, 48]."""
    return action // (2 * MAX_DELTA + 1) - MAX_DELTA, action % (2 * MAX_DELTA + 1) - MAX_DELTA


QOS_WEIGHT = 2 * MAX_DELTA + 1
"""The least a QoS violation costs in one step under ``reward="qos"``: more than the largest reclaim (2 x MAX_DELTA)."""
EXCESS_CAP = 10.0
"""The relative excess over the target beyond which the violation penalty stops growing."""
REWARDS = {
    "qos": "resources freed earn one each, a QoS violation costs more than any step can free",
    "paper": "OSML §4.3: the log of the latency change (ms) minus the resources added",
}
"""Model-C's rewards (module docstring, Rewards)."""


def qos_reward(latency_ms: float, qos_ms: float, dcores: int, dways: int) -> float:
    """The ``qos`` reward (module docstring): minus the resources added, minus a violation penalty above QoS."""
    cost = dcores + dways
    if latency_ms <= qos_ms:
        return float(-cost)
    return -QOS_WEIGHT * (1.0 + min((latency_ms - qos_ms) / qos_ms, EXCESS_CAP)) - cost


def qos_rewards(latency_ms: np.ndarray, qos_ms: np.ndarray, added: np.ndarray) -> np.ndarray:
    """:func:`qos_reward` over arrays (``added``: dcores + dways), for the batched environment."""
    excess = np.minimum((latency_ms - qos_ms) / qos_ms, EXCESS_CAP)
    return np.where(latency_ms > qos_ms, -QOS_WEIGHT * (1.0 + excess), 0.0) - added


_LOG1P = np.frompyfunc(math.log1p, 1, 1)
"""``math.log1p`` element by element: numpy's vectorised ``log1p`` may round differently in the last bit."""


def osml_rewards(latency_ms: np.ndarray, previous_ms: np.ndarray, added: np.ndarray) -> np.ndarray:
    """:func:`osml_reward` over arrays (``added``: dcores + dways), for the batched environment: the same bits."""
    d = latency_ms - previous_ms
    log = _LOG1P(np.abs(d)).astype(np.float64)
    return np.where(d < 0, log, np.where(d > 0, -log, 0.0)) - added


def osml_reward(latency_ms: float, previous_ms: float, dcores: int, dways: int) -> float:
    """OSML's Model-C reward (§4.3): the log of the latency change (ms) minus the resources added."""
    d = latency_ms - previous_ms
    cost = dcores + dways
    if d < 0:
        return math.log1p(-d) - cost
    if d > 0:
        return -math.log1p(d) - cost
    return float(-cost)


def _start(value: Any) -> str | tuple[int, int]:
    if value == "equal":
        return "equal"
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == 2
        and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 1 for x in value)
    ):
        return (int(value[0]), int(value[1]))
    raise InvalidConfigError("", value, "equal, or [cores, ways] (positive integers) for each arrival")


class ColoEnvConfig(BaseModel):
    """Every argument of colo_v0 (and of ColoCentral-v0 and ColoVectorEnv); see the module docstring, Arguments.

    The mix and the interval are checked against the scenario by the environment.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: str | Path | ColoScenario = Field(
        "osml_case_a", description="a kind: colo scenario name, a YAML path or object"
    )
    mix: Any = Field(0, description="which mix of the scenario runs (an index), or random")
    interval_s: Any = Field(1.0, description="seconds of simulated time per step (a whole number of ticks)")
    max_steps: MaxSteps = Field(None, description="steps per episode; None: horizon_s / interval_s")
    overrides: dict[str, Any] | None = Field(None, description="dotted scenario overrides, as load_colo_scenario")
    render_mode: one_of(("ansi",), optional=True) = Field(None, description="ansi: one line per service")
    start: Annotated[str | tuple[int, int], PlainValidator(_start, json_schema_input_type=Any)] = Field(
        "equal", description="what an arriving service receives: an equal share, or [cores, ways]"
    )
    reward: one_of(tuple(REWARDS)) = Field("qos", description="Model-C's reward: qos or paper (OSML §4.3)")


class ColoEnv(ParallelEnv, EzPickle):
    """colo_v0 as a PettingZoo ParallelEnv (module docstring)."""

    metadata = {"name": "colo_v0", "render_modes": ["ansi"], "is_parallelizable": True, "render_fps": 1}

    def __init__(self, **kwargs: Any) -> None:
        EzPickle.__init__(self, **kwargs)
        self.config = c = validate(ColoEnvConfig, kwargs)
        self.scenario = scenario_for("colo", c.scenario, c.overrides)
        mix, interval_s, max_steps = c.mix, c.interval_s, c.max_steps
        self.random_mix = mix == "random"
        if self.random_mix:
            mix = 0
            names = self.scenario.agent_names(0)
            for k in self.scenario.loads:
                if self.scenario.agent_names(k) != names:
                    raise InvalidConfigError(
                        "mix", "random", f"a mix index: mix {k} has other services than mix 0, so mixes cannot be drawn"
                    )
        self.scenario.mix(mix)
        self.render_mode = c.render_mode
        self.mix = mix
        self.episode_mix = mix
        self.start = None if c.start == "equal" else c.start
        self.reward = c.reward
        tick = self.scenario.tick_s
        if not (isinstance(interval_s, (int, float)) and interval_s > 0 and interval_s <= self.scenario.horizon_s):
            raise InvalidConfigError("interval_s", interval_s, f"a time in (0, {self.scenario.horizon_s:g}] s")
        if abs(interval_s / tick - round(interval_s / tick)) > 1e-9 * interval_s / tick:
            raise InvalidConfigError("interval_s", interval_s, f"a whole number of ticks of {tick:g} s")
        self.interval_s = float(interval_s)
        self._ticks = round(interval_s / tick)
        self.max_steps = max(1, round(self.scenario.horizon_s / self.interval_s)) if max_steps is None else max_steps
        self.possible_agents = self.scenario.agent_names(mix)
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, FLOAT32_MAX, (len(OBSERVATION_FEATURES),), np.float32),
                "action_mask": spaces.Box(0, 1, (ACTIONS,), np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(ACTIONS) for a in self.possible_agents}
        self.agents: list[str] = []
        self.server: ColoServer | None = None
        self._np_random: np.random.Generator | None = None
        self.engine_seed: int | None = None
        self._steps = 0
        self._latency = np.zeros(len(self.possible_agents))
        self._nothing = [(0, 0)] * len(self.possible_agents)  # granted, when no action changes anything

    # ------------------------------------------------------------- PettingZoo API

    def observation_space(self, agent: str) -> spaces.Dict:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """A new episode: the engine rebuilt with ``seed`` (or the next of the episode generator), equal shares."""
        seed = check_seed(seed)
        self._np_random = episode_generator(self._np_random, seed)
        mix = (options or {}).get("mix")
        if mix is None:
            mix = int(self._np_random.integers(len(self.scenario.mixes))) if self.random_mix else self.mix
        if self.scenario.agent_names(mix) != self.possible_agents:
            raise InvalidConfigError("mix", mix, f"a mix of the same services as mix {self.mix}")
        self.episode_mix = int(mix)
        if seed is None:  # drawn after the mix (dcgym.envs.seeding's rule otherwise)
            seed = draw_seed(self._np_random)
        self.server = ColoServer(self.scenario.engine_config(mix=mix, seed=seed))
        self._counters = self.server.counters
        self._qos = self.server.qos_ms.tolist()
        self.engine_seed = int(seed)
        self._steps = 0
        self.agents = []
        n = len(self.possible_agents)
        self._cores, self._ways = [0] * n, [0] * n
        self._idle = [self.server.total_cores, self.server.total_ways]
        top = max(self._idle) + 1  # the bounds of the masks by what is held (low) and what is idle (high)
        self._low = [max(-MAX_DELTA, min(1, x) - x) for x in range(top)]
        self._high = [min(MAX_DELTA, x) for x in range(top)]
        self._wait_for_services()
        self._arrive(self.server.phases)
        self._latency = self._counters[:, _LATENCY].tolist()
        return self._observe(), self._infos(self._nothing, self._latency, self.server.now_s)

    def step(self, actions: Mapping[str, Any]):
        """Apply every agent's (dcores, dways), run ``interval_s``, observe."""
        if self.server is None:
            raise ResetNeededError("Call reset() before step()")
        if not self.agents:
            raise ResetNeededError("The episode ended (every agent terminated or truncated); call reset()")
        sim = self.server.sim
        granted = self._apply(self._check(actions))
        sim.step(self._ticks)
        self._steps += 1
        phases = self._counters[:, _STATE].tolist()  # the State counter: the phases after the tick, no copy made
        index = self._index
        ended = [a for a in self.agents if phases[index[a]] == ENDED]
        if ended:
            for a in ended:
                i = index[a]
                self._idle[0] += self._cores[i]
                self._idle[1] += self._ways[i]
                self._cores[i] = self._ways[i] = 0
            if len(ended) == len(self.agents):
                self._wait_for_services()
                phases = sim.phases
        new = self._arrive(phases)
        latency = self._counters[:, _LATENCY].tolist()
        truncated = self._steps >= self.max_steps
        previous, qos, rewards = self._latency, self._qos, {}
        paper = self.reward == "paper"
        for a in self.agents:
            i = index[a]
            dc, dw = granted[i]
            if a in new:
                rewards[a] = 0.0
            elif paper:
                rewards[a] = osml_reward(latency[i], previous[i], dc, dw)
            else:
                rewards[a] = qos_reward(latency[i], qos[i], dc, dw)
        terminations = {a: a in ended for a in self.agents}
        truncations = dict.fromkeys(self.agents, truncated)  # also those ending now (module docstring)
        obs, infos = self._observe(), self._infos(granted, latency, sim.now_s)
        self._latency = latency
        if truncated:
            self.agents = []
        elif ended:
            self.agents = [a for a in self.agents if a not in ended]
        return obs, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        if self.server is None:
            raise ResetNeededError("Call reset() before render()")
        s = self.server
        lines = [
            f"colo_v0 {self.scenario.name} mix {self.episode_mix}  t = {s.now_s:.1f} s  step {self._steps}/{self.max_steps}"
        ]
        lines.append(f"idle: {s.idle_cores} cores, {s.idle_ways} ways")
        lat, cores, ways = s.latency_ms, s.cores, s.ways
        for a, i in self._index.items():
            state = "present" if a in self.agents else "absent"
            lines.append(
                f"{a:<12} {state:<8} cores {cores[i]:3d}  ways {ways[i]:3d}  "
                f"p99 {lat[i]:10.2f} ms  target {s.qos_ms[i]:g} ms"
            )
        return "\n".join(lines)

    def close(self) -> None:
        self.server = None

    # ------------------------------------------------------------- internals

    def _wait_for_services(self) -> None:
        """Run on, a tick at a time, until some service is launched (or none ever will be)."""
        server = self.server
        while not server.running.any() and (server.phases == PENDING).any():
            server.sim.step(1)

    def _arrive(self, phases: Sequence[int]) -> list[str]:
        """Agents whose services are running but not yet agents: added, with their share of what is idle."""
        agents = self.agents
        new = [a for a, p in zip(self.possible_agents, phases) if (p == WARMING or p == RUNNING) and a not in agents]
        if not new:
            return new
        server = self.server
        share = len(agents) + len(new)
        for a in new:
            i = self._index[a]
            for held, r, total in ((self._cores, 0, server.total_cores), (self._ways, 1, server.total_ways)):
                held[i] = min(self._idle[r], total // share if self.start is None else self.start[r])
                self._idle[r] -= held[i]
                if held[i] == 0:  # nothing idle: one unit from the service holding the most (if it can spare one)
                    donor = max(range(len(held)), key=held.__getitem__)
                    if held[donor] > 1:
                        held[donor] -= 1
                        held[i] = 1
        server.sim.set_allocations(self._cores, self._ways)
        self.agents = [a for a in self.possible_agents if a in agents or a in new]
        return new

    def _check(self, actions: Mapping[str, Any]) -> list[int]:
        """The agents' actions in agent order, checked."""
        if type(actions) is dict and len(actions) == len(self.agents):  # the common case, checked quickly
            codes = [actions.get(a) for a in self.agents]
            if all(type(k) is int and 0 <= k < ACTIONS for k in codes):
                return codes
        if not isinstance(actions, Mapping):
            raise InvalidActionError(f"actions must be a dict from agent to action, got {type(actions).__name__}")
        if len(actions) != len(self.agents) or any(a not in actions for a in self.agents):
            missing = [a for a in self.agents if a not in actions]
            if missing:
                raise InvalidActionError(
                    f"no action for {', '.join(missing)}; step() takes one action per agent in env.agents "
                    f"({', '.join(self.agents)})"
                )
            unknown = [str(a) for a in actions if a not in self.agents]
            raise InvalidActionError(
                f"actions for unknown agents {', '.join(unknown)}; the agents are {', '.join(self.agents)}"
            )
        out = []
        for a in self.agents:
            k = actions[a]
            if type(k) is not int:
                if isinstance(k, np.ndarray) and k.shape == ():
                    k = k.item()
                if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
                    k = None
            if k is None or not 0 <= k < ACTIONS:
                raise InvalidActionError(
                    f"{a}: action {actions[a]!r} is not an action index; allowed: an integer in [0, {ACTIONS - 1}] "
                    f"(k = 7 x (dcores + 3) + (dways + 3))"
                )
            out.append(int(k))
        return out

    def _apply(self, actions: list[int]) -> list[tuple[int, int]]:
        """Removals first, then additions in agent order up to what is idle; what each service got."""
        cores, ways, idle = self._cores, self._ways, self._idle
        index = self._index
        deltas = [(index[a], _DECODED[k]) for a, k in zip(self.agents, actions) if k != NO_CHANGE]
        if not deltas:
            return self._nothing
        before = (list(cores), list(ways))
        for i, (dc, dw) in deltas:
            if dc < 0:
                take = min(-dc, cores[i] - min(1, cores[i]))
                cores[i] -= take
                idle[0] += take
            if dw < 0:
                take = min(-dw, ways[i] - min(1, ways[i]))
                ways[i] -= take
                idle[1] += take
        for i, (dc, dw) in deltas:
            if dc > 0:
                add = min(dc, idle[0])
                cores[i] += add
                idle[0] -= add
            if dw > 0:
                add = min(dw, idle[1])
                ways[i] += add
                idle[1] -= add
        self.server.sim.set_allocations(cores, ways)
        return [(c - c0, w - w0) for c, c0, w, w0 in zip(cores, before[0], ways, before[1])]

    def _observe(self) -> dict[str, dict[str, np.ndarray]]:
        values = self._counters.take(_COLUMNS, axis=1).astype(np.float32)
        low, high = self._low, self._high
        idle_c, idle_w = high[self._idle[0]], high[self._idle[1]]
        cores, ways = self._cores, self._ways
        out = {}
        for a in self.agents:
            i = self._index[a]
            out[a] = {"observation": values[i], "action_mask": _MASKS[low[cores[i]], idle_c, low[ways[i]], idle_w]}
        return out

    def _infos(self, granted: list[tuple[int, int]], latency: list[float], now: float) -> dict[str, dict[str, Any]]:
        qos, cores, ways = self._qos, self._cores, self._ways
        idle_cores, idle_ways = self._idle
        out = {}
        for a in self.agents:
            i = self._index[a]
            out[a] = {
                "granted": granted[i],
                "latency_ms": latency[i],
                "qos_ms": qos[i],
                "qos_met": latency[i] <= qos[i],
                "cores": cores[i],
                "ways": ways[i],
                "idle_cores": idle_cores,
                "idle_ways": idle_ways,
                "sim_time_s": now,
            }
        return out


def _mask(low_c: int, high_c: int, low_w: int, high_w: int) -> np.ndarray:
    """The action mask for core changes in [low_c, high_c] and way changes in [low_w, high_w] (read-only)."""
    core_ok = (_DELTAS >= low_c) & (_DELTAS <= high_c)
    way_ok = (_DELTAS >= low_w) & (_DELTAS <= high_w)
    mask = (core_ok[:, None] & way_ok[None, :]).ravel().astype(np.int8)
    mask.flags.writeable = False
    return mask


_DECODED = [decode(k) for k in range(ACTIONS)]
_MASKS = {
    key: _mask(*key)
    for key in (
        (lc, hc, lw, hw)
        for lc in range(-MAX_DELTA, 1)
        for hc in range(MAX_DELTA + 1)
        for lw in range(-MAX_DELTA, 1)
        for hw in range(MAX_DELTA + 1)
    )
}


raw_env = ColoEnv


def parallel_env(**kwargs: Any) -> ColoEnv:
    """The parallel environment (the native form); arguments as in the module docstring."""
    return ColoEnv(**kwargs)


def env(**kwargs: Any):
    """The AEC form (services act in turn; the interval runs once all have acted)."""
    return parallel_to_aec(ColoEnv(**kwargs))
