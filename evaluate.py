"""Evaluate dispatch policies on a scenario (DESIGN.md, "evaluate.py").

    python evaluate.py --scenario malcolm_hetero_paper_exp --policy random --policy po2 \\
                       --loads 0.4,0.7,0.85 --tasks 1000000 --seeds 5 --out out/demo [--json]

A ``--policy`` that is a path (a checkpoint or run folder written by
train.py) is a trained policy, evaluated through its environment with the
same metrics; the scenario then defaults to the one it was trained on. A
``--policy`` that is a policy file (``FILE.dcpol``, written by ``python -m
dcgym.agents.export``, or ``zoo:NAME`` for ``zoo/NAME.dcpol``) runs its
Malcolm actor pair inside the engine (the C++ RackController), with the same
metrics and the same tasks; ``FILE:heartbeat_us=US,load_metric=M`` sets the
environment settings a file does not store (default 100 and expected_wait).

Runs every policy at every load with every seed (``--seeds 5`` = seeds 1..5,
``--seeds 1,2,7`` those, ``--seed 3`` one), in parallel on Ray: a local
cluster of ``--workers`` CPUs (default: all cores, or serial in this process
for a single run; ``--workers 0`` always serial) or the cluster at
``--address``. Writes results.json, results.csv, summary.csv,
p99_vs_load.png, latency_cdf.png and, when loads are sampled (the scenario's
sample_period_us or ``--timeline US``), load_over_time.png into --out, and
prints a table of means with 95% confidence intervals over seeds, with the
p99 of each task type when the scenario has types (or, with
--json, only the results document) on standard output. Bad input prints one
``error: ...`` line on standard error and exits with status 2. This is a thin
front: everything happens in :mod:`dcgym.agents.evaluation`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dcgym.agents.evaluation import DEFAULT_TASKS, evaluate, parse_seeds, to_json, write_plots, write_results
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import DEFAULT_SCENARIO

BAD_INPUT = 2
"""Exit status for any bad argument or configuration (and for usage errors)."""

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


@app.command()
def main(
    scenario: Annotated[
        str | None,
        typer.Option(
            help=f"packaged scenario name or YAML path (default: a trained policy's, else {DEFAULT_SCENARIO})"
        ),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(help="policy, e.g. po2 or jbt:threshold=30, a checkpoint / run folder of train.py, or a "
                          "policy file (FILE.dcpol or zoo:NAME, run in the engine) (repeatable; default: the "
                          "scenario's)"),
    ] = None,
    loads: Annotated[str | None, typer.Option(help="comma-separated loads (default: the scenario's grid)")] = None,
    tasks: Annotated[int, typer.Option(help="arrivals per run, warm-up included")] = DEFAULT_TASKS,
    seed: Annotated[int | None, typer.Option(help="one seed of every random stream (default 1)")] = None,
    seeds: Annotated[str | None, typer.Option(help="N for seeds 1..N, or a comma-separated list")] = None,
    workers: Annotated[
        int | None, typer.Option(help="parallel runs on a local Ray cluster; 0 = serial (default: all cores)")
    ] = None,
    address: Annotated[str | None, typer.Option(help="address of a running Ray cluster to use")] = None,
    timeline: Annotated[
        float | None, typer.Option(help="sample every node's load every US microseconds for load_over_time.png")
    ] = None,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("out/evaluate"),
    json_out: Annotated[bool, typer.Option("--json", help="print the results document on stdout")] = False,
    explore: Annotated[bool, typer.Option("--explore", help="sample trained policies' actions (default: "
                                                            "deterministic)")] = False,
) -> None:
    """Run every policy at every load with every seed and write the results."""
    grid = None if loads is None else [part.strip() for part in loads.split(",")]  # validated as loads downstream
    if seed is not None and seeds is not None:
        raise InvalidConfigError("seeds", seeds, f"nothing when --seed ({seed}) is given: one or the other")
    seed_list = None if seeds is None else parse_seeds(seeds)
    if scenario is None:
        scenario = _trained_scenario(policy or [])
    out.mkdir(parents=True, exist_ok=True)  # fail before the runs, not after
    doc = evaluate(
        scenario, policy, grid, tasks=tasks, seed=seed, seeds=seed_list, workers=workers, address=address,
        sample_period_us=timeline, explore=explore,
    )
    write_results(doc, out)
    write_plots(doc, out)
    if json_out:
        sys.stdout.write(to_json(doc) + "\n")
    else:
        Console(width=None if sys.stdout.isatty() else 160).print(_table(doc))


def _trained_scenario(policies: list[str]) -> Any:
    """The scenario (with overrides) the first trained policy among ``policies`` was trained on, else the default."""
    from dcgym.agents.checkpoints import checkpoint_scenario, is_checkpoint_spec
    from dcgym.agents.export.in_engine import is_policy_file_spec
    from dcgym.envs.scenario import load_scenario

    trained = [p for p in policies if is_checkpoint_spec(p) and not is_policy_file_spec(p)]
    if not trained:
        return DEFAULT_SCENARIO
    name, overrides = checkpoint_scenario(trained[0])
    return load_scenario(name, overrides) if overrides else name


def _table(doc: dict[str, Any]) -> Table:
    seeds = doc["seeds"]
    which = f"seed {seeds[0]}" if len(seeds) == 1 else f"{len(seeds)} seeds, mean ± 95% CI"
    table = Table(title=f"{doc['scenario']} ({which}, {doc['tasks']:,} tasks per run)")
    counts = [c for c in ("migrations", "steals") if any(s[c]["mean"] for s in doc["summary"])]
    types = list(next((s["latency_by_type_us"] for s in doc["summary"] if "latency_by_type_us" in s), {}))
    columns = ["policy", "load", "p99 (us)", *(f"p99 {t} (us)" for t in types), "mean (us)", "throughput (ktps)",
               "dropped", *counts]
    for column in columns:
        table.add_column(column, justify="left" if column == "policy" else "right")
    for s in doc["summary"]:
        row = [
            s["policy"],
            f"{s['load']:g}",
            _fmt(s["latency_us"]["p99"]),
            *(_fmt(s["latency_by_type_us"][t]["p99"]) if "latency_by_type_us" in s else "-" for t in types),
            _fmt(s["latency_us"]["mean"]),
            _fmt(s["throughput_ktps"]),
            _fmt(s["tasks_dropped"], 0),
        ]
        row += [_fmt(s[c], 0) for c in counts]
        table.add_row(*row)
    return table


def _fmt(stat: dict[str, Any], digits: int = 1) -> str:
    if stat["mean"] is None:
        return "-"
    text = f"{stat['mean']:,.{digits}f}"
    return text if stat["ci95"] is None else f"{text} ± {stat['ci95']:,.{digits}f}"


def run(argv: list[str] | None = None) -> int:
    """The command line, returning the exit status; every error is one line on stderr."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        return typer.main.get_command(app).main(args=argv, prog_name="evaluate.py", standalone_mode=False) or 0
    except typer.TyperException as exc:  # typer's usage errors: unknown option, --tasks abc, ...
        message = exc.format_message()
    except (ValueError, OSError) as exc:  # InvalidConfigError, the engine's config checks, unwritable --out
        message = str(exc)
    print("error: " + " ".join(message.split()), file=sys.stderr)
    return BAD_INPUT


if __name__ == "__main__":
    sys.exit(run())
