"""The rack's reference points for a learned Malcolm policy: best heuristic, water-filling, the ideal, the zoo.

    python benchmarks/malcolm_ceiling.py [--scenario malcolm_hetero_paper_exp] [--loads 0.7,0.85,0.94 | grid]
        [--tasks 300000] [--seeds 3] [--workers 0] [--policy FILE ...] [--quick] [--fresh]
        [--online-fill [--lr-actor R] [--reward R] [--per-task]]

On each scenario and load, p99 latency (µs, mean ± 95% interval over seeds; common random numbers: a seed is the
same workload for every policy) of the per-task heuristics the issue of a learned rack policy names (SED, JSQ,
JBT, Po2), water-filling with and without steals, and per task with steals (horizon 0.5; with the nominal mean
service time, horizons 0.5 and 1) (the fixed rule in Malcolm's action space, docs/rack.md), the
zoo policy made for the scenario, run from its file in the engine (and any ``--policy`` file, e.g. a ``fill`` file of
benchmarks/malcolm_fill_search.py), and the ideal: central FCFS, the same scenario with every task
entering at one switch. "Gap closed" is (best heuristic - policy) / (best heuristic - central FCFS), per seed,
where the best heuristic is the per-task rule (SED, JSQ, JBT, Po2) of lowest mean p99 at that load. The last
columns hold the zoo policy and each file to the bar of every fixed rule, water-filling included: "vs best rule"
is its mean p99 over the lowest mean p99 of the heuristics and water-filling at that load, minus 1 (`+3.0%`: 3% worse),
the best taken among the rules not censored at that load where there is one. `*` marks a censored cell (drops, or
over 1% of the tasks in flight at the end), the best heuristic's and central FCFS's included.

With ``--online-fill``, instead: the `fill` head learning online in the engine (FillController with learn=True,
docs/policy_runtime.md; its settings are ONLINE_FILL), started from water-filling with steals (zero gains), learning for 10 s of simulated time,
then measured over the next 0.2 s while it keeps learning (seed 1; ``--quick``: 0.05 s and 0.01 s), against the
same file without learning, water-filling with steals and SED over the same window of the same workload; with
``--per-task`` the file and the rule are per task with the nominal mean (horizon 0.5), each decision learned under the
table of its own moment.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.agents.evaluation import evaluate
from dcgym.agents.evaluation.stats import mean_ci
from dcgym.agents.policies.zoo import list_zoo
from dcgym.envs.scenario import load_scenario

HEURISTICS = ("sed", "jsq", "jbt:threshold=1", "po2")
WATER_FILL = (
    "water_fill",
    "water_fill:steal=true",
    "water_fill:steal=true,per_task=true,horizon=0.5",
    "water_fill:steal=true,per_task=true,horizon=0.5,estimate=nominal",
    "water_fill:steal=true,per_task=true,horizon=1,estimate=nominal",
)
ONLINE_FILL = {"learn": True}
"""--online-fill's learner: Algorithm 1's defaults (paper variant, TD(0), the utility reward), as the
"malcolm (online, C++)" rows of benchmarks/malcolm_results.py; --reward picks another of the controller's rewards
(the window is measured on a histogram of its own, which a latency reward does not clear)."""

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--scenario", action="append", help="rack scenario (repeatable; default malcolm_hetero_paper_exp)")
parser.add_argument("--loads", default="0.7,0.85,0.94", help="comma-separated loads, or grid: each scenario's")
parser.add_argument("--tasks", type=int, default=300_000)
parser.add_argument("--seeds", type=int, default=3)
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--policy", action="append", default=[], help="a policy file to run too (repeatable)")
parser.add_argument("--quick", action="store_true", help="a smoke run: one load, one seed, 3,000 tasks")
parser.add_argument(
    "--fresh",
    action="store_true",
    help="every dispatcher sees every node's load as it is (load_info fresh): the rules' information ceiling; the "
    "zoo and --policy files still act on the heartbeat's broadcasts (what Malcolm's agents see)",
)
parser.add_argument("--online-fill", action="store_true", help="the fill head learning online instead (seed 1)")
parser.add_argument("--lr-actor", type=float, help="--online-fill's actor learning rate (default Algorithm 1's, 1e-3)")
parser.add_argument(
    "--per-task",
    action="store_true",
    help="--online-fill from the per-task file with nominal_wait levels (horizon 0.5), as the zoo's files",
)
parser.add_argument(
    "--reward",
    choices=["utility", "imbalance_delta", "neg_p99", "neg_mean"],
    help="--online-fill's reward (default Algorithm 1's, utility: eq. 1)",
)
args = parser.parse_args()
tasks, seeds = (3_000, [1]) if args.quick else (args.tasks, list(range(1, args.seeds + 1)))


def p99s(doc: dict[str, Any]) -> dict[tuple[str, float], dict[int, tuple[float, bool]]]:
    """policy, load -> seed -> (p99, censored)."""
    out: dict[tuple[str, float], dict[int, tuple[float, bool]]] = defaultdict(dict)
    for row in doc["results"]:
        out[row["policy"], row["load"]][row["seed"]] = (row["latency_us"]["p99"], row["censored"])
    return out


def text(values: list[float | None], censored: bool) -> str:
    stat = mean_ci(values)
    mean, ci = stat["mean"], stat["ci95"]
    if mean is None:
        return "-"
    return f"{mean:,.0f}" + (f" ± {ci:,.0f}" if ci is not None else "") + (" *" if censored else "")


def versus(table: dict, label: str, load: float) -> str:
    """label's mean p99 against the best fixed rule's (heuristics and water-filling) at load, as +x%."""

    def mean(policy: str) -> float:
        return statistics.fmean(v for v, _ in table[policy, load].values())

    def censored(policy: str) -> bool:
        return any(c for _, c in table[policy, load].values())

    rules = [*HEURISTICS, *WATER_FILL]
    uncensored = [r for r in rules if not censored(r)]
    best = min(uncensored or rules, key=mean)  # every rule censored: the lowest of them
    note = (" *" if censored(label) else "") + ("" if uncensored else ", every rule censored")
    return f"{100 * (mean(label) / mean(best) - 1):+.1f}% ({best})" + note


def scenario_loads(scenario: Any) -> list[float]:
    if args.quick:
        return [0.94]
    return list(scenario.loads) if args.loads == "grid" else [float(x) for x in args.loads.split(",")]


def online_fill(name: str) -> None:
    """The fill head learning online against the same file fixed, water_fill:steal=true and SED (one window)."""
    import _online as ol

    from dcgym.agents import policy_format as fmt
    from dcgym.agents.malcolm.fill import water_fill_policy
    from dcgym.cpp_core import FillController

    learn_us, measure_us, seed = (50_000.0, 10_000.0, 1) if args.quick else (10e6, 0.2e6, 1)
    windows = [(learn_us, learn_us + measure_us)]
    scenario = load_scenario(name)
    rule = "water_fill:steal=true" + (",per_task=true,horizon=0.5,estimate=nominal" if args.per_task else "")
    metric = "nominal_wait" if args.per_task else "expected_wait"
    data = fmt.to_bytes(
        water_fill_policy(
            scenario, steal=True, per_task=args.per_task, horizon=0.5 if args.per_task else 2.0, metric=metric
        )
    )
    print(
        f"\n{name}, fill head online: p99 (µs) of the tasks completed in [{learn_us / 1e6:g} s, "
        f"{(learn_us + measure_us) / 1e6:g} s), seed {seed}\n"
    )
    print(f"| load | fill, learning online | fill, fixed (zero gains) | {rule} | sed | tasks | largest learned gain |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for load in scenario_loads(scenario):
        cfg = ol.malcolm_config(name, load, seed)
        cfg["dispatch"] = {**cfg["dispatch"], "metric": metric}
        p99 = {}
        learn = ONLINE_FILL | ({} if args.lr_actor is None else {"lr_actor": args.lr_actor})
        learn |= {} if args.reward is None else {"reward": args.reward}
        for label, options in (("learn", learn), ("fixed", None)):
            ctl = FillController(cfg, data, 100.0, options=options)
            window = ol.run_windows(
                lambda t, c=ctl: c.run(int(np.ceil((t - c.sim.now_us) / 100.0 - 1e-9))), ctl.sim, windows
            )[0]
            p99[label] = window
            if label == "learn":
                gain = float(np.abs(ctl.parameters()["gains"]).max())
        for policy in (rule, "sed"):
            p99[policy] = ol.heuristic(scenario.engine_config(load, seed, policy=policy), windows)["windows"][0]
        cells = " | ".join(f"{p99[k]['p99']:,.0f}" for k in ("learn", "fixed", rule, "sed"))
        print(f"| {load:g} | {cells} | {p99['learn']['count']:,} | {gain:.3g} |")


for name in args.scenario or ["malcolm_hetero_paper_exp"]:
    if args.online_fill:
        online_fill(name)
        continue
    scenario = load_scenario(name, {"load_info": {"model": "fresh"}} if args.fresh else None)
    loads = scenario_loads(scenario)
    zoo = [f"zoo:{z}" for z in list_zoo() if z == name.replace("_paper", "")]
    runs = evaluate(
        scenario, [*HEURISTICS, *WATER_FILL, *zoo, *args.policy], loads, tasks, seeds=seeds, workers=args.workers
    )
    ideal = evaluate(
        load_scenario(name, {"entry": {"kind": "switch"}, "dispatch": "central_fcfs"}),
        ["central_fcfs"],
        loads,
        tasks,
        seeds=seeds,
        workers=args.workers,
    )
    table = p99s(runs) | p99s(ideal)
    files = [Path(f).name.removesuffix(".dcpol") + " (file)" for f in args.policy]
    labels = [*(z.removeprefix("zoo:") + " (zoo)" for z in zoo), *WATER_FILL, *files]
    fresh = " with every load fresh (the zoo and files: the heartbeat's broadcasts)" if args.fresh else ""
    print(f"\n{name}{fresh}, p99 (µs), {tasks:,} tasks per run, seeds {seeds}; * censored\n")
    judged = labels[: len(zoo)] + labels[len(zoo) + len(WATER_FILL) :]  # the zoo policy and the files
    print(
        "| load | best heuristic | "
        + " | ".join(labels)
        + " | central FCFS | "
        + " | ".join(f"gap closed: {label}" for label in labels)
        + "".join(f" | vs best rule: {label}" for label in judged)
        + " |"
    )
    print("|---:|---|" + "---:|" * (2 * len(labels) + 1 + len(judged)))
    for load in loads:
        best = min(HEURISTICS, key=lambda h: statistics.fmean(v for v, _ in table[h, load].values()))
        reference = [table["central_fcfs", load][s][0] for s in seeds]
        cells, gaps = [], []
        for label in labels:
            got = table[label, load]
            cells.append(text([got[s][0] for s in seeds], any(c for _, c in got.values())))
            shares = [  # no share where the best heuristic is already at the ideal
                100 * (table[best, load][s][0] - got[s][0]) / (table[best, load][s][0] - reference[k])
                if table[best, load][s][0] > reference[k]
                else None
                for k, s in enumerate(seeds)
            ]
            gaps.append(text(shares, False) + "%")
        best_runs = table[best, load]
        best_cell = f"{best} {text([best_runs[s][0] for s in seeds], any(c for _, c in best_runs.values()))}"
        ideal_censored = any(c for _, c in table["central_fcfs", load].values())
        print(
            f"| {load:g} | {best_cell} | "
            + " | ".join(cells)
            + f" | {text(reference, ideal_censored)} | "
            + " | ".join(gaps)
            + "".join(f" | {versus(table, label, load)}" for label in judged)
            + " |"
        )
