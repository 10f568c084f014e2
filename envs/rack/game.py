"""The engine side of Malcolm's load-balancing game (§4), shared by every rack environment.

:class:`RackGame` holds B copies of one rack scenario and steps them with one
engine call (C++, GIL released): ``rack_v0`` is B = 1, the vector
environments are B copies, so both paths run the same code and give the same
numbers bit for bit. For the nodes' game the call is ``step_rack_game``,
which also turns the actions into the migration and stealing tables (softmax
of the logits, or the weights normalised) and writes the load columns of the
observations in C++. The
dispatcher's game (RackDispatch-v0) sets its tables here and calls
``step_rack_batch``. Both compute the team reward in C++
(``cpp_core/include/dcgym/rack/game.hpp``: the one definition of the reward,
its default costs and the imbalance); Python adds the optional observation
extras and the per-node counts. :class:`RackEnvConfig` is every setting of
the game, validated at construction with errors that name the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from dcgym.cpp_core import (
    RACK_REWARDS,
    Distribution,
    RackSim,
    rack_imbalance,
    rack_reward_costs,
    step_rack_batch,
    step_rack_game,
)
from dcgym.envs.error import InvalidActionError, InvalidConfigError
from dcgym.envs.rack.scenario import RackScenario
from dcgym.envs.scenario import DEFAULT_SCENARIO, Load, load_scenario
from dcgym.envs.validation import validate

LOAD_STREAM = 0x10AD
"""Second word of the RNG seed that draws an episode's load from ``load_range`` (the first is the engine seed)."""

__all__ = ["REWARD_COSTS", "Costs", "RackEnvConfig", "RackGame", "rowsum"]

Extra = Literal["arrival_rate", "capacity", "rank"]


class Costs(NamedTuple):
    """Cost of one action or event in the team reward (Malcolm eq. 1's C(a), the code's penalties)."""

    migration: float
    steal: float
    failed_steal: float
    drop: float


REWARD_COSTS: dict[str, Costs] = {kind: Costs(*rack_reward_costs(kind)) for kind in RACK_REWARDS}
"""Default costs of each reward variant (the engine's, rack/game.hpp); a cost set explicitly replaces its default."""


class RackEnvConfig(BaseModel):
    """Every argument of the rack environments (rack_v0, RackCentral-v0, RackDispatch-v0, RackVectorEnv)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: str | Path = Field(DEFAULT_SCENARIO, description="a packaged rack scenario name or a YAML file path")
    overrides: dict[str, Any] = Field({}, description="dotted-key overrides applied to the scenario")
    load: Load = Field(0.9, description="offered load, a fraction of the rack's capacity")
    load_range: tuple[Load, Load] | None = Field(
        None,
        description="if set, each episode's load is drawn uniformly from [low, high] (from the engine seed); "
        "replaces load",
    )
    heartbeat_us: float = Field(100.0, gt=0, le=1e9, allow_inf_nan=False, description="one step (Malcolm §7.1: 100)")
    max_steps: int = Field(1000, ge=1, description="steps before truncation")
    max_time_us: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="simulated time before truncation; replaces max_steps if set"
    )
    warmup_us: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="simulated before the first observation, every node accepting"
    )
    action_type: Literal["logits", "probabilities"] = Field("logits", description="how actions are read")
    max_logit: float = Field(10.0, gt=0, le=100, allow_inf_nan=False, description="logits are clipped to +-max_logit")
    load_metric: Literal["expected_wait", "queue", "outstanding"] = Field(
        "expected_wait", description="the load x_i of a node (Malcolm §3.2: expected wait)"
    )
    obs_extras: tuple[Extra, ...] = Field((), description="extra observation features, in this order")
    obs_clip: float = Field(100.0, gt=0, allow_inf_nan=False, description="observations are clipped to [0, obs_clip]")
    reward: Literal[RACK_REWARDS] = Field("utility", description="the reward: one of RACK_REWARDS (rack/game.hpp)")
    migration_cost: float | None = Field(None, ge=0, allow_inf_nan=False, description="per migration")
    steal_cost: float | None = Field(None, ge=0, allow_inf_nan=False, description="per steal request")
    failed_steal_cost: float | None = Field(None, ge=0, allow_inf_nan=False, description="per failed steal")
    drop_cost: float | None = Field(None, ge=0, allow_inf_nan=False, description="per task dropped at a full queue")
    render_mode: Literal["ansi", "rgb_array"] | None = Field(None, description="how render() draws the rack")
    render_history: int = Field(200, ge=1, le=10_000, description="steps shown by render_mode rgb_array")

    @model_validator(mode="after")
    def _distinct_extras(self) -> RackEnvConfig:
        if len(set(self.obs_extras)) != len(self.obs_extras):
            raise InvalidConfigError(
                "obs_extras", list(self.obs_extras), "distinct names of arrival_rate, capacity, rank"
            )
        return self

    @model_validator(mode="after")
    def _ordered_range(self) -> RackEnvConfig:
        if self.load_range is not None and self.load_range[0] > self.load_range[1]:
            raise InvalidConfigError("load_range", list(self.load_range), "[low, high] with low <= high")
        return self

    def episode_load(self, engine_seed: int) -> float:
        """The load of an episode with ``engine_seed``: ``load``, or a draw from ``load_range``."""
        if self.load_range is None:
            return self.load
        low, high = self.load_range
        return float(np.random.default_rng([engine_seed, LOAD_STREAM]).uniform(low, high))

    @property
    def costs(self) -> Costs:
        """The reward variant's default costs with the ones given explicitly."""
        default = REWARD_COSTS[self.reward]
        given = (self.migration_cost, self.steal_cost, self.failed_steal_cost, self.drop_cost)
        return Costs(*(d if g is None else g for d, g in zip(default, given)))

    @property
    def episode_steps(self) -> int:
        """Steps of an episode: max_steps, or enough heartbeats to cover max_time_us."""
        if self.max_time_us is None:
            return self.max_steps
        return max(1, math.ceil(self.max_time_us / self.heartbeat_us - 1e-9))


def rowsum(a: np.ndarray) -> np.ndarray:
    """Sum over the last axis such that a row's sum never depends on the batch it is in.

    ``np.add.reduceat`` reduces every row by itself with the same routine, so
    B = 1 and B > 1 agree bit for bit (a matrix product would not: BLAS picks
    kernels by shape); it is also 2-3x faster than ``sum(axis=-1)`` on many
    short rows.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    n = a.shape[-1]
    return np.add.reduceat(a.reshape(-1), np.arange(0, a.size, n)).reshape(a.shape[:-1])


class RackGame:
    """B copies of one rack scenario, played as Malcolm's game (§4) through the node-entry table policy."""

    def __init__(self, config: RackEnvConfig | Mapping[str, Any], num_copies: int = 1, *, dispatcher: bool = False):
        self.config = config if isinstance(config, RackEnvConfig) else validate(RackEnvConfig, dict(config))
        if not (isinstance(num_copies, int) and num_copies >= 1):
            raise InvalidConfigError("num_envs", num_copies, "an integer >= 1")
        self.num_copies = num_copies
        self.dispatcher = dispatcher
        self.scenario = self._game_scenario()
        self.num_nodes = self.scenario.num_nodes
        self.engine_config = self.scenario.engine_config(load=self.config.load, seed=0)
        # The schema's table policy takes no metric: the game picks the load x_i here (see the env docs).
        self.engine_config["dispatch"] = {"policy": "table", "metric": self.config.load_metric}
        self.mean_service_us = Distribution(self.engine_config["service"]).mean
        self.scale = 1.0 / self.mean_service_us if self.config.load_metric == "expected_wait" else 1.0
        self.capacity = np.concatenate([np.full(g.count, g.workers * g.speed) for g in self.scenario.nodes]).astype(
            np.float64
        )
        self.workers = np.concatenate([np.full(g.count, g.workers) for g in self.scenario.nodes])
        self.obs_dim = self.num_nodes + 1 + len(self.config.obs_extras)
        self.costs = self.config.costs
        self.sims: list[RackSim | None] = [None] * num_copies
        self.engine_seeds = np.zeros(num_copies, dtype=np.uint64)
        self.steps = np.zeros(num_copies, dtype=np.int64)
        self._previous = np.zeros(num_copies)
        self._eye = np.eye(self.num_nodes)

    # ------------------------------------------------------------------ scenario

    def _game_scenario(self) -> RackScenario:
        """The scenario with entry nodes and the table policy forced, fresh load info made periodic."""
        cfg = self.config
        base = load_scenario(cfg.scenario, cfg.overrides)
        if not isinstance(base, RackScenario):
            raise InvalidConfigError(
                "scenario", str(cfg.scenario), f"a rack scenario (this one is kind {getattr(base, 'kind', '?')})"
            )
        forced: dict[str, Any] = {"dispatch": "table"}
        if self.dispatcher:
            if any(change.kind == "split" for change in base.dynamics):
                raise InvalidConfigError(
                    "dynamics", "split", "changes other than split: RackDispatch-v0 sends every task to its dispatcher"
                )
            forced["entry"] = {"kind": "nodes", "split": [1.0] + [0.0] * (base.num_nodes - 1)}
            forced["migration.delay_us"] = 0.0  # a switch forwards at line rate
        elif base.entry.kind != "nodes":
            forced["entry"] = {"kind": "nodes"}  # clients pick a node uniformly at random (Malcolm §7.1)
        if base.load_info.model in ("fresh", "min_only"):
            forced["load_info"] = {"model": "periodic", "period_us": cfg.heartbeat_us}
        scenario = load_scenario(cfg.scenario, {**cfg.overrides, **forced})
        return scenario

    # --------------------------------------------------------------------- reset

    def reset(self, k: int, engine_seed: int, load: float | None = None) -> dict[str, np.ndarray]:
        """Rebuild copy ``k`` with ``engine_seed``; its first observation and zero counts (leading axis 1)."""
        engine = dict(self.engine_config, seed=engine_seed)
        engine["load"] = self.config.episode_load(engine_seed) if load is None else validate(Load, load, "options.load")
        sim = RackSim(engine)
        if self.config.warmup_us > 0:
            sim.run_until(self.config.warmup_us)
            sim.decision_counts(reset=True)
            sim.step_latency(reset=True)
        self.sims[k] = sim
        self.engine_seeds[k] = engine_seed
        self.steps[k] = 0
        n = self.num_nodes
        out = {
            "beliefs": sim.beliefs()[None],
            "loads": sim.true_loads()[None],
            "migrate": np.zeros((1, n, n), np.uint64),
            "steal": np.zeros((1, n, n), np.uint64),
            **{key: np.zeros((1, n), np.uint64) for key in ("migrations", "steals", "failed_steals", "dropped")},
            "latency_mean_us": np.zeros(1),
            "latency_p99_us": np.zeros(1),
            "completed": np.zeros(1, np.uint64),
        }
        x = out["loads"] * self.scale
        self._previous[k] = rack_imbalance(out["loads"][0], self.scale)
        out["imbalance"] = np.array([self._previous[k]])
        return self._finish(out, x, np.zeros(1), np.array([k]), [sim])

    # ---------------------------------------------------------------------- step

    def step(self, actions: np.ndarray, which: Sequence[int]) -> dict[str, np.ndarray]:
        """Apply ``actions`` to the copies ``which`` and advance them one heartbeat.

        Actions are (len(which), N, 2N) for the nodes, (len(which), N) for a dispatcher game.
        """
        sims = [self.sims[k] for k in which]
        idx = np.asarray(which)
        previous = self._previous[idx]  # a copy: the engine updates it for imbalance_delta
        reward = {
            "kind": self.config.reward,
            "scale": self.scale,
            "previous_imbalance": previous,
            **dict(zip(("migration_cost", "steal_cost", "failed_steal_cost", "drop_cost"), self.costs)),
        }
        if self.dispatcher:
            migration, stealing = self.dispatch_tables(actions, which)
            out = step_rack_batch(sims, migration, stealing, self.config.heartbeat_us, reward)
        else:
            out = self._step_nodes(sims, actions, which, reward)
        self._previous[idx] = previous
        self.steps[idx] += 1
        return self._finish(out, out["loads"] * self.scale, out.pop("reward"), idx, sims)

    def _step_nodes(
        self, sims: list[RackSim], actions: np.ndarray, which: Sequence[int], reward: dict[str, Any]
    ) -> dict[str, np.ndarray]:
        """One engine call that also turns the nodes' actions into tables and writes the observations."""
        cfg, n = self.config, self.num_nodes
        a = np.asarray(actions)
        if a.shape != (len(which), n, 2 * n) or a.dtype.kind not in "fiub":
            self.tables(actions, which)  # raises the InvalidActionError that names the problem
        try:
            return step_rack_game(
                sims,
                a,
                cfg.heartbeat_us,
                cfg.action_type == "logits",
                cfg.max_logit,
                self.scale,
                cfg.obs_clip,
                self.obs_dim,
                reward,
            )
        except ValueError:
            self.tables(actions, which)  # the engine refused a value: name it as the Python check does
            raise

    def _finish(
        self, out: dict, x: np.ndarray, reward: np.ndarray, idx: np.ndarray, sims: list[RackSim]
    ) -> dict[str, np.ndarray]:
        """Add observations, true loads, reward, truncation and time to the engine's arrays."""
        done = out["completed"] > 0  # an empty histogram's statistics are NaN: report 0 (see completed)
        out["latency_mean_us"] = np.where(done, out["latency_mean_us"], 0.0)
        out["latency_p99_us"] = np.where(done, out["latency_p99_us"], 0.0)
        out["obs"] = self.observe(out["beliefs"], x, out["migrate"], out.get("obs"))
        out["true_loads"] = x
        out["reward"] = reward
        out["truncated"] = self.steps[idx] >= self.config.episode_steps
        out["sim_time_us"] = out.pop("now_us") if "now_us" in out else np.array([sim.now_us for sim in sims])
        return out

    def observe(
        self, beliefs: np.ndarray, x: np.ndarray, migrate: np.ndarray, prefilled: np.ndarray | None = None
    ) -> np.ndarray:
        """Observations (B, N, obs_dim), float32: beliefs row, own fresh load, extras; clipped to [0, obs_clip].

        ``prefilled``: the observations with the first N + 1 columns already
        written (by ``step_rack_game``); only the extras are added.
        """
        b, n = x.shape
        cfg = self.config
        if prefilled is None:
            obs = np.empty((b, n, self.obs_dim), np.float32)
            obs[:, :, :n] = beliefs * self.scale
            obs[:, :, n] = x
            np.clip(obs[:, :, : n + 1], 0.0, cfg.obs_clip, out=obs[:, :, : n + 1])
        else:
            obs = prefilled
        if not cfg.obs_extras:
            return obs
        col = n + 1
        for extra in cfg.obs_extras:
            if extra == "arrival_rate":  # client arrivals at the node in the last heartbeat, per mean service time
                obs[:, :, col] = rowsum(migrate) * (self.mean_service_us / cfg.heartbeat_us)
            elif extra == "capacity":  # workers x speed: tasks per mean service time at full utilization
                obs[:, :, col] = self.capacity
            else:  # rank of the node's own load in its view, 0 = least loaded, ties by node id
                own = beliefs[:, np.arange(n), np.arange(n)][:, :, None]
                below = (beliefs < own) | ((beliefs == own) & (np.arange(n) < np.arange(n)[:, None]))
                obs[:, :, col] = below.sum(axis=-1) / max(1, n - 1)
            col += 1
        np.clip(obs[:, :, n + 1 :], 0.0, cfg.obs_clip, out=obs[:, :, n + 1 :])
        return obs

    # -------------------------------------------------------------------- tables

    def tables(self, actions: np.ndarray, which: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Migration and stealing tables (B, N, N) from the nodes' actions (B, N, 2N); raises InvalidActionError."""
        n = self.num_nodes
        a = np.asarray(actions, dtype=np.float64)
        if a.shape != (len(which), n, 2 * n):
            raise InvalidActionError(
                f"actions: got shape {np.shape(actions)}; expected ({len(which)}, {n}, {2 * n}): "
                f"for each copy and node, {n} migration then {n} stealing {self.unit}"
            )
        p = self.probabilities(a.reshape(len(which), 2 * n, n), which)
        return p[:, 0::2], p[:, 1::2]

    def dispatch_tables(self, weights: np.ndarray, which: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Tables that make node 0 dispatch by the dispatcher's actions (B, N) and no node migrate or steal."""
        n = self.num_nodes
        a = np.asarray(weights, dtype=np.float64)
        if a.shape != (len(which), n):
            raise InvalidActionError(
                f"actions: got shape {np.shape(weights)}; expected ({len(which)}, {n}): one {self.unit[:-1]} per node"
            )
        migration = np.broadcast_to(self._eye, (len(which), n, n)).copy()
        migration[:, 0] = self.probabilities(a[:, None, :], which)[:, 0]
        return migration, np.broadcast_to(self._eye, (len(which), n, n)).copy()

    def probabilities(self, a: np.ndarray, which: Sequence[int]) -> np.ndarray:
        """Rows of probabilities from rows of logits (softmax) or weights (normalised), shape (B, M, N)."""
        logits = self.config.action_type == "logits"
        # One pass catches NaN and infinities: a sum of finite numbers is finite unless it overflows.
        if not (np.isfinite(a.sum()) and (logits or a.min() >= 0)):
            self._check_values(a, which)
        if logits:  # |logit| <= max_logit <= 100: exp neither overflows nor vanishes, no max to subtract
            p = np.clip(a, -self.config.max_logit, self.config.max_logit)
            np.exp(p, out=p)
        else:
            p = a.copy()
        total = rowsum(p)[..., None]
        if not (total > 0).all():
            k, m = np.argwhere(~(total[..., 0] > 0))[0]
            half = "" if self.dispatcher else f"the {('migration', 'stealing')[m % 2]} half "
            raise InvalidActionError(
                f"{self._who(which, k, m)}: {half}sums to {float(total[k, m, 0])!r}; allowed: non-negative weights "
                "with a positive finite sum" + ("" if self.dispatcher else " in each half")
            )
        p /= total
        return p

    def _check_values(self, a: np.ndarray, which: Sequence[int]) -> None:
        """Raise InvalidActionError at the first NaN, infinity or (for weights) negative entry."""
        bad = ~np.isfinite(a)
        if self.config.action_type == "probabilities":
            bad |= a < 0
        if bad.any():
            k, m, j = np.argwhere(bad)[0]
            what = "finite non-negative weights" if self.config.action_type == "probabilities" else "finite logits"
            raise InvalidActionError(
                f"{self._who(which, k, m)}: got {float(a[k, m, j])!r} at index {self._index(m, j)}; allowed: {what}"
            )

    @property
    def unit(self) -> str:
        """What one action entry is, for error messages."""
        return "logits" if self.config.action_type == "logits" else "weights"

    def _index(self, m: int, j: int) -> int:
        return j if self.dispatcher else (m % 2) * self.num_nodes + j

    def _who(self, which: Sequence[int], k: int, m: int) -> str:
        agent = "the dispatcher" if self.dispatcher else f"node_{m // 2}"
        return f"action of {agent}" + (f" in copy {which[k]}" if self.num_copies > 1 else "")
