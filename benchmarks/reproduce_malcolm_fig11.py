"""Malcolm §7.4 Fig. 11 (adaptability): Malcolm learning online in the engine vs Po2 / JSQ / JBT.

Twelve nodes (4 x 8 + 4 x 6 + 4 x 4 workers), Exp(75), clients picking a node
at random. The changes at t0: (a) malcolm_adapt_shift: at load 0.9, 90% of
the arrivals go to the four 8-worker nodes; (b) malcolm_adapt_slowdown: at
load 0.8, those nodes slow to half speed (the rack is then overloaded, 1.03);
(c) as the authors' code: their execution times x 1.5 (load 0.94 after the
change); (d) the same at load 0.7 (0.82 after). Malcolm learns from random
parameters from t = 0 (C++ learner, Algorithm 1, the paper's defaults, one
heartbeat = 100 us) and keeps learning after the change, as the paper deploys
it; t0 is moved to 5 s so that it has converged before (the scenario files
put it at 0.5 s for heuristic runs). Extra rows: Malcolm with lr_actor = 3e-3
(chosen on seeds 3-6, not on the seeds reported) and, in (c) and (d), the
policy Malcolm had at t0 frozen (no learning after the change; a fresh rack,
same seed). The heuristics balance over queue lengths broadcast every 100 us
with the "L + 1" update (§7.1).

Reported: p99 over windows before and after t0; the paper's own metric, the
load per node type as expected wait (outstanding tasks x mean service time at
the node's speed / workers, sampled every 1 ms); the time until the imbalance
between node types (largest - smallest type's expected wait) is back within
2x its pre-change value, or one mean service time if larger; and, for (c), a
one-factor-at-a-time table of the candidate causes (learning rates, variant and
reward, reward scale, pre-change training length, load).

    python benchmarks/reproduce_malcolm_fig11.py --seeds 2 --out docs/reproductions
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import _online as ol
import _reproduce as rp
import numpy as np

T0 = 5_000_000.0
END_S = 6.0  # the runs end END_S seconds after the change


def windows(t0: float, end_s: float = END_S) -> list[tuple[float, float]]:
    """Before (1 s), adapting (0-0.2 s), after (0.2-1.2 s), +2-3 s and, if the run is that long, +5-6 s."""
    w = [(t0 - 1e6, t0), (t0, t0 + 2e5), (t0 + 2e5, t0 + 1.2e6), (t0 + 2e6, t0 + 3e6)]
    return w + [(t0 + 5e6, t0 + 6e6)] if end_s >= 6.0 else w


WINDOW_NAMES = ["before (1 s)", "0-0.2 s", "0.2-1.2 s", "2-3 s", "5-6 s"]
PANELS = {
    "(a) traffic shifted to the fast nodes, load 0.9": ("malcolm_adapt_shift", 0.9),
    "(b) fast nodes at half speed, load 0.8": ("malcolm_adapt_slowdown", 0.8),
    "(c) fast nodes' tasks x 1.5 (the code), load 0.8": ("malcolm_adapt_slowdown_code", 0.8),
    "(d) fast nodes' tasks x 1.5 (the code), load 0.7": ("malcolm_adapt_slowdown_code", 0.7),
}
MALCOLM, TRACKING, FROZEN = "Malcolm (online)", "Malcolm, lr_actor=3e-3 (extra)", "Malcolm frozen at t0 (extra)"
TRACKING_OPTIONS = {"lr_actor": 3e-3}
ROWS = {
    "(a)": [MALCOLM, TRACKING, *ol.HEURISTICS],
    "(b)": [MALCOLM, *ol.HEURISTICS],
    "(c)": [MALCOLM, TRACKING, FROZEN, *ol.HEURISTICS],
    "(d)": [MALCOLM, TRACKING, FROZEN, *ol.HEURISTICS],
}
TYPES = {"fast (8 workers)": slice(0, 4), "medium (6)": slice(4, 8), "slow (4)": slice(8, 12)}
SMOOTH_MS, HOLD_MS, FACTOR = 20, 100, 2.0
# Panel (c)'s candidate causes, one at a time (label, learner options, t0 in s, load); the default and
# lr_actor=3e-3 rows are panel (c)'s runs.
CAUSES = [
    ("paper defaults (lr_actor 1e-3, lr_critic 2e-3, utility, reward_scale 0.01, t0 5 s)", None, 5.0, 0.8),
    ("lr_actor 3e-3", TRACKING_OPTIONS, 5.0, 0.8),
    ("lr_actor 1e-2", {"lr_actor": 1e-2}, 5.0, 0.8),
    ("lr_critic 6e-3", {"lr_critic": 6e-3}, 5.0, 0.8),
    ("variant code (reward imbalance_delta)", {"variant": "code"}, 5.0, 0.8),
    ("variant paper, reward imbalance_delta", {"reward": "imbalance_delta"}, 5.0, 0.8),
    ("reward_scale 0.1", {"reward_scale": 0.1}, 5.0, 0.8),
    ("reward_scale 0.001", {"reward_scale": 0.001}, 5.0, 0.8),
    ("t0 2 s", None, 2.0, 0.8),
    ("t0 10 s", None, 10.0, 0.8),
    ("t0 30 s (the authors' code)", None, 30.0, 0.8),
    ("load 0.75 (0.88 after)", None, 5.0, 0.75),
]
CAUSES_END_S = 3.0


def expected_wait(cfg: dict, times: np.ndarray, outstanding: np.ndarray) -> np.ndarray:
    """Each node's expected wait (us) at each sample: outstanding x mean service time / (workers x speed)."""
    workers = np.concatenate([[g["workers"]] * g["count"] for g in cfg["nodes"]]).astype(float)
    speed = np.tile(np.concatenate([[g.get("speed", 1.0)] * g["count"] for g in cfg["nodes"]]), (len(times), 1))
    for d in cfg.get("dynamics", []):
        if d["kind"] == "speed":
            speed[np.ix_(times >= d["at_us"], d["nodes"])] *= d["factor"]
    return outstanding * cfg["service"]["mean_us"] / (workers * speed)


def type_means(ew: np.ndarray) -> np.ndarray:
    return np.stack([ew[:, s].mean(axis=1) for s in TYPES.values()], axis=1)


def trailing(v: np.ndarray, k: int) -> np.ndarray:
    """Mean over the last k samples (fewer at the start), along axis 0."""
    c = np.cumsum(np.concatenate([np.zeros((1, *v.shape[1:])), v]), axis=0)
    n = np.minimum(np.arange(1, len(v) + 1), k).reshape(-1, *([1] * (v.ndim - 1)))
    return (c[1:] - c[np.maximum(np.arange(1, len(v) + 1) - k, 0)]) / n


def imbalance(ew: np.ndarray) -> np.ndarray:
    """Largest - smallest of the node types' mean expected waits (us), on 20 ms trailing means."""
    ty = trailing(type_means(ew), SMOOTH_MS)
    return ty.max(axis=1) - ty.min(axis=1)


def reconvergence(
    times: np.ndarray, ew: np.ndarray, t0: float, end: float, mean_us: float = 75.0
) -> tuple[float, float]:
    """(ms after t0 from which the imbalance stays <= max(FACTOR x its mean over the second before t0,
    one mean service time) for HOLD_MS, inf if never before `end`; that pre-change mean)."""
    imb = imbalance(ew)
    pre = float(imb[(times >= t0 - 1e6) & (times < t0)].mean())
    ok = (imb <= max(FACTOR * pre, mean_us)) & (times < end)
    held = np.convolve(ok.astype(int), np.ones(HOLD_MS, dtype=int), mode="valid")  # held[i]: ok in [i, i + HOLD)
    hits = np.flatnonzero((held == HOLD_MS) & (times[: len(held)] >= t0))
    return ((times[hits[0]] - t0) / 1e3 if len(hits) else math.inf), pre


def run_one(
    name: str,
    scenario: str,
    load: float,
    seed: int,
    t0: float,
    end_s: float,
    options: dict | None = None,
    parameters: dict | None = None,
) -> dict[str, Any]:
    """One policy on one rack; p99 per window, samples as expected wait, re-convergence."""
    overrides = {"dynamics.0.at_us": t0, "sample_period_us": 1000.0}
    w = windows(t0, end_s)
    if name in ol.HEURISTICS:
        cfg = ol.heuristic_config(scenario, load, seed, ol.HEURISTICS[name], overrides=overrides)
        out = ol.heuristic(cfg, w, samples=True)
    else:
        cfg = ol.malcolm_config(scenario, load, seed, overrides=overrides)
        out = ol.malcolm_online(
            cfg,
            w,
            seed=seed,
            samples=True,
            options=options,
            parameters=parameters,
            parameters_at=t0 if parameters is None else None,
        )
    times, outstanding = out["samples"]
    ew = expected_wait(cfg, times, outstanding)
    out["times"], out["ew"] = times, ew
    out["reconverge_ms"], out["imbalance_before"] = reconvergence(times, ew, t0, t0 + end_s * 1e6)
    return out


def ew_window(out: dict, t0: float, a: float, b: float) -> np.ndarray:
    k = (out["times"] >= t0 + a * 1e6) & (out["times"] < t0 + b * 1e6)
    return type_means(out["ew"][k]).mean(axis=0)


def imbalance_in(out: dict, t0: float, a: float, b: float) -> float:
    k = (out["times"] >= t0 + a * 1e6) & (out["times"] < t0 + b * 1e6)
    return float(imbalance(out["ew"])[k].mean())


def fmt_ms(values: list[float], cap_s: float) -> str:
    return " / ".join(f"> {cap_s * 1e3:,.0f}" if not math.isfinite(v) else f"{v:,.0f}" for v in values)


def fmt_types(outs: list[dict], t0: float, a: float, b: float) -> str:
    v = np.mean([ew_window(o, t0, a, b) for o in outs], axis=0)
    return " / ".join(f"{x:,.0f}" for x in v)


def main() -> None:
    args = ol.cli(__doc__, seeds=2)
    if args.quick:  # panel (a)'s learner and a heuristic, shortened: 1 s before the change, 3 s after
        for name in (MALCOLM, next(iter(ol.HEURISTICS))):
            out = run_one(name, "malcolm_adapt_shift", 0.9, 1, 1e6, 3.0)
            print(f"{name}: p99 " + ", ".join(f"{w['p99']:.0f}" for w in out["windows"]), file=sys.stderr)
        return
    seeds = range(1, args.seeds + 1)
    start = time.perf_counter()
    runs: dict[tuple[str, str], list[dict]] = {}
    for title, (scenario, load) in PANELS.items():
        for name in ROWS[title[:3]]:
            per_seed = []
            for seed in seeds:
                if name == FROZEN:
                    snap = runs[(title, MALCOLM)][seed - 1]["parameters"]
                    out = run_one(name, scenario, load, seed, T0, END_S, {"learn": False}, snap)
                else:
                    out = run_one(name, scenario, load, seed, T0, END_S, TRACKING_OPTIONS if name == TRACKING else None)
                per_seed.append(out)
                print(
                    f"{title[:3]} {name} seed {seed}: p99 "
                    + ", ".join(f"{w['p99']:.0f}" for w in out["windows"])
                    + f"; re-converged {out['reconverge_ms']:.0f} ms",
                    file=sys.stderr,
                )
            runs[(title, name)] = per_seed
    causes = []
    panel_c = next(t for t in PANELS if t.startswith("(c)"))
    for label, options, t0_s, load in CAUSES:
        if t0_s == 5.0 and load == 0.8 and options in (None, TRACKING_OPTIONS):
            per_seed = runs[(panel_c, TRACKING if options else MALCOLM)]
            outs = [
                dict(
                    o,
                    windows=o["windows"][:4],
                    reconverge_ms=reconvergence(o["times"], o["ew"], T0, T0 + CAUSES_END_S * 1e6)[0],
                )
                for o in per_seed
            ]
        else:
            outs = [
                run_one(MALCOLM, "malcolm_adapt_slowdown_code", load, s, t0_s * 1e6, CAUSES_END_S, options)
                for s in seeds
            ]
        for s, o in zip(seeds, outs):
            print(f"cause {label} seed {s}: p99 " + ", ".join(f"{w['p99']:.0f}" for w in o["windows"]), file=sys.stderr)
        causes.append((label, t0_s * 1e6, outs))
    elapsed = time.perf_counter() - start

    import matplotlib.pyplot as plt

    cols = [MALCOLM, TRACKING, FROZEN, *ol.HEURISTICS]
    fig, axes = plt.subplots(len(PANELS), len(cols), figsize=(22, 13), sharex=True, sharey=True)
    for r, title in enumerate(PANELS):
        for c, name in enumerate(cols):
            ax = axes[r][c]
            if (title, name) not in runs:
                ax.set_axis_off()
                continue
            o = runs[(title, name)][0]
            keep = o["times"] >= T0 - 1e6
            ty = trailing(type_means(o["ew"]), SMOOTH_MS)
            for k, group in enumerate(TYPES):
                ax.plot((o["times"][keep] - T0) / 1e6, ty[keep, k], label=group, lw=0.8)
            ax.axvline(0, color="k", lw=0.5, ls=":")
            if math.isfinite(o["reconverge_ms"]) and o["reconverge_ms"] > 0:
                ax.axvline(o["reconverge_ms"] / 1e3, color="k", lw=0.8, ls="--")
            ax.set_title(f"{title[:3]} {name}", fontsize=9)
            ax.set_yscale("log")
            if r == len(PANELS) - 1:
                ax.set_xlabel("s after the change")
            if c == 0:
                ax.set_ylabel("expected wait per node type (us)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Fig. 11: load (expected wait, 20 ms means) per node type, seed 1; dashed: re-converged", fontsize=11)
    fig.tight_layout()

    p99_rows, load_rows = [], []
    for title in PANELS:
        for name in ROWS[title[:3]]:
            outs = runs[(title, name)]
            cells = [rp.Stat.of([o["windows"][k]["p99"] for o in outs]).fmt() for k in range(len(WINDOW_NAMES))]
            dropped = max(o["results"]["tasks_dropped"] / max(1, o["results"]["tasks_arrived"]) for o in outs)
            p99_rows.append([title[:3], name, *cells, f"{100 * dropped:.2f}"])
            load_rows.append(
                [
                    title[:3],
                    name,
                    fmt_types(outs, T0, -1, 0),
                    fmt_types(outs, T0, 0, 0.2),
                    fmt_types(outs, T0, 0.2, 1.2),
                    fmt_types(outs, T0, 5, 6),
                    rp.Stat.of([o["imbalance_before"] for o in outs]).fmt(),
                    rp.Stat.of([imbalance_in(o, T0, 5, 6) for o in outs]).fmt(),
                    fmt_ms([o["reconverge_ms"] for o in outs], END_S),
                ]
            )
    cause_rows = []
    for label, t0, outs in causes:
        cells = [rp.Stat.of([o["windows"][k]["p99"] for o in outs]).fmt() for k in range(4)]
        cause_rows.append(
            [
                label,
                *cells,
                fmt_types(outs, t0, 0.2, 1.2),
                fmt_types(outs, t0, 2, 3),
                fmt_ms([o["reconverge_ms"] for o in outs], CAUSES_END_S),
            ]
        )

    def p99(panel: str, name: str, k: int) -> rp.Stat:
        title = next(t for t in PANELS if t.startswith(panel))
        return rp.Stat.of([o["windows"][k]["p99"] for o in runs[(title, name)]])

    def rec(panel: str, name: str) -> str:
        title = next(t for t in PANELS if t.startswith(panel))
        return fmt_ms([o["reconverge_ms"] for o in runs[(title, name)]], END_S) + " ms"

    def heur(panel: str, k: int) -> str:
        v = [p99(panel, h, k).mean for h in ol.HEURISTICS]
        return f"{min(v):,.0f}-{max(v):,.0f} us"

    def cause(label: str) -> tuple[rp.Stat, rp.Stat, str]:
        """A cause row's p99 0-0.2 s and 2-3 s, and its most loaded node type 2-3 s after the change."""
        _, t0, outs = next(c for c in causes if c[0].startswith(label))
        waits = np.mean([ew_window(o, t0, 2, 3) for o in outs], axis=0)
        return (
            rp.Stat.of([o["windows"][1]["p99"] for o in outs]),
            rp.Stat.of([o["windows"][3]["p99"] for o in outs]),
            list(TYPES)[int(np.argmax(waits))].split(" ")[0],
        )

    traps = ["lr_actor 3e-3", "lr_actor 1e-2", "t0 30 s"]
    others = [
        "reward_scale 0.1",
        "lr_critic 6e-3",
        "variant code",
        "variant paper, reward",
        "reward_scale 0.001",
        "t0 2 s",
        "t0 10 s",
    ]
    trap_p99 = [cause(t)[1].mean for t in traps]
    by_type: dict[str, list[str]] = {}
    for t in traps:
        by_type.setdefault(cause(t)[2], []).append(t)
    trap_types = "; ".join(f"{k} ({', '.join(v)})" for k, v in by_type.items())
    other_first = [(cause(t)[0].mean, t) for t in others]
    other_late = [(cause(t)[1].mean, t) for t in others]
    other_after = min(
        float(np.mean([o["windows"][2]["p99"] for o in next(c for c in causes if c[0].startswith(t))[2]]))
        for t in others
    )
    default = cause("paper defaults")

    def per_seed(panel: str, name: str, k: int) -> str:
        title = next(t for t in PANELS if t.startswith(panel))
        return " / ".join(f"{o['windows'][k]['p99']:,.0f}" for o in runs[(title, name)])

    def waits(panel: str, name: str, a: float, b: float) -> np.ndarray:
        title = next(t for t in PANELS if t.startswith(panel))
        return np.mean([ew_window(o, T0, a, b) for o in runs[(title, name)]], axis=0)

    def dropped(panel: str, names: list[str]) -> str:
        title = next(t for t in PANELS if t.startswith(panel))
        v = [
            100 * o["results"]["tasks_dropped"] / o["results"]["tasks_arrived"] for n in names for o in runs[(title, n)]
        ]
        return f"{min(v):.1f}-{max(v):.1f}%"

    p99_m = [p99("(a)", MALCOLM, k).mean for k in range(len(WINDOW_NAMES))]
    p99_h = [p99("(a)", n, k).mean for n in ol.HEURISTICS for k in range(len(WINDOW_NAMES))]
    headers = ["panel", "policy", *[f"p99 {w} (us)" for w in WINDOW_NAMES], "dropped, max (%)"]
    load_headers = [
        "panel",
        "policy",
        "before (1 s)",
        "0-0.2 s",
        "0.2-1.2 s",
        "5-6 s",
        "imbalance before (us)",
        "imbalance 5-6 s (us)",
        "re-converged after (ms), seed " + " / ".join(map(str, seeds)),
    ]
    cause_headers = [
        "setting (panel c, one change from the paper's defaults)",
        *[f"p99 {w} (us)" for w in WINDOW_NAMES[:4]],
        "wait fast / med / slow, 0.2-1.2 s (us)",
        "wait, 2-3 s (us)",
        "re-converged after (ms), seed " + " / ".join(map(str, seeds)),
    ]
    text = f"""# Malcolm Fig. 11 (adaptability): online learning in the engine vs the heuristics

Generated by `python benchmarks/reproduce_malcolm_fig11.py --seeds {args.seeds} --out {args.out}`
({elapsed:.0f} s). Twelve nodes (4 x 8 + 4 x 6 + 4 x 4 workers), Exp(75), queue capacity 32 x workers,
clients pick a node at random; the change happens at t0 = 5 s and the runs end 6 s later. Malcolm: every
node's linear actor-critic learning online from random parameters from t = 0 in C++
(`RackController(learn=True)`: Algorithm 1, AdamW, lr_actor 1e-3, lr_critic 2e-3, mini-batches of 20
heartbeats of 100 us, i.e. an update every 2 ms as in the paper, consensus every 100), still learning after
the change. Extra rows, not the paper's: **Malcolm, lr_actor=3e-3** (the actors' learning rate 3x the
default, every other setting the paper's; picked on seeds 3-6, not on the seeds reported here) and
**Malcolm frozen at t0** (the parameters the online run had at t0, with learning off, on a fresh rack with
the same seed: what the pre-change policy does without re-learning). Heuristics: Po2 / JSQ / JBT
(threshold 1) over queue lengths broadcast every 100 us with the "L + 1" update. Mean over seeds
1..{args.seeds} (range in brackets).

![expected wait per node type over time](malcolm_fig11.png)

## Tail latency

p99 in us over the tasks completed in each window (times after the change); the last column is the largest
fraction of tasks dropped at full queues over the whole run.

{rp.md_table(headers, p99_rows)}

## Load per node type (the paper's metric) and re-convergence

Fig. 11 plots the load of each node type as expected wait. Here: each node's outstanding tasks (sampled every
1 ms) x the mean service time at the node's current speed / its workers, averaged over the node type, the
window and the seeds: fast / medium / slow nodes, in us. **Imbalance**: the largest minus the smallest of the
three node types' expected waits, on {SMOOTH_MS} ms trailing means. **Re-converged after**: the time from t0
until the imbalance is back within {FACTOR:g}x its mean over the second before t0 (or within one mean service
time, 75 us, when that is larger: Malcolm balances the node types more evenly than the heuristics before the
change, and {FACTOR:g}x its own imbalance would hold it to a tighter band than theirs) and stays there for
{HOLD_MS} ms; 0: it never left the band; "> {END_S * 1e3:,.0f}": not by the end of the run. Per seed.

{rp.md_table(load_headers, load_rows)}

## Why Malcolm adapts slowly in (c): the candidate causes, one at a time

Panel (c)'s rack (load 0.8, tasks x 1.5 on the fast nodes), Malcolm learning online, each row changing one
setting from the paper's defaults (`RackController` options `lr_actor`, `lr_critic`, `variant`, `reward`,
`reward_scale`; or the scenario's t0 or load). The first two rows are panel (c)'s runs; the others end
{CAUSES_END_S:g} s after the change, and "re-converged" uses the same criterion within those {CAUSES_END_S:g} s.

{rp.md_table(cause_headers, cause_rows)}

## What the runs show

- **The policy Malcolm has before the change does not carry over.** Frozen at t0, it keeps sending work to
  the fast nodes after they slow down: their expected wait stays at {waits("(c)", FROZEN, 5, 6)[0]:,.0f} us
  and p99 at {p99("(c)", FROZEN, 4).fmt()} us 5-6 s after the change in (c). At the milder load of (d) it
  depends on the seed (p99 5-6 s after: {per_seed("(d)", FROZEN, 4)} us for seeds
  {" / ".join(map(str, seeds))}). Its actors are linear in the loads and were trained only on pre-change
  loads (expected waits near one service time), and the fast nodes were already the most loaded type before
  the change, so the rank features tell it nothing new. In (c) all the recovery in the other rows comes from
  re-learning online.
- **How fast it re-learns is set by how different the needed routing is, i.e. by the load.** At load 0.8
  the slow nodes alone receive 1.2x their capacity (an excess of 3.2 worker-equivalents) while the slowed
  fast nodes have only 2.1 spare (0.53 each): a large part of the excess must now go to the medium nodes,
  which the pre-change policy never did. Malcolm's p99 is {p99("(c)", MALCOLM, 1).fmt()} us in the 200 ms
  after the change, {p99("(c)", MALCOLM, 3).fmt()} us 2-3 s after and {p99("(c)", MALCOLM, 4).fmt()} us
  5-6 s after (heuristics: {heur("(c)", 1)} from the first 200 ms on), and its node types are not
  re-converged 6 s after the change ({rec("(c)", MALCOLM)}). At load 0.7 (d) the fast nodes keep 4.5 spare
  for an excess of 0.8: Malcolm re-converges after {rec("(d)", MALCOLM)} and its p99 is
  {p99("(d)", MALCOLM, 2).fmt()} us from 0.2 s on (heuristics {heur("(d)", 2)}). Load 0.75 (0.88 after the
  change) is in between (cause table).
- **No learner setting tried makes (c) adapt on the paper's time scale; raising the actors' learning rate
  makes it worse.** Larger actor steps (3e-3, 1e-2) or a longer pre-change training (t0 = 30 s, as in the
  authors' code) end in a lasting misrouting: p99 {min(trap_p99):,.0f}-{max(trap_p99):,.0f} us 2-3 s after the
  change (default {default[1].fmt()} us), the node type left the most loaded: {trap_types}. In separate runs
  10 s past the change (seeds 1-2), lr_actor 1e-2 and t0 = 30 s were still at 2.7-3.9 ms 9-10 s after it,
  the defaults at 605-653 us. A separate look at the migration tables (seed 1, `RackController.tables`):
  with lr_actor 3e-3 or t0 = 30 s the slow nodes keep 99.5-100% of their arrivals after the change (65-74%
  before); their own load, about 30x what the actors were trained on, drives the linear logits into a
  saturated softmax that leaves almost no gradient to escape. The other settings (reward scale 0.1 or
  0.001, critic learning rate 6e-3, the code variant, the imbalance-delta reward, t0 2 s or 10 s) leave p99
  at {min(other_first)[0]:,.0f} us or more in the first 200 ms (default {default[0].fmt()} us) and
  {other_after:,.0f} us or more 0.2-1.2 s after; the best of them 2-3 s after is {min(other_late)[1]} at
  {min(other_late)[0]:,.0f} us.
- **The extra row, lr_actor 3e-3,** adapts within the paper's time scale where the change is mild: in (d) it
  re-converges after {rec("(d)", TRACKING)}, with p99 {p99("(d)", TRACKING, 1).fmt()} us in the first 200 ms
  (default {p99("(d)", MALCOLM, 1).fmt()} us, heuristics {heur("(d)", 1)}). It costs nothing before the
  change (p99 before: {p99("(a)", TRACKING, 0).fmt()} vs {p99("(a)", MALCOLM, 0).fmt()} us in (a),
  {p99("(c)", TRACKING, 0).fmt()} vs {p99("(c)", MALCOLM, 0).fmt()} us in (c), {p99("(d)", TRACKING, 0).fmt()}
  vs {p99("(d)", MALCOLM, 0).fmt()} us in (d)). It is less stable after the change: in (d) it ends slightly
  worse than the default (p99 5-6 s after: {p99("(d)", TRACKING, 4).fmt()} vs {p99("(d)", MALCOLM, 4).fmt()}
  us); in (a) its p99 is {p99("(a)", TRACKING, 1).fmt()} us in the first 200 ms, but one of seeds 3-6 (used to
  pick it) spent a second at 2.6 ms after the shift; and in (c) it falls into the trap above
  ({p99("(c)", TRACKING, 4).fmt()} us 5-6 s after the change).
- **(b), half speed, overloads the rack** (1.03 of its capacity after the change): every policy's p99 is set
  by the queue capacities. The least any policy can drop is about 1.5% of this run's arrivals (2.8% over the
  last 6 of 11 s); the heuristics drop {dropped("(b)", list(ol.HEURISTICS))}, Malcolm, which keeps the fast
  nodes full, {dropped("(b)", [MALCOLM])}.

## Verdict

**Partly reproduced.** (a) The traffic shift: Malcolm's load per node type stays where it was
({"/".join(f"{x:.0f}" for x in waits("(a)", MALCOLM, -1, 0))} us before,
{"/".join(f"{x:.0f}" for x in waits("(a)", MALCOLM, 0.2, 1.2))} us 0.2-1.2 s after, fast/medium/slow), as the
paper claims, and its p99 stays at {min(p99_m):,.0f}-{max(p99_m):,.0f} us in every window (heuristics
{min(p99_h):,.0f}-{max(p99_h):,.0f} us). (c) The slowdown, as the
authors' code does it, at the paper's load 0.8: **not reproduced.** The heuristics settle within the first
200 ms ({heur("(c)", 1)}); Malcolm, learning online with the paper's settings, needs seconds
({p99("(c)", MALCOLM, 4).fmt()} us still 5-6 s after, node types not re-converged), and no learner setting we
tried fixes it. The cause we isolated: the pre-change policy does not generalise to the new loads (frozen, it
never recovers in (c)), and at this load the new routing differs qualitatively from the old one, which online
learning takes seconds to find (or, with larger steps, never finds). At load 0.7 (d, not the paper's), where
the old routing nearly suffices, online learning re-converges in {rec("(d)", MALCOLM)}, and with lr_actor
3e-3 within the paper's time scale ({rec("(d)", TRACKING)}). (b) The paper's half speed overloads this rack
and measures the queue capacities.
"""
    rp.write_page(args.out, "malcolm_fig11", text, fig)


if __name__ == "__main__":
    main()
