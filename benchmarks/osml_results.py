"""OSML against PARTIES, CLITE and the Oracle on a colo mix set, with 95% intervals over seeds; and the warm-up study.

Runs every scheduler on every mix of the scenario (default the headline set, ``osml_mixes_heavy``) for each seed and
prints one table per warm-up slowdown: mixes converged, mean convergence time over the converged runs, the share of
samples within QoS, cores and ways (means over every run), each a mean over seeds with the half-width of its 95%
t-interval (the spread of the per-seed means); then, per pair of OSML and another scheduler, the speed-up on the
(mix, seed) runs both converge; then each ideal checked run by run (a scheduler beating the Oracle that places at
launch on convergence, or the cheapest Oracle on cores or ways at QoS, is counted). docs/results/osml.md quotes the
first, docs/colo.md ("Warm-up after launch") the second:

    python benchmarks/osml_results.py --seeds 1,2,3 --out /tmp/osml_results
    python benchmarks/osml_results.py --warmup 0,0.25,0.5,1 --seeds 1 --out /tmp/osml_warmup

``--warmup`` sets every service's ``warmup_slowdown`` (the catalog's is 0) in a copy of the scenario, one per value.
``--quick``: two mixes, PARTIES and the zoo's OSML, 20 s runs, serially (a smoke run).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import yaml

from dcgym.agents.evaluation import evaluate
from dcgym.agents.evaluation.stats import mean_ci
from dcgym.envs.scenario import scenario_path

POLICIES = ("zoo:osml_colo", "parties", "clite", "oracle", "oracle:objective=slack")
FASTEST, CHEAPEST = "oracle:objective=slack", "oracle"
"""The ideals: convergence time is bounded by the Oracle that places the allocation with the most slack at launch,
cores and ways at QoS by the cheapest allocation meeting every target."""


def scenario_with_warmup(name: str, slowdown: float | None, out: Path) -> str:
    """The scenario, or a copy of it in ``out`` whose every service has ``warmup_slowdown`` = ``slowdown``."""
    if slowdown is None:
        return name
    source = scenario_path(name)
    doc = yaml.safe_load(source.read_text(encoding="utf-8"))
    for mix in doc["mixes"]:
        for entry in mix:
            entry["params"] = {**entry.get("params", {}), "warmup_slowdown": slowdown}
    copy = out / f"{Path(source.name).stem}_warmup{slowdown:g}.yaml"
    copy.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(copy)


def _cell(values: list[float], digits: int) -> str:
    stat = mean_ci([v for v in values if v is not None and not math.isnan(v)])
    if stat["mean"] is None:
        return "-"
    half = "" if stat["ci95"] is None else f" ± {stat['ci95']:.{digits}f}"
    return f"{stat['mean']:.{digits}f}{half}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The markdown table of one evaluation (module docstring)."""
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    mixes = len({r["load"] for r in rows})
    out = [
        f"| scheduler | mixes converged (of {mixes}) | runs converged | convergence (s) | QoS share | cores | ways |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in policies:
        seeds = sorted({r["seed"] for r in rows if r["policy"] == p})  # rows of several evaluations may differ
        runs = [[r for r in rows if r["policy"] == p and r["seed"] == s] for s in seeds]
        conv = [[r["convergence_s"] for r in rs if r["converged"]] for rs in runs]
        cells = [
            _cell([len(c) for c in conv], 1),
            f"{sum(len(c) for c in conv)} of {sum(len(rs) for rs in runs)}",
            _cell([sum(c) / len(c) if c else None for c in conv], 1),
            _cell([sum(r["qos_met_fraction"] for r in rs) / len(rs) for rs in runs], 3),
            _cell([sum(r["cores_used"] for r in rs) / len(rs) for rs in runs], 1),
            _cell([sum(r["ways_used"] for r in rs) / len(rs) for rs in runs], 1),
        ]
        out.append(f"| {p} | " + " | ".join(cells) + " |")
    return out


def _by_run(rows: list[dict[str, Any]], policy: str) -> dict[tuple, dict[str, Any]]:
    return {(r["load"], r["seed"]): r for r in rows if r["policy"] == policy}


def speedups(rows: list[dict[str, Any]]) -> list[str]:
    """OSML's speed-up over each other scheduler on the runs both converge: the ratio of the mean times."""
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    lines = []
    for osml in (p for p in policies if "osml" in p):
        mine = _by_run(rows, osml)
        for other in (p for p in policies if "osml" not in p):
            theirs = _by_run(rows, other)
            both = [k for k in mine if mine[k]["converged"] and k in theirs and theirs[k]["converged"]]
            if both:
                a = sum(mine[k]["convergence_s"] for k in both) / len(both)
                b = sum(theirs[k]["convergence_s"] for k in both) / len(both)
                lines.append(f"- {osml} against {other}: {a:.1f} s and {b:.1f} s on the {len(both)} runs both "
                             f"converge, {b / a:.2f}x")  # fmt: skip
    return lines


def bound_checks(rows: list[dict[str, Any]]) -> list[str]:
    """Runs on which a scheduler beats an ideal: converges sooner than the fastest Oracle, or uses fewer cores or
    ways than the cheapest Oracle while converged."""
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    lines = []
    for ideal, metric, at_qos in ((FASTEST, "convergence_s", False), (CHEAPEST, "cores_used", True),
                                  (CHEAPEST, "ways_used", True)):  # fmt: skip
        ref = _by_run(rows, ideal)
        if not ref:
            continue
        for p in (p for p in policies if not p.startswith("oracle")):
            mine = [(k, r) for k, r in _by_run(rows, p).items() if k in ref and r["converged"]]
            if metric == "convergence_s":
                beat = [k for k, r in mine if not ref[k]["converged"] or r[metric] < ref[k][metric] - 1e-9]
            else:
                beat = [k for k, r in mine if r[metric] < ref[k][metric] - 1e-9] if at_qos else []
            lines.append(f"- {p} beats {ideal} on {metric} in {len(beat)} of {len(mine)} converged runs")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="osml_mixes_heavy")
    ap.add_argument("--policy", action="append", default=None, help=f"repeatable (default: {', '.join(POLICIES)})")
    ap.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    ap.add_argument("--mixes", default=None, help="comma-separated mix indices (default: every mix)")
    ap.add_argument("--warmup", default=None, help="comma-separated warmup_slowdown values (default: the catalog's)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="two mixes, the zoo's OSML and PARTIES, 20-s runs")
    args = ap.parse_args(argv)
    policies = args.policy or (["zoo:osml_colo", "parties"] if args.quick else list(POLICIES))
    seeds = [int(s) for s in args.seeds.split(",")]
    mixes = [int(m) for m in args.mixes.split(",")] if args.mixes else ([0, 1] if args.quick else None)
    warmups = [float(v) for v in args.warmup.split(",")] if args.warmup else [None]
    args.out.mkdir(parents=True, exist_ok=True)
    report = []
    for slowdown in warmups:
        scenario = scenario_with_warmup(args.scenario, slowdown, args.out)
        doc = evaluate(
            scenario, policies, loads=mixes, tasks=20 if args.quick else None, seeds=seeds,
            workers=0 if args.quick else args.workers, progress=False,
        )  # fmt: skip
        tag = "" if slowdown is None else f"_warmup{slowdown:g}"
        (args.out / f"results{tag}.json").write_text(json.dumps(doc["results"], indent=1), encoding="utf-8")
        title = args.scenario if slowdown is None else f"{args.scenario}, warmup_slowdown {slowdown:g}"
        report += [f"## {title}, seeds {args.seeds}", "", *table(doc["results"]), ""]
        report += [*speedups(doc["results"]), "", *bound_checks(doc["results"]), ""]
    text = "\n".join(report)
    (args.out / "osml_results.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
