"""The leaderboard: every built-in policy of every family on every scenario of the library, in one page.

    python benchmarks/leaderboard.py [--family rack] [--tasks N] [--seeds N] [--workers N] [--out docs/leaderboard.md]

For each family, each packaged scenario runs at every load of its grid with
the family's baselines (``python -m dcgym list policies``), the scenario's own
policy, and every zoo policy trained on that scenario (on a colo scenario, OSML's
models from the zoo, which serve the whole family), through
:func:`dcgym.agents.evaluation.evaluate` (in parallel on Ray). The page has one
table per family: a row per scenario and load, a column per policy, each cell
the family's headline metric (rack: p99 latency in µs, lb: mean flow
completion time in s, flow: mean flow completion time in ms, lower is better;
colo: the share of one-second samples with every running service within QoS,
higher is better) with its 95% interval over seeds; the
best cell of each row is bold, and a censored cell (its percentiles leave out
dropped, unfinished or timed-out work) carries ``*``. Rows compare policies:
a row's scenario and load fix the workload, the same for every policy (common
random numbers).
"""

from __future__ import annotations

import argparse
import logging
import platform
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dcgym.agents.evaluation import evaluate, family_of
from dcgym.agents.evaluation.document import get_path
from dcgym.agents.heuristics import baselines
from dcgym.agents.policies.zoo import list_zoo, zoo_dir
from dcgym.envs.families import FAMILIES
from dcgym.envs.scenario import list_scenarios, load_scenario

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WORK = {"rack": 200_000, "lb": 5_000, "flow": 20_000}
"""Units of work per run by default: enough for a p99 within a few percent at the grids' loads."""


def zoo_policies(scenario: str, kind: str | None = None) -> list[str]:
    """``zoo:NAME`` of every zoo policy whose card says it was trained on ``scenario``; on a colo scenario also every
    zoo folder of OSML's models (Models A, B and C serve any mix of the family's services: docs/osml.md)."""
    found = []
    for name in list_zoo():
        card = (zoo_dir() / f"{name}.md").read_text(encoding="utf-8")
        if re.search(rf"--scenario {re.escape(scenario)}\b", card):
            found.append(f"zoo:{name}")
    if kind == "colo":
        found += [f"zoo:{name}" for name in list_zoo(entry="folder")]
    return found


def policies(kind: str, scenario: Any) -> list[Any]:
    """The family's baselines, the scenario's own policy, and the zoo policies trained on the scenario."""
    family = family_of(kind)
    chosen = [name for name in baselines(kind) if family.runs_on(scenario, name)]
    for own in family.default_policies(scenario):
        label = str(getattr(own, "label", own))
        if label not in chosen:
            chosen.append(own)
    return chosen + zoo_policies(scenario.name, kind)


def cell(summary: Mapping[str, Any], path: str, digits: int) -> tuple[float | None, str]:
    stat = get_path(summary, path)
    if stat["mean"] is None:
        return None, "-"
    text = f"{stat['mean']:,.{digits}f}"
    if stat["ci95"] is not None:
        text += f" ± {stat['ci95']:,.{digits}f}"
    return stat["mean"], text + (" *" if summary.get("censored") else "")


def family_table(kind: str, docs: list[dict[str, Any]]) -> str:
    """One family's Markdown table: a row per scenario and load, the best cell of each row bold."""
    family = family_of(kind)
    path, label, digits = family.headline
    pick = max if family.headline_higher_is_better else min
    columns = list(dict.fromkeys(s["policy"] for doc in docs for s in doc["summary"]))
    lines = [f"| scenario | load | {' | '.join(columns)} |", "|---|---:|" + "---:|" * len(columns)]
    for doc in docs:
        for load in dict.fromkeys(s["load"] for s in doc["summary"]):
            row = {s["policy"]: cell(s, path, digits) for s in doc["summary"] if s["load"] == load}
            values = [v for v, _ in row.values() if v is not None]
            best = pick(values) if values else None
            texts = [
                ("**" + row[c][1] + "**" if row[c][0] is not None and row[c][0] == best else row[c][1])
                if c in row
                else ""
                for c in columns
            ]
            lines.append(f"| {doc['scenario']} | {load:g} | {' | '.join(texts)} |")
    better = "higher" if family.headline_higher_is_better else "lower"
    return f"Cells: {label}, mean ± 95% interval over seeds; {better} is better.\n\n" + "\n".join(lines)


def run(
    kinds: list[str], work: dict[str, int], seeds: int, workers: int | None, first_only: bool = False
) -> dict[str, list[dict[str, Any]]]:
    docs: dict[str, list[dict[str, Any]]] = {}
    for kind in kinds:
        for name in list_scenarios(kind)[: 1 if first_only else None]:
            scenario = load_scenario(name)
            family = family_of(kind)
            # A scenario that changes over time runs long enough to see its last change twice over.
            length = max([work[kind], *(family.work_to_cover(scenario, load) for load in scenario.loads)])
            seed_list = list(range(1, seeds + 1))
            doc = evaluate(scenario, policies(kind, scenario), tasks=length, seeds=seed_list, workers=workers)
            docs.setdefault(kind, []).append(doc)
    return docs


def page(docs: dict[str, list[dict[str, Any]]], command: str, seconds: float) -> str:
    parts = [
        "# Leaderboard",
        "",
        "Every built-in policy of each family on every scenario of the library, at every load of the scenario's "
        "grid: the family's baselines, the scenario's own policy, and the zoo policies trained on the scenario. A "
        "row fixes the workload (the same tasks for every policy); the best cell of each row is **bold**; `*` marks "
        "a censored cell (its percentiles leave out dropped, unfinished or timed-out work: docs/results.md). "
        "docs/benchmarking.md says how to add a row of your own.",
        "",
        f"Regenerate: `{command}` ({_duration(seconds)} on {_machine()}).",
    ]
    for kind, family_docs in docs.items():
        work = family_of(kind).work
        lengths = sorted({doc[work] for doc in family_docs})
        longer = ", ".join(f"{doc[work]:,} on {doc['scenario']}" for doc in family_docs if doc[work] != lengths[0])
        parts += [
            "",
            f"## {kind}: {FAMILIES[kind].summary}",
            "",
            f"{lengths[0]:,} {work} per run"
            + (f" ({longer}: long enough to see their changes over time)" if longer else "")
            + f", seeds {family_docs[0]['seeds']}.",
            "",
            family_table(kind, family_docs),
        ]
    return "\n".join(parts) + "\n"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _machine() -> str:
    """CPU model, CPUs used and Python: where the page was made."""
    from dcgym.agents.evaluation.runner import cores

    model = platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(encoding="utf-8"), re.MULTILINE)
        model = names[0].strip() if names else model
    return f"{model}, {cores()} CPUs, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", action="append", choices=list(FAMILIES), help="only these families (repeatable)")
    parser.add_argument(
        "--tasks",
        type=int,
        help="units of work per run (default: rack 200000 tasks, lb 5000 flows, flow 20000 flows, colo the "
        "scenario's horizon in s)",
    )
    parser.add_argument("--seeds", type=int, default=2, help="seeds 1..N per cell (default 2)")
    parser.add_argument("--workers", type=int, help="parallel runs (default: every core)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "leaderboard.md", help="the page to write")
    parser.add_argument("--quick", action="store_true", help="a smoke run: each family's first scenario, tiny runs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    kinds = args.family or list(FAMILIES)
    work = {k: args.tasks or DEFAULT_WORK.get(k, family_of(k).default_work) for k in kinds}
    if args.quick:
        work, args.seeds = dict.fromkeys(kinds, 1000), 1
    start = time.perf_counter()
    docs = run(kinds, work, args.seeds, args.workers, first_only=args.quick)
    command = "python benchmarks/leaderboard.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    args.out.write_text(page(docs, command, time.perf_counter() - start), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
