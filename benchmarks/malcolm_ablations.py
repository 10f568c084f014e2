"""Ablations of Malcolm learning online in the engine: which choice makes it fail where it does.

At two operating points where Malcolm falls short (docs/results/malcolm.md), the C++ learner
(RackController(learn=True), the paper's defaults unless changed) learns from random parameters for
10 s of simulated time (100 000 heartbeats of 100 us); the p99 of the tasks completed in the next
0.2 s (still learning) and the tasks dropped then are printed as Markdown rows, one per variant:
the authors' code variant, the code's reward (imbalance decrease), a 10x smaller actor learning
rate, and other bases for the critic and the actors. Each variant runs for seeds 1..--seeds (the
tasks and the initial parameters); the median and the per-seed values are printed, because at these
operating points online learning is chaotic: a change in the last bits of the exponentials, or another
seed, can move one run between holding and diverging.

    python benchmarks/malcolm_ablations.py --seeds 3
"""

import argparse
import statistics

import _online as ol

cases = [("malcolm_hetero_paper_exp", 0.94), ("malcolm_hetero_paper_hyperexp1", 0.85)]
variants = {
    "paper (defaults)": {},
    "code variant": {"variant": "code"},
    "paper, reward utility->imbalance_delta": {"reward": "imbalance_delta"},
    "paper, actor lr 1e-4": {"lr_actor": 1e-4},
    "paper, critic basis quadratic": {"critic_basis": "quadratic"},
    "paper, actor basis raw": {"actor_basis": "raw"},
}
from dcgym.cpp_core import RackController  # noqa: E402 (after the table above, as the script reads)

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N per variant (default 3)")
parser.add_argument("--quick", action="store_true", help="a smoke run: one case, two variants, 2000 heartbeats")
args = parser.parse_args()
LEARN_HEARTBEATS = 2000 if args.quick else 100000
if args.quick:
    cases, variants = cases[:1], dict(list(variants.items())[:2])
print("| scenario | load | variant | p99 (us), median | p99 per seed | dropped in 0.2 s, per seed |")
print("|---|---|---|---|---|---|")
for scen, load in cases:
    for name, opts in variants.items():
        p99s, drops = [], []
        for seed in range(1, args.seeds + 1):
            cfg = ol.malcolm_config(scen, load, seed)
            ctl = RackController(cfg, {"learn": True, **opts}, seed=seed)
            ctl.run(LEARN_HEARTBEATS)
            sim = ctl.sim
            sim.window_latency(reset=True)
            d0 = sim.results()["tasks_dropped"]
            ctl.run(2000)
            p99s.append(sim.window_latency(reset=True)["p99"])
            drops.append(sim.results()["tasks_dropped"] - d0)
        print(
            f"| {scen} | {load} | {name} | {statistics.median(p99s):,.0f} | "
            f"{' / '.join(f'{v:,.0f}' for v in p99s)} | {' / '.join(str(d) for d in drops)} |",
            flush=True,
        )
