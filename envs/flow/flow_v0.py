"""flow_v0: AuTO's two agents on a datacenter network (Chen et al., SIGCOMM 2018, §3-§5).

## Description

Flows arrive at the hosts of a flow scenario (AuTO's testbed by default: 32
hosts, 3 planes of 1 Gbps, 4 strict-priority levels, web search at load 0.8),
share links by strict priority and max-min fairness inside a level, and are
demoted through the levels by MLFQ as they send bytes (docs/flow.md). Every
``interval_ms`` of simulated time (default 10 ms, AuTO's CS response time,
§6.3) the two agents of AuTO's Central System act:

- ``srla`` (short flows, §4.1) sets the K - 1 MLFQ thresholds every host
  applies from then on;
- ``lrla`` (long flows, §4.2) sets the priority level, rate cap and path of
  each of the n_l oldest long flows (flows that have sent the last
  threshold's bytes), which pins them there.

One step runs the whole interval in C++ (``AutoAgents.step``: actions,
events, observations, rewards). The engine is
:class:`dcgym.cpp_core.FlowSim`; the maps between actions, observations and
the model live in ``cpp_core/include/dcgym/flow/auto_agents.hpp``, once, so
a policy exported from here runs the same inside the engine.

    env = parallel_env(scenario="auto_websearch", load=0.8)
    obs, infos = env.reset(seed=1)
    while env.agents:
        obs, rewards, terminations, truncations, infos = env.step(
            {agent: env.action_space(agent).sample() for agent in env.agents})

## Agents

``srla`` and ``lrla``; both act at every step.

## Observation Space

Every feature is scaled into [0, 1] (hosts: index / hosts; path: index /
paths; level: index / K; bytes: log10(1 + bytes) / 10; seconds:
log10(1 + t / 1 us) / 10, both clipped at 1); rows without a flow are zeros.
The raw rows are ``env.sim.observe()``.

``srla``: ``Box(0, 1, (m_s x 7,), float32)``, m_s = ``short_finished`` (100,
§5.1.1): the short flows finished during the last interval, most recent
first, 7 features each (AuTO's 5-tuple, FCT and size; in a simulator ports
and protocol carry nothing, so the route and level take their places):

| column | feature | unit before scaling |
|---|---|---|
| 0, 1 | ``src``, ``dst`` | host index |
| 2 | ``path`` | plane (planes) or spine (leaf_spine) |
| 3 | ``level`` at completion | 0 = highest priority |
| 4 | ``size_bytes`` | bytes |
| 5 | ``fct_s`` (base RTT included) | s |
| 6 | ``age_s``: time since it finished | s |

``lrla``: ``Box(0, 1, (n_l x 6 + m_l x 7,), float32)``: the n_l =
``long_active`` (11) oldest active long flows, 6 features each (``src``,
``dst``, ``path``, ``level`` now, ``sent_bytes``, ``age_s`` since arrival),
then the m_l = ``long_finished`` (10) long flows finished during the last
interval, 7 features as sRLA's: 136 features with AuTO's sizes (§5.2.2).
With ``path_loads`` each active row has P more features: per path q of its
pair, pathbal's cost of q for the flow (the unfinished bytes of the other
flows at its level or above on q's links) over the largest of them (1 for a
path the pair does not have; 0 for all when no path carries any): rows of
6 + P, what a network applied to each row alone (lRLA's ``network:
rowwise``) needs to balance paths. With ``path_loads_last`` P more follow:
the same costs counted at the last level (all the bytes on the links), what
the paths cost the flow once an action pins it there.

## Action Space

``srla``: ``Box(-1, 1, (K - 1,), float32)`` (a tanh actor's output), mapped
to thresholds (``flow_thresholds_from_action``) that split [lo, hi] =
``threshold_range_bytes`` (1 to 65536 packets of 1460 B) in log bytes into
K gaps, the i-th of weight w_i = exp(8 a_i), the last of weight 1:
log t_i = log lo + (log hi - log lo) x sum_{j <= i} w_j / (1 + sum_j w_j).
Every point of the box is a valid increasing set; a = 0 spaces the
thresholds evenly in log bytes; the map is smooth, with no flat region; a
set whose gaps are within a factor e^8 of its last gap is exactly one
action (PIAS's sets within 0.1%). AuTO's actor outputs gaps in the size CDF
instead (§4.1); gaps in log bytes need no CDF, so one policy serves several
workloads.

``lrla``: ``MultiDiscrete([K, C, P] x n_l)``: for long flow i (row i of the
observation), entry 3i is its level (0 = highest; the flow is pinned there;
with ``keep_level`` the space is ``[K + 1, C, P]`` and index K leaves the
level alone: a flow never pinned stays with MLFQ's thresholds, which demote
it as it sends, a pinned one keeps its level), 3i + 1 its rate cap
(index into ``rate_caps``, fractions of link_gbps: 1 (no cap), 0.75, 0.5,
0.25), 3i + 2 its path (modulo the flow's paths: pairs in one rack have
one; with ``move_check`` the change is made only if, counted after the
changes of the older listed flows, the new path costs the flow less than its
current one, pathbal's cost at its level once moved). Entries of rows
without a flow are ignored. A MultiDiscrete rather than a Dict: RLlib's default modules and PPO handle it as it is (a
multi-categorical with K + C + P logits per flow), it flattens without
bookkeeping, and its logits export as per-flow categorical heads.

Actions outside the spaces (wrong shape, NaN, out of [-1, 1], a non-integer
or out-of-range index, a missing or unknown agent) raise
:class:`dcgym.envs.error.InvalidActionError` naming the agent and the entry,
before anything is applied.

## Rewards

``srla``: T_{t-1} / T_t, the ratio of the mean FCT (base RTT included) of
all flows finished in the previous and in this interval (§4.1). ``lrla``:
P_t / P_{t-1}, the ratio of the mean throughput (size / FCT) of the long
flows finished in this and the previous interval, capped at
``lrla_reward_cap`` (2; §4.2 caps it without saying where). An interval in
which no flow (no long flow) finished gives 1 and keeps the last mean for
the next ratio; so does the first step of an episode. ``reward="flowtime"``
gives both agents minus the flows in the network per host, averaged over
the interval: summed over an episode it is minus the flows' total time in
the network over (interval x hosts), which for the same arrivals is the
mean FCT times their number (Little's law), so it ranks fixed policies as
their mean FCT does, where the ratios do not (docs/results/auto.md).
``reward="flowtime_ref"`` is ``flowtime`` less the same quantity in a
reference run beside the episode: the same arrivals (the same engine seed)
under the scenario's policy with its thresholds held. Most of an interval's
flowtime is the load of the moment, common to both runs; the difference is
what the agents changed, and its sum over an episode is the flows' total
time under the held policy minus theirs.

## Termination/Truncation

No terminal state: arrivals never stop, so ``terminations`` are always
False. Both agents are truncated after ``max_steps`` steps (1000: 10 s).

## Info

Both agents' infos are the same: ``sim_time_s``, ``load``,
``thresholds_bytes`` (in force during the next interval),
``flows_finished``, ``long_flows_finished``, ``mean_fct_ms`` (of the
interval's flows; 0 when none finished), ``active_flows``, ``long_flows``
(listed in lRLA's observation), ``metrics`` (what training logs per step:
``flows_finished``, ``active_flows``, ``link_utilization``, the mean over
links during the interval) and at the episode's last step
``episode_metrics`` (``mean_fct_ms``, ``p99_fct_ms``, ``small_p99_fct_ms``,
``large_mean_fct_ms`` of the episode's flows, each when any finished).

## Arguments

| argument | default | meaning |
|---|---|---|
| ``scenario`` | ``"auto_websearch"`` | a packaged ``kind: flow`` scenario, a YAML path or a ``FlowScenario`` |
| ``overrides`` | ``{}`` | dotted scenario overrides |
| ``load`` | 0.8 | each host's offered fraction of its link (AuTO's 80%) |
| ``load_range`` | None | each episode's load drawn uniformly from [low, high] |
| ``policy`` | None | MLFQ (``qlas``, ``pias``) or ``qsjf`` spec: levels and initial thresholds (None: the scenario's) |
| ``interval_ms`` | 10 | one step, simulated milliseconds |
| ``max_steps`` | 1000 | steps per episode |
| ``warmup_s`` | 0 | simulated before the first observation, with the initial thresholds |
| ``short_finished``, ``long_active``, ``long_finished`` | 100, 11, 10 | m_s, n_l, m_l (§5.1.1) |
| ``path_loads`` | False | lRLA's active rows also hold their paths' relative loads (P more features each) |
| ``path_loads_last`` | False | with ``path_loads``, the rows also hold the costs at the last level (P more features each) |
| ``move_check`` | False | lRLA's path changes are made oldest flow first, each only if its new path, counted after the changes before it, costs the flow less than its current one |
| ``keep_level`` | False | lRLA's level index has one more choice, K, that leaves the flow's level alone (to MLFQ if never pinned) |
| ``long_flow_bytes`` | 0 | a flow is long (lRLA's) once it has sent this many bytes, over the scenario's own (0: the scenario's ``long_flow_bytes``, else its last threshold); policy files record it |
| ``threshold_range_bytes`` | (1460, 1460 x 65536) | sRLA's range |
| ``rate_caps`` | (1, 0.75, 0.5, 0.25) | lRLA's caps, fractions of link_gbps |
| ``srla_reward_cap``, ``lrla_reward_cap`` | inf, 2 | caps of the rewards |
| ``reward`` | paper | ``paper`` (the ratios), ``flowtime`` (both agents: minus flows in the network per host) or ``flowtime_ref`` (that, less the held policy's on the same arrivals) |
| ``render_mode`` | None | ``"ansi"`` (levels and links as text) or ``"rgb_array"`` (their history) |

Seeding: ``reset(seed=s)`` rebuilds the engine with seed s, so the flows are
those of the engine run directly with that seed (common random numbers with
the heuristics); ``reset()`` draws the engine seed from the generator the
last seeded reset created. ``reset(options={"load": x})`` runs one episode at
load x.

## Version History

- v0: initial version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from dcgym.cpp_core import FlowSim
from dcgym.envs.error import InvalidActionError, ResetNeededError
from dcgym.envs.flow.game import AGENTS, FlowGame
from dcgym.envs.flow.render import History, render_ansi, render_rgb
from dcgym.envs.seeding import episode_seed

__all__ = ["AGENTS", "FlowEnv", "env", "parallel_env", "raw_env"]


class FlowEnv(ParallelEnv, EzPickle):
    """AuTO's sRLA and lRLA as a PettingZoo ParallelEnv (module docstring)."""

    metadata = {"name": "flow_v0", "render_modes": ["ansi", "rgb_array"], "is_parallelizable": True, "render_fps": 10}

    def __init__(self, **kwargs: Any) -> None:
        EzPickle.__init__(self, **kwargs)
        self.game = FlowGame(kwargs)
        self.config = self.game.config
        self.scenario = self.game.scenario
        self.render_mode = self.config.render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.observation_spaces = dict(self.game.observation_spaces)
        self.action_spaces = dict(self.game.action_spaces)
        self._np_random: np.random.Generator | None = None
        self._history = History()

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    @property
    def sim(self) -> FlowSim | None:
        """The engine of the current episode (None before the first reset)."""
        return self.game.sims[0]

    @property
    def engine_seed(self) -> int | None:
        """The engine seed of the current episode (None before the first reset)."""
        return None if self.game.sims[0] is None else int(self.game.engine_seeds[0])

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Rebuild the engine, empty, with ``seed`` (or the next seed of the episode generator)."""
        self._np_random, engine_seed = episode_seed(self._np_random, seed)
        obs = self.game.reset(0, engine_seed, (options or {}).get("load"))
        self.agents = list(self.possible_agents)
        self._history.clear()
        if self.render_mode == "rgb_array":  # the only mode that draws the history
            self._history.add(self.game.sims[0])
        info = self.game.info(0)
        return dict(obs), {a: info for a in self.agents}

    def step(self, actions: Mapping[str, Any]):
        """Apply both agents' actions, run one interval, observe."""
        if self.game.sims[0] is None:
            raise ResetNeededError("Call reset() before step()")
        if not self.agents:
            raise ResetNeededError(
                f"The episode ended (truncated after max_steps = {self.config.max_steps}); call reset()"
            )
        if not isinstance(actions, Mapping):
            raise InvalidActionError(f"actions must be a dict from agent to action, got {type(actions).__name__}")
        missing = [a for a in self.agents if a not in actions]
        unknown = [a for a in actions if a not in self.agents]
        if missing:
            raise InvalidActionError(f"no action for {', '.join(missing)}; step() takes one for each of srla, lrla")
        if unknown:
            raise InvalidActionError(
                f"actions for unknown agents {', '.join(map(str, unknown))}; the agents are srla, lrla"
            )
        srla = self.game.check_srla(actions["srla"])
        lrla = self.game.check_lrla(actions["lrla"])
        obs, rewards, truncated = self.game.step(srla[None], lrla[None], [0])
        if self.render_mode == "rgb_array":  # the only mode that draws the history
            self._history.add(self.game.sims[0])
        ended = bool(truncated[0])
        info = self.game.info(0, episode_end=ended)
        observations = {"srla": obs["srla"][0], "lrla": obs["lrla"][0]}
        reward = {"srla": float(rewards[0, 0]), "lrla": float(rewards[0, 1])}
        terminations = dict.fromkeys(self.agents, False)
        truncations = dict.fromkeys(self.agents, ended)
        infos = {a: info for a in self.agents}
        if ended:
            self.agents = []
        return observations, reward, terminations, truncations, infos

    def render(self) -> str | np.ndarray | None:
        """``ansi``: levels and links as text; ``rgb_array``: their history (render module)."""
        if self.render_mode is None:
            return None
        if self.game.sims[0] is None:
            raise ResetNeededError("Call reset() before render()")
        if self.render_mode == "ansi":
            return render_ansi(self.game, 0, "flow_v0")
        return render_rgb(self.game, self._history)

    def close(self) -> None:
        self.game.sims[0] = None
        self.game.references[0] = None
        self.game.agents[0] = None


raw_env = FlowEnv


def parallel_env(**kwargs: Any) -> FlowEnv:
    """The parallel environment (the native form); arguments as in the module docstring."""
    return FlowEnv(**kwargs)


def env(**kwargs: Any):
    """The AEC form (agents act in turn; the interval runs once both have acted), order-enforced."""
    return parallel_to_aec(FlowEnv(**kwargs))
