"""Export a trained policy as a policy file for the C++ runtime (docs/policy_format.md).

    python -m dcgym.agents.export RUN --out FILE
    python -m dcgym.agents.export --demo-file FILE

RUN is a checkpoint or a run folder written by train.py (its newest
checkpoint). ``--demo-file`` writes a small Malcolm-shaped policy with random
weights instead (4 nodes; for the deployment example and smoke tests). Prints
one line describing the file written. Bad input prints one ``error: ...``
line on standard error and exits with status 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from dcgym.envs.error import DcgymError, InvalidConfigError

BAD_INPUT = 2
"""Exit status for any bad argument, checkpoint or output path (and for usage errors)."""

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


@app.command()
def main(
    run: Annotated[str | None, typer.Argument(help="checkpoint or run folder written by train.py")] = None,
    out: Annotated[Path | None, typer.Option(help="policy file to write")] = None,
    demo_file: Annotated[Path | None, typer.Option(help="write a small demo policy here instead")] = None,
) -> None:
    """Write the policy file."""
    from dcgym.agents.export import demo_policy, export_policy, read_policy, write_policy

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


def run(argv: list[str] | None = None) -> int:
    """The command line, returning the exit status; bad input is one line on stderr."""
    try:
        return typer.main.get_command(app).main(args=argv, prog_name="python -m dcgym.agents.export",
                                                standalone_mode=False) or 0
    except typer.TyperException as exc:  # typer's usage errors: unknown option, missing value, ...
        message = exc.format_message()
    except (ValueError, OSError, DcgymError) as exc:  # InvalidConfigError, unsupported modules, unwritable --out
        message = str(exc)
    print("error: " + " ".join(message.split()), file=sys.stderr)
    return BAD_INPUT


if __name__ == "__main__":
    sys.exit(run())
