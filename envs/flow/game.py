"""The engine side of AuTO's two agents (AuTO, Chen et al. SIGCOMM 2018, §4), shared by every flow environment.

:class:`FlowGame` holds B copies of one flow scenario, each a
:class:`dcgym.cpp_core.FlowSim` with its :class:`dcgym.cpp_core.AutoAgents`
(the C++ maps of ``cpp_core/include/dcgym/flow/auto_agents.hpp``: scaled
observations, sRLA's thresholds, lRLA's per-flow choices, both rewards), and
steps them with one engine call (``step_auto_batch``, GIL released): flow_v0
is B = 1, the vector environments are B copies, so every path runs the same
code and gives the same numbers bit for bit. :class:`FlowEnvConfig` is every
setting, validated at construction with errors that name the field. Python
checks the actions (naming the agent and the index) and assembles infos.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from gymnasium import spaces
from pydantic import ConfigDict, Field, model_validator

from dcgym.cpp_core import AutoAgents, FlowSim, step_auto_batch
from dcgym.envs.error import InvalidActionError, InvalidConfigError
from dcgym.envs.flow.scenario import FlowScenario
from dcgym.envs.flow.thresholds import PACKET_BYTES
from dcgym.envs.scenario import scenario_for
from dcgym.envs.schema import EpisodeLoads, Load
from dcgym.envs.validation import validate

__all__ = ["AGENTS", "LOAD_STREAM", "FlowEnvConfig", "FlowGame"]

AGENTS = ("srla", "lrla")
"""AuTO's two agents: the short-flow agent (thresholds) and the long-flow agent (per-flow decisions)."""

LOAD_STREAM = 0xF10
"""Second word of the RNG seed that draws an episode's load from ``load_range`` (the first is the engine seed)."""

PACKET = float(PACKET_BYTES)


class FlowEnvConfig(EpisodeLoads):
    """Every argument of the flow environments (flow_v0, FlowSrla-v0, FlowLrla-v0, the vector forms)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    load_stream: ClassVar[int] = LOAD_STREAM

    scenario: str | Path | FlowScenario = Field(
        "auto_websearch", description="a packaged flow scenario name, a YAML file path or a FlowScenario"
    )
    overrides: dict[str, Any] = Field({}, description="dotted-key overrides applied to the scenario")
    load: Load = Field(
        0.8, description="offered load in the scenario's load_unit (docs/flow.md); AuTO: 0.8, every port at 80%"
    )
    load_range: tuple[Load, Load] | None = Field(
        None, description="if set, each episode's load is drawn uniformly from [low, high]; replaces load"
    )
    policy: str | dict[str, Any] | None = Field(
        None,
        description="the MLFQ (qlas, pias) or qsjf policy the agents act on: levels and the thresholds until sRLA's "
        "first action (null: the scenario's scheduling)",
    )
    interval_ms: float = Field(10.0, gt=0, le=1e6, allow_inf_nan=False, description="one step, simulated ms")
    max_steps: int = Field(1000, ge=1, description="steps before truncation (1000 x 10 ms = 10 s)")
    warmup_s: float = Field(0.0, ge=0, le=1e5, allow_inf_nan=False, description="simulated before the first step")
    short_finished: int = Field(100, ge=1, le=65536, description="sRLA observes this many finished short flows (m_s)")
    long_active: int = Field(11, ge=1, le=65536, description="lRLA observes and acts on this many long flows (n_l)")
    long_finished: int = Field(10, ge=1, le=65536, description="lRLA observes this many finished long flows (m_l)")
    long_flow_bytes: float = Field(
        0.0,
        ge=0,
        allow_inf_nan=False,
        description="a flow is long (lRLA's, no longer sRLA's) once it has sent this many bytes, over the scenario's "
        "own long_flow_bytes (0: the scenario's own; a policy file records it, docs/flow.md)",
    )
    path_loads: bool = Field(
        False,
        description="each of lRLA's active long-flow rows also holds, per path, pathbal's cost of that path for the "
        "flow over the largest of its paths' (P more features per row; what a row-wise lRLA needs to balance paths)",
    )
    path_loads_last: bool = Field(
        False,
        description="with path_loads, each row then also holds the same costs counted at the last level (all the "
        "bytes on the paths' links): what the paths cost a flow once pinned there (P more features per row)",
    )
    keep_level: bool = Field(
        False,
        description="lRLA's level index has one more choice, levels (one past the last level), which leaves the "
        "flow's level alone: a flow never pinned stays with MLFQ's thresholds, a pinned one keeps its level",
    )
    move_check: bool = Field(
        False,
        description="lRLA's path changes are made oldest flow first, each only if its new path, counted after the "
        "changes before it, costs the flow less than its current one (pathbal's one-at-a-time accounting)",
    )
    threshold_range_bytes: tuple[float, float] = Field(
        (PACKET, PACKET * 2**16), description="sRLA's thresholds lie in [low, high] bytes (1 to 65536 packets)"
    )
    rate_caps: tuple[float, ...] = Field(
        (1.0, 0.75, 0.5, 0.25),
        min_length=1,
        description="lRLA's rate caps, fractions of link_gbps (1 or more: no cap)",
    )
    srla_reward_cap: float = Field(math.inf, gt=0, description="sRLA's reward T_{t-1} / T_t is capped here (inf: no)")
    lrla_reward_cap: float = Field(2.0, gt=0, description="lRLA's throughput ratio is capped here (AuTO §4.2)")
    reward: Literal["paper", "flowtime", "flowtime_ref"] = Field(
        "paper",
        description="paper: AuTO's ratios of consecutive intervals (sRLA: FCT, lRLA: long flows' throughput); "
        "flowtime: both agents get minus the flows in the network per host over the interval, whose sum over an "
        "episode is minus the flows' total time in it (the mean FCT times the arrivals, by Little's law); "
        "flowtime_ref: the same less that of the same arrivals under the scenario's policy held (a reference run "
        "beside the episode), so the load's swings, common to both, cancel",
    )
    render_mode: Literal["ansi", "rgb_array"] | None = Field(None, description="how render() draws the network")

    @model_validator(mode="after")
    def _ordered(self) -> FlowEnvConfig:
        low, high = self.threshold_range_bytes
        if not (0 < low < high < math.inf):
            raise InvalidConfigError("threshold_range_bytes", [low, high], "[low, high] bytes with 0 < low < high")
        if any(not (0 < c < math.inf) for c in self.rate_caps):
            raise InvalidConfigError("rate_caps", list(self.rate_caps), "positive finite fractions of link_gbps")
        if self.path_loads_last and not self.path_loads:
            raise InvalidConfigError("path_loads_last", True, "true only with path_loads: true (it adds to its costs)")
        return self


def _flowtime(sim: FlowSim) -> float:
    """Flow-seconds spent in the network since the first arrival: the time integral of the flows in it."""
    r = sim.results()
    return float(r["mean_active_flows"]) * float(r["measured_time_s"]) if r["measured_time_s"] > 0 else 0.0


class FlowGame:
    """B copies of a flow scenario with AuTO's agents, stepped together (module docstring)."""

    def __init__(self, config: FlowEnvConfig | dict[str, Any], copies: int = 1) -> None:
        self.config = config if isinstance(config, FlowEnvConfig) else validate(FlowEnvConfig, config)
        self.scenario = scenario_for("flow", self.config.scenario, self.config.overrides)
        c = self.config
        if c.long_flow_bytes:
            self.scenario = self._long_from(c.long_flow_bytes)
        self.policy = self.scenario.policy(c.policy)
        if not self.policy.ranked or self.policy.balance is not None:
            raise InvalidConfigError(
                "policy",
                self.policy.label,
                "an MLFQ (qlas, pias) or qsjf policy: AuTO's agents set its thresholds and levels, and lRLA makes "
                f"pathbal's moves (scenario {self.scenario.name or '(object)'} runs {self.policy.label}; pass policy=)",
            )
        self.interval_s = c.interval_ms * 1e-3
        probe = self._engine(c.load, 0)
        self.agents_probe = self._agents(probe)
        a = self.agents_probe
        self.levels, self.caps, self.paths = a.levels, a.caps, a.paths
        self.lrla_row_width = a.lrla_row_width
        self.num_hosts, self.link_names = probe.num_hosts, list(probe.link_names)
        self.initial_thresholds = list(probe.thresholds)
        self.observation_spaces = {
            "srla": spaces.Box(0.0, 1.0, (a.srla_observations,), np.float32),
            "lrla": spaces.Box(0.0, 1.0, (a.lrla_observations,), np.float32),
        }
        self.level_choices = a.level_choices
        self.nvec = np.tile([self.level_choices, self.caps, self.paths], c.long_active).astype(np.int64)
        self.action_spaces = {
            "srla": spaces.Box(-1.0, 1.0, (a.srla_actions,), np.float32),
            "lrla": spaces.MultiDiscrete(self.nvec),
        }
        self.copies = copies
        self.sims: list[FlowSim | None] = [None] * copies
        self.agents: list[AutoAgents | None] = [None] * copies
        self.engine_seeds = np.zeros(copies, dtype=np.uint64)
        self.loads = np.zeros(copies)
        self.steps = np.zeros(copies, dtype=np.int64)
        self.flowtime = np.zeros(copies)  # flow-seconds in the network by the end of the last step (reward flowtime)
        # reward flowtime_ref: each copy's reference run (the same arrivals, the policy held) and its flow-seconds
        self.references: list[FlowSim | None] = [None] * copies
        self.reference_flowtime = np.zeros(copies)

    # ------------------------------------------------------------------ engines

    def _long_from(self, long_bytes: float) -> Any:
        """The scenario with the agents' long-flow definition ``long_bytes`` (the config's ``long_flow_bytes``, which
        a policy file records), refused where the config's own overrides set another."""
        given = self.config.overrides.get("long_flow_bytes")
        if given is not None and given != long_bytes:
            raise InvalidConfigError(
                "long_flow_bytes",
                long_bytes,
                f"0 or the {given} bytes the overrides give the scenario (one definition of a long flow)",
            )
        return self.scenario.model_copy(update={"long_flow_bytes": float(long_bytes)})

    def _engine(self, load: float, seed: int) -> FlowSim:
        config = self.scenario.engine_config(load=load, seed=seed, policy=self.policy)
        config["observation"] = {
            "short_finished": self.config.short_finished,
            "long_active": self.config.long_active,
            "long_finished": self.config.long_finished,
        }
        return FlowSim(config)

    def _agents(self, sim: FlowSim) -> AutoAgents:
        c = self.config
        low, high = c.threshold_range_bytes
        return AutoAgents(
            sim,
            low,
            high,
            list(c.rate_caps),
            c.srla_reward_cap,
            c.lrla_reward_cap,
            c.path_loads,
            c.keep_level,
            c.path_loads_last,
            c.move_check,
        )

    def reset(self, k: int, engine_seed: int, load: float | None = None) -> dict[str, np.ndarray]:
        """Rebuild copy k, empty, with ``engine_seed``; run the warm-up; its first observations."""
        load = self.config.episode_load(engine_seed) if load is None else validate(Load, load, "load")
        sim = self._engine(load, engine_seed)
        agents = self._agents(sim)
        if self.config.warmup_s > 0:
            sim.run_for(self.config.warmup_s)
        sim.start_interval()
        if self.config.reward == "flowtime_ref":
            reference = self._engine(load, engine_seed)
            reference.run_until(sim.now_s)
            self.references[k], self.reference_flowtime[k] = reference, _flowtime(reference)
        self.sims[k], self.agents[k] = sim, agents
        self.engine_seeds[k], self.loads[k], self.steps[k] = engine_seed, load, 0
        self.flowtime[k] = _flowtime(sim)
        obs = self._empty_obs(1)
        agents.observe(sim, obs["srla"][0], obs["lrla"][0])
        return {name: value[0] for name, value in obs.items()}

    def _empty_obs(self, b: int) -> dict[str, np.ndarray]:
        return {name: np.empty((b, *space.shape), np.float32) for name, space in self.observation_spaces.items()}

    # ------------------------------------------------------------------ actions

    def check_srla(self, action: Any, where: str = "srla") -> np.ndarray:
        """An sRLA action as float64 (shape K - 1, every entry in [-1, 1]); InvalidActionError naming the entry."""
        n = self.levels - 1
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidActionError(f"{where}: action must be {n} numbers in [-1, 1], got {action!r}") from None
        if a.shape != (n,):
            raise InvalidActionError(
                f"{where}: action must have shape ({n},), one number per threshold, got shape {a.shape}"
            )
        bad = np.flatnonzero(~((a >= -1) & (a <= 1)))
        if bad.size:
            j = bad[0]
            raise InvalidActionError(f"{where}: action[{j}] = {float(a[j])!r}; allowed: a number in [-1, 1]")
        return a

    def check_lrla(self, action: Any, where: str = "lrla") -> np.ndarray:
        """An lRLA action as int64 (n_l x 3); InvalidActionError naming the entry and what it chooses."""
        n = len(self.nvec)
        try:
            a = np.asarray(action)
        except (TypeError, ValueError):
            raise InvalidActionError(f"{where}: action must be {n} integer indices, got {action!r}") from None
        if a.shape != (n,):
            raise InvalidActionError(
                f"{where}: action must have shape ({n},), (level, cap, path) for each of {n // 3} long flows, "
                f"got shape {a.shape}"
            )
        if a.dtype.kind not in "iu":
            raise InvalidActionError(f"{where}: action must hold integer indices, got dtype {a.dtype}")
        bad = np.flatnonzero((a < 0) | (a >= self.nvec))
        if bad.size:
            j = int(bad[0])
            what = ("level", "rate cap", "path")[j % 3]
            raise InvalidActionError(
                f"{where}: action[{j}] = {a[j]} is not a {what} index of long flow {j // 3}; "
                f"allowed: 0 .. {self.nvec[j] - 1}"
            )
        return a.astype(np.int64).reshape(-1, 3)

    # ------------------------------------------------------------------ stepping

    def step(
        self,
        srla: np.ndarray | None,
        lrla: np.ndarray | None,
        which: Sequence[int],
        threads: int = 1,
        out: tuple[dict[str, np.ndarray], np.ndarray] | None = None,
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """Step the copies ``which`` one interval with checked actions stacked in that order (None: the agent
        does not act), on up to ``threads`` threads; (observations by agent, rewards (b, 2), truncated (b,)).

        ``out`` (observations by agent, rewards) are arrays of len(which) rows to write into, allocated once
        by the caller; without it, new ones."""
        which = list(which)
        b = len(which)
        obs, rewards = out if out is not None else (self._empty_obs(b), np.empty((b, 2)))
        sims, agents = [self.sims[k] for k in which], [self.agents[k] for k in which]
        if b == 1:
            agents[0].step(
                sims[0],
                None if srla is None else srla[0],
                None if lrla is None else lrla[0],
                self.interval_s,
                obs["srla"][0],
                obs["lrla"][0],
                rewards[0],
            )
        else:
            step_auto_batch(
                sims, agents, srla, lrla, self.interval_s, obs["srla"], obs["lrla"], rewards, threads=threads
            )
        if self.config.reward != "paper":
            for i, k in enumerate(which):
                now = _flowtime(self.sims[k])
                rewards[i] = -(now - self.flowtime[k]) / (self.interval_s * self.num_hosts)
                self.flowtime[k] = now
                reference = self.references[k]
                if reference is not None:
                    reference.run_until(self.sims[k].now_s)
                    held = _flowtime(reference)
                    rewards[i] += (held - self.reference_flowtime[k]) / (self.interval_s * self.num_hosts)
                    self.reference_flowtime[k] = held
        self.steps[which] += 1
        return obs, rewards, self.steps[which] >= self.config.max_steps

    # ------------------------------------------------------------------ infos

    def info(self, k: int, episode_end: bool = False) -> dict[str, Any]:
        """What every agent of copy k is told after a step (flow_v0's Info section)."""
        sim = self.sims[k]
        interval = sim.interval()
        finished = int(interval["finished"])
        utilization, _ = sim.link_utilization()
        info: dict[str, Any] = {
            "sim_time_s": float(sim.now_s),
            "load": float(self.loads[k]),
            "thresholds_bytes": np.asarray(sim.thresholds, dtype=np.float64),
            "flows_finished": finished,
            "long_flows_finished": int(interval["long_finished"]),
            "mean_fct_ms": float(interval["mean_fct_s"]) * 1e3 if finished else 0.0,
            "active_flows": int(sim.active_flows),
            "long_flows": len(np.flatnonzero(self.agents[k].flows >= 0)),
            "metrics": {
                "flows_finished": finished,
                "active_flows": int(sim.active_flows),
                "link_utilization": float(np.mean(utilization)),
            },
        }
        if episode_end:
            r = sim.results()["fct_s"]
            ends = {}
            for bucket, stat, name in (
                ("all", "mean", "mean_fct_ms"),
                ("all", "p99", "p99_fct_ms"),
                ("small", "p99", "small_p99_fct_ms"),
                ("large", "mean", "large_mean_fct_ms"),
            ):
                if r[bucket]["count"]:
                    ends[name] = float(r[bucket][stat]) * 1e3
            info["episode_metrics"] = ends
        return info
