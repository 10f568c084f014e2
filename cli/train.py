"""Train one experiment and leave a self-describing run folder.

    dcgym-train --config configs/experiments/malcolm_hetero_exp.yaml [--iterations N] [--seed S] \\
                [--out DIR] [--wandb] [--resume RUN] [--address ADDR] [--workers N] [--set key=value ...]

(also ``python train.py`` or ``python -m dcgym train``). Writes runs/{scenario}__{algorithm}__{seed}__{time}/
(or under --out) with the resolved config, metrics.csv, TensorBoard events, checkpoints, the final
evaluation against the heuristics and plots, showing progress with the current return, imbalance and
p99 latency. ``--config`` takes a path or a packaged experiment name (``python -m dcgym list
experiments``). ``--resume RUN`` continues a run folder (a path, or a name under --out) from its newest
checkpoint; Ctrl-C writes a checkpoint first and exits with status 130. ``--address`` trains on a running
Ray cluster (with more env runners); by default a local Ray of 2 CPUs is started. ``--workers N`` samples
with N remote env runners (locally or on the cluster). Bad input prints one
``error: ...`` line on standard error and exits with status 2. This is a thin front over
:mod:`dcgym.agents.training`.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from dcgym._app import INTERRUPTED, VersionOption, new_app, run_app, start_training_command  # noqa: E402
from dcgym.agents.algorithms import algorithms  # noqa: E402
from dcgym.agents.training import CONFIG_FILE, Trainer, find_run, new_run_dir  # noqa: E402
from dcgym.agents.training.experiment import load_experiment, parse_assignments  # noqa: E402
from dcgym.envs.error import DcgymError, InvalidConfigError  # noqa: E402
from dcgym.evaluate import print_against_best, print_summary  # noqa: E402

__all__ = ["INTERRUPTED", "app", "main", "run"]

_ARGV: list[str] = []  # the arguments of this invocation, for run.json
_PROG: list[str] = ["train.py"]  # how it was invoked

app = new_app(__doc__)


@app.command()
def main(
    config: Annotated[
        str | None,
        typer.Option(
            help="experiment YAML (or a packaged experiment name), its algorithm one of "
            + ", ".join(algorithms())
            + " (python -m dcgym list algorithms)"
        ),
    ] = None,
    iterations: Annotated[
        int | None, typer.Option(help="train this many iterations in total (budget.iterations)")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="seed of the networks and environments (seed)")] = None,
    out: Annotated[Path, typer.Option(help="folder the run folder is made in")] = Path("runs"),
    wandb: Annotated[
        bool, typer.Option("--wandb", help="also log to Weights & Biases (offline without an account)")
    ] = False,
    resume: Annotated[str | None, typer.Option(help="continue this run folder (path, or name under --out)")] = None,
    address: Annotated[str | None, typer.Option(help="address of a running Ray cluster to train on")] = None,
    workers: Annotated[
        int | None,
        typer.Option(min=0, help="remote env runners sampling in parallel (resources.num_env_runners)"),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="override an experiment field: key=value (repeatable, dotted keys)"),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="run even a final evaluation estimated to take hours (over 2) or gigabytes (over 4)"
        ),
    ] = False,
    version: VersionOption = False,
) -> None:
    """Train the experiment, checkpoint it, evaluate it against the heuristics."""
    overrides = parse_assignments(set_)
    if iterations is not None:
        overrides["budget.iterations"] = iterations
    if workers is not None:
        overrides["resources.num_env_runners"] = workers
    if resume is not None:
        if config is not None:
            raise InvalidConfigError("--config", config, f"nothing with --resume: the run's {CONFIG_FILE} is used")
        if seed is not None:
            raise InvalidConfigError("--seed", seed, "nothing with --resume: a run keeps its seed")
        run_dir = find_run(resume, out)
        experiment = load_experiment(run_dir / CONFIG_FILE, overrides)
    else:
        if config is None:
            raise InvalidConfigError("--config", None, "an experiment YAML file (or --resume RUN)")
        if seed is not None:
            overrides["seed"] = seed
        experiment = load_experiment(config, overrides)
        run_dir = new_run_dir(experiment, out)
    trainer = Trainer(
        experiment,
        run_dir,
        resuming=resume is not None,
        address=address,
        use_wandb=wandb,
        command=[_PROG[0], *_ARGV],
        ray_log_level=logging.ERROR,
        force=force,
    )
    trainer.setup()
    if resume is not None:
        (run_dir / CONFIG_FILE).write_text(experiment.to_yaml(), encoding="utf-8")
    try:
        result = trainer.run()
    except KeyboardInterrupt:
        raise _Interrupted(trainer) from None
    except (ValueError, OSError, DcgymError) as exc:  # not bad input any more: show the traceback
        raise RuntimeError(f"training stopped at iteration {trainer.iteration}") from exc
    finally:
        trainer.close()
    if result.evaluation is not None:
        doc = result.evaluation
        print_summary(doc, f"{doc['scenario']}: the trained policy against the heuristics")
        print_against_best(doc, doc["summary"][0]["policy"])  # the checkpoint is the first policy evaluated
    print(f"run folder: {result.run_dir}")


class _Interrupted(Exception):
    """Ctrl-C during training, after the trainer wrote its checkpoint."""

    def __init__(self, trainer: Trainer) -> None:
        super().__init__()
        self.trainer = trainer


def run(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line, returning the exit status; bad input is one line on stderr."""
    _ARGV[:], _PROG[0] = start_training_command(argv, prog)
    return run_app(app, argv, _PROG[0], {_Interrupted: _interrupted, KeyboardInterrupt: _interrupted})


def _interrupted(exc: BaseException) -> int:
    """After Ctrl-C: where the checkpoint is and how to continue (or just that it stopped, before training)."""
    if isinstance(exc, _Interrupted):
        t = exc.trainer
        print(
            f"interrupted at iteration {t.iteration}: checkpoint {t.checkpoint}; continue with "
            f"{_PROG[0]} --resume {t.run_dir}",
            file=sys.stderr,
        )
    else:
        print("interrupted", file=sys.stderr)
    return INTERRUPTED


if __name__ == "__main__":
    sys.exit(run(prog="python -m dcgym.train"))
