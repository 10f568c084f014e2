"""Evaluate policies on a scenario of any family and write the results.

    dcgym-evaluate --scenario malcolm_hetero_paper_exp --policy random --policy po2 \\
                   --loads 0.4,0.7,0.85 --tasks 1000000 --seeds 5 --out out/demo [--json]

(also ``python evaluate.py`` or ``python -m dcgym evaluate``). A ``--policy`` is a heuristic of the
scenario's family (``po2``, ``jbt:threshold=30``; ``ecmp`` on a multi-LB scenario; ``qlas:thresholds=pias_dm``
on a flow scenario), a checkpoint or run folder written by train.py (evaluated through its environment; the
scenario then defaults to the one it was trained on), or a policy file (``FILE.dcpol``, or ``zoo:NAME`` for
``zoo/NAME.dcpol``; the scenario then defaults to its family's, said in a line) run inside the engine; ``FILE:heartbeat_us=US,load_metric=M`` sets what a file does not store.
``python -m dcgym list scenarios`` and ``python -m dcgym list policies`` show what there is.

Runs every policy at every load with every seed (``--seeds 5`` = seeds 1..5, ``--seeds 1,2,7`` those,
``--seed 3`` one), in parallel on Ray: a local cluster of ``--workers`` CPUs (default: all cores, or
serial for a single run; ``--workers 0`` always serial) or the cluster at ``--address``. Writes
results.json, results.csv, summary.csv and the family's plots into --out, and prints a table of means
with 95% confidence intervals over seeds (or, with --json, only the results document). A load marked
``*`` is a censored cell: its percentiles leave out dropped or unfinished work (the note under the table
says which). The files reach --out only once every run has finished: Ctrl-C (exit status 130) says how
many runs had finished and leaves --out as it was. Before the first run the evaluation's size is estimated:
one that would take over 2 hours (at the family's fastest measured rate, so at least that) or hold over 4 GB
(kept timelines) is refused with what it would take, unless ``--force``. Paths may be relative to the working directory. Bad
input prints one ``error: ...`` line on standard error and exits with status 2. This is a thin front over :mod:`dcgym.agents.evaluation`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dcgym._app import INTERRUPTED, VersionOption, new_app, run_app
from dcgym.agents.evaluation import evaluate, parse_seeds, to_json, write_plots, write_results
from dcgym.agents.evaluation.document import against_best, get_path
from dcgym.agents.evaluation.family import EVALUATIONS, family_of
from dcgym.agents.evaluation.runner import RunsInterrupted
from dcgym.agents.evaluation.scores import (
    PROFILE_TAUS,
    aggregate,
    cell_means,
    profiles_of,
    scenario_run_scores,
    scoring_of,
    with_interval,
)
from dcgym.agents.evaluation.suites import applies, suite_scenarios
from dcgym.agents.osml.files import is_osml_folder
from dcgym.agents.policies import Source, classify
from dcgym.agents.policies.checkpoints import checkpoint_scenario
from dcgym.agents.policies.file_settings import recorded_env
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import env_family
from dcgym.envs.scenario import DEFAULT_SCENARIO, load_scenario

__all__ = ["INTERRUPTED", "app", "main", "run"]

_OUT: list[Path] = []  # the --out folder of this invocation, once made, for the message after Ctrl-C

log = logging.getLogger(__name__)

app = new_app(__doc__)


@app.command()
def main(
    scenario: Annotated[
        str | None,
        typer.Option(
            help="packaged scenario name or YAML path (default: a checkpoint's own; for a policy file, its family's "
            f"default; else {DEFAULT_SCENARIO})"
        ),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            help="a heuristic of the scenario's family (po2, jbt:threshold=30, ecmp: python -m dcgym list policies), a "
            "checkpoint or run folder of train.py, or a policy file (FILE.dcpol or zoo:NAME); repeatable; default: "
            "the scenario's"
        ),
    ] = None,
    loads: Annotated[
        str | None,
        typer.Option(
            help="comma-separated loads, fractions of capacity (rack, lb, flow; default: the scenario's grid)"
        ),
    ] = None,
    mixes: Annotated[
        str | None,
        typer.Option(help="colo's axis instead of loads: comma-separated mix indices (default: the scenario's)"),
    ] = None,
    tasks: Annotated[
        int | None,
        typer.Option(
            help="units of work per run, warm-up included: "
            + ", ".join(family_of(kind).run_length_help() for kind in EVALUATIONS)
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="one seed of every random stream (default 1)")] = None,
    seeds: Annotated[str | None, typer.Option(help="N for seeds 1..N, or a comma-separated list")] = None,
    workers: Annotated[
        int | None, typer.Option(help="parallel runs on a local Ray cluster; 0 = serial (default: all cores)")
    ] = None,
    address: Annotated[str | None, typer.Option(help="HOST:PORT of a running Ray cluster to use")] = None,
    timeline: Annotated[
        float | None,
        typer.Option(
            help="US: a sampling period in microseconds for the plots over time: each node's load in the first "
            "seed's runs (rack, load_over_time.png), each service's latency and allocation in every run (colo); lb "
            "and flow sample none"
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("out/evaluate"),
    json_out: Annotated[bool, typer.Option("--json", help="print the results document on stdout")] = False,
    explore: Annotated[
        bool, typer.Option("--explore", help="sample trained policies' actions (default: deterministic)")
    ] = False,
    drained: Annotated[
        bool,
        typer.Option(
            "--drained",
            help="rack, lb: measure a fixed set of arrivals, each until it ends, and score against the family's "
            "bound (heuristics only; docs/benchmarking.md)",
        ),
    ] = False,
    suite: Annotated[
        str | None,
        typer.Option(
            help="a suite instead of one scenario: FAMILY:test (the held-out test suite) or FAMILY:train:SEED:COUNT "
            "(generated training scenarios); each scenario's results in a subfolder of --out"
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="run even an evaluation estimated to take hours (over 2) or gigabytes (over 4) of memory, "
            "refused otherwise",
        ),
    ] = False,
    version: VersionOption = False,
) -> None:
    """Run every policy at every load with every seed and write the results."""
    if loads is not None and mixes is not None:
        raise InvalidConfigError("--mixes", mixes, f"nothing when --loads ({loads}) is given: one or the other")
    axis, given = ("--mixes", mixes) if mixes is not None else ("--loads", loads)
    grid = None if given is None else [part.strip() for part in given.split(",")]  # validated downstream
    if seed is not None and seeds is not None:
        raise InvalidConfigError("--seeds", seeds, f"nothing when --seed ({seed}) is given: one or the other")
    seed_list = None if seeds is None else parse_seeds(seeds)
    if suite is not None and scenario is not None:
        raise InvalidConfigError("--suite", suite, f"nothing when --scenario ({scenario}) is given: one or the other")
    if suite is None and scenario is None:
        scenario = _trained_scenario(policy or [])
    if timeline is not None and not timeline > 0:
        raise InvalidConfigError(
            "--timeline", timeline, "a sampling period in microseconds > 0 (leave it out for no samples)"
        )
    if out.exists() and not out.is_dir():
        raise InvalidConfigError("--out", str(out), "a folder to write the results into (this is a file)")
    try:
        out.mkdir(parents=True, exist_ok=True)  # fail before the runs, not after
    except OSError as exc:
        raise InvalidConfigError("--out", str(out), f"a folder that can be made ({exc.strerror})") from None
    _OUT[:] = [out]
    # Each scenario with its loads and folder: a suite's scenarios (their own loads unless --loads) in subfolders.
    runs = (
        [
            (entry.write(out / entry.name), grid or list(entry.loads), out / entry.name)
            for entry in suite_scenarios(suite)
        ]
        if suite is not None
        else [(scenario, grid, out)]
    )
    docs, scored = [], []
    for one, one_grid, folder in runs:
        if given is not None:
            _check_axis(one, axis, given)
        chosen = policy
        if suite is not None and policy:  # a policy made for another shape is left out where it does not apply
            chosen = [p for p in policy if applies(p, one, float((one_grid or [1.0])[0]))]
            for p in policy:
                if p not in chosen:
                    log.warning(
                        "%s does not apply to %s (another number of nodes, servers or agents): left out", p, one
                    )
            if not chosen:
                continue
        try:
            doc = evaluate(
                one,
                chosen,
                one_grid,
                tasks=tasks,
                seed=seed,
                seeds=seed_list,
                workers=workers,
                address=address,
                sample_period_us=timeline,
                explore=explore,
                drained=drained,
                force=force,
            )
        except KeyboardInterrupt as exc:  # Typer would turn it into a silent exit 130
            raise _Stopped(exc) from None
        folder.mkdir(parents=True, exist_ok=True)
        _write_into(folder, doc)
        docs.append(doc)
        runs_scored = scenario_run_scores(doc, load_scenario(one) if isinstance(one, (str, Path)) else one)
        if doc["scenario"] not in scoring_of(doc).excluded:  # as the leaderboard: mm1, mm16 out of aggregates
            scored += runs_scored
        if not json_out:
            print_summary(doc, scores=cell_means(runs_scored))
    if scored:
        write_scores(out, scored, json_out)
    if json_out:
        text = to_json(docs[0]) if suite is None else "[" + ",\n".join(to_json(d) for d in docs) + "]"
        sys.stdout.write(text + "\n")


def write_scores(out: Path, scored: list[dict[str, Any]], quiet: bool) -> None:
    """The aggregates of every scored run (docs/benchmarking.md): per policy the IQM and the optimality gap with
    stratified-bootstrap 95% intervals, in ``scores.json`` with every run's score, a table (unless ``quiet``: the
    JSON document is standard output), and the performance profiles in ``performance_profiles.png``."""
    from dcgym.agents.evaluation.plots import plot_performance_profiles

    table = aggregate(scored)
    if not table:  # every run unscored (a censored or missing reference)
        return
    (out / "scores.json").write_text(
        json.dumps({"aggregate": table, "runs": scored}, indent=1, allow_nan=False) + "\n", encoding="utf-8"
    )
    log.info("wrote %s", out / "scores.json")
    plot_performance_profiles(
        profiles_of(scored), PROFILE_TAUS, out / "performance_profiles.png", "performance profiles"
    )
    if quiet:
        return
    tasks = len({(r["scenario"], r["load"]) for r in scored})
    result = Table(title=f"scores over {tasks} task(s) (scenario x load) and their seeds, 95% CI")
    for header in ("policy", "IQM", "optimality gap", "tasks", "runs"):
        result.add_column(header, justify="left" if header == "policy" else "right")
    for policy, a in sorted(table.items(), key=lambda item: -item[1]["iqm"]):
        gap = with_interval(a["optimality_gap"], a["optimality_gap_ci95"])
        result.add_row(policy, with_interval(a["iqm"], a["iqm_ci95"]), gap, str(a["tasks"]), str(a["runs"]))
    Console(width=None if sys.stdout.isatty() else 160).print(result)


def _check_axis(scenario: Any, axis: str, given: str) -> None:
    """InvalidConfigError naming ``axis`` (``--loads`` or ``--mixes``) unless it is the axis of ``scenario``'s
    family: mixes on colo, loads elsewhere (one option, one meaning)."""
    family = family_of((load_scenario(scenario) if isinstance(scenario, (str, Path)) else scenario).kind)
    wanted = "--mixes" if family.load_name == "mix" else "--loads"
    if axis != wanted:
        what = "mix indices" if wanted == "--mixes" else "loads"
        raise InvalidConfigError(axis, given, f"nothing on a {family.kind} scenario: its axis is {what} ({wanted})")


def _write_into(out: Path, doc: dict[str, Any]) -> None:
    """Write the results and plots into a folder beside them, then move each file in: a failed or interrupted
    run leaves ``out`` as it was, never a mix of older and newer files under the names a later command reads."""
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=out))
    try:
        with _quiet_writes():
            write_results(doc, staging)
            write_plots(doc, staging)
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            target = out / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            logging.getLogger(__name__).info("wrote %s", target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _quiet_writes():
    """The writers' "wrote PATH" lines name the staging folder: said once the files are in place instead."""
    loggers = [logging.getLogger(f"dcgym.agents.evaluation.{m}") for m in ("document", "plots")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class _Stopped(Exception):
    """Ctrl-C during the runs (``interrupt``: the KeyboardInterrupt, a RunsInterrupted saying how far they got)."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__()
        self.interrupt = interrupt


def _interrupted(exc: BaseException) -> int:
    """After Ctrl-C: how far the runs got, and that ``--out`` was left as it was."""
    runs = exc.interrupt if isinstance(exc, _Stopped) else exc
    done = f" after {runs.finished} of {runs.total} runs" if isinstance(runs, RunsInterrupted) else ""
    where = f"{_OUT[0]} left as it was" if _OUT else "nothing written"
    print(f"interrupted{done}: {where} (results are written only when every run has finished)", file=sys.stderr)
    return INTERRUPTED


def _trained_scenario(policies: list[str]) -> Any:
    """The scenario of the first trained policy among ``policies``: a checkpoint's (with overrides) it was trained
    on, or for a policy file its family's default (the file records its environment, not its scenario; said in a
    line); else the default."""
    for policy in policies:
        source = classify(policy).source
        if source is Source.CHECKPOINT and is_osml_folder(policy):  # OSML's models as files: any colo scenario
            return _family_default("colo", policy, "OSML's models")
        if source is Source.CHECKPOINT:
            name, overrides = checkpoint_scenario(policy)
            return load_scenario(name, overrides) if overrides else name
        if source is Source.POLICY_FILE and (env := recorded_env(policy)) is not None:
            kind = env_family(env)
            if kind in EVALUATIONS:
                return _family_default(kind, policy, f"trained on {env}")
    return DEFAULT_SCENARIO


def _family_default(kind: str, policy: str, what: str) -> str:
    """The default scenario of family ``kind`` for ``policy``, said in a line."""
    name = family_of(kind).default_scenario
    log.info("no --scenario: %s, the %s family's default (%s: %s)", name, kind, policy, what)
    return name


def print_summary(
    doc: dict[str, Any], title: str | None = None, scores: dict[tuple[str, float], float | None] | None = None
) -> None:
    """The document's summary as a table on standard output: its family's columns, censored cells marked ``*``
    beside their load (alike in every family), and
    beside the first the normalised score of each cell when ``scores`` has any (docs/benchmarking.md)."""
    family = family_of(doc["family"])
    seeds = doc["seeds"]
    which = f"seed {seeds[0]}" if len(seeds) == 1 else f"{len(seeds)} seeds, mean ± 95% CI"
    table = Table(title=title or f"{doc['scenario']} ({which}, {doc[family.work]:,} {family.work} per run)")
    columns = family.columns(doc)
    headers = [c.header for c in columns]
    # The score goes right after the family's headline metric, which it normalises.
    at = next((k + 1 for k, c in enumerate(columns) if c.path == family.headline[0]), 1)
    if scores:
        headers.insert(at, "score")
    for header in ("policy", family.load_name, *headers):
        table.add_column(header, justify="left" if header == "policy" else "right")
    censored = False
    for s in doc["summary"]:
        mark = " *" if s.get("censored") else ""
        censored |= bool(mark)
        cells = [_fmt(_get(s, c.path), c.digits, c.scale) for c in columns]
        if scores:
            value = scores.get((s["policy"], s["load"]))
            cells.insert(at, "-" if value is None else f"{value:.2f}")
        table.add_row(s["policy"], f"{s['load']:g}{mark}", *cells)  # a cell is a policy at a load: marked there
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(table)
    if censored:
        console.print(family.censoring_note)


def print_against_best(doc: dict[str, Any], policy: str) -> None:
    """``policy`` against the best other policy of the document at each load (:func:`against_best`), as a table."""
    family = family_of(doc["family"])
    _, label, digits = family.headline
    seeds = doc["seeds"]
    paired = f"paired over {len(seeds)} seeds, mean ± 95% CI" if len(seeds) > 1 else f"seed {seeds[0]}"
    table = Table(title=f"{policy} against the best other policy at each load: {label}")
    for header in (family.load_name, "best other policy", "its value", policy, f"difference ({paired})", "verdict"):
        table.add_column(header, justify="left" if header in ("best other policy", "verdict") else "right")
    for row in against_best(doc, policy):
        d = row["difference"]
        half = "" if d["ci95"] is None else f" ± {d['ci95']:.{digits}f}"
        table.add_row(
            f"{row['load']:g}",
            row["best"],
            f"{row['best_value']:,.{digits}f}",
            f"{row['value']:,.{digits}f}",
            "-" if d["mean"] is None else f"{d['mean']:+,.{digits}f}{half}",
            row["verdict"],
        )
    Console(width=None if sys.stdout.isatty() else 160).print(table)


def _get(cell: dict[str, Any], path: str) -> dict[str, Any] | None:
    try:
        return get_path(cell, path)
    except (KeyError, TypeError):
        return None


def _fmt(stat: dict[str, Any] | None, digits: int = 1, scale: float = 1.0) -> str:
    if not stat or stat["mean"] is None:
        return "-"
    text = f"{stat['mean'] * scale:,.{digits}f}"
    return text if stat["ci95"] is None else f"{text} ± {stat['ci95'] * scale:,.{digits}f}"


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line, returning the exit status; every error is one line on stderr."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    _OUT.clear()
    return run_app(app, argv, prog or Path(sys.argv[0]).name, {_Stopped: _interrupted, KeyboardInterrupt: _interrupted})


if __name__ == "__main__":
    sys.exit(run(prog="python -m dcgym.evaluate"))
