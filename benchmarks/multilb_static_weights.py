"""What the multi-LB rewards prefer, and what fixed SED weights can reach: the analysis behind docs/results/multilb.md.

    python benchmarks/multilb_static_weights.py rewards   [--seeds 8]  [--noise 0.25] [--scenario lb_sim] [--quick]
    python benchmarks/multilb_static_weights.py ceiling   [--seeds 20] [--quick]
    python benchmarks/multilb_static_weights.py bandit    [--scenario lb_large] [--reward fct] [--seeds 20] [--quick]

``rewards``: on lb_sim (2 LBs, 4 x 1 + 4 x 2 CPU servers, load 0.845, SED
dispatch), every LB holds the same fixed weights for a whole 60 s episode;
for each weight pattern, the mean FCT and the episode return of every
reward lb_v0 computes (the fairness functions and ``fct``; mean over LBs and
seeds, the same engine runs scored by every reward), without and with
exploration noise (each step, each server's weight level replaced by a
random one with probability ``--noise``, as an epsilon-greedy learner
explores). Then, per reward and noise, how it ranks the patterns against
the mean FCT: the rank correlation with -mean FCT, and how far apart it puts
the FCT-best pattern and equal weights (1 / 1, where a learner starts): the
return gap as a share of the returns' scale, and in standard errors of the
paired per-seed difference. A reward is aligned with the FCT when it ranks
the patterns as the FCT does and separates them by more than the noise.

``ceiling``: the best a learner that only sets SED weights from {1.0, 1.5,
2.0} could do on the static scenarios and on lb_capacity_change: every
pattern (per server group), fixed or switched at the capacity change
(25 s), against the heuristics, on the evaluation's 60 s episodes;
``--scenario NAME`` for one (lb_sim, its Table 10 mixes, lb_capacity_change,
lb_large).

``bandit``: the simplest learner of group weights
(:mod:`dcgym.agents.marl_lb.bandit`): successive halving over the fixed
group patterns on the episode return of ``--reward``, each round's mean
returns, the pattern it picks, and that pattern's mean FCT against SED's on
the evaluation's episodes (``--seeds``).

``--quick``: one seed and the first two patterns only (a smoke run; ``bandit``:
one episode per arm in the first round, on lb_sim unless ``--scenario``).
"""

from __future__ import annotations

import itertools
import sys
from typing import Annotated

import numpy as np
import typer

from dcgym.agents.marl_lb.bandit import group_bandit, group_patterns
from dcgym.cpp_core import LbSim
from dcgym.envs import lb_v0
from dcgym.envs.lb.scenario import load_lb_scenario

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])

REWARDS = ("vbf", "log_vbf", "vbf_log_vbf", "pbf_normalized", "makespan", "cv", "jain", "fct")
LEVELS = {0: 1.0, 1: 1.5, 2: 2.0}


QUICK = Annotated[bool, typer.Option("--quick", help="one seed, the first two patterns: a smoke run")]


def _levels(quick: bool) -> list[tuple[int, int]]:
    """The (slow-server, fast-server) weight-level pairs tried."""
    pairs = list(itertools.product(LEVELS, repeat=2))
    return pairs[:2] if quick else pairs


def _patterns(env, quick: bool = False) -> dict[str, np.ndarray]:
    small = env.workers == env.workers.min()
    return {f"{LEVELS[a]:g} / {LEVELS[b]:g}": np.where(small, a, b) for a, b in _levels(quick)}


@app.command()
def rewards(
    seeds: Annotated[int, typer.Option(help="episodes per pattern")] = 8,
    scenario: Annotated[str, typer.Option(help="a multi-LB scenario of the library")] = "lb_sim",
    noise: Annotated[
        float, typer.Option(help="exploration: the chance each server's level is random each step")
    ] = 0.25,
    quick: QUICK = False,
) -> None:
    """Episode returns of every reward and mean FCT for fixed weight patterns (slow-server / fast-server)."""
    seeds = 1 if quick else seeds
    env = lb_v0.parallel_env(scenario=scenario, dispatch="sed")
    slow, fast = (f"{w}-CPU" for w in (env.workers.min(), env.workers.max()))
    patterns = _patterns(env, quick)
    summary = []
    for eps in (0.0, noise):
        print(f"\nnoise {eps:g}:\n")
        print(f"| weights ({slow} / {fast}) | mean FCT (s) | " + " | ".join(REWARDS) + " |")
        print("|---|---:|" + "---:|" * len(REWARDS))
        fct, returns = {}, {}
        for name, action in patterns.items():
            runs = [_scored_episode(env, action, seed, eps) for seed in range(1, seeds + 1)]
            fct[name] = np.array([f for f, _ in runs])
            returns[name] = {r: np.array([t[r] for _, t in runs]) for r in REWARDS}
            cells = " | ".join(_cell(np.mean(returns[name][r])) for r in REWARDS)
            print(f"| {name} | {np.mean(fct[name]):.4g} | {cells} |")
        summary.append((eps, _separation(fct, returns)))
    print("\nHow each reward ranks the patterns against the mean FCT: rank correlation with -mean FCT; the return gap")
    print("between the FCT-best pattern and 1 / 1, % of the mean |return|, and in standard errors (paired seeds):\n")
    print("| reward | " + " | ".join(f"noise {eps:g}: rank corr. | gap % | gap / s.e." for eps, _ in summary) + " |")
    print("|---|" + "---:|---:|---:|" * len(summary))
    for r in REWARDS:
        cells = " | ".join(f"{rho:+.2f} | {gap:+.1f} | {z:+.1f}" for _, rows in summary for rho, gap, z in [rows[r]])
        print(f"| {r} | {cells} |")


def _scored_episode(env, action: np.ndarray, seed: int, eps: float) -> tuple[float, dict[str, float]]:
    """One episode of fixed ``action`` (each level random with chance ``eps`` each step): its mean FCT (s) and the
    return of every reward (mean over LBs), all from the same engine run."""
    rng = np.random.default_rng(10_000 + seed)
    estimate = lb_v0.OBSERVATION_FEATURES.index("fd_decayed")
    obs, _ = env.reset(seed=seed)
    total = dict.fromkeys(REWARDS, 0.0)
    last_fct = np.full(env.num_lbs, -1.0)
    while env.agents:
        acts = {}
        for a in env.agents:
            levels = action.copy()
            flip = rng.random(levels.size) < eps
            levels[flip] = rng.integers(0, len(LEVELS), int(flip.sum()))
            acts[a] = levels
        obs, _, _, _, infos = env.step(acts)
        stacked = np.stack([obs[a] for a in env.possible_agents])
        last_fct = lb_v0.fct_rewards(stacked, last_fct)
        for r in REWARDS:
            if r == lb_v0.FCT_REWARD:
                total[r] += float(np.mean(last_fct))
            else:
                f = lb_v0.REWARDS[r]
                total[r] += float(np.mean([f(x[:, estimate].astype(np.float64)) for x in stacked]))
    return infos["lb_0"]["fct_us"]["mean"] / 1e6, total


def _separation(fct: dict, returns: dict) -> dict[str, tuple[float, float, float]]:
    """Per reward: (Spearman rank correlation of its mean returns with -mean FCT over the patterns, the return gap
    FCT-best pattern minus 1 / 1 in % of the mean |return|, that gap over the standard error of its per-seed
    paired difference)."""
    names = list(fct)
    mean_fct = np.array([fct[n].mean() for n in names])
    best, equal = names[int(np.argmin(mean_fct))], "1 / 1"
    out = {}
    for r in REWARDS:
        means = np.array([returns[n][r].mean() for n in names])
        rho = float(np.corrcoef(_ranks(means), _ranks(-mean_fct))[0, 1]) if len(names) > 2 else float("nan")
        diff = returns[best][r] - returns[equal][r]
        scale = float(np.mean(np.abs(means))) or 1.0
        se = float(np.std(diff, ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
        out[r] = (rho, 100.0 * float(diff.mean()) / scale, float(diff.mean()) / se if se > 0 else float("nan"))
    return out


def _ranks(values: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(values)).astype(np.float64)


def _cell(value: float) -> str:
    """One decimal, or three significant digits for a return too small for it (pbf_normalized over many servers)."""
    return f"{value:.1f}" if value == 0 or abs(value) >= 0.1 else f"{value:.3g}"


def _episode(scenario, load: float, seed: int, policy: str, weights=None, switch=None) -> float:
    """Mean FCT (s) of one 60 s episode, the first 10% of its flows excluded, as the evaluation does."""
    sim = LbSim(scenario.engine_config(load, seed=seed, policy=policy, warmup_flows=0))
    warmup = int(0.1 * sim.arrival_rate_per_us * 60e6)
    sim = LbSim(scenario.engine_config(load, seed=seed, policy=policy, warmup_flows=warmup))
    if weights is not None:
        for i in range(sim.num_lbs):
            sim.set_weights(i, weights)
    if switch is not None:
        sim.run_until(switch[0])
        for i in range(sim.num_lbs):
            sim.set_weights(i, switch[1])
    sim.run_until(60e6)
    return sim.results()["fct_us"]["mean"] / 1e6


@app.command()
def ceiling(
    seeds: Annotated[int, typer.Option(help="episodes per policy")] = 20,
    scenario: Annotated[list[str] | None, typer.Option(help="only these scenarios (repeatable)")] = None,
    quick: QUICK = False,
) -> None:
    """The heuristics and the best fixed (or switched) SED weight patterns per scenario."""
    seeds = 1 if quick else seeds
    cases = [
        ("lb_sim", 0.845),
        ("lb_sim_cpu75_io25", 0.845),
        ("lb_sim_cpu50_io50", 0.845),
        ("lb_sim_cpu25_io75", 0.845),
        ("lb_capacity_change", 0.6),
        ("lb_large", 0.833),
    ]
    if scenario:
        unknown = sorted(set(scenario) - {name for name, _ in cases})
        if unknown:
            raise typer.BadParameter(f"{unknown}: not one of {[name for name, _ in cases]}", param_hint="--scenario")
        cases = [(name, load) for name, load in cases if name in scenario]
    elif quick:
        cases = cases[:5]  # lb_large's 120,000-flow runs are not a smoke test
    for name, load in cases:
        scenario = load_lb_scenario(name)
        small = np.array([g.workers for g in scenario.servers for _ in range(g.count)])
        small = small == small.min()
        runs = range(101, 101 + seeds)
        rows = {p: np.mean([_episode(scenario, load, s, p) for s in runs]) for p in ("lsq", "sed", "oracle")}
        best_fixed, best_switch = None, None
        for a, b in _levels(quick):
            w = np.where(small, LEVELS[a], LEVELS[b]).tolist()
            m = np.mean([_episode(scenario, load, s, "sed", w) for s in runs])
            if best_fixed is None or m < best_fixed[0]:
                best_fixed = (m, f"{LEVELS[a]:g} / {LEVELS[b]:g}")
            if scenario.capacity_changes:
                at = scenario.capacity_changes[0].at_us
                for c, d in _levels(quick):
                    w2 = np.where(small, LEVELS[c], LEVELS[d]).tolist()
                    m = np.mean([_episode(scenario, load, s, "sed", w, (at, w2)) for s in runs])
                    if best_switch is None or m < best_switch[0]:
                        best_switch = (m, f"{LEVELS[a]:g} / {LEVELS[b]:g} then {LEVELS[c]:g} / {LEVELS[d]:g}")
        heuristic = min(rows["lsq"], rows["sed"])
        line = (
            f"{name}: LSQ {rows['lsq']:.4f}  SED {rows['sed']:.4f}  Oracle {rows['oracle']:.4f}  "
            f"best fixed {best_fixed[1]} {best_fixed[0]:.4f} ({100 * (1 - best_fixed[0] / heuristic):+.1f}% vs best heuristic)"
        )
        if best_switch is not None:
            line += f"  best switched {best_switch[1]} {best_switch[0]:.4f} ({100 * (1 - best_switch[0] / heuristic):+.1f}%)"
        print(line)


@app.command()
def bandit(
    scenario: Annotated[str | None, typer.Option(help="a multi-LB scenario of the library")] = None,
    reward: Annotated[str, typer.Option(help="the reward the bandit maximises (lb_v0's)")] = "fct",
    seeds: Annotated[int, typer.Option(help="evaluation episodes of the picked pattern and of SED")] = 20,
    seed: Annotated[int, typer.Option(help="seed of the bandit's episodes")] = 1,
    quick: QUICK = False,
) -> None:
    """Successive halving over the group patterns on the reward, and the picked pattern's mean FCT against SED."""
    name = scenario or ("lb_sim" if quick else "lb_large")
    if reward not in lb_v0.REWARD_NAMES:
        raise typer.BadParameter(f"{reward!r}: not one of {list(lb_v0.REWARD_NAMES)}", param_hint="--reward")
    weights, result = group_bandit(name, reward=reward, first_episodes=1 if quick else 2, seed=seed)
    env = lb_v0.parallel_env(scenario=name)
    labels = [" / ".join(f"{lb_v0.WEIGHT_LEVELS[i]:g}" for i in p) for p in group_patterns(len(env.scenario.servers))]
    print(f"{name} (load {env.load:g}), reward {reward}: mean episode return per surviving pattern, per round\n")
    print("| round | episodes per pattern | " + " | ".join(labels) + " |")
    print("|---|---:|" + "---:|" * len(labels))
    for r, means in enumerate(result.rounds):
        cells = " | ".join(f"{means[a]:.1f}" if a in means else "" for a in range(len(labels)))
        print(f"| {r + 1} | {(1 if quick else 2) * 2**r} | {cells} |")
    sc, runs = load_lb_scenario(name), range(101, 101 + (1 if quick else seeds))
    picked = np.mean([_episode(sc, env.load, s, "sed", np.asarray(weights)[env.server_groups].tolist()) for s in runs])
    sed = np.mean([_episode(sc, env.load, s, "sed") for s in runs])
    print(
        f"\npicked {' / '.join(f'{w:g}' for w in weights)} after {result.episodes} episodes: mean FCT {picked:.4f} s "
        f"against SED's {sed:.4f} s ({100 * (picked / sed - 1):+.1f}%, {len(runs)} evaluation episodes)"
    )


if __name__ == "__main__":
    sys.exit(app())
