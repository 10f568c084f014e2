"""The multi-LB learners against the best heuristic, the best fixed rule in their action space and the Oracle.

    python benchmarks/multilb_results.py [--scenario lb_large] [--seeds 20] [--quick]

For each scenario (``lb_sim``, Table 10's three mixes, ``lb_large``,
``lb_capacity_change``; or ``--scenario``), at every load the zoo's Distr-LB
was evaluated at: the zoo's Distr-LB policy trained on the scenario (by name:
the file by path gives the same rows), the heuristics (ECMP, WCMP, LSQ, SED), the Oracle, and the
fixed-weight search (the group-pattern bandit's pick on the fct reward,
:mod:`dcgym.agents.marl_lb.bandit`), all on the same flows (evaluation seeds
101-...). One Markdown row per scenario and load:

- the best heuristic (lowest mean FCT of ECMP, WCMP, LSQ, SED at that load);
- each policy's mean FCT (s);
- the learner's paired difference against the best heuristic and against the
  fixed-weight search, each with its 95% interval over seeds (Student t);
- the share of the best heuristic -> Oracle gap the learner closes, (best -
  learner) / (best - Oracle) on the seed means; undefined (``-``) where the
  Oracle is not below the best heuristic.

``--quick``: ``lb_sim`` only, 2 seeds, 300 flows (a smoke run).
"""

from __future__ import annotations

import sys
from typing import Annotated

import numpy as np
import typer
from scipy import stats

from dcgym.agents.evaluation import evaluate
from dcgym.agents.marl_lb.bandit import group_bandit, sed_weights
from dcgym.agents.policies.zoo import list_zoo, trained_on
from dcgym.envs.scenario import load_scenario

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])

HEURISTICS = ("ecmp", "wcmp", "lsq", "sed")
CASES = {
    "lb_sim": ([0.845], 608),
    "lb_sim_cpu75_io25": ([0.845], 608),
    "lb_sim_cpu50_io50": ([0.845], 608),
    "lb_sim_cpu25_io75": ([0.845], 608),
    "lb_large": ([0.61, 0.762, 0.833, 0.914, 0.991], 119_990),
    "lb_capacity_change": ([0.6], 39_590),
}
"""Scenario: (loads, flows per run: one 60 s episode, the first 10% warm-up)."""


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean and 95% half-width of a / b - 1 over paired seeds, in %."""
    d = 100.0 * (a / b - 1.0)
    half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return float(d.mean()), half


def rows_of(name: str, seeds: list[int], loads: list[float], flows: int, workers: int | None = None) -> list[str]:
    """The Markdown rows of one scenario (module docstring)."""
    weights, _ = group_bandit(name, reward="fct")
    search = sed_weights(weights)
    learner = next(f"zoo:{n}" for n in list_zoo() if n.startswith("multilb_distr_") and trained_on(n) == name)
    doc = evaluate(
        load_scenario(name),
        [learner, *HEURISTICS, "oracle", search],
        loads=loads,
        tasks=flows,
        seeds=seeds,
        workers=workers,
        progress=False,
    )
    by = {(r["policy"], r["load"], r["seed"]): r["fct_s"]["mean"] for r in doc["results"]}
    label = next(r["policy"] for r in doc["results"] if r["policy"] not in (*HEURISTICS, "oracle", search))
    out = []
    for load in loads:
        fct = {p: np.array([by[(p, load, s)] for s in seeds]) for p in (label, *HEURISTICS, "oracle", search)}
        best = min(HEURISTICS, key=lambda p: fct[p].mean())
        gap = fct[best].mean() - fct["oracle"].mean()
        closed = f"{100 * (fct[best].mean() - fct[label].mean()) / gap:.0f}%" if gap > 0 else "-"
        vs_best, vs_search = paired(fct[label], fct[best]), paired(fct[label], fct[search])
        out.append(
            f"| `{name}` | {load:g} | {best.upper()} {fct[best].mean():.4f} | {weights[0]:g} / {weights[1]:g}: "
            f"{fct[search].mean():.4f} | {fct[label].mean():.4f} | {fct['oracle'].mean():.4f} | "
            f"{vs_best[0]:+.1f}% ± {vs_best[1]:.1f}% | {vs_search[0]:+.1f}% ± {vs_search[1]:.1f}% | {closed} |"
        )
    return out


@app.command()
def main(
    scenario: Annotated[list[str] | None, typer.Option(help="only these scenarios (repeatable)")] = None,
    seeds: Annotated[int, typer.Option(help="evaluation seeds 101, 102, ...")] = 20,
    quick: Annotated[bool, typer.Option("--quick", help="lb_sim, 2 seeds, 300 flows: a smoke run")] = False,
) -> None:
    """One table: the zoo's Distr-LB against the best heuristic, the fixed-weight search and the Oracle."""
    names = ["lb_sim"] if quick else (scenario or list(CASES))
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        raise typer.BadParameter(f"{unknown}: not one of {list(CASES)}", param_hint="--scenario")
    runs = list(range(101, 101 + (2 if quick else seeds)))
    print(
        "| scenario | load | best heuristic | fixed-weight search | Distr-LB (zoo) | Oracle | "
        "Δ vs best heuristic | Δ vs search | gap closed |"
    )
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    for name in names:
        loads, flows = CASES[name]
        for line in rows_of(name, runs, loads, 300 if quick else flows, 0 if quick else None):
            print(line)


if __name__ == "__main__":
    sys.exit(app())
