"""``python -m dcgym COMMAND ...`` (or ``dcgym COMMAND ...``): train, evaluate, export or list.

Each command takes the options its own script does (``python -m dcgym evaluate -h``).
"""

from __future__ import annotations

import sys

from dcgym import __version__
from dcgym._app import BAD_INPUT, print_error, reproducible_hashes

COMMANDS = {
    "train": ("dcgym.train", "train one experiment, leaving a run folder"),
    "sweep": ("dcgym.sweep", "train an experiment over a grid and seeds as Ray Tune trials, with a table"),
    "evaluate": ("dcgym.evaluate", "evaluate policies on a scenario of any family"),
    "export": ("dcgym.export", "export a trained policy as a policy file"),
    "verify": ("dcgym.verify", "rerun an evaluation from its manifest and check it bit for bit"),
    "list": ("dcgym.catalog", "list scenarios, policies, algorithms, experiments or zoo policies"),
}
"""Each command: the module whose ``run(argv, prog)`` it is, and what it does."""

TRAINS = ("train", "sweep")
"""The commands that train, and so run with a fixed hash seed (:func:`dcgym._app.reproducible_hashes`)."""

USAGE = (
    "usage: python -m dcgym {"
    + ",".join(COMMANDS)
    + "} [OPTIONS]  (-h for a command's options)\n\n"
    + "\n".join(f"  {name:<9} {summary}" for name, (_, summary) in COMMANDS.items())
)


def main(argv: list[str] | None = None) -> int:
    """Dispatch to the command named by the first argument; its exit status."""
    import importlib

    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else BAD_INPUT
    if args[0] == "--version":
        print(f"dcgym {__version__}")
        return 0
    if args[0] not in COMMANDS:
        print_error(f"command: got {args[0]!r}; allowed: one of {', '.join(COMMANDS)}")
        return BAD_INPUT
    if args[0] in TRAINS:
        reproducible_hashes(argv)
    module = importlib.import_module(COMMANDS[args[0]][0])
    return module.run(args[1:], prog=f"python -m dcgym {args[0]}")


if __name__ == "__main__":
    sys.exit(main())
