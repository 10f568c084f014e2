"""rack_v0: Malcolm's distributed load-balancing game (POMACS 2022, §4) as a PettingZoo ParallelEnv.

## Description

A rack of N heterogeneous nodes (servers with worker cores) runs a rack
scenario from ``configs/scenarios`` in dcgym's C++ engine. Clients send each
task to a node chosen at random (Malcolm §7.1); the node's load manager
accepts it or migrates it to another node, drawing the destination from its
*migration* distribution over all N nodes (self = accept). After a task
completes, a node whose smoothed queue length is below
``migration.steal_below`` draws a victim from its *stealing* distribution
(self = no steal); the victim forwards its oldest waiting task, or the steal
fails (§3.2, docs/rack.md "Entry points"). Each agent is one node's load
manager; every step it sets its two distributions for the next heartbeat
(``heartbeat_us``, 100 us as in §7.1), during which the engine makes every
per-task decision in C++ (about 100 tasks per heartbeat on Malcolm's
heterogeneous rack at load 0.9). It is a team Markov game: all agents share
one reward (§4.1).

Whatever the scenario says, the environment makes tasks enter at the nodes
(a ``switch`` or ``balancers`` entry becomes uniform arrivals over the nodes;
a node ``split`` is kept) and uses the engine's ``table`` policy; it keeps the
scenario's load information (how stale the loads a node hears are), except
that ``fresh`` (and ``min_only``, which needs a switch) becomes a broadcast
every heartbeat (``periodic``, ``period_us = heartbeat_us``).

```python
from dcgym.envs import rack_v0
env = rack_v0.parallel_env(scenario="malcolm_hetero_paper_exp", load=0.9)
obs, infos = env.reset(seed=1)
while env.agents:
    obs, rewards, terms, truncs, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
```

## Agents

``node_0`` ... ``node_{N-1}``, in node-id order (ids run through the
scenario's node groups in order). All agents act every step; none leaves
before the episode ends.

## Observation Space

``Box(0, obs_clip, (N + 1 + len(obs_extras),), float32)`` for node i:

| index | observation | unit |
|---|---|---|
| 0 .. N-1 | load of node j as node i last heard it (stale; column i exact) | load unit |
| N | node i's own current load (column i again, at a fixed place) | load unit |
| then | ``obs_extras`` in the order given: | |
| | ``arrival_rate``: client tasks at node i in the last heartbeat | tasks per mean service time |
| | ``capacity``: workers x speed of node i as configured | tasks per mean service time |
| | ``rank``: rank of node i's own load in its view / (N - 1) | [0, 1] |
| | ``offered_load``: the rack's arrival rate / its capacity (the episode's load) | fraction of capacity |

The loads of other nodes are as stale as the scenario's load information
makes them. ``arrival_rate`` is 0 after reset; ``capacity`` does not follow
speed changes of the scenario's dynamics, nor ``offered_load`` its load changes
(it is the rate at reset: what a fill policy's utilisation feature reads); ``rank`` 0 is the least loaded,
ties broken by node id. The own load is repeated at index N so that a policy
shared by all nodes finds it at a fixed place.

The load unit depends on ``load_metric``: ``expected_wait`` (default; Malcolm
§3.2: tasks waiting or in service x the node's moving average of execution
times / workers) and ``nominal_wait`` (the same with the nominal mean
service time, mean size / speed, instead of the average: no estimate's noise
on heavy-tailed service times) are divided by the scenario's mean service
time, so 1 means one mean service time of waiting; ``queue`` (tasks waiting) and
``outstanding`` (waiting or in service) are task counts. Every value is
clipped to ``[0, obs_clip]``. :meth:`state` is the N true loads (clipped)
for centralized critics.

## Action Space

With ``action_type="logits"`` (default): ``Box(-max_logit, max_logit, (2N,),
float32)``. The first N entries are migration logits over destinations 0..N-1
(entry i = accept), the last N stealing logits over victims (entry i = no
steal). Each half is clipped to ``[-max_logit, max_logit]`` and turned into
probabilities by a softmax, so any finite vector is valid and a difference of
``2 max_logit`` bounds the odds (e^20 by default).

With ``action_type="probabilities"``: ``Box(0, 1, (2N,), float32)`` of
non-negative weights, each half divided by its sum.

With ``action_type="fill"``: ``Box(-100, 100, ((2N + 3) x 4,), float32)``,
the node's gains of a ``fill`` policy (docs/policy_format.md, kind 4), rows of
4 (volume, mix, steal margin, N capacity gains, N level offsets) over the
features ``[1, min(rho, 2), tanh(mean u), tanh(u_i)]``; every gain 0 is the
``water_fill`` heuristic's per-task rule with the ``fill`` argument's
``horizon``, ``mix`` and ``steal``. The node's migration table is recomputed
from its gains at **every task that arrives at it**, from what it believes
then (its own sends since the last broadcast included), and its stealing
table each heartbeat; any finite gains are valid (the exponents are clipped
to ±8). The levels are the loads in mean service times, so ``load_metric``
must be ``expected_wait`` or ``nominal_wait``. Each node's info then also
has ``decisions``: the step's tasks that arrived at it, ``dest`` (K,), the
destination drawn, ``levels`` (K, N) and ``arrivals`` (K,) (the rack's
arrivals per heartbeat), what the table it was drawn from was computed from:
what a learner needs for each decision's log-probability.

An action that has another shape, a NaN or an infinity (or, for weights, a
negative entry or a half summing to 0) raises ``InvalidActionError`` naming
the agent. ``step`` needs one action for every live agent.

## Rewards

Every agent receives the same team reward, computed from the true (fresh)
loads x at the end of the heartbeat, in the load unit above, and the counts
of the heartbeat (``reward`` selects the variant; costs below):

- ``utility`` (default, Malcolm eq. 1): ``-sum_{i,j} (x_i - x_j)^2 - C``, the
  sum over all **ordered** pairs (each unordered pair counts twice, i = j adds
  0), ``C = migration_cost x migrations + steal_cost x steal requests
  (successful or failed) + failed_steal_cost x failed steals + drop_cost x
  tasks dropped at full queues``. Default costs 1e-4, 1e-4, 0, 0 (the paper
  gives C no constants; these are its code's).
- ``imbalance_delta`` (Malcolm's code): ``previous imbalance - current
  imbalance - C``, imbalance = the mean over pairs of squared differences
  (the sum above / (N (N - 1))); default costs 1e-4, 1e-4, 0, 10 (per failed
  task).
- ``neg_p99`` / ``neg_mean``: minus the p99 / mean latency of the tasks
  completed during the heartbeat, in mean service times (0 if none
  completed), minus C; default costs 0.

Setting any of ``migration_cost``, ``steal_cost``, ``failed_steal_cost``,
``drop_cost`` replaces that default.

## Info

Per agent: ``migrate`` and ``steal`` (uint64 arrays of N: the node's
migration and stealing decisions per destination in the step, column i =
accept / no steal), ``migrations``, ``steals`` (successful), ``failed_steals``,
``dropped`` (tasks dropped at this node's full queue); shared by all agents:
``latency_mean_us``, ``latency_p99_us`` (0.0 when ``completed`` is 0),
``completed`` (tasks completed in the step, warm-up included),
``true_loads`` (N loads in the load unit, unclipped: what the reward used),
``sim_time_us`` and ``metrics`` (what training logs per step: ``imbalance``,
the mean over node pairs of (x_i - x_j)^2 of the true loads, and the step's
``migrations``, ``steals``, ``dropped`` over all nodes); at the episode's last
step also ``episode_metrics`` (``p99_us``, ``mean_latency_us`` of the tasks
completed in the episode). Reset returns the same keys with zero counts.

## Termination and Truncation

Episodes never terminate: the rack is a continuing system with no terminal
state (a full queue drops tasks, which is costed, and the rack goes on), so
value estimates should bootstrap through episode ends. Episodes are
truncated after ``max_steps`` heartbeats, or after ``max_time_us`` of
simulated time if given; all agents then leave ``env.agents``.

## Arguments

| argument | default | meaning |
|---|---|---|
| ``scenario`` | ``malcolm_hetero_paper_exp`` | packaged rack scenario name or YAML path |
| ``overrides`` | ``{}`` | dotted-key scenario overrides, e.g. ``{"nodes.0.workers": 8}`` |
| ``load`` | 0.9 | offered load, fraction of capacity (``reset(options={"load": x})``: one episode) |
| ``load_range`` | None | ``[low, high]``: each episode's load drawn uniformly (from the engine seed), for policies trained across a load grid |
| ``heartbeat_us`` | 100 | simulated time per step (us) |
| ``max_steps`` | 1000 | heartbeats per episode |
| ``max_time_us`` | None | simulated time per episode; replaces ``max_steps`` |
| ``warmup_us`` | 0 | simulated before the first observation with every node accepting |
| ``action_type`` | ``logits`` | ``logits``, ``probabilities`` or ``fill`` |
| ``fill`` | ``{horizon: 0.5, mix: 0.1, steal: true}`` | ``action_type="fill"``: the water-filling rule the gains adjust |
| ``max_logit`` | 10 | logit clip and action-space bound |
| ``load_metric`` | ``expected_wait`` | ``expected_wait``, ``nominal_wait``, ``queue`` or ``outstanding`` |
| ``obs_extras`` | ``()`` | any of ``arrival_rate``, ``capacity``, ``rank``, ``offered_load`` |
| ``obs_clip`` | 100 | upper clip of observations |
| ``reward`` | ``utility`` | ``utility``, ``imbalance_delta``, ``neg_p99``, ``neg_mean`` |
| ``migration_cost``, ``steal_cost``, ``failed_steal_cost``, ``drop_cost`` | per reward | costs in C |
| ``render_mode`` | None | ``ansi`` (a line per node) or ``rgb_array`` (loads over the last steps) |
| ``render_history`` | 200 | steps shown by ``rgb_array`` |

Seeding: ``reset(seed=s)`` seeds ``np_random`` and rebuilds the engine with
seed ``s`` itself, so the tasks are those of ``evaluate.py --seed s`` on the
same scenario and load (common random numbers with the heuristics);
``reset()`` without a seed draws the engine seed from ``np_random``.
``engine_seed`` is the seed of the current episode.

## Version History

- v0: initial release (dcgym 0.1).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.spaces import Box
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from dcgym.envs.error import InvalidActionError, ResetNeededError
from dcgym.envs.rack.game import FILL_FEATURES, RackEnvConfig, RackGame, fill_rows
from dcgym.envs.rack.render import LoadHistory, render_rack
from dcgym.envs.seeding import episode_seed
from dcgym.envs.validation import validate

__all__ = ["RackEnv", "agent_infos", "env", "parallel_env", "raw_env"]

_INFO_COUNTS = ("migrations", "steals", "failed_steals", "dropped")
FILL_GAIN_BOUND = 100.0
"""The action space's bound on fill gains (any finite gain is accepted: the exponents are clipped to ±8)."""


class RackEnv(ParallelEnv):
    """Malcolm's load-balancing game on a rack scenario; see the module docstring."""

    metadata = {"name": "rack_v0", "render_modes": ["ansi", "rgb_array"], "render_fps": 10, "is_parallelizable": True}

    def __init__(self, **kwargs: Any) -> None:
        self.config = validate(RackEnvConfig, kwargs)
        self.game = RackGame(self.config, 1)
        self.render_mode = self.config.render_mode
        n, clip = self.game.num_nodes, self.config.obs_clip
        self.possible_agents = [f"node_{i}" for i in range(n)]
        self.agents: list[str] = []
        obs_space = Box(0.0, clip, (self.game.obs_dim,), np.float32)
        if self.config.action_type == "logits":
            act_space = Box(-self.config.max_logit, self.config.max_logit, (2 * n,), np.float32)
        elif self.config.action_type == "fill":
            act_space = Box(-FILL_GAIN_BOUND, FILL_GAIN_BOUND, (self.game.action_width,), np.float32)
        else:
            act_space = Box(0.0, 1.0, (2 * n,), np.float32)
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = dict.fromkeys(self.possible_agents, act_space)
        self.state_space = Box(0.0, clip, (n,), np.float32)
        self.np_random, self.np_random_seed = seeding.np_random()
        self._started = False
        self._last: dict[str, np.ndarray] | None = None
        self._history = LoadHistory(self.config.render_history)

    # ----------------------------------------------------------------- spaces

    def observation_space(self, agent: str) -> Box:
        """The agent's observation space: the same object every call (all agents share it)."""
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> Box:
        """The agent's action space: the same object every call (all agents share it)."""
        return self.action_spaces[self._check_agent(agent)]

    def _check_agent(self, agent: str) -> str:
        if agent not in self.observation_spaces:
            raise KeyError(f"unknown agent {agent!r}; agents are node_0 .. node_{self.game.num_nodes - 1}")
        return agent

    @property
    def engine_seed(self) -> int:
        """The engine seed of the current episode."""
        return int(self.game.engine_seeds[0])

    # ------------------------------------------------------------ reset, step

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self.np_random, engine_seed = episode_seed(self.np_random, seed)
        if seed is not None:
            self.np_random_seed = engine_seed
        out = self.game.reset(0, engine_seed, (options or {}).get("load"))
        self.agents = list(self.possible_agents)
        self._started = True
        self._history.clear()
        return self._observations(out), self._infos(out)

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            raise ResetNeededError(
                "Call reset() before step()" if not self._started else "The episode is over (truncated): call reset()"
            )
        out = self.game.step(self._stack(actions), [0])
        reward = float(out["reward"][0])
        truncated = bool(out["truncated"][0])
        agents = self.agents
        obs, infos = self._observations(out), self._infos(out, episode_end=truncated)
        rewards = dict.fromkeys(agents, reward)
        terminations = dict.fromkeys(agents, False)
        truncations = dict.fromkeys(agents, truncated)
        if truncated:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def _stack(self, actions: dict[str, Any]) -> np.ndarray:
        """The actions of every agent as one (1, N, 2N) array; raises InvalidActionError naming the agent."""
        if not isinstance(actions, dict):
            raise InvalidActionError(f"actions: got {type(actions).__name__}; expected a dict from agent id to action")
        if len(actions) != len(self.agents) or any(a not in actions for a in self.agents):
            missing = [a for a in self.agents if a not in actions]
            unknown = [a for a in actions if a not in self.observation_spaces]
            raise InvalidActionError(
                f"actions: every agent needs one action each step; missing {missing}, unknown {unknown}"
            )
        width = self.game.action_width
        try:
            stacked = np.array([actions[a] for a in self.agents], dtype=np.float64)
        except (TypeError, ValueError):
            stacked = None
        if stacked is None or stacked.shape != (len(self.agents), width):
            for agent in self.agents:
                shape = np.shape(actions[agent])
                if shape != (width,):
                    what = (
                        f"its fill gains, {fill_rows(self.game.num_nodes)} rows of {FILL_FEATURES}"
                        if self.game.fill
                        else f"{width // 2} migration then {width // 2} stealing {self.game.unit}"
                    )
                    raise InvalidActionError(f"action of {agent}: got shape {shape}; expected ({width},): {what}")
            raise InvalidActionError(f"actions: could not read them as numbers: {actions!r}")
        return stacked[None]

    def _observations(self, out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._last = out
        if self.render_mode == "rgb_array":
            self._history.add(out["true_loads"][0])
        return dict(zip(self.possible_agents, out["obs"][0].copy()))  # the game's arrays are overwritten next step

    def _infos(self, out: dict[str, np.ndarray], episode_end: bool = False) -> dict[str, dict[str, Any]]:
        return agent_infos(self.game, self.possible_agents, out, 0, episode_end)

    # ------------------------------------------------------- state, render

    def state(self) -> np.ndarray:
        """The N true loads (load unit, clipped to [0, obs_clip]) for centralized critics."""
        if self._last is None:
            raise ResetNeededError("Call reset() before state()")
        return np.clip(self._last["true_loads"][0], 0.0, self.config.obs_clip).astype(np.float32)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "You are calling render method without specifying any render mode: pass render_mode='ansi' or "
                "'rgb_array' to rack_v0.parallel_env(...)"
            )
            return None
        if self._last is None:
            raise ResetNeededError("Call reset() before render()")
        return render_rack(self.game, self._last, self._history, self.render_mode, "rack_v0")

    def close(self) -> None:
        self.game.sims = [None] * self.game.num_copies
        self.agents = []


raw_env = RackEnv


def parallel_env(**kwargs: Any) -> RackEnv:
    """The parallel environment (the native form); arguments as in the module docstring."""
    return RackEnv(**kwargs)


def env(**kwargs: Any):
    """The AEC form (agents act in turn, the heartbeat runs once all have acted), order-enforced."""
    return parallel_to_aec(RackEnv(**kwargs))


def agent_infos(
    game: RackGame, agents: list[str], out: dict[str, np.ndarray], k: int, episode_end: bool = False
) -> dict[str, dict[str, Any]]:
    """rack_v0's infos of copy ``k`` of ``game`` from its step arrays ``out`` (the Info section): what rack_v0
    returns, and what a batch of its copies returns for each (``episode_end``: the step truncated the episode)."""
    n = game.num_nodes
    shared = {
        "latency_mean_us": float(out["latency_mean_us"][k]),
        "latency_p99_us": float(out["latency_p99_us"][k]),
        "completed": int(out["completed"][k]),
        "true_loads": out["true_loads"][k].copy(),
        "sim_time_us": float(out["sim_time_us"][k]),
        "metrics": {
            "imbalance": float(out["imbalance"][k]) / (n * (n - 1)) if n > 1 else 0.0,
            **{key: int(out[key][k].sum()) for key in ("migrations", "steals", "dropped")},
        },
    }
    if episode_end:  # the episode's tasks: the engine's latency since the reset
        latency = game.sims[k].results()["latency_us"]
        if latency["count"]:
            shared["episode_metrics"] = {"p99_us": latency["p99"], "mean_latency_us": latency["mean"]}
    columns = zip(
        agents,
        out["migrate"][k].copy(),
        out["steal"][k].copy(),
        *(out[key][k].tolist() for key in _INFO_COUNTS),
    )
    infos = {
        agent: {
            "migrate": migrate,
            "steal": steal,
            "migrations": migrations,
            "steals": steals,
            "failed_steals": failed,
            "dropped": dropped,
            **shared,
        }
        for agent, migrate, steal, migrations, steals, failed, dropped in columns
    }
    if game.fill:
        for info, (dest, levels, arrivals) in zip(infos.values(), game.decisions[k], strict=True):
            info["decisions"] = {"dest": dest, "levels": levels, "arrivals": arrivals}
    return infos
