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
exit with status 2, as does an entry already in OUT unless ``--replace`` (a zoo entry may have been made another
way, e.g. searched, with a card written for it). ``--name NAME`` names the entry of one run instead
(a run of an experiment with ``--set`` overrides: ``distr_lb_sim_cpu50_io50``).
``--osml-models DIR RUN --name NAME`` makes OSML's entry instead: the folder
``OUT/NAME/`` of Models A and B (DIR's ``model_a.pt``, ``model_b.pt``) and
Model-C (RUN's final checkpoint) as policy files (Models A' and B' too when DIR
holds them; ``--osml-options reclaim=code,shadows=off`` recorded in Model-C's file,
the scheduler's parameters ``zoo:NAME`` runs with), and ``OUT/NAME.md``
(docs/osml.md, "Export").
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
    osml_models: Annotated[
        Path | None,
        typer.Option(help="OSML: the folder of model_a.pt and model_b.pt; RUN is Model-C's run, --name required"),
    ] = None,
    made_with: Annotated[
        list[str] | None, typer.Option(help="OSML: a command that made the models, for the card (repeatable)")
    ] = None,
    osml_options: Annotated[
        str | None,
        typer.Option(help="OSML: the scheduler's rule, reclaim, shadows to record (reclaim=code,shadows=off)"),
    ] = None,
    replace: Annotated[bool, typer.Option(help="overwrite an entry already in OUT (refused without it)")] = False,
) -> None:
    """Export each run's final checkpoint into the zoo, with its card."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from dcgym.agents.export.zoo import build_entry, build_osml_entry, build_zoo
    from dcgym.envs.error import InvalidConfigError

    if osml_models is not None:
        if len(runs) != 1 or name is None:
            raise InvalidConfigError("--osml-models", str(osml_models), "one run folder (Model-C's) and --name")
        pairs = [kv.split("=", 1) for kv in osml_options.split(",")] if osml_options else []
        if any(len(kv) != 2 for kv in pairs):
            raise InvalidConfigError("--osml-options", osml_options, "key=value pairs separated by commas")
        options = dict(pairs)
        entries = [
            build_osml_entry(
                osml_models,
                runs[0],
                out,
                name,
                commit=commit,
                made_with=made_with or [],
                options=options,
                replace=replace,
            )
        ]
    elif name is not None:
        if len(runs) != 1:
            raise InvalidConfigError("--name", name, "one run folder (the name of its entry)")
        entries = [build_entry(runs[0], out, name=name, commit=commit, replace=replace)]
    else:
        entries = build_zoo(runs, out, commit=commit, replace=replace)
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
