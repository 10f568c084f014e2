"""List what dcgym ships: scenarios, policies, algorithms, experiments and zoo policies.

    python -m dcgym list scenarios [--family rack]
    python -m dcgym list policies [--family lb]
    python -m dcgym list algorithms
    python -m dcgym list experiments
    python -m dcgym list zoo

(also ``dcgym list ...``). One item per line, ``NAME  summary``, grouped by family where there are families.
"""

from __future__ import annotations

import re
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from dcgym._app import VersionOption, new_app, run_app
from dcgym.agents.algorithms import LEARNING_SYSTEMS
from dcgym.agents.heuristics import policies
from dcgym.agents.policies.zoo import list_zoo, zoo_dir
from dcgym.agents.training.experiment import list_experiments, load_experiment
from dcgym.envs.families import FAMILIES
from dcgym.envs.families import family as find
from dcgym.envs.scenario import list_scenarios, load_scenario

__all__ = ["app", "main", "run"]

app = new_app(__doc__)


class What(StrEnum):
    scenarios = "scenarios"
    policies = "policies"
    algorithms = "algorithms"
    experiments = "experiments"
    zoo = "zoo"


@app.command()
def main(
    what: Annotated[What, typer.Argument(help="what to list")],
    family: Annotated[str | None, typer.Option(help="only this family (" + ", ".join(FAMILIES) + ")")] = None,
    version: VersionOption = False,
) -> None:
    """Print the packaged items of one kind."""
    families = [find(family).name] if family else list(FAMILIES)
    if what is What.scenarios:
        for name in families:
            print(f"# {name}: {FAMILIES[name].summary}")
            for scenario in list_scenarios(name):
                print(f"{scenario}  {load_scenario(scenario).description or ''}")
    elif what is What.policies:
        for name in families:
            print(f"# {name}")
            for spec, summary in policies(name).items():
                print(f"{spec}  {summary}")
        print(
            "# any family: a checkpoint or run folder written by dcgym-train, or a policy file (FILE.dcpol, zoo:NAME)"
        )
    elif what is What.algorithms:
        for system in LEARNING_SYSTEMS:
            print(f"# {system.name}: {system.summary}")
            for spec in system.algorithms:
                print(f"{spec.name}  {spec.summary}" + (f" (on {', '.join(spec.envs)})" if spec.envs else ""))
    elif what is What.experiments:
        for name in list_experiments():
            experiment = load_experiment(name)
            print(
                f"{name}  {experiment.algorithm} on {experiment.env}, {experiment.scenario}: {experiment.description}"
            )
    else:
        folders = list_zoo(entry="folder")  # OSML's models, a folder of policy files, for the colo scenarios
        for name in sorted([*list_zoo(), *folders]):
            print(
                f"zoo:{name}  {_card_summary(zoo_dir() / f'{name}.md')}"
                + ("  (a folder of OSML's models: colo scenarios)" if name in folders else "")
            )


def _card_summary(card: Path) -> str:
    """What a zoo card says the policy is: its provenance's ``algorithm on env, scenario ...``, else its first
    line that is not the title."""
    lines = [line.strip() for line in card.read_text(encoding="utf-8").splitlines()] if card.is_file() else []
    body = [line for line in lines if line and not line.startswith("#")]
    if not body:
        return "(no card)"
    match = re.match(r"Provenance: [^(]*\(([^)]*)\)", body[0])
    text = (match[1] if match else body[0]).replace("`", "")
    return text if len(text) <= 100 else re.split(r"(?<=[.:;])\s", text)[0].rstrip(":;")


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line, returning the exit status."""
    return run_app(app, argv, prog or Path(sys.argv[0]).name)


if __name__ == "__main__":
    sys.exit(run(prog="python -m dcgym.catalog"))
