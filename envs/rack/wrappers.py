"""Single-agent Gymnasium environments over a rack: ``dcgym/RackCentral-v0`` and ``dcgym/RackDispatch-v0``.

Both run on the same :class:`~dcgym.envs.rack.game.RackGame` as rack_v0 (see
its module docstring for the scenario handling, rewards, units and seeding)
and take the same keyword arguments. Register and make them by id::

    import gymnasium, dcgym.envs
    env = gymnasium.make("dcgym/RackCentral-v0", scenario="malcolm_homog_exp", load=0.9)
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.spaces import Box

from dcgym.envs.error import InvalidActionError, InvalidConfigError, ResetNeededError
from dcgym.envs.rack.game import RackEnvConfig, RackGame
from dcgym.envs.rack.render import LoadHistory, render_rack
from dcgym.envs.seeding import GameEpisodes
from dcgym.envs.validation import validate

__all__ = ["RackCentralEnv", "RackDispatchEnv", "central_spaces", "copy_info"]


def central_spaces(game: RackGame) -> tuple[Box, Box]:
    """RackCentral-v0's observation space (N x obs_dim,) and normalised action space (N x 2N,)."""
    n, clip = game.num_nodes, game.config.obs_clip
    obs = Box(0.0, clip, (n * game.obs_dim,), np.float32)
    low = -1.0 if game.config.action_type == "logits" else 0.0
    return obs, Box(low, 1.0, (n * 2 * n,), np.float32)


def copy_info(out: dict[str, np.ndarray], k: int) -> dict[str, Any]:
    """The info of copy k of the game's step arrays ``out``, as the single-agent rack environments give it."""
    keys = ("migrate", "steal", "true_loads", "migrations", "steals", "failed_steals", "dropped")
    info: dict[str, Any] = {key: out[key][k].copy() for key in keys}  # the game's arrays change next step
    info.update({key: float(out[key][k]) for key in ("latency_mean_us", "latency_p99_us", "sim_time_us")})
    info["completed"] = int(out["completed"][k])
    return info


class _RackSingleAgent(GameEpisodes, gymnasium.Env):
    """What the two single-agent rack environments share: seeding, reset, step, info, render."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 10}
    _dispatcher = False

    def __init__(self, **kwargs: Any) -> None:
        self.config = validate(RackEnvConfig, kwargs)
        if self.config.action_type == "fill":
            raise InvalidConfigError("action_type", "fill", "logits or probabilities (fill actions are rack_v0's)")
        self.game = RackGame(self.config, 1, dispatcher=self._dispatcher)
        self.render_mode = self.config.render_mode
        self._scale = self.config.max_logit if self.config.action_type == "logits" else 1.0
        self._last: dict[str, np.ndarray] | None = None
        self._history = LoadHistory(self.config.render_history)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        out = self._new_episode(seed, options)
        self._history.clear()
        return self._observe(out), self._info(out)

    def step(self, action: np.ndarray):
        if self._last is None or self._last["truncated"][0]:
            raise ResetNeededError(
                "Call reset() before step()" if self._last is None else "The episode is over (truncated): call reset()"
            )
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self.action_space.shape:
            raise InvalidActionError(
                f"action: got shape {a.shape}; expected {self.action_space.shape}: {self._layout()}"
            )
        out = self.game.step(self._engine_actions(a * self._scale), [0])
        return self._observe(out), float(out["reward"][0]), False, bool(out["truncated"][0]), self._info(out)

    def _observe(self, out: dict[str, np.ndarray]) -> np.ndarray:
        self._last = out
        if self.render_mode == "rgb_array":
            self._history.add(out["true_loads"][0])
        return self._observation(out)

    @staticmethod
    def _info(out: dict[str, np.ndarray]) -> dict[str, Any]:
        return copy_info(out, 0)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "You are calling render method without specifying any render mode: pass render_mode='ansi' or "
                "'rgb_array' to gymnasium.make(...)"
            )
            return None
        if self._last is None:
            raise ResetNeededError("Call reset() before render()")
        return render_rack(self.game, self._last, self._history, self.render_mode, self.spec.id if self.spec else "")

    def close(self) -> None:
        self.game.sims = [None]


class RackCentralEnv(_RackSingleAgent):
    """One agent setting every node's migration and stealing distributions (rack_v0 centralised).

    ## Description

    rack_v0 (Malcolm's game, §4) with a single controller: each step it sets
    all N nodes' tables for the next heartbeat. A centralised upper bound and
    a plain single-agent RL benchmark. The batched form is
    :class:`dcgym.envs.rack.vector.RackCentralVectorEnv`
    (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``).

    ## Observation Space

    ``Box(0, obs_clip, (N x obs_dim,), float32)``: rack_v0's per-node
    observations (each node's view of the loads, its own load, extras) for
    node 0, 1, ..., N-1, concatenated.

    ## Action Space

    ``Box(-1, 1, (N x 2N,), float32)``, normalised as Gymnasium recommends: for
    node 0, 1, ..., N-1 in turn, N migration then N stealing logits divided by
    ``max_logit`` (the env multiplies by ``max_logit``, clips and applies a
    softmax per half). With ``action_type="probabilities"``: ``Box(0, 1)`` of
    non-negative weights, each half normalised. Bad shapes, NaN, infinities
    and (weights) negative entries raise ``InvalidActionError``.

    ## Rewards

    rack_v0's team reward (default: Malcolm eq. 1 on the true loads).

    ## Termination/Truncation

    Never terminates (a continuing system); truncates after ``max_steps``.

    ## Arguments

    rack_v0's keyword arguments (scenario, overrides, load, heartbeat_us,
    max_steps, max_time_us, warmup_us, action_type, max_logit, load_metric,
    obs_extras, obs_clip, reward, the four costs, render_mode,
    render_history), with the same defaults.

    ## Version History

    - v0: initial release (dcgym 0.1).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.observation_space, self.action_space = central_spaces(self.game)

    def _layout(self) -> str:
        n = self.game.num_nodes
        return f"{n} nodes x ({n} migration then {n} stealing {self.game.unit})"

    def _engine_actions(self, a: np.ndarray) -> np.ndarray:
        n = self.game.num_nodes
        return a.reshape(1, n, 2 * n)

    def _observation(self, out: dict[str, np.ndarray]) -> np.ndarray:
        return out["obs"][0].flatten()


class RackDispatchEnv(_RackSingleAgent):
    """A central dispatcher choosing, every heartbeat, the weights it sends tasks to the nodes with.

    ## Description

    Every task of the scenario enters at one dispatcher (a top-of-rack switch,
    RackSched §3.1), which sends it to node j with the probability the agent
    set for the current heartbeat: a weighted random choice (WCMP, multi-LB
    App. C.3) whose weights the agent changes every ``heartbeat_us``. Nodes
    neither migrate nor steal. The engine runs this on its node-entry table
    path: all arrivals enter at node 0, whose migration row is the dispatch
    distribution (column 0 = keep at node 0) and is forwarded without delay;
    every other row is "accept", every stealing row "never steal". A
    scenario with ``split`` dynamics is refused (all traffic enters at the
    dispatcher).

    ## Observation Space

    ``Box(0, obs_clip, (N,), float32)``: the loads of the N nodes as the
    dispatcher last heard them (stale by the scenario's load information;
    node 0 hosts the dispatcher, so its own load is exact), in rack_v0's load
    unit. ``obs_extras`` are not available.

    ## Action Space

    ``Box(-1, 1, (N,), float32)``: dispatch logits divided by ``max_logit``
    (softmax); with ``action_type="probabilities"``, ``Box(0, 1, (N,))``
    non-negative weights, normalised.

    ## Rewards

    rack_v0's team reward variants; a forwarded task counts as a migration
    there, so ``migration_cost`` defaults to 0 here.

    ## Termination/Truncation

    Never terminates; truncates after ``max_steps``.

    ## Arguments

    rack_v0's keyword arguments, except ``obs_extras``.

    ## Version History

    - v0: initial release (dcgym 0.1).
    """

    _dispatcher = True

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("migration_cost", 0.0)
        if kwargs.get("obs_extras"):
            raise InvalidConfigError(
                "obs_extras", list(kwargs["obs_extras"]), "[] for RackDispatch-v0 (it observes the N loads only)"
            )
        super().__init__(**kwargs)
        n, clip = self.game.num_nodes, self.config.obs_clip
        self.observation_space = Box(0.0, clip, (n,), np.float32)
        low = -1.0 if self.config.action_type == "logits" else 0.0
        self.action_space = Box(low, 1.0, (n,), np.float32)

    def _layout(self) -> str:
        return f"one dispatch {self.game.unit[:-1]} per node"

    def _engine_actions(self, a: np.ndarray) -> np.ndarray:
        return a[None]

    def _observation(self, out: dict[str, np.ndarray]) -> np.ndarray:
        return out["obs"][0, 0, : self.game.num_nodes].copy()
