"""Train an experiment at every point of a grid and every seed, in parallel as Ray Tune trials, and tabulate.

    dcgym-sweep --config configs/experiments/X.yaml --grid hyperparameters.lr=1e-4,3e-4 --seeds 1,2,3 \\
                [--iterations N] [--set key=value ...] [--out DIR] [--address ADDR] [--max-concurrent N]
    dcgym-sweep --resume DIR

(also ``python sweep.py`` or ``python -m dcgym sweep``). Each trial is one train.py run (its run folder under
DIR/runs/) of the experiment with the grid point's values and the seed, on one CPU of the local Ray or of the
cluster at ``--address``. The table (per grid point: the mean over seeds of the final evaluation's headline metric
with its 95% interval, the seeds finished, each seed's value) is printed and written to DIR/results.md and
DIR/results.json. Ctrl-C stops the trials (exit status 130); ``--resume DIR`` runs only the unfinished (and failed)
ones. A trial that fails is named on standard error (exit status 1). Bad input prints one ``error: ...`` line and
exits with status 2 before Ray starts. This is a thin front over
:mod:`dcgym.agents.training.sweep`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # Tune's older output, which verbose=0 silences

from dcgym._app import INTERRUPTED, VersionOption, new_app, run_app, start_training_command  # noqa: E402
from dcgym.agents.training.experiment import parse_assignments  # noqa: E402
from dcgym.agents.training.sweep import SweepSpec, parse_grid, run_sweep  # noqa: E402
from dcgym.envs.error import InvalidConfigError  # noqa: E402

__all__ = ["app", "main", "run"]

_ARGV: list[str] = []
_PROG: list[str] = ["sweep.py"]

app = new_app(__doc__)


@app.command()
def main(
    config: Annotated[str | None, typer.Option(help="experiment YAML (or a packaged experiment name)")] = None,
    grid: Annotated[
        list[str] | None,
        typer.Option(help="a grid axis: key=v1,v2,... (dotted key, YAML values; repeatable: the product)"),
    ] = None,
    seeds: Annotated[str, typer.Option(help="comma-separated seeds, each trained at every grid point")] = "1",
    iterations: Annotated[
        int | None, typer.Option(help="train this many iterations per trial (budget.iterations)")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="override an experiment field for every trial: key=value (repeatable)"),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="the sweep folder (default sweeps/NAME__TIME)")] = None,
    resume: Annotated[Path | None, typer.Option(help="finish the unfinished trials of this sweep folder")] = None,
    address: Annotated[str | None, typer.Option(help="address of a running Ray cluster to run the trials on")] = None,
    max_concurrent: Annotated[
        int | None, typer.Option(min=1, help="trials at a time (default: as many as the CPUs allow)")
    ] = None,
    version: VersionOption = False,
) -> None:
    """Run the sweep (or finish it with --resume) and print its table."""
    if resume is not None:
        for name, value in (("--config", config), ("--grid", grid), ("--set", set_), ("--iterations", iterations)):
            if value is not None:
                raise InvalidConfigError(name, value, "nothing with --resume: the sweep folder's spec is used")
        sweep_dir = resume
        spec = SweepSpec.read(sweep_dir)
    else:
        if config is None:
            raise InvalidConfigError("--config", None, "an experiment YAML file (or --resume DIR)")
        overrides = parse_assignments(set_)
        if iterations is not None:
            overrides["budget.iterations"] = iterations
        spec = SweepSpec.make(config, parse_grid(grid), _seeds(seeds), overrides)
        sweep_dir = out if out is not None else Path("sweeps") / f"{Path(config).stem}__{int(time.time())}"
        if sweep_dir.exists():
            raise InvalidConfigError("--out", str(sweep_dir), "a folder that does not exist yet (or --resume it)")
    table = run_sweep(
        spec,
        sweep_dir,
        resume=resume is not None,
        address=address,
        max_concurrent=max_concurrent,
        command=[_PROG[0], *_ARGV],
    )
    print(table.markdown(), end="")
    print(f"sweep folder: {Path(sweep_dir).resolve()}")
    for trial in table.failed:
        print(
            f"error: trial point {trial['point']} seed {trial['seed']} failed: {trial['error']} (log: {trial['log']})",
            file=sys.stderr,
        )
    if table.failed:
        raise typer.Exit(1)
    if not table.complete:
        print(
            f"{table.finished} of {table.trials} trials finished; finish with {_PROG[0]} --resume {sweep_dir}",
            file=sys.stderr,
        )
        raise typer.Exit(INTERRUPTED)


def _seeds(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise InvalidConfigError("--seeds", text, "comma-separated integers, e.g. 1,2,3") from None


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line, returning the exit status; bad input is one line on stderr."""
    _ARGV[:], _PROG[0] = start_training_command(argv, prog)
    return run_app(app, argv, _PROG[0], {KeyboardInterrupt: _interrupted})


def _interrupted(exc: BaseException) -> int:
    print(f"interrupted; finish with {_PROG[0]} --resume DIR (the sweep folder)", file=sys.stderr)
    return INTERRUPTED


if __name__ == "__main__":
    sys.exit(run(prog="python -m dcgym.sweep"))
