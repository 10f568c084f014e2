"""What every dcgym command shares: its Typer app, ``-h``/``--version``, and one-line errors with exit status 2.

A command is a Typer app made by :func:`new_app` and run by :func:`run_app`,
which turns every usage error and every dcgym, value or file error into one
``error: ...`` line on standard error and exit status 2 (:data:`BAD_INPUT`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from dcgym import __version__
from dcgym.envs.error import DcgymError, InvalidConfigError

__all__ = [
    "BAD_INPUT",
    "INTERRUPTED",
    "VersionOption",
    "new_app",
    "print_error",
    "quiet_ray_logs",
    "reproducible_hashes",
    "run_app",
    "start_training_command",
]

BAD_INPUT = 2
"""Exit status for any bad argument or configuration (and for usage errors)."""

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT)."""


def new_app(doc: str | None) -> typer.Typer:
    """A Typer app with plain help (``-h`` or ``--help``), its summary the first paragraph of ``doc``."""
    return typer.Typer(
        add_completion=False,
        rich_markup_mode=None,
        help=(doc or "").split("\n\n")[0],
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    )


def _version(value: bool) -> None:
    if value:
        print(f"dcgym {__version__}")
        raise typer.Exit()


VersionOption = Annotated[
    bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
]
"""A ``--version`` option for a command's signature."""


def reproducible_hashes(argv: list[str] | None) -> None:
    """Restart this process with ``PYTHONHASHSEED=0`` unless the variable is set (a command that trains).

    RLlib keeps a multi-agent episode's agent ids in sets, whose order follows the strings' hashes, which Python
    draws anew for each process: the order in which a batch is assembled, and so the trained weights, would
    change from one run of the same seed to the next. A fixed hash seed, inherited by the Ray processes the
    command starts, makes one seed train bit for bit alike. Only for a real command line (``argv`` None): a
    caller that passes its arguments runs in its own process, which it seeds itself.
    """
    if argv is not None or "PYTHONHASHSEED" in os.environ:
        return
    os.environ["PYTHONHASHSEED"] = "0"
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def start_training_command(argv: list[str] | None, prog: str | None) -> tuple[list[str], str]:
    """What a command that trains (train.py, sweep.py) does first: a fixed hash seed
    (:func:`reproducible_hashes`), its progress log lines on standard error, Ray's loggers quiet. Returns the
    invocation's arguments and program name, which its run folders record."""
    import logging

    reproducible_hashes(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    quiet_ray_logs()
    return (sys.argv[1:] if argv is None else list(argv)), prog or Path(sys.argv[0]).name


def quiet_ray_logs() -> None:
    """Ray's and RLlib's loggers at errors only: set after importing Ray, which sets their levels itself."""
    import logging

    import ray  # noqa: F401 - heavy: only for the commands that run Ray

    for noisy in ("ray", "ray.rllib", "ray.tune"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def print_error(message: str) -> None:
    """``error: <message>`` on standard error, on one line."""
    print("error: " + " ".join(str(message).split()), file=sys.stderr)


def run_app(
    app: typer.Typer,
    argv: list[str] | None,
    prog: str,
    handlers: dict[type[BaseException], Callable[[BaseException], int]] | None = None,
) -> int:
    """Run ``app`` on ``argv`` (default: ``sys.argv[1:]``) and return its exit status; bad input is one line.

    ``handlers`` map other exception types to functions returning the status (Ctrl-C during training).
    """
    try:
        return typer.main.get_command(app).main(args=argv, prog_name=prog, standalone_mode=False) or 0
    except typer.Exit as exc:
        return exc.exit_code
    except typer.TyperException as exc:  # usage errors: unknown option, --tasks abc, ...
        message = _usage_message(exc)
    except tuple(handlers or ()) as exc:  # type: ignore[misc]
        return next(h for t, h in (handlers or {}).items() if isinstance(exc, t))(exc)
    except (ValueError, OSError, DcgymError) as exc:  # InvalidConfigError, the engine's checks, unwritable files
        message = str(exc)
    print_error(message)
    return BAD_INPUT


def _usage_message(exc: typer.TyperException) -> str:
    """A usage error's message; a value of the wrong type names the option, the value and what is allowed.

    ``--tasks abc`` gives ``--tasks: got "abc"; allowed: a valid integer``, the form of every other bad-value
    message, instead of the type checker's sentence without the value.
    """
    param = getattr(exc, "param", None)
    errors = getattr(exc.__cause__, "errors", None)
    if param is None or not getattr(param, "opts", None) or not callable(errors):
        return exc.format_message()
    try:
        first = errors()[0]
        value, reason = first["input"], first["msg"]
    except (IndexError, KeyError, TypeError):
        return exc.format_message()
    reason = reason.removeprefix("Value error, ")  # a parser's own message: "'x' is not one of 'a', 'b'."
    one_of = reason.partition(" is not one of ")[2]
    allowed = "one of " + one_of.rstrip(".") if one_of else reason.removeprefix("Input should be ").split(",")[0]
    return str(InvalidConfigError(max(param.opts, key=len), str(value), allowed))
