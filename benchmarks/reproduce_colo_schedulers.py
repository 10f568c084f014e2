"""OSML §6.2 and CLITE §6 on the colo model: PARTIES, CLITE, the Oracle and Unmanaged, online and with fresh samples.

Runs every scheduler on every mix of a colo scenario (default ``osml_mixes``:
Moses, Img-dnn and Xapian at every combination of OSML's RPS levels, 125
mixes) for 180 s, in the ``online`` mode OSML measured CLITE in (a sample
inherits its predecessor's queue) and in the ``fresh`` mode of CLITE's own
evaluation (every sample starts empty), through :func:`dcgym.agents.evaluation.evaluate`
on two processes. Writes ``colo_schedulers.md`` and ``colo_schedulers.png``
(the convergence-time CDFs) into ``--out``.

    python benchmarks/reproduce_colo_schedulers.py --out docs/reproductions          # about 12 minutes
    python benchmarks/reproduce_colo_schedulers.py --mixes 0,62,124 --out /tmp/colo  # a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dcgym.agents.evaluation import evaluate  # noqa: E402
from dcgym.envs.colo.scenario import load_colo_scenario  # noqa: E402

ONLINE = ("parties", "clite", "oracle", "unmanaged")
FRESH = ("clite", "oracle")  # PARTIES never restarts services: it runs online in both comparisons
PAPER = {  # OSML §6.2 (302 and 104 three-service loads) and Fig. 9 (case A); CLITE §6 (two mixes)
    "scheduled": {"PARTIES": "260 / 302", "CLITE": "148 / 302", "OSML": "285 / 302"},
    "convergence_s": {"PARTIES": 32.7, "CLITE": 46.3, "OSML": 20.9},
    "case_a": {"PARTIES": "14.5 s, 8 actions", "CLITE": "72.6 s, 5 actions", "OSML": "8.2 s, 5 actions"},
    "clite_of_oracle": "CLITE 96-98%, PARTIES 74-85% of the Oracle (CLITE Fig. 8; its own method)",
}


def run(scenario: str, mode: str, policies: tuple[str, ...], loads: list[int] | None, seeds: list[int]) -> dict:
    start = time.perf_counter()
    sc = load_colo_scenario(scenario, {"mode": mode})
    doc = evaluate(sc, list(policies), loads=loads, seeds=seeds, workers=2, progress=True)
    doc["wall_s"] = time.perf_counter() - start
    return doc


def stats(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per scheduler: runs, converged, mean convergence over the runs every non-Unmanaged scheduler converged, ..."""
    rows = doc["results"]
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    by = {p: {(r["load"], r["seed"]): r for r in rows if r["policy"] == p} for p in policies}
    searched = [p for p in policies if p not in ("unmanaged", "oracle")]
    common = (
        set.intersection(*({k for k, r in by[p].items() if r["converged"]} for p in searched)) if searched else set()
    )
    out = {}
    for p in policies:
        runs = list(by[p].values())
        conv = [r for r in runs if r["converged"]]
        mean = lambda xs: statistics.fmean(xs) if xs else None
        out[p] = {
            "runs": len(runs),
            "converged": len(conv),
            "convergence_all": mean([r["convergence_s"] for r in conv]),
            "convergence_common": mean([by[p][k]["convergence_s"] for k in common if by[p][k]["converged"]]),
            "common": len(common),
            "cores": mean([r["cores_used"] for r in conv]),
            "ways": mean([r["ways_used"] for r in conv]),
            "emu": mean([r["emu"] for r in conv]),
            "qos_met": mean([r["qos_met_fraction"] for r in runs]),
            "actions": mean([r["actions"] for r in runs]),
            "actions_to_conv": mean([r["actions_to_convergence"] for r in conv]),
            "cpu_s": sum(r["wall_s"] for r in runs),
            "min_conv": min((r["convergence_s"] for r in conv), default=None),
            "max_conv": max((r["convergence_s"] for r in conv), default=None),
        }
    return out


def fmt(x: Any, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def table(st: dict[str, dict[str, Any]], oracle: int) -> list[str]:
    lines = [
        "| scheduler | mixes scheduled | % of the Oracle's | mean convergence (s), all / common | range (s) "
        "| cores | ways | EMU | QoS met | actions (to convergence) | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p, s in st.items():
        share = 100.0 * s["converged"] / oracle if oracle else None
        lines.append(
            f"| {p} | {s['converged']} / {s['runs']} | {fmt(share, 0)}% | {fmt(s['convergence_all'])} / "
            f"{fmt(s['convergence_common'])} | {fmt(s['min_conv'])}-{fmt(s['max_conv'])} | {fmt(s['cores'])} "
            f"| {fmt(s['ways'])} | {fmt(s['emu'], 2)} | {fmt(s['qos_met'], 3)} | {fmt(s['actions'])} "
            f"({fmt(s['actions_to_conv'])}) | {fmt(s['cpu_s'], 0)} |"
        )
    return lines


def verdicts(st: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The claims checked on the numbers, then why the numbers differ from the papers'."""
    on, fr = st["online"], st["fresh"]
    oracle_fresh = max(1, fr["oracle"]["converged"])
    checks = [
        (
            "Online, CLITE schedules fewer mixes than PARTIES (OSML: 148 against 260 of 302)",
            on["clite"]["converged"] < on["parties"]["converged"],
            f"{on['clite']['converged']} against {on['parties']['converged']} of {on['parties']['runs']}",
        ),
        (
            "Online, CLITE converges more slowly than PARTIES on the mixes both schedule (OSML: 46.3 s against 32.7 s)",
            (on["clite"]["convergence_common"] or 0) > (on["parties"]["convergence_common"] or math.inf),
            f"{fmt(on['clite']['convergence_common'])} s against {fmt(on['parties']['convergence_common'])} s",
        ),
        (
            "With fresh samples CLITE schedules 96-98% of what the Oracle does (CLITE §6, its own method)",
            fr["clite"]["converged"] / oracle_fresh >= 0.9,
            f"{100 * fr['clite']['converged'] / oracle_fresh:.0f}%",
        ),
        (
            "Fresh samples help CLITE (OSML §6.2: online, a bad sample's queue persists)",
            fr["clite"]["converged"] > on["clite"]["converged"],
            f"{fr['clite']['converged']} against {on['clite']['converged']} mixes",
        ),
        (
            "Every scheduler beats Unmanaged (OSML Fig. 10a)",
            all(on[p]["converged"] > on["unmanaged"]["converged"] for p in ("parties", "clite", "oracle")),
            f"Unmanaged schedules {on['unmanaged']['converged']}",
        ),
        (
            "CLITE keeps the whole server (OSML: 36 cores and 20 ways)",
            on["clite"]["cores"] == 36 and on["clite"]["ways"] == 20,
            f"{fmt(on['clite']['cores'])} cores, {fmt(on['clite']['ways'])} ways; PARTIES {fmt(on['parties']['cores'])}"
            f" and {fmt(on['parties']['ways'])}; the Oracle {fmt(on['oracle']['cores'])} and {fmt(on['oracle']['ways'])}",
        ),
    ]
    lines = ["## Verdict", "", "| claim | holds | measured |", "|---|---|---|"]
    lines += [f"| {claim} | {'yes' if ok else '**no**'} | {measured} |" for claim, ok, measured in checks]
    return lines + ["", *WHY]


WHY = [
    "Where the numbers differ, and why:",
    "",
    "- **Which mixes.** OSML's 302 three-service loads are not published; they include loads no scheduler serves "
    "(OSML itself schedules 285). `osml_mixes` holds Fig. 10's trio at the five RPS levels of OSML's data set, "
    "which the Oracle serves every one of, and for many of which an equal split already meets every target. So "
    "every count here is out of an easier set, and PARTIES, which starts from that equal split, needs a few "
    "moves (about 11 actions, 5-6 s) where OSML measured 32.7 s. The ordering OSML reports survives the easier "
    "set: CLITE schedules fewer mixes and takes longer.",
    "- **CLITE's time** (45.6 s online here, 46.3 s in OSML) is its sampling: N + 1 bootstrap samples and then "
    "Bayesian-optimisation samples of 2 s each until a sample meets every target (score 1). Online, the samples "
    "that starve a service (the bootstrap gives two services one core and one way each) leave queues that the "
    "next samples inherit, so a good partition can look bad and the search runs on or stops on a worse one: "
    "OSML's explanation (§6.2), here the model's backlog. With fresh samples, the same search schedules almost "
    "every mix the Oracle does, as CLITE's paper reports; it still takes longer than PARTIES, because it samples.",
    "- **% of the Oracle**: CLITE's paper measures the background jobs' performance while the latency-critical "
    "ones meet QoS; there are no background jobs here, so it is read as the share of the mixes the Oracle "
    "schedules. PARTIES' 74-85% in CLITE's paper is a background-job number with no counterpart here.",
    "- **PARTIES' actions**: it never stops adjusting (a service with more than 20% slack is downsized, one with "
    "less than 5% upsized), so its 180-s action count is large; OSML counts the actions until convergence "
    "(8 on case A), which the tables give in parentheses.",
    "- **Case A**: the Oracle needs 32 cores and 12 ways (OSML reports its own scheduler at 33 and 11). PARTIES "
    "converges in 11-45 s (OSML: 14.5 s); CLITE converges only with fresh samples (OSML measured 72.6 s online: "
    "here it does not converge online within 180 s on these seeds).",
    "- **Unmanaged** shares everything: every service's 36 threads time-slice on shared cores and Moses loses its "
    "LLC to the others, so almost nothing meets its target; OSML's Fig. 10a shows Unmanaged serving some low "
    "loads, so the model's contention without partitions is likely too harsh (docs/colo.md, What it leaves out).",
]


def plot(docs: dict[str, dict], path: Path) -> None:
    fig, axes = plt.subplots(1, len(docs), figsize=(6 * len(docs), 4), squeeze=False)
    for ax, (mode, doc) in zip(axes[0], docs.items()):
        rows = doc["results"]
        for p in dict.fromkeys(r["policy"] for r in rows):
            mine = [r for r in rows if r["policy"] == p]
            times = sorted(r["convergence_s"] for r in mine if r["converged"])
            ax.step([0, *times], [0, *[(k + 1) / len(mine) for k in range(len(times))]], where="post", label=p)
        ax.set_title(f"{mode}: share of mixes converged by time t")
        ax.set_xlabel("convergence time (s)")
        ax.set_ylabel("share of mixes")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="osml_mixes")
    ap.add_argument("--mixes", default=None, help="comma-separated mix indices (default: every mix)")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("docs/reproductions"))
    ap.add_argument("--json", type=Path, default=None, help="also write both documents here")
    ap.add_argument("--from-json", type=Path, default=None, help="write the page from documents saved by --json")
    args = ap.parse_args()
    loads = None if args.mixes is None else [int(x) for x in args.mixes.split(",")]
    seeds = list(range(1, args.seeds + 1))
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        docs, case_a = saved["mixes"], saved["case_a"]
    else:
        docs = {"online": run(args.scenario, "online", ONLINE, loads, seeds)}
        docs["fresh"] = run(args.scenario, "fresh", FRESH, loads, seeds)
        case_a = {m: run("osml_case_a", m, FRESH if m == "fresh" else ONLINE, None, [1, 2, 3]) for m in docs}
    args.out.mkdir(parents=True, exist_ok=True)
    plot(docs, args.out / "colo_schedulers.png")
    if args.json:
        args.json.write_text(json.dumps({"mixes": docs, "case_a": case_a}, indent=1))
    st = {mode: stats(doc) for mode, doc in docs.items()}
    lines = [
        "# OSML §6.2 and CLITE §6 on the colo model: PARTIES, CLITE, the Oracle, Unmanaged",
        "",
        f"Command: `python benchmarks/reproduce_colo_schedulers.py --scenario {args.scenario} --seeds {args.seeds}"
        + (f" --mixes {args.mixes}" if args.mixes else "")
        + " --out docs/reproductions` "
        f"(wall time on 2 shared cores: online {docs['online']['wall_s']:.0f} s, fresh {docs['fresh']['wall_s']:.0f} s).",
        "",
        f"Scenario `{args.scenario}` ({len(docs['online']['results']) // len(ONLINE)} runs per scheduler: mixes x "
        "seeds), 180 s per run, QoS sampled every second; *scheduled* = converged (every service met QoS at each "
        "sample of 5 s in a row, OSML's is_QoS_met); mean convergence over all converged runs / over the runs "
        "both PARTIES and CLITE converged (OSML's 104 common loads); cores, ways and EMU over converged runs; "
        "CPU s = the scheduler's runs' wall time summed.",
        "",
        "## Online (OSML's measurement: a sample inherits the queue its predecessor left)",
        "",
        *table(st["online"], st["online"]["oracle"]["converged"]),
        "",
        "## Fresh samples (CLITE's evaluation: every allocation change starts with empty queues)",
        "",
        "PARTIES never relaunches services, so it is compared online in both settings.",
        "",
        *table(st["fresh"], st["fresh"]["oracle"]["converged"]),
        "",
        "![convergence CDFs](colo_schedulers.png)",
        "",
        "## Case A (Moses 40%, Img-dnn 60%, Xapian 50%; seeds 1-3)",
        "",
        "| mode | scheduler | converged | convergence (s) | actions to convergence | actions in 180 s (cores / ways) "
        "| cores | ways |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, doc in case_a.items():
        for p in dict.fromkeys(r["policy"] for r in doc["results"]):
            rows = [r for r in doc["results"] if r["policy"] == p]
            conv = [r["convergence_s"] for r in rows if r["converged"]]
            lines.append(
                f"| {mode} | {p} | {len(conv)} / {len(rows)} | {', '.join(fmt(c) for c in conv) or '-'} | "
                + (", ".join(str(r["actions_to_convergence"]) for r in rows if r["converged"]) or "-")
                + " | "
                + ", ".join(f"{r['actions']} ({r['core_actions']} / {r['way_actions']})" for r in rows)
                + f" | {fmt(statistics.fmean(r['cores_used'] for r in rows))} | "
                f"{fmt(statistics.fmean(r['ways_used'] for r in rows))} |"
            )
    lines += [
        "",
        "## The papers",
        "",
        "| claim | paper | here |",
        "|---|---|---|",
        f"| loads scheduled online (OSML §6.2) | PARTIES {PAPER['scheduled']['PARTIES']}, CLITE "
        f"{PAPER['scheduled']['CLITE']} | PARTIES {st['online']['parties']['converged']}, CLITE "
        f"{st['online']['clite']['converged']}, Oracle {st['online']['oracle']['converged']}, Unmanaged "
        f"{st['online']['unmanaged']['converged']} of {st['online']['oracle']['runs']} |",
        f"| mean convergence online, common loads | PARTIES 32.7 s, CLITE 46.3 s | PARTIES "
        f"{fmt(st['online']['parties']['convergence_common'])} s, CLITE {fmt(st['online']['clite']['convergence_common'])}"
        f" s ({st['online']['parties']['common']} common) |",
        f"| fresh samples, % of the Oracle | {PAPER['clite_of_oracle']} | CLITE "
        f"{fmt(100 * st['fresh']['clite']['converged'] / max(1, st['fresh']['oracle']['converged']), 0)}% (fresh), "
        f"PARTIES {fmt(100 * st['online']['parties']['converged'] / max(1, st['online']['oracle']['converged']), 0)}% "
        "(online) of the mixes the Oracle schedules |",
        "| resources (OSML §6.2) | PARTIES and CLITE use all 36 cores and 20 ways; OSML 34 and 16 | see the cores "
        "and ways columns |",
        f"| case A (OSML Fig. 9) | {PAPER['case_a']['PARTIES']} (PARTIES); {PAPER['case_a']['CLITE']} (CLITE) | "
        "the case A table |",
        "",
        *verdicts(st),
    ]
    (args.out / "colo_schedulers.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
