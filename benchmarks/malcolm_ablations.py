"""Ablations of Malcolm learning online in the engine: which choice makes it fail where it does.

At two operating points where Malcolm falls short (docs/results/malcolm.md), the C++ learner
(RackController(learn=True), the paper's defaults unless changed) learns from random parameters for
10 s of simulated time (100 000 heartbeats of 100 us); the p99 of the tasks completed in the next
0.2 s (still learning) and the tasks dropped then are printed as Markdown rows, one per variant:
the authors' code variant, the code's reward (imbalance decrease), a 10x smaller actor learning
rate, and other bases for the critic and the actors.

    python benchmarks/malcolm_ablations.py
"""

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
from dcgym.cpp_core import RackController
print("| scenario | load | variant | p99 (us) | dropped |")
print("|---|---|---|---|---|")
for scen, load in cases:
    for name, opts in variants.items():
        cfg = ol.malcolm_config(scen, load, 1)
        ctl = RackController(cfg, {"learn": True, **opts}, seed=1)
        ctl.run(100000)
        sim = ctl.sim; sim.step_latency(reset=True); d0 = sim.results()["tasks_dropped"]
        ctl.run(2000)
        h = sim.step_latency(reset=True)
        print(f"| {scen} | {load} | {name} | {h['p99']:,.0f} | {sim.results()['tasks_dropped'] - d0} |", flush=True)
