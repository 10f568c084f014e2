"""sRLA's ceiling at the paper's load: the best static MLFQ threshold set, searched in the engine.

sRLA chooses K - 1 MLFQ thresholds; the best *fixed* set is the most a policy in its action space can reach
on stationary traffic. This script finds it by coordinate descent over a log grid of packets
(:func:`dcgym.agents.evaluation.flow_thresholds.search_thresholds`, common random numbers over seeds), cheaply:
a coarse grid (2 points per octave) on short runs, then a fine grid (4 per octave) from the coarse answer, and
confirms the answer against QLAS's preset on the evaluation's runs (20,000 flows, seeds 1-3, paired).

Cases:

- ``websearch``: ``auto_websearch`` at 0.8 (every port at 80%), from QLAS's ``pias_ws`` set;
- ``datamining``: ``auto_datamining`` at 0.8, from QLAS's ``pias_dm`` set;
- ``dynamic``: ``auto_dynamic`` at 0.8. The best set for each phase of the schedule is searched on that phase's
  traffic held stationary (the four clusters' sizes and loads of that period), and the reference row switches
  to it at each change (``FlowSim.set_thresholds`` at the phase boundaries); the row is compared with QLAS's
  web-search and data-mining sets held through the whole schedule (the paper's baselines).

    python benchmarks/auto_ceiling.py --case websearch --json out/auto_ceiling_ws.json
    python benchmarks/auto_ceiling.py --case datamining --flows 5000 --fine-sweeps 1 --json out/auto_ceiling_dm.json
    python benchmarks/auto_ceiling.py --case dynamic --flows 5000 --fine-sweeps 0 --json out/auto_ceiling_dyn.json
    python benchmarks/auto_ceiling.py --quick                 # seconds: a coarse grid on small runs
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.agents.evaluation.family import WARMUP_FRACTION
from dcgym.agents.evaluation.flow import measure
from dcgym.agents.evaluation.flow_thresholds import search_thresholds
from dcgym.agents.heuristics.flow import packet_grid
from dcgym.cpp_core import FlowSim
from dcgym.envs.flow.thresholds import PACKET_BYTES, preset_thresholds
from dcgym.envs.scenario import load_scenario

LOAD = 0.8


def search(scenario: Any, start: Sequence[int], args) -> dict[str, Any]:
    """Coarse then fine coordinate descent from ``start`` (packets); the set found, its cost and the evaluations."""
    flows, seeds = args.flows, args.seeds
    coarse = search_thresholds(
        scenario,
        LOAD,
        "qlas",
        flows=flows,
        seeds=seeds,
        grid=packet_grid(1 if args.quick else 2),
        start=start,
        sweeps=3,
    )
    if args.quick or args.fine_sweeps == 0:
        return {"packets": coarse.packets, "search_mean_fct_ms": coarse.mean_fct_ms, "evaluations": coarse.evaluations}
    fine = search_thresholds(
        scenario,
        LOAD,
        "qlas",
        flows=flows,
        seeds=seeds,
        grid=packet_grid(4),
        start=coarse.packets,
        sweeps=args.fine_sweeps,
    )
    return {
        "packets": fine.packets,
        "search_mean_fct_ms": fine.mean_fct_ms,
        "evaluations": coarse.evaluations + fine.evaluations,
    }


def run(
    scenario: Any, packets_at: Callable[[float], Sequence[int]], flows: int, seed: int, boundaries: Sequence[float] = ()
) -> dict[str, float]:
    """One evaluation run (10% warm-up, measured flows to completion) of QLAS with 4 levels whose thresholds are
    ``packets_at(t)``, set again at each of ``boundaries`` (s); mean FCT (ms) and the share of flows left out."""
    warmup = math.floor(WARMUP_FRACTION * flows)

    def spec(t: float) -> dict[str, Any]:
        return {"policy": "qlas", "priorities": 4, "thresholds": [p * PACKET_BYTES for p in packets_at(t)]}

    config = scenario.engine_config(LOAD, seed, spec(0.0), warmup_flows=warmup, measure_flows=flows - warmup)
    sim = FlowSim(config)
    step = None
    if boundaries:
        pending = sorted(boundaries)

        def step() -> None:
            target = sim.now_s + 0.01
            while pending and pending[0] <= target:
                sim.run_until(pending[0])
                sim.set_thresholds([p * PACKET_BYTES for p in packets_at(pending.pop(0))])
            sim.run_until(target)

    left = measure(sim, flows, warmup, step)
    return {
        "mean_fct_ms": sim.results()["fct_s"]["all"]["mean"] * 1e3,
        "left_out": left["in_flight"] / (flows - warmup),
    }


def confirm(rows: dict[str, Callable[[float], Sequence[int]]], scenario, flows, seeds, boundaries=()) -> dict:
    """Each row's mean FCT per seed on the evaluation's runs, and its paired difference from the first row's."""
    out = {
        name: [run(scenario, at, flows, s, boundaries if name.startswith("per-phase") else ()) for s in seeds]
        for name, at in rows.items()
    }
    reference = [r["mean_fct_ms"] for r in next(iter(out.values()))]
    return {
        name: {
            "mean_fct_ms": float(np.mean([r["mean_fct_ms"] for r in runs])),
            "per_seed_ms": [r["mean_fct_ms"] for r in runs],
            "against_first_pct": [100 * (r["mean_fct_ms"] / ref - 1) for r, ref in zip(runs, reference)],
            "left_out_max": max(r["left_out"] for r in runs),
        }
        for name, runs in out.items()
    }


def phases(scenario: Any) -> list[tuple[float, list[dict[str, Any]]]]:
    """(start time, the groups' sizes and loads) of each period of the scenario's schedule."""
    groups = [g.model_dump() for g in scenario.workload.groups]
    out = [(0.0, [dict(g) for g in groups])]
    for change in scenario.workload.dynamics:
        if change.time_s > out[-1][0]:
            out.append((change.time_s, [dict(g) for g in out[-1][1]]))
        for i in range(len(groups)) if change.group is None else [change.group]:
            if change.sizes is not None:
                out[-1][1][i]["sizes"] = change.sizes
            if change.relative_load is not None:
                out[-1][1][i]["relative_load"] = change.relative_load
    return out


def stationary(args, name: str, preset_name: str) -> dict[str, Any]:
    """The best static set on scenario ``name``, searched from QLAS's ``preset_name`` set and confirmed against it."""
    scenario = load_scenario(name)
    preset = list(preset_thresholds(preset_name, "mlfq", 4).packets)
    found = search(scenario, preset, args)
    rows = {f"qlas ({preset_name})": lambda t: preset, "best static": lambda t: found["packets"]}
    return {"search": found, "confirm": confirm(rows, scenario, args.confirm_flows, args.confirm_seeds)}


def dynamic(args) -> dict[str, Any]:
    scenario = load_scenario("auto_dynamic")
    ws = list(preset_thresholds("pias_ws", "mlfq", 4).packets)
    dm = list(preset_thresholds("pias_dm", "mlfq", 4).packets)
    schedule = phases(scenario)
    found: dict[str, dict[str, Any]] = {}
    for start_s, groups in schedule:
        key = json.dumps(groups, sort_keys=True)
        if key in found:
            continue
        held = load_scenario("auto_dynamic", {"workload.groups": groups, "workload.dynamics": []})
        t0 = time.perf_counter()
        found[key] = search(held, ws, args)
        print(f"  phase from {start_s:g} s: {found[key]} [{time.perf_counter() - t0:.0f} s]", flush=True)
    sets = [(start_s, found[json.dumps(groups, sort_keys=True)]["packets"]) for start_s, groups in schedule]

    def per_phase(t: float) -> list[int]:
        return [p for s, p in sets if s <= t + 1e-12][-1]

    # One set for the whole schedule, searched on the schedule itself (runs long enough to cover it).
    whole = search(scenario, ws, argparse.Namespace(**{**vars(args), "flows": args.whole_flows}))
    print(f"  whole schedule: {whole}", flush=True)
    rows = {
        "qlas (pias_ws held)": lambda t: ws,
        "qlas (pias_dm held)": lambda t: dm,
        "per-phase best static": per_phase,
        "best static (whole schedule)": lambda t: whole["packets"],
    }
    boundaries = [s for s, _ in sets[1:]]
    return {
        "phases": [{"start_s": s, "packets": p} for s, p in sets],
        "whole_schedule": whole,
        "confirm": confirm(rows, scenario, args.confirm_flows, args.confirm_seeds, boundaries),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=["websearch", "datamining", "dynamic"], default="websearch")
    ap.add_argument("--flows", type=int, default=10_000, help="arrivals per search run and seed (10%% warm-up)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="the search's seeds")
    ap.add_argument("--whole-flows", type=int, default=12_000, help="dynamic: arrivals per whole-schedule search run")
    ap.add_argument("--fine-sweeps", type=int, default=2, help="sweeps on the fine grid (0: the coarse answer)")
    ap.add_argument("--confirm-flows", type=int, default=20_000, help="arrivals per confirming run")
    ap.add_argument("--confirm-seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--quick", action="store_true", help="1 point per octave, 1,000 flows, one seed")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    if args.quick:
        args.flows, args.seeds, args.confirm_flows, args.confirm_seeds = 1_000, [1], 1_000, [1]
        args.whole_flows = 1_000
    start = time.perf_counter()
    if args.case == "dynamic":
        result = dynamic(args)
    else:
        result = stationary(args, f"auto_{args.case}", {"websearch": "pias_ws", "datamining": "pias_dm"}[args.case])
    result.update(case=args.case, load=LOAD, flows=args.flows, seeds=args.seeds, wall_s=time.perf_counter() - start)
    result.update(confirm_flows=args.confirm_flows, confirm_seeds=args.confirm_seeds)
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
