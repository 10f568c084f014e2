"""Environment speed benchmark: what the rack environments cost over the bare engine doing the same work.

Malcolm's heterogeneous rack (``malcolm_hetero_paper_exp``: 4 x 14 + 10 x 3
workers, Exp(75 us)) at load 0.9, one heartbeat (100 us) per step, a fixed
policy (migration in proportion to node capacity; stealing: keep with 0.5,
otherwise a uniform victim). Every variant simulates the same tasks:

  bare        RackSim.set_tables + run_until in a Python loop (the reference)
  batch B=1   step_rack_batch on one simulation (adds the engine's per-step
              observation work: beliefs, decision counts, step latency)
  rack_v0     the PettingZoo ParallelEnv: env.step(dict of 14 actions)
  vector B    RackVectorEnv with B copies: one engine call per step; its time
              is split into the engine call (step_rack_game: tables from
              the actions, the step, observations) and Python,
              and compared with "bare xB": the bare loop over B simulations
              (the same memory footprint, so cache effects show separately)

Times are CPU time of this thread (time.thread_time; the engine runs in
the calling thread with the GIL released), best of --repeats, so other load
on the machine matters less; wall time is printed beside. Ratios are taken
in the same run.

    python benchmarks/env_speed.py              # about a minute
    python benchmarks/env_speed.py --quick      # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import dcgym.envs.rack.game as rack_game
from dcgym.cpp_core import RackSim, step_rack_batch, step_rack_game
from dcgym.envs import rack_v0
from dcgym.envs.rack.vector import RackVectorEnv

SCENARIO, LOAD, HEARTBEAT = "malcolm_hetero_paper_exp", 0.9, 100.0
SEED = 1


@dataclass
class Run:
    name: str
    steps: int  # simulation steps (copies x env steps)
    tasks: int  # tasks arrived, over all copies
    cpu_s: float
    wall_s: float
    engine_s: float = 0.0  # CPU time inside step_rack_batch (vector runs)

    @property
    def us_per_step(self) -> float:
        return self.cpu_s / self.steps * 1e6

    @property
    def tasks_per_s(self) -> float:
        return self.tasks / self.cpu_s


def fixed_tables(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(capacity)
    migration = np.tile(capacity / capacity.sum(), (n, 1))
    stealing = np.full((n, n), 0.5 / max(1, n - 1))
    np.fill_diagonal(stealing, 0.5 if n > 1 else 1.0)
    return migration, stealing


_engine_s = [0.0]


def _timed_step_rack_game(*args):
    """step_rack_game with its CPU time added up (installed into RackGame for the vector runs)."""
    c0 = time.thread_time()
    out = step_rack_game(*args)
    _engine_s[0] += time.thread_time() - c0
    return out


def measure(
    name: str, steps: int, prepare: Callable[[], tuple[Callable[[], None], Callable[[], int]]], repeats: int
) -> Run:
    """Best CPU time of ``loop`` over ``repeats`` fresh preparations; building and counting are not timed."""
    best = None
    for _ in range(repeats):
        loop, count = prepare()
        _engine_s[0] = 0.0
        c0, w0 = time.thread_time(), time.perf_counter()
        loop()
        run = Run(name, steps, 0, time.thread_time() - c0, time.perf_counter() - w0, _engine_s[0])
        run.tasks = count()
        if best is None or run.cpu_s < best.cpu_s:
            best = run
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20_000, help="heartbeats per simulation (default 2 s simulated)")
    parser.add_argument("--batch", type=int, nargs="+", default=[16, 64], help="copies for the batched API")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2000 steps, one repeat")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()
    steps, repeats = (2000, 1) if args.quick else (args.steps, args.repeats)

    probe = rack_v0.parallel_env(scenario=SCENARIO, load=LOAD, heartbeat_us=HEARTBEAT)
    n = probe.game.num_nodes
    migration, stealing = fixed_tables(probe.game.capacity)
    action = np.concatenate([migration, stealing], axis=1)  # row i: node i's 2N weights
    cfg = dict(probe.game.engine_config, seed=SEED)

    def bare(b: int, per_copy: int):
        def prepare():
            sims = [RackSim(dict(cfg, seed=SEED + k)) for k in range(b)]

            def loop():
                for t in range(per_copy):
                    for sim in sims:
                        sim.set_tables(migration, stealing)
                        sim.run_until((t + 1) * HEARTBEAT)

            return loop, lambda: sum(sim.results()["tasks_arrived"] for sim in sims)

        return prepare

    def batch1():
        sims = [RackSim(cfg)]
        m, s = migration[None].copy(), stealing[None].copy()

        def loop():
            for _ in range(steps):
                step_rack_batch(sims, m, s, HEARTBEAT)

        return loop, lambda: sims[0].results()["tasks_arrived"]

    def pettingzoo():
        env = rack_v0.parallel_env(
            scenario=SCENARIO, load=LOAD, heartbeat_us=HEARTBEAT, max_steps=steps, action_type="probabilities"
        )
        env.reset(seed=SEED)
        actions = {f"node_{i}": action[i].astype(np.float32) for i in range(n)}

        def loop():
            for _ in range(steps):
                env.step(actions)

        return loop, lambda: env.game.sims[0].results()["tasks_arrived"]

    def vector(b: int, per_copy: int):
        def prepare():
            venv = RackVectorEnv(
                b, scenario=SCENARIO, load=LOAD, heartbeat_us=HEARTBEAT, max_steps=10**9, action_type="probabilities"
            )
            venv.reset(seed=SEED)
            batch_actions = np.broadcast_to(action.astype(np.float32), (b, n, 2 * n)).copy()

            def loop():
                for _ in range(per_copy):
                    venv.step(batch_actions)

            return loop, lambda: sum(sim.results()["tasks_arrived"] for sim in venv.game.sims)

        return prepare

    base = measure("bare", steps, bare(1, steps), repeats)
    runs = [base, measure("batch B=1", steps, batch1, repeats), measure("rack_v0", steps, pettingzoo, repeats)]
    pairs = []
    rack_game.step_rack_game = _timed_step_rack_game
    try:
        for b in args.batch:
            per_copy = max(1, steps // b)
            vec = measure(f"vector B={b}", per_copy * b, vector(b, per_copy), repeats)
            ref = measure(f"bare x{b}", per_copy * b, bare(b, per_copy), repeats)
            runs += [vec, ref]
            pairs.append((b, vec, ref))
    finally:
        rack_game.step_rack_game = step_rack_game

    print(f"{SCENARIO} at load {LOAD}, N = {n} agents, heartbeat {HEARTBEAT:g} us, {steps} steps per simulation")
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, {cpu_model()}, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'variant':<14}{'us/step':>10}{'wall us/step':>14}{'Mtasks/s':>10}{'vs bare':>9}")
    for r in runs:
        print(
            f"{r.name:<14}{r.us_per_step:10.1f}{r.wall_s / r.steps * 1e6:14.1f}{r.tasks_per_s / 1e6:10.3f}"
            f"{r.tasks_per_s / base.tasks_per_s:9.2f}"
        )
    pz, b1 = runs[2], runs[1]
    over = pz.us_per_step - base.us_per_step
    print(
        f"rack_v0 step costs {pz.us_per_step / base.us_per_step:.2f}x the bare engine's: +{over:.1f} us per step, "
        f"+{over / n:.2f} us per agent; of which engine-side step work (batch B=1 over bare) "
        f"+{b1.us_per_step - base.us_per_step:.1f} us, Python +{pz.us_per_step - b1.us_per_step:.1f} us"
    )
    for b, vec, ref in pairs:
        engine_us = vec.engine_s / vec.steps * 1e6
        print(
            f"vector B={b}: simulated tasks/s = {vec.tasks_per_s / base.tasks_per_s:.0%} of the bare engine's "
            f"(target >= 80%), {vec.tasks_per_s / ref.tasks_per_s:.0%} of bare x{b}'s; per simulation step "
            f"{engine_us:.1f} us in step_rack_game + {vec.us_per_step - engine_us:.1f} us in Python "
            f"(bare x{b}: {ref.us_per_step:.1f} us)"
        )
    if pz.tasks != base.tasks:
        print(f"warning: rack_v0 simulated {pz.tasks} tasks, bare {base.tasks}: not the same work", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                [r.__dict__ | {"us_per_step": r.us_per_step, "tasks_per_s": r.tasks_per_s} for r in runs], f, indent=2
            )


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
