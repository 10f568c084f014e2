"""The results tables of Malcolm against the heuristics, from train.py run folders.

Each run folder's final evaluation (``evaluation/results.json``: the trained
nodes and the heuristics on the same tasks at every load of the scenario's
grid) becomes two tables in Markdown:

- p99 latency (us) per policy and load; a run that dropped more than 0.1% of
  its tasks at full queues is marked with its drop rate (dropped tasks are not
  in the latency statistics, so its p99 understates what users would see);
- the highest grid load each policy sustains: p99 <= SLO and drops <= 0.1%
  at that load and every lower one, with the throughput (KTPS) there. The
  SLO is 10 x the mean service time, or twice the best p99 at the grid's
  lowest load where that is larger (heavy-tailed service: HyperExp-2's tasks
  alone have a p99 of about 20 x their mean, so no policy could meet 10 x).

With ``--online``, a row "malcolm (online, C++)" is added: Malcolm as the
paper deploys it, learning online at each load of the grid (the C++ learner
in the engine, from random parameters, 10 s of simulated time), measured over
the next 0.2 s while it keeps learning (other tasks than the evaluation's,
the same rack and load).

    python benchmarks/malcolm_results.py [--online] runs/malcolm_hetero_paper_exp__malcolm__1__* ... > docs/results/x.md
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from dcgym.cpp_core import Distribution
from dcgym.envs.scenario import load_scenario

SLO_SERVICE_TIMES = 10.0
MAX_DROP_FRACTION = 1e-3
ONLINE_LEARN_US, ONLINE_MEASURE_US = 10e6, 0.2e6


def dropped_fraction(row: dict) -> float:
    done = row["tasks_completed"] + row["tasks_dropped"]
    return row["tasks_dropped"] / done if done else 0.0


def meets_slo(row: dict, slo_us: float) -> bool:
    return row["latency_us"]["p99"] <= slo_us and dropped_fraction(row) <= MAX_DROP_FRACTION


def online_rows(scenario: str, loads: list[float], seed: int) -> list[dict]:
    """Malcolm learning online at each load: result rows shaped like the evaluation's."""
    import _online as ol

    rows = []
    for load in loads:
        cfg = ol.malcolm_config(scenario, load, seed)
        out = ol.malcolm_online(cfg, [(ONLINE_LEARN_US, ONLINE_LEARN_US + ONLINE_MEASURE_US)], seed=seed)
        window = out["windows"][0]
        rows.append(
            {
                "policy": "malcolm (online, C++)",
                "load": load,
                "latency_us": {"p99": window["p99"]},
                "tasks_completed": window["count"],
                "tasks_dropped": window["dropped"],
                "throughput_ktps": window["count"] / ONLINE_MEASURE_US * 1e3,
            }
        )
    return rows


def tables(run: Path, online: bool = False) -> str:
    doc = json.loads((run / "evaluation/results.json").read_text(encoding="utf-8"))
    status = json.loads((run / "run.json").read_text(encoding="utf-8"))
    with (run / "metrics.csv").open(newline="") as f:
        train_s = float(list(csv.DictReader(f))[-1]["time_s"])
    scenario = load_scenario(doc["scenario"])
    mean_us = Distribution(scenario.engine_config(load=0.5, seed=0)["service"]).mean
    rows = doc["results"]
    if online:
        rows = rows + online_rows(doc["scenario"], sorted({r["load"] for r in rows}), doc["seed"])
    lowest = min(r["load"] for r in rows)
    floor = min(r["latency_us"]["p99"] for r in rows if r["load"] == lowest)
    slo = max(SLO_SERVICE_TIMES * mean_us, 2.0 * floor)
    slo_text = (
        f"p99 <= {slo:,.0f} us (10 x the mean service time {mean_us:g} us)"
        if slo == SLO_SERVICE_TIMES * mean_us
        else f"p99 <= {slo:,.0f} us (twice the best p99 at load {lowest:g}, more than 10 x the mean service "
        f"time, {SLO_SERVICE_TIMES * mean_us:,.0f} us, for this heavy-tailed service)"
    )
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    loads = sorted({r["load"] for r in rows})
    at = {(r["policy"], r["load"]): r for r in rows}
    out = [
        f"### {doc['scenario']}",
        "",
        f"{scenario.description}",
        "",
        f"Run `{run.name}` ({status['iteration']} iterations, {train_s / 60:.1f} min "
        f"of training wall time; command `{status['commands'][0]}`); evaluation: {doc['tasks']:,} tasks per run, seed {doc['seed']}. "
        f"SLO: {slo_text}, drops <= 0.1%.",
        "",
        "p99 latency (us) per load; `(d x%)`: x% of the tasks dropped at full queues:",
        "",
        "| policy | " + " | ".join(f"{load:g}" for load in loads) + " |",
        "|---" * (len(loads) + 1) + "|",
    ]
    for p in policies:
        cells = []
        for load in loads:
            r = at.get((p, load))
            if r is None:
                cells.append("")
                continue
            cell = f"{r['latency_us']['p99']:,.0f}"
            if dropped_fraction(r) > MAX_DROP_FRACTION:
                cell += f" (d {100 * dropped_fraction(r):.1f}%)"
            cells.append(f"**{cell}**" if meets_slo(r, slo) else cell)
        out.append(f"| {p} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Highest grid load within the SLO (at it and every lower grid load):",
        "",
        "| policy | highest load | throughput there (KTPS) |",
        "|---|---|---|",
    ]
    for p in policies:
        best = None
        for load in loads:
            r = at.get((p, load))
            if r is None or not meets_slo(r, slo):
                break
            best = r
        out.append(f"| {p} | {best['load']:g} | {best['throughput_ktps']:,.0f} |" if best else f"| {p} | none | - |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="train.py run folders")
    parser.add_argument("--online", action="store_true", help="add Malcolm learning online at each load (C++)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: online learning for 0.05 s, not 10 s")
    args = parser.parse_args()
    global ONLINE_LEARN_US
    if args.quick:
        ONLINE_LEARN_US = 0.05e6
    print("\n".join(tables(run, args.online) for run in args.runs))


if __name__ == "__main__":
    main()
