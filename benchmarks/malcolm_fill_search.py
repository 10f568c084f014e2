"""Search the gains of a ``fill`` rack policy (docs/policy_format.md kind 4) in the engine, from water-filling.

    python benchmarks/malcolm_fill_search.py [--scenario malcolm_hetero_paper_exp] [--loads 0.7,0.85,0.94 | grid]
        [--tasks 60000] [--seeds 101,102] [--iterations 8] [--population 16] [--steal] [--per-task] [--horizon 2]
        [--metric expected_wait | nominal_wait]
        [--features 2 | 4] [--reference water_fill | best] [--score mean | max] [--out out/fill_search]

The policy starts as the file whose gains are 0 — the engine's ``water_fill`` heuristic (with ``--steal``, its steal
rule; with ``--per-task``, its per-task rule: each node's table recomputed at every arriving task, a version-6 file;
``--horizon``, its fill horizon; ``--metric nominal_wait``, levels with the nominal mean service time) — and a cross-entropy search moves a few gains shared by every node: the fill volume, the mix and the steal
margin, and for the nodes of each capacity class a capacity gain and a level offset, plus an offset of the node's
own level (it knows it fresh, the others a heartbeat stale), each a + b x rho of the rack's utilisation (the
``fill`` features 1 and rho; ``--features 4`` adds the mean level and the node's own level, each through tanh),
so one file acts at every load. Each candidate runs in the engine (``FillController``)
at every load and training seed (common random numbers: a seed is the same workload for every candidate); its
score is the mean over loads of p99 / the reference's p99 at that load and seed (a run that drops tasks scores 10;
where the reference drops, 1 if the run drops too, 0.5 if not). The reference is water-filling (the starting file), or with ``--reference best``
the best per-task heuristic at that load and seed (the lowest p99 of SED, JSQ, JBT and Po2 without drops, run by
evaluate on the same seed and run length), the bar the zoo's rack policies are held to; ``--score max`` scores the
worst load (of the seeds' mean ratios) instead of the mean, so no load of the grid is given up for another;
``--loads grid`` searches over the scenario's whole load grid. Training seeds are not the evaluation's
(evaluate.py's seeds 1, 2, 3). Writes ``DIR/curve.csv`` (per iteration: the mean and
best score of the population and the score of its mean) and ``DIR/policy.dcpol`` (the start, then the mean
after each iteration: ``--iterations 0`` writes the zero-gain file; evaluate it with ``benchmarks/malcolm_ceiling.py --policy DIR/policy.dcpol``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from dcgym.agents import policy_format as fmt
from dcgym.agents.evaluation import evaluate
from dcgym.agents.malcolm.fill import water_fill_policy
from dcgym.agents.policies.rack import game_engine_config
from dcgym.cpp_core import FillController
from dcgym.envs.scenario import load_scenario

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--scenario", default="malcolm_hetero_paper_exp")
parser.add_argument("--loads", default="0.7,0.85,0.94", help="comma-separated loads, or grid: the scenario's")
parser.add_argument("--tasks", type=int, default=60_000, help="arrivals per run, after 5,000 of warm-up")
parser.add_argument("--seeds", default="101,102")
parser.add_argument("--iterations", type=int, default=8)
parser.add_argument("--population", type=int, default=16)
parser.add_argument("--elite", type=int, default=4)
parser.add_argument("--sigma", type=float, default=0.3, help="the search's initial spread of every gain")
parser.add_argument("--steal", action="store_true", help="start from water_fill:steal=true")
parser.add_argument("--per-task", action="store_true", help="start from water_fill:per_task=true (a per-task file)")
parser.add_argument("--horizon", type=float, default=2.0, help="the starting file's fill horizon (heartbeats)")
parser.add_argument(
    "--metric",
    choices=("expected_wait", "nominal_wait"),
    default="expected_wait",
    help="the levels' expected waits: the nodes' moving average of execution times, or the nominal mean",
)
parser.add_argument(
    "--features",
    type=int,
    choices=(2, 4),
    default=2,
    help="2: gains on 1 and rho; 4: also tanh(mean level), tanh(own level)",
)
parser.add_argument("--reference", choices=("water_fill", "best"), default="water_fill")
parser.add_argument("--score", choices=("mean", "max"), default="mean", help="over loads")
parser.add_argument("--seed", type=int, default=1, help="the search's own random numbers")
parser.add_argument("--out", default="out/fill_search")
args = parser.parse_args()

WARMUP = 5_000
HEURISTICS = ("sed", "jsq", "jbt:threshold=1", "po2")
scenario = load_scenario(args.scenario)
loads = list(scenario.loads) if args.loads == "grid" else [float(x) for x in args.loads.split(",")]
seeds = [int(x) for x in args.seeds.split(",")]
base = water_fill_policy(scenario, steal=args.steal, per_task=args.per_task, horizon=args.horizon, metric=args.metric)
n = base.num_agents
capacity = np.asarray(base.capacity)
classes = sorted(set(capacity.tolist()))
# theta: (volume, mix, steal margin, per class (capacity gain, level offset), own-level offset) x features
ROWS = 3 + 2 * len(classes) + 1
F = args.features


def policy_of(theta: np.ndarray) -> fmt.FillPolicy:
    rows = theta.reshape(ROWS, F)
    gains = np.zeros((n, 2 * n + 3, fmt.FILL_FEATURES))
    for i in range(n):
        gains[i, 0:3, :F] = rows[0:3]
        for j in range(n):
            k = classes.index(capacity[j])
            gains[i, 3 + j, :F] = rows[3 + 2 * k]
            gains[i, 3 + n + j, :F] = rows[4 + 2 * k] + (rows[-1] if j == i else 0.0)
    return fmt.FillPolicy(**{**vars(base), "gains": gains})


def p99(data: bytes, load: float, seed: int) -> float:
    """The run's p99 (us), or inf if it dropped tasks."""
    ctl = FillController(game_engine_config(scenario, load, seed, WARMUP, load_metric=args.metric), data, 100.0)
    per_heartbeat = ctl.sim.results()["arrival_rate_per_us"] * 100.0
    r = ctl.run(math.ceil((args.tasks + WARMUP) / per_heartbeat))
    return math.inf if r["tasks_dropped"] > 0 else r["latency_us"]["p99"]


def best_heuristic() -> dict[tuple[float, int], float]:
    """load, seed -> the lowest p99 of the per-task heuristics that drop nothing (inf if every one drops)."""
    doc = evaluate(scenario, list(HEURISTICS), loads, args.tasks + WARMUP, seeds=seeds, workers=0, progress=False)
    best: dict[tuple[float, int], float] = {}
    for row in doc["results"]:
        p = math.inf if row["tasks_dropped"] > 0 else row["latency_us"]["p99"]
        best[row["load"], row["seed"]] = min(best.get((row["load"], row["seed"]), math.inf), p)
    return best


if args.reference == "best":
    reference = best_heuristic()
else:
    reference = {(load, s): p99(fmt.to_bytes(base), load, s) for load in loads for s in seeds}


def ratio(got: float, ref: float) -> float:
    if math.isinf(ref):
        return 1.0 if math.isinf(got) else 0.5
    return min(got / ref, 10.0)


def score(theta: np.ndarray) -> float:
    data = fmt.to_bytes(policy_of(theta))
    ratios = np.array([[ratio(p99(data, load, s), reference[load, s]) for s in seeds] for load in loads])
    per_load = ratios.mean(axis=1)
    return float(per_load.max() if args.score == "max" else per_load.mean())


rng = np.random.default_rng(args.seed)
mean, sigma = np.zeros(F * ROWS), np.full(F * ROWS, args.sigma)
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
fmt.write_policy(policy_of(mean), out / "policy.dcpol")  # the start: with --iterations 0, the zero-gain file
with open(out / "curve.csv", "w") as curve:
    curve.write("iteration,population_mean,population_best,mean_theta\n")
    for it in range(args.iterations):
        thetas = mean + sigma * rng.standard_normal((args.population, F * ROWS))
        scores = np.array([score(t) for t in thetas])
        elite = thetas[np.argsort(scores)[: args.elite]]
        mean, sigma = elite.mean(axis=0), np.maximum(elite.std(axis=0), 0.02)
        line = f"{it},{scores.mean():.4f},{scores.min():.4f},{score(mean):.4f}"
        curve.write(line + "\n")
        curve.flush()
        print(line, flush=True)
        np.save(out / "theta.npy", mean)  # after every iteration: a stopped search keeps its last mean
        fmt.write_policy(policy_of(mean), out / "policy.dcpol")
print(f"wrote {out / 'policy.dcpol'}; theta {np.round(mean, 3).tolist()}")
