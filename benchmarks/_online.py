"""Malcolm learning online inside the engine, for the reproductions of Malcolm §7.4 (Fig. 10, Fig. 11).

The paper deploys Malcolm as an online learner: every node updates its
actor-critic every mini-batch of heartbeats while it balances. Here that is
:class:`dcgym.cpp_core.RackController` with ``learn=True`` (the C++ learner
of docs/policy_runtime.md, Algorithm 1 with the paper's defaults), starting
from random parameters. A run learns for a while, then keeps learning while
the latency of the tasks completed in each measurement window is recorded;
the heuristics are measured over the same windows of the same rack.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.cpp_core import RackController, RackSim
from dcgym.envs.rack.game import RackGame
from dcgym.envs.scenario import load_scenario

HEURISTICS = {"Po2": {"policy": "po_d", "d": 2}, "JSQ": {"policy": "jsq"}, "JBT": {"policy": "jbt", "threshold": 1.0}}
"""The heuristics these reproductions compare with, over the scenario's load metric (queue lengths, §7.1)."""


def cli(doc: str, seeds: int) -> argparse.Namespace:
    """The reproductions' command line: --seeds (1..N), --out and --quick."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=seeds, help=f"seeds per point, 1..N (default {seeds})")
    p.add_argument("--out", type=Path, default=Path("docs/reproductions"), help="folder for the PNG and markdown")
    p.add_argument("--quick", action="store_true", help="a smoke run: one short point through the same code, no page")
    args = p.parse_args()
    if args.seeds < 1:
        p.error(f"--seeds must be >= 1, got {args.seeds}")
    return args


def malcolm_config(
    scenario: str, load: float, seed: int, heartbeat_us: float = 100.0, overrides: Mapping[str, Any] | None = None
) -> dict:
    """The engine config rack_v0 builds for ``scenario``: node entry, table policy, expected-wait loads,
    load information broadcast every heartbeat when the scenario's is fresh."""
    game = RackGame(
        {"scenario": scenario, "load": load, "heartbeat_us": heartbeat_us, "overrides": dict(overrides or {})}
    )
    return dict(game.engine_config, seed=seed)


def heuristic_config(
    scenario: str, load: float, seed: int, policy: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> dict:
    """The scenario's engine config with every node's load manager running ``policy``."""
    cfg = load_scenario(scenario, dict(overrides or {})).engine_config(load=load, seed=seed)
    cfg["dispatch"] = {**cfg["dispatch"], **policy}
    return cfg


def _summary(h: Mapping[str, Any]) -> dict[str, float]:
    return {"p99": float(h["p99"]), "mean": float(h["mean"]), "count": int(h["count"])}


def run_windows(sim_run, sim: RackSim, windows: Sequence[tuple[float, float]]) -> list[dict[str, float]]:
    """Latency summaries (and tasks dropped) of the tasks completed in each window [start, end) of simulated time.

    ``sim_run(t)`` advances to time t (a controller advances by whole heartbeats).
    """
    out = []
    sim.window_latency(reset=True)  # starts the per-window histogram
    for start, end in windows:
        sim_run(start)
        sim.window_latency(reset=True)
        dropped = sim.results()["tasks_dropped"]
        sim_run(end)
        out.append({**_summary(sim.window_latency(reset=True)), "dropped": sim.results()["tasks_dropped"] - dropped})
    return out


def malcolm_online(
    cfg: dict,
    windows: Sequence[tuple[float, float]],
    *,
    heartbeat_us: float = 100.0,
    seed: int = 1,
    samples: bool = False,
    options: Mapping[str, Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
    parameters_at: float | None = None,
) -> dict[str, Any]:
    """Malcolm learning from scratch from t = 0, measured over ``windows`` while it keeps learning.

    ``options`` are merged over ``{"learn": True, "heartbeat_us": heartbeat_us}`` and passed to
    :class:`RackController` (its learner options, e.g. ``lr_actor``, ``variant``, ``reward``; or
    ``learn=False`` for a fixed policy). ``parameters`` ({'critic', 'migration', 'stealing'}, as
    ``RackController.parameters()`` returns them) replace the random start. With ``parameters_at``,
    ``out["parameters"]`` holds a copy of the parameters when the simulation reached that time (to
    the next heartbeat). The defaults give the previous behaviour exactly.
    """
    opts = {"learn": True, "heartbeat_us": heartbeat_us, **dict(options or {})}
    p = dict(parameters or {})
    ctl = RackController(cfg, opts, p.get("critic"), p.get("migration"), p.get("stealing"), seed=seed)
    sim = ctl.sim
    snapshot: dict[str, Any] = {}

    def run_to(t: float) -> None:
        beats = int(np.ceil((t - sim.now_us) / opts["heartbeat_us"] - 1e-9))
        if beats > 0:
            ctl.run(beats)

    def advance(t: float) -> None:
        if parameters_at is not None and not snapshot and t >= parameters_at:
            run_to(parameters_at)
            snapshot.update(ctl.parameters())
        run_to(t)

    stats = run_windows(advance, sim, windows)
    out: dict[str, Any] = {"windows": stats, "results": sim.results()}
    if parameters_at is not None:
        if not snapshot:
            raise ValueError(f"parameters_at={parameters_at} is after the last window's end")
        out["parameters"] = snapshot
    if samples:
        out["samples"] = sim.take_samples()
    return out


def heuristic(cfg: dict, windows: Sequence[tuple[float, float]], samples: bool = False) -> dict[str, Any]:
    """A heuristic rack measured over the same windows."""
    sim = RackSim(cfg)
    stats = run_windows(sim.run_until, sim, windows)
    out: dict[str, Any] = {"windows": stats, "results": sim.results()}
    if samples:
        out["samples"] = sim.take_samples()
    return out
