"""Malcolm §7.4 Fig. 10 (baselines only): p99 of decentralized Po2 / JSQ / JBT vs the load-propagation period.

The homogeneous rack (10 nodes x 10 workers, Exp(75), queue capacity 320;
scenario malcolm_homog_exp) at 80% load. Clients send each task to a node
at random; the node's load manager runs Po2, JSQ or JBT over queue lengths
(tasks waiting, §7.1): its own exactly, the others' from broadcasts every
`period_us` (received 2 us later), each raised by one for every task it has
sent there since ("L + 1", §7.1). Migrations take 2 us. RAND (accept every
task) needs no load information and is the flat reference. The paper's
claim: Po2, JSQ and JBT degrade as the period grows from 100 us to 1 ms
(Malcolm itself, which learns, stays flat; it is not run here).

Two more panels show how much the answer depends on the setting: the same
rack at 90% load, and at 80% without the "L + 1" local update.

    python benchmarks/reproduce_malcolm_fig10_baselines.py --tasks 1000000 --seeds 3 --out docs/reproductions
"""

from __future__ import annotations

import sys
import time

import _reproduce as rp

SCENARIO = "malcolm_homog_exp"
PERIODS = [100, 200, 300, 500, 750, 1000]
POLICIES = {  # queue lengths (§7.1); JBT's threshold is not given: 1 = join a node with nobody waiting
    "Po2": {"policy": "po_d", "d": 2, "metric": "queue"},
    "JSQ": {"policy": "jsq", "metric": "queue"},
    "JBT": {"policy": "jbt", "metric": "queue", "threshold": 1.0},
}
# Fig. 10's setting, spelled out here so the figure does not depend on the scenario's defaults: clients pick
# a node at random, broadcasts arrive 2 us after they are sent, migrations take 2 us (one way, §2 note 1).
DECENTRALIZED = {"entry": {"kind": "nodes", "count": 1, "split": []}, "migration": {"delay_us": 2.0}}
BROADCAST_DELAY_US = 2.0
PANELS = {  # title: (load, local_increment)
    "80% load (paper)": (0.8, True),
    "90% load": (0.9, True),
    "80% load, no L+1 update": (0.8, False),
}


def main() -> None:
    args = rp.cli(__doc__, tasks=1_000_000, seeds=3)
    start = time.perf_counter()
    seeds = range(1, args.seeds + 1)
    points = []
    for panel, (load, inc) in PANELS.items():
        for name, pol in POLICIES.items():
            for period in [*PERIODS, "fresh"]:
                li = (
                    {"model": "fresh"}
                    if period == "fresh"
                    else {
                        "model": "periodic",
                        "period_us": period,
                        "delay_us": BROADCAST_DELAY_US,
                        "local_increment": inc,
                    }
                )
                points += [
                    rp.Point((panel, name, period), rp.config(SCENARIO, load, s, pol, load_info=li, **DECENTRALIZED))
                    for s in seeds
                ]
        points += [
            rp.Point((panel, "RAND", None), rp.config(SCENARIO, load, s, "random", **DECENTRALIZED)) for s in seeds
        ]
    results = rp.run_points(points, args.tasks, args.jobs)
    p99 = rp.by_label(points, results)
    migrated = rp.by_label(points, results, lambda r: r["migrations"] / r["arrived"])
    dropped = rp.by_label(points, results, lambda r: 100 * r["dropped"] / r["arrived"])

    fig, axes = rp.plt.subplots(1, len(PANELS), figsize=(15, 4.2))
    rows = []
    for ax, panel in zip(axes, PANELS, strict=True):
        for k, name in enumerate(POLICIES):
            st = [p99[(panel, name, x)] for x in PERIODS]
            ax.errorbar(
                PERIODS,
                [s.mean for s in st],
                yerr=[[s.mean - s.lo for s in st], [s.hi - s.mean for s in st]],
                marker="o",
                ms=3,
                capsize=2,
                color=f"C{k}",
                label=name,
            )
            rows.append(
                [panel, name, p99[(panel, name, "fresh")].fmt()]
                + [p99[(panel, name, x)].fmt() for x in PERIODS]
                + [
                    f"{migrated[(panel, name, 100)].mean:.2f} / {migrated[(panel, name, 1000)].mean:.2f}",
                    f"{max(dropped[(panel, name, x)].mean for x in PERIODS):.2f}",
                ]
            )
        rand = p99[(panel, "RAND", None)]
        ax.axhline(rand.mean, color="grey", ls="--", lw=1, label="RAND")
        rows.append(
            [panel, "RAND", rand.fmt()]
            + [rand.fmt()] * len(PERIODS)
            + ["0", f"{dropped[(panel, 'RAND', None)].mean:.2f}"]
        )
        ax.set(title=panel, xlabel="load-propagation period (us)", ylabel="p99 latency (us)", xscale="log")
        ax.set_xticks(PERIODS, [str(x) for x in PERIODS])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Malcolm Fig. 10 baselines: 10 x 10 workers, Exp(75), decentralized, queue-length loads ({args.seeds} seeds, range as bars)"
    )
    elapsed = time.perf_counter() - start

    def cell(panel: str, name: str, x) -> float:
        return p99[(panel, name, x)].mean

    paper = "80% load (paper)"
    text = f"""
# Malcolm Fig. 10 (baselines): Po2 / JSQ / JBT vs the load-propagation period

Generated by `python benchmarks/reproduce_malcolm_fig10_baselines.py --tasks {args.tasks} --seeds {args.seeds} --out {args.out}`
({len(points)} runs, {elapsed:.0f} s on {args.jobs} processes). Engine: scenario `{SCENARIO}` (10 nodes x 10
workers, Exp(75), queue capacity 320, entry `nodes`, metric `queue`, JBT threshold 1, broadcasts received
2 us after they are sent, migrations 2 us) with `load_info.period_us` varied. p99 in us, mean over seeds
(range in brackets); "fresh" = every load visible at once. A task arriving at a full queue (320) is dropped
and left out of the latency statistics; the last column is the largest dropped fraction over the periods.

![p99 vs period](malcolm_fig10_baselines.png)

{rp.md_table(["setting", "policy", "fresh", *[f"{x} us" for x in PERIODS], "migrated at 100 / 1000 us", "dropped, max (%)"], rows)}

## Verdict

- **Agrees for Po2.** At the paper's 80% load Po2's p99 rises from {cell(paper, "Po2", 100):.0f} us (100 us
  period) to {cell(paper, "Po2", 1000):.0f} us (1 ms), ending {"above" if cell(paper, "Po2", 1000) > cell(paper, "RAND", None) else "near"}
  RAND ({cell(paper, "RAND", None):.0f} us); at 90% load the rise is {cell("90% load", "Po2", 100):.0f} ->
  {cell("90% load", "Po2", 1000):.0f} us. Po2 migrates almost every task (it samples two nodes out of ten,
  usually not itself), so stale loads steer nearly all traffic.
- **Differs for JSQ and JBT.** With the paper's "L + 1" update they stay flat
  ({cell(paper, "JSQ", 100):.0f} -> {cell(paper, "JSQ", 1000):.0f} us and {cell(paper, "JBT", 100):.0f} ->
  {cell(paper, "JBT", 1000):.0f} us at 80%; {cell("90% load", "JSQ", 100):.0f} -> {cell("90% load", "JSQ", 1000):.0f} us for
  JSQ at 90%). Why: a node always knows its own queue, and its beliefs about the others only go up between
  broadcasts (the increments), so as the period grows a load manager keeps more of its tasks (the migrated
  fraction falls, "migrated" column) and sends the rest to nodes that really had room; ties are broken at random,
  so ten load managers do not all pick the same node. At 10 workers per node and 80% load the queues are
  mostly empty, and even fresh JSQ is only {100 * (1 - cell(paper, "JSQ", "fresh") / cell(paper, "RAND", None)):.0f}% below RAND: there is
  little room to degrade.
- **Without the L + 1 update** (right panel) JSQ and JBT herd - every load manager sends to the same node
  until the next broadcast - and degrade sharply with the period (JSQ {cell("80% load, no L+1 update", "JSQ", 100):.0f} ->
  {cell("80% load, no L+1 update", "JSQ", 500):.0f} us at 500 us, and full queues start dropping tasks), which is the
  shape of the paper's figure; at the longest periods the drops cap the queues and p99 stops growing. The paper's
  testbed may differ in ways the text does not state (how stale its own-queue reads are, how broadcasts
  interleave with migrations, the JBT threshold), so its degradation of JSQ/JBT is not reproduced with the
  setting as described.
"""
    rp.write_page(args.out, "malcolm_fig10_baselines", text, fig)


if __name__ == "__main__":
    sys.exit(main())
