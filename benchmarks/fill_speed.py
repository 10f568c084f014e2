"""What asking a rack's water-filling per task costs: the engine's speed per heartbeat and per task, in one run.

On Malcolm's heterogeneous rack (14 nodes, Exp(75), load 0.94), the same tasks run under

- ``water_fill:steal=true``: every node's tables once per 100 us heartbeat (the reference, ratio 1);
- ``water_fill:steal=true,per_task=true,horizon=0.5,estimate=nominal``: the arriving node's table recomputed at
  every task (the engine's heuristic);
- the zero-gain `fill` files of both (``FillController``: the file's tables, per heartbeat or per task);
- the per-task file learning online (``FillController`` with ``learn``: every decision recorded and learned).

Each prints tasks/s (wall time of the run alone, best of ``--repeats``) and its ratio to the reference.

    python benchmarks/fill_speed.py            # about 10 s
    python benchmarks/fill_speed.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

from dcgym.agents import policy_format as fmt
from dcgym.agents.malcolm.fill import water_fill_policy
from dcgym.agents.policies.rack import game_engine_config
from dcgym.cpp_core import FillController, RackSim
from dcgym.envs.scenario import load_scenario

SCENARIO = "malcolm_hetero_paper_exp"
LOAD = 0.94
PER_TASK = "water_fill:steal=true,per_task=true,horizon=0.5,estimate=nominal"


def best_rate(run: Callable[[], int], repeats: int) -> float:
    """Tasks per second of the fastest of `repeats` calls of `run` (which returns the tasks it ran)."""
    best = math.inf
    tasks = 0
    for _ in range(repeats):
        t = time.perf_counter()
        tasks = run()
        best = min(best, time.perf_counter() - t)
    return tasks / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100,000 tasks, one repeat")
    args = parser.parse_args()
    tasks, repeats = (100_000, 1) if args.quick else (args.tasks, args.repeats)
    scenario = load_scenario(SCENARIO)

    def heuristic(policy: str) -> Callable[[], int]:
        def run() -> int:
            sim = RackSim(scenario.engine_config(LOAD, 1, policy=policy))
            sim.run_tasks(tasks)
            return tasks

        return run

    def file(per_task: bool, learn: bool = False) -> Callable[[], int]:
        metric = "nominal_wait" if per_task else "expected_wait"
        policy = water_fill_policy(
            scenario, steal=True, per_task=per_task, horizon=0.5 if per_task else 2.0, metric=metric
        )
        data = fmt.to_bytes(policy)

        def run() -> int:
            config = game_engine_config(scenario, LOAD, 1, load_metric=metric)
            ctl = FillController(config, data, options={"learn": True} if learn else None)
            heartbeats = math.ceil(tasks / (ctl.sim.results()["arrival_rate_per_us"] * 100.0))
            return int(ctl.run(heartbeats)["tasks_arrived"])

        return run

    rows = [
        ("water_fill:steal=true (reference)", heuristic("water_fill:steal=true")),
        (PER_TASK, heuristic(PER_TASK)),
        ("fill file, per heartbeat", file(False)),
        ("fill file, per task", file(True)),
        ("fill file, per task, learning online", file(True, learn=True)),
    ]
    print(f"{SCENARIO} at load {LOAD}, {tasks:,} tasks per run, best of {repeats}\n")
    print("| run | tasks/s | vs reference |")
    print("|---|---:|---:|")
    reference = None
    for label, run in rows:
        rate = best_rate(run, repeats)
        reference = reference or rate
        print(f"| {label} | {rate:,.0f} | {rate / reference:.2f} |", flush=True)


if __name__ == "__main__":
    main()
