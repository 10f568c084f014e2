"""Rerun an evaluation from its manifest and check every number bit for bit, or write a manifest.

    dcgym verify MANIFEST                     rerun it: exit 0 when every row is identical, 1 at the first difference
    dcgym verify MANIFEST --make --scenario single_link_websearch --policy fair --policy zoo:NAME \\
                 --loads 0.5,0.8 --seeds 2 --tasks 20000

(also ``python -m dcgym verify``). A manifest (JSON) holds the scenario, policies, loads, seeds, run length and
dcgym version of an evaluation, the SHA-256 of each policy file, and every result row but its wall-clock time
(docs/benchmarking.md). Verifying names a changed policy file before running anything, else the first number that
differs. Bad input prints one ``error: ...`` line on standard error and exits with status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from dcgym._app import VersionOption, new_app, run_app
from dcgym.agents.evaluation import parse_seeds
from dcgym.agents.evaluation.manifest import make_manifest, verify
from dcgym.envs.error import InvalidConfigError

__all__ = ["app", "main", "run"]

app = new_app(__doc__)


@app.command()
def main(
    manifest: Annotated[Path, typer.Argument(help="the manifest (JSON) to verify, or to write with --make")],
    make: Annotated[bool, typer.Option("--make", help="evaluate and write the manifest instead")] = False,
    scenario: Annotated[str | None, typer.Option(help="with --make: a packaged scenario name or YAML path")] = None,
    policy: Annotated[list[str] | None, typer.Option(help="with --make: a policy (repeatable), as evaluate's")] = None,
    loads: Annotated[str | None, typer.Option(help="with --make: comma-separated loads")] = None,
    seeds: Annotated[str, typer.Option(help="with --make: N for seeds 1..N, or a comma-separated list")] = "1",
    tasks: Annotated[int | None, typer.Option(help="with --make: units of work per run")] = None,
    workers: Annotated[int, typer.Option(help="parallel runs on a local Ray cluster; 0 = serial")] = 0,
    version: VersionOption = False,
) -> None:
    """Verify a manifest (exit 1 at the first difference) or write one."""
    if make:
        for name, value in (("--scenario", scenario), ("--policy", policy), ("--loads", loads), ("--tasks", tasks)):
            if not value:
                raise InvalidConfigError(name, value, "a value: --make writes what it ran, so nothing is implicit")
        grid = [float(part) for part in str(loads).split(",")]
        made = make_manifest(str(scenario), list(policy or []), grid, parse_seeds(seeds), int(tasks or 0), workers)
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(made, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {manifest}: {len(made['results'])} rows")
        return
    if not manifest.is_file():
        raise InvalidConfigError("manifest", str(manifest), "a manifest file written by dcgym verify --make")
    try:
        loaded = json.loads(manifest.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidConfigError("manifest", str(manifest), f"JSON ({exc})") from None
    if not isinstance(loaded, dict):
        raise InvalidConfigError("manifest", str(manifest), "a JSON object")
    found = verify(loaded, workers)
    if found:
        print(f"differs: {found}")
        raise typer.Exit(1)
    print(f"verified: {len(loaded['results'])} rows identical bit for bit")


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line, returning the exit status; every error is one line on stderr."""
    return run_app(app, argv, prog or Path(sys.argv[0]).name)


if __name__ == "__main__":
    sys.exit(run(prog="python -m dcgym.verify"))
