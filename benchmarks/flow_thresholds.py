"""Thresholds for the flow family's ranked policies: PIAS's M/M/1-per-queue model and a search in the simulator.

For each workload (web search on ``auto_websearch``, data mining on
``auto_datamining``: AuTO's testbed at load 0.8, as AuTO's baselines use
"thresholds from PIAS's method at 80% load"), each discipline (MLFQ for
QLAS/PIAS, QSJF) and each number of levels, prints:

- ``model``: PIAS's threshold model (Bai et al., NSDI 2015 §4.2) minimised on
  a log grid (:func:`dcgym.agents.heuristics.flow.model_thresholds`), with
  the mean FCT those thresholds give in the simulator;
- ``search``: coordinate descent on the simulator's mean FCT
  (:func:`dcgym.agents.evaluation.flow_thresholds.search_thresholds`), from the model's
  answer, and the mean FCT it reaches;
- ``preset``: the set stored in :mod:`dcgym.envs.flow.thresholds` and its mean FCT.

All sets are in 1460-byte packets; every mean FCT is over the same flows
(common random numbers). The presets' *model* entries are this script's
output: PIAS's model at load 0.8 (docs/flow.md, "Baselines").

    python benchmarks/flow_thresholds.py                # about 20 minutes on one core
    python benchmarks/flow_thresholds.py --quick        # a few seconds: small runs, a coarse grid
    python benchmarks/flow_thresholds.py --json out/flow_thresholds.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from dcgym.agents.evaluation.flow_thresholds import search_thresholds
from dcgym.agents.heuristics.flow import model_thresholds, packet_grid
from dcgym.cpp_core import flow_workloads
from dcgym.envs.flow.thresholds import PACKET_BYTES, preset_thresholds
from dcgym.envs.scenario import load_scenario

CASES = [
    # (scenario, preset, engine discipline, policy name, levels)
    ("auto_websearch", "pias_ws", "mlfq", "qlas", 4),
    ("auto_websearch", "pias_ws", "qsjf", "qsjf", 4),
    ("auto_datamining", "pias_dm", "mlfq", "qlas", 4),
    ("auto_datamining", "pias_dm", "qsjf", "qsjf", 4),
    ("auto_websearch", "pias_ws", "qsjf", "qsjf", 8),
    ("auto_datamining", "pias_dm", "qsjf", "qsjf", 8),
]
LOAD = 0.8


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2,000 flows per evaluation, one seed, a coarse grid")
    ap.add_argument("--flows", type=int, default=50_000, help="arrivals per evaluation and seed (10%% warm-up)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    flows, seeds, grid, sweeps = args.flows, (1, 2), packet_grid(4), 4
    cases = CASES
    if args.quick:
        flows, seeds, grid, sweeps, cases = 2_000, (1,), packet_grid(1), 1, CASES[:1]
    sizes = flow_workloads()
    out = []
    for scenario_name, preset, discipline, policy, levels in cases:
        scenario = load_scenario(scenario_name)
        workload = scenario.workload.sizes
        start = time.perf_counter()
        model = model_thresholds(sizes[workload], LOAD, levels, discipline, grid=grid)
        # The model may repeat a threshold (a collapsed queue); the search starts from it all the same.
        kwargs = {"policy": policy, "levels": levels, "flows": flows, "seeds": seeds, "grid": grid, "sweeps": sweeps}
        at_model = search_thresholds(scenario, LOAD, start=model, **{**kwargs, "sweeps": 0})
        found = search_thresholds(scenario, LOAD, start=model, **kwargs)
        stored = list(preset_thresholds(preset, discipline, levels).packets)
        at_preset = search_thresholds(scenario, LOAD, start=stored, **{**kwargs, "sweeps": 0})
        row = {
            "scenario": scenario_name,
            "preset": preset,
            "discipline": discipline,
            "levels": levels,
            "model_packets": model,
            "model_mean_fct_ms": at_model.mean_fct_ms,
            "search_packets": found.packets,
            "search_mean_fct_ms": found.mean_fct_ms,
            "search_evaluations": found.evaluations,
            "preset_packets": stored,
            "preset_mean_fct_ms": at_preset.mean_fct_ms,
            "flows": flows,
            "seeds": list(seeds),
            "wall_s": time.perf_counter() - start,
        }
        out.append(row)
        print(
            f"{scenario_name} {discipline} K={levels} (load {LOAD}, {flows:,} flows x {len(seeds)} seeds, "
            f"packets of {PACKET_BYTES} B)\n"
            f"  model  {model}: mean FCT {at_model.mean_fct_ms:.3f} ms\n"
            f"  search {found.packets}: mean FCT {found.mean_fct_ms:.3f} ms ({found.evaluations} evaluations)\n"
            f"  preset {stored}: mean FCT {at_preset.mean_fct_ms:.3f} ms   [{row['wall_s']:.0f} s]",
            flush=True,
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
