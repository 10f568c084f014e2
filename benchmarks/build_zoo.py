"""Build policy-zoo entries from train.py run folders (zoo/README.md).

    python benchmarks/build_zoo.py runs/malcolm_hetero_paper_exp__malcolm__1__* ... --out zoo/

For each run folder: its final (newest) checkpoint exported to
``OUT/<experiment>.dcpol`` (``<experiment>`` = the stem of the run's
``--config``, e.g. ``malcolm_hetero_exp``) and ``OUT/<experiment>.md``: one
provenance line (config, scenario, seed, the commit of this checkout, the
budget and what was trained) and the p99 table of the run's final
evaluation (``evaluation/results.json``). Prints one line per entry. Two
runs of one experiment, a folder that is not a run, or a policy the
exporter cannot write print one ``error: ...`` line on standard error and
exit with status 2. ``--name NAME`` names the entry of one run instead
(a run of an experiment with ``--set`` overrides: ``distr_lb_sim_cpu50_io50``).
The logic is :mod:`dcgym.agents.export.zoo`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from dcgym.envs.error import DcgymError

BAD_INPUT = 2

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


@app.command()
def main(
    runs: Annotated[list[Path], typer.Argument(help="run folders written by train.py")],
    out: Annotated[Path, typer.Option(help="the zoo folder to write into")] = Path("zoo"),
    commit: Annotated[str | None, typer.Option(help="the commit to record (default: git rev-parse HEAD)")] = None,
    name: Annotated[
        str | None, typer.Option(help="the entry's name instead of the experiment's (one run only)")
    ] = None,
) -> None:
    """Export each run's final checkpoint into the zoo, with its card."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from dcgym.agents.export.zoo import build_entry, build_zoo
    from dcgym.envs.error import InvalidConfigError

    if name is not None:
        if len(runs) != 1:
            raise InvalidConfigError("--name", name, "one run folder (the name of its entry)")
        entries = [build_entry(runs[0], out, name=name, commit=commit)]
    else:
        entries = build_zoo(runs, out, commit=commit)
    for entry in entries:
        print(f"wrote {entry.policy} and {entry.card}")


def run(argv: list[str] | None = None) -> int:
    """The command line, returning the exit status; bad input is one line on stderr."""
    try:
        return typer.main.get_command(app).main(args=argv, prog_name="build_zoo.py", standalone_mode=False) or 0
    except typer.TyperException as exc:
        message = exc.format_message()
    except (ValueError, OSError, DcgymError) as exc:
        message = str(exc)
    print("error: " + " ".join(message.split()), file=sys.stderr)
    return BAD_INPUT


if __name__ == "__main__":
    sys.exit(run())
