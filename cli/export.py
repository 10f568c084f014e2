"""Export a trained policy as a policy file for the C++ runtime (docs/policy_format.md).

    dcgym-export RUN --out FILE
    dcgym-export RUN --osml-models DIR --out FOLDER
    dcgym-export --demo-file FILE

(also ``python -m dcgym export``).
RUN is a checkpoint or a run folder written by train.py (its newest
checkpoint). With ``--osml-models DIR`` (a folder of OSML's ``model_a.pt`` and
``model_b.pt``), RUN is OSML's Model-C (a run, checkpoint or module folder) and
``--out`` the folder that gets ``model_a.dcpol``, ``model_b.dcpol`` and
``model_c.dcpol`` (docs/osml.md, "Export"). ``--demo-file`` writes a small Malcolm-shaped policy with random
weights instead (4 nodes; for the deployment example and smoke tests). Prints
one line describing each file written. Paths may be relative to the working
directory. Bad input prints one ``error: ...`` line on standard error and
exits with status 2. This is a thin front over :mod:`dcgym.agents.export`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from dcgym._app import VersionOption, new_app, run_app
from dcgym.agents.algorithms import algorithms
from dcgym.agents.export import demo_policy, export_policy, read_policy, write_policy
from dcgym.agents.export.osml_policies import export_osml
from dcgym.envs.error import InvalidConfigError

__all__ = ["app", "main", "run"]

app = new_app(__doc__)


@app.command()
def main(
    run: Annotated[
        str | None,
        typer.Argument(
            help="checkpoint or run folder written by train.py, trained by one of "
            + ", ".join(algorithms())
            + " (the modules say their policy file; a recurrent network has none)"
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="policy file to write")] = None,
    demo_file: Annotated[Path | None, typer.Option(help="write a small demo policy here instead")] = None,
    osml_models: Annotated[
        Path | None,
        typer.Option(help="OSML: the folder of model_a.pt and model_b.pt; RUN is Model-C's, --out a folder"),
    ] = None,
    version: VersionOption = False,
) -> None:
    """Write the policy file."""
    if osml_models is not None:
        if run is None or out is None or demo_file is not None:
            raise InvalidConfigError("--osml-models", str(osml_models), "RUN (Model-C's) and --out FOLDER with it")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        for written in export_osml(osml_models, run, out).values():
            policy = read_policy(written)
            print(f"wrote {written}: {policy.kind}, {policy.num_inputs} inputs, {written.stat().st_size} bytes")
        return
    if demo_file is not None:
        if run is not None or out is not None:
            raise InvalidConfigError("--demo-file", str(demo_file), "nothing else: no RUN and no --out with it")
        path = write_policy(demo_policy(), demo_file)
    else:
        if run is None:
            raise InvalidConfigError("RUN", None, "a checkpoint or run folder written by train.py (or --demo-file)")
        if out is None:
            raise InvalidConfigError("--out", None, "the policy file to write")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        path = export_policy(run, out)
    policy = read_policy(path)
    print(f"wrote {path}: {policy.kind}, {policy.num_agents} agents, {path.stat().st_size} bytes")


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line, returning the exit status; bad input is one line on stderr."""
    return run_app(app, argv, prog or Path(sys.argv[0]).name)


if __name__ == "__main__":
    sys.exit(run(prog="python -m dcgym.export"))
