"""The leaderboard: every built-in policy of every family on every scenario of the library, in one page.

    python benchmarks/leaderboard.py [--family rack] [--tasks N] [--seeds N] [--workers N] [--out docs/leaderboard.md]
    python benchmarks/leaderboard.py --family rack    # only rack's part of the page: after a zoo entry was added
    python benchmarks/leaderboard.py --family rack --save rack.json        # one part of the page ...
    python benchmarks/leaderboard.py --held-out-only --save held_out.json   # ... or only the test suites
    python benchmarks/leaderboard.py --load rack.json held_out.json ...     # the page from the parts

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
random numbers). Each family's scores (reference 0, ideal 1) are aggregated
(IQM and optimality gap with intervals, performance profiles); then each
family's held-out test suite (scenarios no zoo policy was trained on) has a
table and aggregates of its own.

With ``--family`` and an ``--out`` page that holds other families too, only those families' parts of the page
are replaced (:func:`splice`) and the rest is kept: the way to add a zoo entry's rows. It is refused if anything
but the zoo's columns and rows changed in them (the Overall table, the policies of several families, would be
stale): then the whole page is regenerated.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dcgym.agents.evaluation import evaluate, family_of
from dcgym.agents.evaluation.document import get_path, to_json
from dcgym.agents.evaluation.plots import plot_performance_profiles
from dcgym.agents.evaluation.scores import (
    PROFILE_TAUS,
    SCORING,
    Scoring,
    aggregate,
    cell_means,
    profiles_of,
    run_scores,
    scoring_of,
    top_values,
    with_interval,
)
from dcgym.agents.evaluation.suites import applies, suite_scenarios
from dcgym.agents.heuristics import baselines
from dcgym.agents.marl_lb.bandit import group_bandit, sed_weights
from dcgym.agents.policies.zoo import list_zoo, trained_on
from dcgym.envs.families import FAMILIES
from dcgym.envs.scenario import list_scenarios, load_scenario

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WORK = {"rack": 200_000, "lb": 5_000, "flow": 20_000}
"""Units of work per run by default: enough for a p99 within a few percent at the grids' loads."""
DRAINED = ("rack", "lb")
"""Families whose runs the leaderboard drains (a fixed measured set, each until it ends): what their bounds need."""


def zoo_policies(scenario: str, kind: str | None = None) -> list[str]:
    """``zoo:NAME`` of every zoo policy whose card says it was trained on ``scenario``; on a colo scenario also every
    zoo folder of OSML's models (Models A, B and C serve any mix of the family's services: docs/osml.md)."""
    found = [f"zoo:{name}" for name in list_zoo() if trained_on(name) == scenario]
    if kind == "colo":
        found += [f"zoo:{name}" for name in list_zoo(entry="folder")]
    return found


def family_zoo(kind: str) -> list[str]:
    """``zoo:NAME`` of every zoo policy of the family (its card's ``--scenario`` is of that kind); on colo also every
    zoo folder of OSML's models."""
    found = [f"zoo:{name}" for name in list_zoo() if (s := trained_on(name)) and load_scenario(s).kind == kind]
    return found + ([f"zoo:{name}" for name in list_zoo(entry="folder")] if kind == "colo" else [])


def _runs(kind: str, scenario: Any, name: str, source: str | Path) -> bool:
    """Whether the policy ``name`` runs on ``scenario`` (``source``: its name or file; one short run tells)."""
    return family_of(kind).runs_on(scenario, name) and applies(name, source, list(scenario.loads)[0])


FIXED_WEIGHTS = "fixed-weight search"
"""The role of lb's action-space column: the SED weight pattern per server group that the group-pattern bandit picks."""


def fixed_weights(scenario: Any) -> str | None:
    """lb: ``sed:weights=W1;...`` with the fixed weight per server group that successive halving picks on the fct
    reward at the scenario's operating load (:mod:`dcgym.agents.marl_lb.bandit`): the best fixed rule in the
    weight-setting learners' action space, what a learner reaches without looking at its observations. None on a
    scenario of one server group (every pattern is SED's or LSQ's)."""
    if len(scenario.servers) < 2:
        return None
    steps = {} if scenario.episode_us else {"max_steps": round(60e6 / scenario.decision_period_us)}  # a 60 s episode
    weights, _ = group_bandit(scenario, reward="fct", env_args=steps)
    return sed_weights(weights)


def label_search(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its fixed-weight search's rows (a ``sed:weights=...`` policy) named :data:`FIXED_WEIGHTS`, one
    column whatever pattern each scenario's search picked, and the pattern kept in ``doc["fixed_weights"]``."""
    found = {r["policy"] for r in doc["results"] if r["policy"].startswith("sed:weights=")}
    if not found:
        return doc
    (pattern,) = found
    doc["fixed_weights"] = pattern
    for key in ("results", "summary", "scores"):
        for row in doc.get(key, []):
            if row["policy"] == pattern:
                row["policy"] = FIXED_WEIGHTS
    return doc


def policies(kind: str, scenario: Any, source: str | Path | None = None) -> list[Any]:
    """The family's baselines, its score's reference and top policies, the scenario's own policy, lb's fixed-weight
    search (:func:`fixed_weights`), and the zoo policies trained on the scenario (``source``: its file, for one
    that is not a packaged scenario)."""
    family = family_of(kind)
    scoring = SCORING[kind]
    chosen = [name for name in baselines(kind) if family.runs_on(scenario, name)]
    scored = [scoring.reference] + ([] if scoring.top_is_bound else [scoring.top])
    chosen += [name for name in scored if name not in chosen and _runs(kind, scenario, name, source or scenario.name)]
    for own in family.default_policies(scenario):
        label = str(getattr(own, "label", own))
        if label not in chosen:
            chosen.append(own)
    search = fixed_weights(scenario) if kind == "lb" else None
    return chosen + ([search] if search else []) + zoo_policies(scenario.name, kind)


def cell(summary: Mapping[str, Any], path: str, digits: int, score: float | None) -> tuple[float | None, str]:
    """A table cell: the metric's mean ± interval, ``*`` when censored, and the mean score in brackets."""
    stat = get_path(summary, path)
    if stat["mean"] is None:
        return None, "-"
    text = f"{stat['mean']:,.{digits}f}"
    if stat["ci95"] is not None:
        text += f" ± {stat['ci95']:,.{digits}f}"
    text += " *" if summary.get("censored") else ""
    return stat["mean"], text + ("" if score is None else f" [{score:.2f}]")


def _scoring(kind: str, docs: list[dict[str, Any]]) -> Scoring:
    """The scoring of a family's documents (its bound as the top where the runs are drained)."""
    return scoring_of(docs[0]) if docs else SCORING[kind]


def header(scoring: Scoring, policy: str) -> str:
    """A column's header: the policy, and its role in the family's score (a policy named like a top that is not
    the top says so)."""
    if policy == scoring.reference:
        return f"{policy} (reference, 0)"
    if policy == scoring.top:
        return f"{policy} ({scoring.top_name}, 1)"
    if policy in ("oracle", "ideal"):
        return f"{policy} (a policy, no bound)"
    return policy


def family_table(kind: str, docs: list[dict[str, Any]]) -> str:
    """One family's Markdown table: a row per scenario and load, the best cell of each row bold, each cell's score
    in brackets; a family whose top is a bound has a column of it."""
    family = family_of(kind)
    scoring = _scoring(kind, docs)
    path, label, digits = family.headline
    pick = max if family.headline_higher_is_better else min
    columns = list(dict.fromkeys(s["policy"] for doc in docs for s in doc["summary"]))
    bound = [f"{scoring.top} ({scoring.top_name}, 1)"] if scoring.top_is_bound else []
    headers = [header(scoring, c) for c in columns] + bound
    lines = [
        f"| scenario | {family.load_name} | {' | '.join(headers)} |",
        "|---|---:|" + "---:|" * len(headers),
    ]
    for doc in docs:
        scores = cell_means(doc["scores"])
        for load in dict.fromkeys(s["load"] for s in doc["summary"]):
            row = {
                s["policy"]: cell(s, path, digits, scores.get((s["policy"], load)))
                for s in doc["summary"]
                if s["load"] == load
            }
            values = [v for v, _ in row.values() if v is not None]
            best = pick(values) if values else None
            texts = [
                ("**" + row[c][1] + "**" if row[c][0] is not None and row[c][0] == best else row[c][1])
                if c in row
                else ""
                for c in columns
            ]
            if bound:
                tops = doc["top"][str(load)]
                texts.append("-" if None in tops else f"{sum(tops) / len(tops):,.{digits}f}")
            lines.append(f"| {doc['scenario']} | {load:g} | {' | '.join(texts)} |")
    better = "higher" if family.headline_higher_is_better else "lower"
    picked = [f"{doc['scenario']} `{doc['fixed_weights']}`" for doc in docs if "fixed_weights" in doc]
    search = (
        f"\n\n{FIXED_WEIGHTS}: SED with one fixed weight per server group, the pattern that successive halving "
        "picks on the fct reward at the scenario's operating load (the best fixed rule in the weight-setting "
        "learners' action space): " + ", ".join(picked) + "."
        if picked
        else ""
    )
    return (
        f"Cells: {label}, mean ± 95% interval over seeds; {better} is better; in brackets the mean normalised "
        f"score over seeds (docs/benchmarking.md).\n\n" + "\n".join(lines) + search
    )


def scored_runs(kind: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every run's score of a family, with its scenario; the scenarios the family leaves out of aggregates left
    out."""
    excluded = _scoring(kind, docs).excluded
    return [
        {**r, "scenario": doc["scenario"]} for doc in docs for r in doc["scores"] if doc["scenario"] not in excluded
    ]


def aggregate_table(runs: list[dict[str, Any]]) -> str:
    """IQM and optimality gap of every policy's scores with 95% stratified-bootstrap intervals, best IQM first."""
    table = aggregate(runs)
    lines = ["| policy | IQM [95% CI] | optimality gap [95% CI] | tasks | runs |", "|---|---:|---:|---:|---:|"]
    for policy, a in sorted(table.items(), key=lambda item: -item[1]["iqm"]):
        gap = with_interval(a["optimality_gap"], a["optimality_gap_ci95"])
        lines.append(f"| {policy} | {with_interval(a['iqm'], a['iqm_ci95'])} | {gap} | {a['tasks']} | {a['runs']} |")
    return "\n".join(lines) if table else "(no scored runs)"


def profiles(kind: str, runs: list[dict[str, Any]], path: Path) -> Path | None:
    """Plot every policy's performance profile over the family's scored runs; the plot's path (None: no runs)."""
    shares = profiles_of(runs)
    if not shares:
        return None
    return plot_performance_profiles(shares, PROFILE_TAUS, path, f"{kind}: performance profiles over every scored run")


def beaten_bounds(kind: str, docs: list[dict[str, Any]]) -> list[str]:
    """Every complete run (no measured work left out of its metric) that beats the top called ideal (a bound) of its
    load and seed: none, if the bound holds. A censored run's metric leaves out work, so it is no evidence either
    way (its score is capped at 0)."""
    if not _scoring(kind, docs).top_is_bound:
        return []
    family = family_of(kind)
    path = family.headline[0]
    beaten = []
    for doc in docs:
        for r in doc["results"]:
            bound = doc["top"][str(r["load"])][doc["seeds"].index(r["seed"])]
            value = get_path(r, path)
            if r.get("censored_fraction") or value is None or bound is None:
                continue
            if (value > bound) if family.headline_higher_is_better else (value < bound):
                beaten.append(f"{doc['scenario']} {r['policy']} {r['load']:g} seed {r['seed']}: {value} vs {bound}")
    return beaten


def page_problems(text: str) -> list[str]:
    """What is wrong with a page's tables: a column headed by a bare ``oracle`` or ``ideal`` (a top must say its
    role), or a complete (uncensored) cell beyond the value of its row's column named ideal: below it where lower
    is better, above it where the caption before the table says higher is better."""
    problems = []
    paragraphs = text.split("\n\n")
    for k, table in enumerate(paragraphs):
        if not table.startswith("| scenario |"):
            continue
        higher = k > 0 and "higher is better" in paragraphs[k - 1]
        lines = table.splitlines()
        headers = [h.strip() for h in lines[0].strip("|").split("|")]
        problems += [f"column {h!r} does not say its role" for h in headers if h in ("oracle", "ideal")]
        ideal = [i for i, h in enumerate(headers) if "(ideal, 1)" in h]
        for line in lines[2:]:
            cells = [c.strip().replace("**", "") for c in line.strip("|").split("|")]  # bold is no censoring mark
            for i in (i for i in ideal if cells[i] != "-"):
                bound = float(cells[i].replace(",", ""))
                for k, c in enumerate(cells[2:], start=2):
                    if k != i and c not in ("", "-") and "*" not in c:
                        value = float(c.split()[0].replace(",", ""))
                        if (value > bound) if higher else (value < bound):
                            side = "above" if higher else "below"
                            problems.append(f"{cells[0]} {cells[1]}: {headers[k]} {value} {side} {headers[i]} {bound}")
    return problems


def run(
    kinds: list[str],
    work: dict[str, int],
    seeds: int,
    workers: int | None,
    first_only: bool = False,
    parts: tuple[str, ...] = ("library", "held-out"),
) -> dict[str, list[dict[str, Any]]]:
    """Every family's documents (the library's scenarios, then the held-out test suite's: :func:`held_out`), each
    with its runs' scores (``scores``) and, where the top is a bound, the bound of each load and seed (``top``:
    lists by load)."""
    docs: dict[str, list[dict[str, Any]]] = {}
    for kind in kinds:
        if "held-out" in parts and not first_only:
            docs.setdefault(kind, []).extend(held_out(kind, work, seeds, workers))
        if "library" not in parts:
            continue
        for name in list_scenarios(kind)[: 1 if first_only else None]:
            scenario = load_scenario(name)
            doc = scored_run(
                kind, scenario, scenario, policies(kind, scenario), list(scenario.loads), work, seeds, workers
            )
            docs.setdefault(kind, []).append(doc)
    return docs


def scored_run(
    kind: str,
    scenario: Any,
    source: Any,
    chosen: list[Any],
    loads: list[float],
    work: dict[str, int],
    seeds: int,
    workers: int | None,
) -> dict[str, Any]:
    """One scenario's document (``source``: the scenario or its file) with ``chosen`` at ``loads``, seeds 1..N,
    scored (:func:`with_scores`) and its fixed-weight search named (:func:`label_search`). A scenario that changes
    over time runs long enough to see its last change twice over."""
    length = max([work[kind], *(family_of(kind).work_to_cover(scenario, load) for load in loads)])
    doc = evaluate(
        source,
        chosen,
        loads=loads,
        tasks=length,
        seeds=list(range(1, seeds + 1)),
        workers=workers,
        drained=kind in DRAINED,
    )
    return label_search(with_scores(doc, scenario))


def held_out(kind: str, work: dict[str, int], seeds: int, workers: int | None) -> list[dict[str, Any]]:
    """The family's held-out test suite (``evaluate.py --suite KIND:test``): each test scenario at its loads with the
    family's baselines, its reference and top, and every zoo policy of the family that applies to it (a policy made
    for a fixed number of nodes, servers or agents runs only where the scenario has as many). No zoo policy was
    trained on these scenarios. Each document is marked ``suite: test``."""
    docs = []
    folder = Path(tempfile.mkdtemp(prefix="leaderboard-suite-"))
    for entry in suite_scenarios(f"{kind}:test"):
        path = entry.write(folder)
        scenario = load_scenario(path)
        chosen = policies(kind, scenario, path)
        chosen += [z for z in family_zoo(kind) if z not in chosen and applies(z, path, entry.loads[0])]
        doc = scored_run(kind, scenario, path, chosen, list(entry.loads), work, seeds, workers)
        doc["suite"] = "test"
        docs.append(doc)
    return docs


def with_scores(doc: dict[str, Any], scenario: Any) -> dict[str, Any]:
    """``doc`` with its runs' scores (``scores``) and, where the family's top is a bound, the bound at each load
    and seed (``top``: a list in the order of the seeds, by load)."""
    top = top_values(doc, scenario)
    doc["scores"] = run_scores(doc, top)
    if top is not None:
        loads = dict.fromkeys(r["load"] for r in doc["results"])
        doc["top"] = {str(load): [top(load, seed) for seed in doc["seeds"]] for load in loads}
    return doc


def library_part(kind: str, family_docs: list[dict[str, Any]], out: Path) -> list[str]:
    """A family's section on the library's scenarios: run lengths, the table, the aggregates and the profiles."""
    work = family_of(kind).work
    lengths = sorted({doc[work] for doc in family_docs})
    longer = ", ".join(f"{doc[work]:,} on {doc['scenario']}" for doc in family_docs if doc[work] != lengths[0])
    parts = [
        "",
        f"{lengths[0]:,} {work} per run"
        + (f" ({longer}: long enough to see their changes over time)" if longer else "")
        + f", seeds {family_docs[0]['seeds']}.",
        "",
        family_table(kind, family_docs),
        "",
        f"Scores over every scenario x {family_of(kind).load_name} x seed"
        + (f" but {', '.join(SCORING[kind].excluded)}" if SCORING[kind].excluded else "")
        + (" (drained runs: every measured task or flow counted when it ends)" if kind in DRAINED else "")
        + " (a task is one scenario and load; the interval resamples each task's seeds):",
        "",
        aggregate_table(scored_runs(kind, family_docs)),
    ]
    plot = profiles(kind, scored_runs(kind, family_docs), out.parent / "results" / f"leaderboard_{kind}.png")
    if plot is not None:
        parts += ["", f"![{kind} performance profiles](results/{plot.name})"]
    return parts


def page(docs: dict[str, list[dict[str, Any]]], command: str, seconds: float, out: Path) -> str:
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
    tests = {kind: [d for d in family_docs if d.get("suite") == "test"] for kind, family_docs in docs.items()}
    docs = {kind: [d for d in family_docs if d.get("suite") != "test"] for kind, family_docs in docs.items()}
    for kind, family_docs in docs.items():
        parts += ["", f"## {kind}: {FAMILIES[kind].summary}"] + (
            library_part(kind, family_docs, out) if family_docs else []
        )
        if tests[kind]:
            parts += [
                "",
                f"### {kind}: the held-out test suite",
                "",
                "Scenarios no zoo policy was trained on (`evaluate.py --suite "
                f'{kind}:test`, docs/benchmarking.md, "Held-out scenarios"); each zoo policy of the family runs '
                "where it applies (a policy made for a fixed number of nodes, servers or agents runs only where the "
                "scenario has as many).",
                "",
                family_table(kind, tests[kind]),
                "",
                "Scores over the test suite:",
                "",
                aggregate_table(scored_runs(kind, tests[kind])),
            ]
    runs = {kind: scored_runs(kind, family_docs) for kind, family_docs in docs.items()}
    families: dict[str, set[str]] = {}
    for kind, scored in runs.items():
        for r in scored:
            families.setdefault(r["policy"], set()).add(kind)
    parts += [
        "",
        "## Overall",
        "",
        "Policies scored in more than one family, over every family's scored runs (a task is one scenario and "
        "load of any family):",
        "",
        aggregate_table([r for scored in runs.values() for r in scored if len(families[r["policy"]]) > 1]),
    ]
    return "\n".join(parts) + "\n"


def _section(text: str, kind: str) -> tuple[int, int]:
    """Where family ``kind``'s part of a page is: from its ``## kind:`` heading to the next ``## `` heading."""
    start = text.find(f"\n## {kind}:")
    if start < 0:
        raise ValueError(f"the page has no section of the family {kind}")
    end = text.find("\n## ", start + 1)
    return start, len(text) if end < 0 else end


def _kept_tables(section: str) -> list[list[str]]:
    """The section's tables without what a zoo policy adds: the ``(zoo)`` columns of a table with a column per
    policy, the ``(zoo)`` rows of a table with a row per policy (in sorted order: a new score may move rows), bold
    marks dropped (a new best cell moves them)."""
    tables: list[list[str]] = []
    rows: list[list[str]] = []
    for line in [*section.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([c.strip().replace("**", "") for c in line.strip().strip("|").split("|")])
            continue
        if rows:
            head, body = rows[0], rows[2:]
            if head[0] == "policy":
                tables.append(sorted(" | ".join(r) for r in body if "(zoo)" not in r[0]))
            else:
                keep = [k for k, h in enumerate(head) if "(zoo)" not in h]
                tables.append([" | ".join(r[k] for k in keep if k < len(r)) for r in [head, *body]])
            rows = []
    return tables


def splice(old: str, new: str, kinds: list[str]) -> str:
    """The page ``old`` with the parts of the families ``kinds`` taken from ``new`` (a page of those families, e.g.
    after a zoo entry was added), everything else of ``old`` kept (the other families, the Overall table, the
    header). ValueError if anything but the zoo's columns and rows changed in a replaced part: then the kept Overall
    table (the policies of several families) may be stale too, and the whole page is to be regenerated."""
    for kind in kinds:
        (a, b), (c, d) = _section(old, kind), _section(new, kind)
        if _kept_tables(old[a:b]) != _kept_tables(new[c:d]):
            raise ValueError(
                f"{kind}: results other than the zoo's changed (an engine or baseline change): regenerate the whole "
                "page, or give the family's part another --out"
            )
        old = old[:a] + new[c:d] + old[b:]
    return old


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
    parser.add_argument(
        "--held-out-only", action="store_true", help="only the families' held-out test suites (with --save: a part)"
    )
    parser.add_argument("--save", type=Path, help="also write every results document, with scores, to this JSON file")
    parser.add_argument(
        "--load", type=Path, nargs="+", help="write the page from the documents --save wrote, running nothing"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    kinds = args.family or list(FAMILIES)
    work = {k: args.tasks or DEFAULT_WORK.get(k, family_of(k).default_work) for k in kinds}
    if args.quick:
        work, args.seeds = dict.fromkeys(kinds, 1000), 1
    start = time.perf_counter()
    if args.load:  # one file, or several written by runs of some families each: their families and times together
        saved = [json.loads(path.read_text(encoding="utf-8")) for path in args.load]
        docs = {}
        for one in saved:
            for kind, family_docs in one["docs"].items():
                docs.setdefault(kind, []).extend(label_search(doc) for doc in family_docs)
        seconds = sum(one["seconds"] for one in saved)
    else:
        parts = ("held-out",) if args.held_out_only else ("library", "held-out")
        docs = run(kinds, work, args.seeds, args.workers, first_only=args.quick, parts=parts)
        seconds = time.perf_counter() - start
    if args.save:
        saved_docs = {k: [json.loads(to_json(d)) for d in v] for k, v in docs.items()}
        args.save.write_text(json.dumps({"seconds": seconds, "docs": saved_docs}) + "\n", encoding="utf-8")
    beaten = [line for kind, family_docs in docs.items() for line in beaten_bounds(kind, family_docs)]
    if beaten:  # a bound that a run beats is no bound: the page must not call it ideal
        print("error: runs beat a bound called ideal:\n" + "\n".join(beaten), file=sys.stderr)
        return 1
    given = list(argv if argv is not None else sys.argv[1:])
    if args.load or args.save:  # where the documents went is not how the page was made
        given = ["--out", str(args.out.resolve().relative_to(ROOT))] if args.out.resolve().is_relative_to(ROOT) else []
    command = "python benchmarks/leaderboard.py" + "".join(f" {a}" for a in given)
    text = page(docs, command, seconds, args.out)
    published = args.out.read_text(encoding="utf-8") if args.family and args.out.is_file() else ""
    if any(f"\n## {k}:" in published for k in FAMILIES if k not in kinds):
        # Some families of a page that holds others too: their parts replace the page's own, the rest stays.
        try:
            text = splice(published, text, kinds)
        except ValueError as exc:
            print(f"error: {args.out}: {exc}", file=sys.stderr)
            return 1
    problems = page_problems(text)
    if problems:
        print("error: the page would mislead:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
