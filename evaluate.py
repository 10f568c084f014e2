"""Evaluate dispatch policies on a scenario (DESIGN.md, "evaluate.py").

    python evaluate.py --scenario malcolm_hetero_paper_exp --policy random --policy po2 \\
                       --loads 0.4,0.7,0.85 --tasks 1000000 --seed 1 --out out/demo [--json]

Writes results.json, results.csv and p99_vs_load.png into --out and prints a
table (or, with --json, only the results document) on standard output. Bad
input prints one ``error: ...`` line on standard error and exits with status 2.
This is a thin front: everything happens in :mod:`dcgym.agents.evaluation`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dcgym.agents.evaluation import DEFAULT_TASKS, evaluate, plot_p99_vs_load, to_json, write_results
from dcgym.envs.scenario import DEFAULT_SCENARIO

BAD_INPUT = 2
"""Exit status for any bad argument or configuration (and for usage errors)."""

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


@app.command()
def main(
    scenario: Annotated[str, typer.Option(help="packaged scenario name or YAML path")] = DEFAULT_SCENARIO,
    policy: Annotated[
        list[str] | None, typer.Option(help="policy, e.g. po2 or po_d:d=3 (repeatable; default: the scenario's)")
    ] = None,
    loads: Annotated[str | None, typer.Option(help="comma-separated loads (default: the scenario's grid)")] = None,
    tasks: Annotated[int, typer.Option(help="arrivals per run, warm-up included")] = DEFAULT_TASKS,
    seed: Annotated[int, typer.Option(help="seed of every random stream")] = 1,
    out: Annotated[Path, typer.Option(help="output folder")] = Path("out/evaluate"),
    json_out: Annotated[bool, typer.Option("--json", help="print the results document on stdout")] = False,
) -> None:
    """Run every policy at every load and write the results."""
    grid = None if loads is None else [part.strip() for part in loads.split(",")]  # validated as loads downstream
    out.mkdir(parents=True, exist_ok=True)  # fail before the runs, not after
    doc = evaluate(scenario, policy, grid, tasks=tasks, seed=seed)
    write_results(doc, out)
    plot_p99_vs_load(doc, out / "p99_vs_load.png")
    if json_out:
        sys.stdout.write(to_json(doc) + "\n")
    else:
        Console().print(_table(doc))


def _table(doc: dict[str, Any]) -> Table:
    table = Table(title=f"{doc['scenario']} (seed {doc['seed']}, {doc['tasks']:,} tasks per run)")
    for column in ("policy", "load", "p99 (us)", "mean (us)", "throughput (ktps)", "dropped"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for r in doc["results"]:
        table.add_row(
            r["policy"],
            f"{r['load']:g}",
            _fmt(r["latency_us"]["p99"]),
            _fmt(r["latency_us"]["mean"]),
            _fmt(r["throughput_ktps"]),
            f"{r['tasks_dropped']:,}",
        )
    return table


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


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
