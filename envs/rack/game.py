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
extras and the per-node counts. Every reset and step writes into arrays
allocated once, one row per copy (:attr:`RackGame.out`; the engine fills the
rows of the copies it steps), so a step allocates no output array.
:class:`RackEnvConfig` is every setting of the game, validated at
construction with errors that name the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from dcgym.cpp_core import (
    FILL_FEATURES,
    RACK_REWARDS,
    Distribution,
    RackSim,
    TaskFill,
    rack_imbalance,
    rack_reward_costs,
    step_rack_batch,
    step_rack_game,
)
from dcgym.envs.error import InvalidActionError, InvalidConfigError
from dcgym.envs.rack.scenario import RackScenario
from dcgym.envs.scenario import DEFAULT_SCENARIO, Load, load_scenario
from dcgym.envs.schema import EpisodeLoads
from dcgym.envs.validation import validate

_BUFFERS: dict[str, tuple[str, type]] = {
    "beliefs": ("pairs", np.float64),
    "loads": ("nodes", np.float64),
    "migrate": ("pairs", np.uint64),
    "steal": ("pairs", np.uint64),
    "migrations": ("nodes", np.uint64),
    "steals": ("nodes", np.uint64),
    "failed_steals": ("nodes", np.uint64),
    "dropped": ("nodes", np.uint64),
    "latency_mean_us": ("copies", np.float64),
    "latency_p99_us": ("copies", np.float64),
    "completed": ("copies", np.uint64),
    "now_us": ("copies", np.float64),
    "imbalance": ("copies", np.float64),
    "reward": ("copies", np.float64),
    "true_loads": ("nodes", np.float64),
    "truncated": ("copies", np.bool_),
}
"""The arrays of a step besides the observations: (shape after the copies' axis, dtype)."""

_ENGINE_KEYS = (*(key for key in _BUFFERS if key not in ("true_loads", "truncated")), "obs")
"""The arrays the engine writes (``step_rack_game``, ``step_rack_batch``); the game computes the other two."""

_ZEROED = (
    *(key for key, (_, dtype) in _BUFFERS.items() if dtype is np.uint64),
    "latency_mean_us",
    "latency_p99_us",
    "reward",
)
"""What a reset sets to 0, the step's counts (every uint64 array) and statistics: nothing has happened yet."""

LOAD_STREAM = 0x10AD
"""Second word of the RNG seed that draws an episode's load from ``load_range`` (the first is the engine seed)."""

__all__ = ["FILL_FEATURES", "REWARD_COSTS", "Costs", "FillRule", "RackEnvConfig", "RackGame", "fill_rows", "rowsum"]

Extra = Literal["arrival_rate", "capacity", "rank", "offered_load"]


WAIT_METRICS = ("expected_wait", "nominal_wait")
"""The load metrics in expected waits (us): divided by the mean service time, they are in mean service times."""


def fill_rows(n: int) -> int:
    """Rows of a node's gains with ``action_type="fill"`` (the runtime's FillRows): volume, mix, steal margin, N
    capacity gains, N level offsets."""
    return 2 * n + 3


class FillRule(BaseModel):
    """The water-filling rule that ``action_type="fill"`` gains adjust (the ``water_fill`` heuristic's parameters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    horizon: float = Field(
        0.5, gt=0, le=1e6, allow_inf_nan=False, description="the fill volume, in heartbeats of the rack's arrivals"
    )
    mix: float = Field(
        0.1,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="share of the capacity split in every table; > 0 keeps every probability > 0",
    )
    steal: bool = Field(True, description="a node running short steals from the node it believes most loaded")


class Costs(NamedTuple):
    """Cost of one action or event in the team reward (Malcolm eq. 1's C(a), the code's penalties)."""

    migration: float
    steal: float
    failed_steal: float
    drop: float


REWARD_COSTS: dict[str, Costs] = {kind: Costs(*rack_reward_costs(kind)) for kind in RACK_REWARDS}
"""Default costs of each reward variant (the engine's, rack/game.hpp); a cost set explicitly replaces its default."""


class RackEnvConfig(EpisodeLoads):
    """Every argument of the rack environments (rack_v0, RackCentral-v0, RackDispatch-v0, RackVectorEnv)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    load_stream: ClassVar[int] = LOAD_STREAM

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
    action_type: Literal["logits", "probabilities", "fill"] = Field("logits", description="how actions are read")
    fill: FillRule = Field(FillRule(), description='action_type "fill": the rule the gains adjust')
    max_logit: float = Field(10.0, gt=0, le=100, allow_inf_nan=False, description="logits are clipped to +-max_logit")
    load_metric: Literal["expected_wait", "nominal_wait", "queue", "outstanding"] = Field(
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
                "obs_extras", list(self.obs_extras), "distinct names of arrival_rate, capacity, rank, offered_load"
            )
        if self.action_type == "fill" and self.load_metric not in WAIT_METRICS:
            raise InvalidConfigError(
                "load_metric", self.load_metric, f"one of {list(WAIT_METRICS)} with action_type fill (levels in waits)"
            )
        return self

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
        self.scale = 1.0 / self.mean_service_us if self.config.load_metric in WAIT_METRICS else 1.0
        self.capacity = np.concatenate([np.full(g.count, g.workers * g.speed) for g in self.scenario.nodes]).astype(
            np.float64
        )
        self.workers = np.concatenate([np.full(g.count, g.workers) for g in self.scenario.nodes])
        self.obs_dim = self.num_nodes + 1 + len(self.config.obs_extras)
        self.costs = self.config.costs
        self.sims: list[RackSim | None] = [None] * num_copies
        self.engine_seeds = np.zeros(num_copies, dtype=np.uint64)
        self.steps = np.zeros(num_copies, dtype=np.int64)
        self._previous = np.zeros(num_copies)  # each copy's imbalance at its last step (imbalance_delta)
        self.offered_load = np.zeros(num_copies)
        """Each copy's offered load: its arrival rate at reset x the mean service time / the rack's capacity."""
        self._eye = np.eye(self.num_nodes)
        self._all = np.arange(num_copies)
        self.fill = self.config.action_type == "fill" and not dispatcher
        self.task_fills: list[TaskFill | None] = [None] * num_copies
        """``action_type="fill"``: each copy's per-task fill policy (its gains the last actions)."""
        self.decisions: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in range(num_copies)]
        """``action_type="fill"``: each copy's decisions of the last step, per node (dest, levels, arrivals)."""
        self.out = self._buffers()
        self._engine_out = {key: self.out[key] for key in _ENGINE_KEYS if not (key == "obs" and self._tables_here)}
        self._reward = {  # previous_imbalance is read and, for imbalance_delta, written by the engine in place
            "kind": self.config.reward,
            "scale": self.scale,
            "previous_imbalance": self._previous,
            **dict(zip(("migration_cost", "steal_cost", "failed_steal_cost", "drop_cost"), self.costs)),
        }

    @property
    def _tables_here(self) -> bool:
        """The game sets the tables and computes the observations (``step_rack_batch``), not ``step_rack_game``."""
        return self.dispatcher or self.fill

    @property
    def action_width(self) -> int:
        """Entries of one node's action: 2N (migration and stealing), or its fill gains (``fill_rows(N) x 4``)."""
        n = self.num_nodes
        return fill_rows(n) * FILL_FEATURES if self.fill else 2 * n

    def _buffers(self) -> dict[str, np.ndarray]:
        """The arrays every reset and step writes into, one row per copy, allocated once (see :attr:`out`)."""
        b, n = self.num_copies, self.num_nodes
        shapes = {"nodes": (b, n), "pairs": (b, n, n), "copies": (b,)}
        out = {key: np.zeros(shapes[shape], dtype) for key, (shape, dtype) in _BUFFERS.items()}
        out["obs"] = np.zeros((b, n, self.obs_dim), np.float32)
        out["sim_time_us"] = out["now_us"]
        return out

    # ------------------------------------------------------------------ scenario

    def _game_scenario(self) -> RackScenario:
        """The scenario with entry nodes and the table policy forced, fresh load info made periodic."""
        cfg = self.config
        base = load_scenario(cfg.scenario, cfg.overrides, kind="rack")
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
        """Rebuild copy ``k`` with ``engine_seed`` and write its first observation and zero counts into row k.

        Returns :attr:`out`: the arrays of every copy, one row each (see :meth:`step`).
        """
        engine = dict(self.engine_config, seed=engine_seed)
        engine["load"] = self.config.episode_load(engine_seed) if load is None else validate(Load, load, "options.load")
        sim = RackSim(engine)
        if self.config.warmup_us > 0:
            sim.run_until(self.config.warmup_us)
            sim.decision_counts(reset=True)
            sim.step_latency(reset=True)
        self.sims[k] = sim
        if self.fill:
            self._hook_fill(k, sim)
        self.offered_load[k] = sim.results()["arrival_rate_per_us"] * self.mean_service_us / self.capacity.sum()
        self.engine_seeds[k] = engine_seed
        self.steps[k] = 0
        out = self.out
        out["beliefs"][k] = sim.beliefs()
        out["loads"][k] = sim.true_loads()
        for key in _ZEROED:
            out[key][k] = 0
        out["now_us"][k] = sim.now_us
        self._previous[k] = out["imbalance"][k] = rack_imbalance(out["loads"][k], self.scale)
        return self._finish(slice(k, k + 1), prefilled=False)

    # ---------------------------------------------------------------------- step

    def step(self, actions: np.ndarray, which: Sequence[int] | None = None) -> dict[str, np.ndarray]:
        """Apply ``actions`` to the copies ``which`` (None: all) and advance them one heartbeat, into their rows of
        :attr:`out`.

        Actions are (len(which), N, 2N) for the nodes, (len(which), N) for a dispatcher game. Returns
        :attr:`out`, the arrays of every copy (one row each): the engine writes them in place, so a step
        allocates none, and the next reset or step overwrites them (copy what is kept).
        """
        every = which is None or len(which) == self.num_copies == 1 or np.array_equal(which, self._all)
        which = self._all if which is None else which
        rows: slice | np.ndarray = slice(None) if every else np.asarray(which, dtype=np.int64)
        sims = self.sims if every else [self.sims[k] for k in which]
        engine_rows = None if every else rows
        if self._tables_here:
            migration, stealing = (self.fill_tables if self.fill else self.dispatch_tables)(actions, which)
            step_rack_batch(
                sims, migration, stealing, self.config.heartbeat_us, self._reward, self._engine_out, engine_rows
            )
            if self.fill:
                for k in which:
                    self.decisions[k] = self.task_fills[k].take()
        else:
            self._step_nodes(sims, actions, which, engine_rows)
        self.steps[rows] += 1
        return self._finish(rows, prefilled=not self._tables_here)

    def _step_nodes(
        self, sims: list[RackSim], actions: np.ndarray, which: Sequence[int], rows: np.ndarray | None
    ) -> None:
        """One engine call that also turns the nodes' actions into tables and writes the observations."""
        cfg, n = self.config, self.num_nodes
        a = np.asarray(actions)
        if a.shape != (len(which), n, 2 * n) or a.dtype.kind not in "fiub":
            self.tables(actions, which)  # raises the InvalidActionError that names the problem
        try:
            step_rack_game(
                sims,
                a,
                cfg.heartbeat_us,
                cfg.action_type == "logits",
                cfg.max_logit,
                self.scale,
                cfg.obs_clip,
                self.obs_dim,
                self._reward,
                self._engine_out,
                rows,
            )
        except ValueError:
            self.tables(actions, which)  # the engine refused a value: name it as the Python check does
            raise

    def _finish(self, rows: slice | np.ndarray, prefilled: bool) -> dict[str, np.ndarray]:
        """Complete the engine's arrays in ``rows``: statistics of empty steps, true loads, extras, truncation.

        ``prefilled``: the engine wrote the first N + 1 columns of the observations (``step_rack_game``).
        """
        out = self.out
        done = out["completed"][rows] > 0  # an empty histogram's statistics are NaN: report 0 (see completed)
        out["latency_mean_us"][rows] = np.where(done, out["latency_mean_us"][rows], 0.0)
        out["latency_p99_us"][rows] = np.where(done, out["latency_p99_us"][rows], 0.0)
        x = out["loads"][rows] * self.scale
        out["true_loads"][rows] = x
        # The engine's columns, a view of the rows for a slice (extras added in place), else a copy written back.
        written = out["obs"][rows] if prefilled else None
        obs = self.observe(out["beliefs"][rows], x, out["migrate"][rows], written, self.offered_load[rows])
        if not (prefilled and isinstance(rows, slice)):
            out["obs"][rows] = obs
        out["truncated"][rows] = self.steps[rows] >= self.config.episode_steps
        return out

    def observe(
        self,
        beliefs: np.ndarray,
        x: np.ndarray,
        migrate: np.ndarray,
        prefilled: np.ndarray | None = None,
        offered_load: np.ndarray | None = None,
    ) -> np.ndarray:
        """Observations (B, N, obs_dim), float32: beliefs row, own fresh load, extras; clipped to [0, obs_clip].

        ``prefilled``: the observations with the first N + 1 columns already
        written (by ``step_rack_game``); only the extras are added, in place.
        ``offered_load``: each copy's (B), for the ``offered_load`` extra.
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
            elif extra == "offered_load":  # the rack's arrival rate / its capacity, the same for every node
                obs[:, :, col] = np.asarray(offered_load, np.float64)[:, None]
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

    def _hook_fill(self, k: int, sim: RackSim) -> None:
        """Copy ``k``'s per-task fill policy on its new simulation, gains 0 (the rule), no decisions yet."""
        rule = self.config.fill
        self.task_fills[k] = None  # unhook the previous simulation's first
        self.task_fills[k] = TaskFill(
            sim,
            self.capacity.tolist(),
            self.scale,
            self.config.heartbeat_us * self.scale,
            rule.horizon,
            rule.mix,
            rule.steal,
            self.config.heartbeat_us,
        )
        n = self.num_nodes
        self.decisions[k] = [(np.zeros(0, np.uint32), np.zeros((0, n)), np.zeros(0))] * n

    def fill_tables(self, gains: np.ndarray, which: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Set the copies' gains (B, N, fill_rows(N) x 4) and return their heartbeat tables (B, N, N) from the
        levels now; each node's migration table is then recomputed at every task that arrives at it."""
        n, width = self.num_nodes, self.action_width
        a = np.asarray(gains, dtype=np.float32)
        if a.shape != (len(which), n, width):
            raise InvalidActionError(
                f"actions: got shape {np.shape(gains)}; expected ({len(which)}, {n}, {width}): for each copy and "
                f"node, its fill gains ({fill_rows(n)} rows of {FILL_FEATURES})"
            )
        if not np.isfinite(a).all():
            b, m, j = np.argwhere(~np.isfinite(a))[0]
            raise InvalidActionError(
                f"{self._who(which, b, 2 * m)}: got {float(a[b, m, j])!r} at index {j}; allowed: finite gains"
            )
        migration = np.empty((len(which), n, n))
        stealing = np.empty((len(which), n, n))
        for row, k in enumerate(which):
            fill = self.task_fills[k]
            fill.set_gains(a[row].reshape(n, fill_rows(n), FILL_FEATURES))
            migration[row], stealing[row] = fill.tables()
        return migration, stealing

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
