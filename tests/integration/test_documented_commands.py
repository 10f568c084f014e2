"""Every command the README and the docs show in a shell block runs, as written, from the repository root.

A page's ``sh`` blocks run in order, one command per line (``\\`` joins
lines, ``#`` starts a comment), so a page's later commands use what its
earlier ones made (a run folder, an exported file). Only the budgets shrink,
so the whole set takes minutes, not hours:

- ``train.py``: one iteration and no final evaluation (the pages' ``evaluate.py`` commands evaluate the runs);
- ``evaluate.py``: 1,000 tasks (or flows) per run, one seed, serially;
- ``benchmarks/*.py``: ``--quick`` (each script's own smoke mode), or 1,000 tasks and one seed for the
  figure reproductions; anything they would write under docs/ or zoo/ goes to a temporary folder;
- ``make TARGET``: ``make -n TARGET``, the recipe checked but not run (``make test`` is what runs this
  test, and ``make demo`` is the same train and evaluate path run here with small budgets).

Each page runs in its own view of the repository (a folder of links to the root's entries, with its own
``runs/``, ``out/`` and files made at the root such as ``malcolm.dcpol``), so pages run in parallel and one page's
"newest run" is its own. A ``train.py`` command that an earlier page on the same worker already ran with the same
arguments (after the budgets shrink, and without ``--out runs``, the default) is not trained twice: the run folder it
made stands in as this page's newest run.

A page's Python commands (``train.py``, ``evaluate.py``, ``benchmarks/*.py``, ``python -m dcgym...``) run in this
process, as their ``__main__`` does, in the page's view and with its arguments as written (after the budgets
shrink): starting a Python with torch and Ray for each of them cost more than the commands' own work. ``train.py``
and the benchmarks train on the session's Ray cluster. What only a process shows (exit status, Ctrl-C, the installed scripts, the
hash seed a training command fixes for itself) is tested by the tests that start the commands
(tests/integration/test_train_cli.py, test_user_paths.py). Other commands (``make -n``, the C++ compiler, the
deployment example) run in a shell.

Placeholders: ``runs/<run>`` (also ``RUN``) is the newest run folder the page's earlier commands made (a
Malcolm run if there is one: the pages export it to run in the engine), or one made for the page;
``zoo:NAME`` and ``SCENARIO`` are the zoo's first rack policy (the commands compare it with po2) and its
scenario. A command no rule below covers fails the test: a new kind of documented command needs a rule (or a
small budget of its own).
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import runpy
import shlex
import signal
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "zoo" / "README.md"]
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
FENCE = re.compile(r"^```(\w*)\s*$")
TIMEOUT_S = 600
SAFE = re.compile(r"[\w./*:=,@%+&\[\]-]+")


def shell_commands(page: Path) -> list[str]:
    """The commands of a page's sh/bash/shell blocks, continuation lines joined, comments dropped."""
    commands, inside, shell, pending = [], False, False, ""
    for line in page.read_text(encoding="utf-8").splitlines():
        fence = FENCE.match(line)
        if fence:
            inside, shell = (not inside), fence.group(1) in ("sh", "bash", "shell")
            continue
        if not (inside and shell):
            continue
        text = (pending + " " + line.strip()) if pending else line.strip()
        if text.endswith("\\"):
            pending = text[:-1].rstrip()
            continue
        pending = ""
        text = re.sub(r"(^|\s)#.*$", "", text).strip()
        if text:
            commands.append(text)
    return commands


PAGES_WITH_COMMANDS = [p for p in PAGES if shell_commands(p)]


def _replace_option(args: list[str], option: str, value: str | None) -> list[str]:
    """``args`` with ``option``'s value replaced (or the option added); value None removes it."""
    out, skip = [], False
    for k, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == option:
            skip = k + 1 < len(args) and not args[k + 1].startswith("--")
            continue
        out.append(arg)
    return out + ([option, value] if value is not None else [])


TRAINED: dict[str, Path] = {}
"""The run folder each budgeted train.py command made, by its arguments (the pages this worker ran)."""

MADE_HERE = {"runs", "out", ".pytest_cache"}
"""Root entries a page's commands write into: each page has its own (and its own files made at the root)."""


def page_tree(tmp: Path) -> Path:
    """A view of the repository for one page: a link to each of the root's entries but those it writes."""
    tree = tmp / "tree"
    tree.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in MADE_HERE and not (entry.is_file() and entry.suffix == ".dcpol"):
            (tree / entry.name).symlink_to(entry)
    return tree


class Page:
    """What a page's commands share: its view of the repository, the runs they made, a folder for what must not
    land in the tree."""

    def __init__(self, tmp: Path, request: pytest.FixtureRequest) -> None:
        self.tmp = tmp
        self.request = request
        self.tree = page_tree(tmp)
        self.runs = self.tree / "runs"

    def made(self) -> set[Path]:
        return set(self.runs.glob("*")) if self.runs.is_dir() else set()

    def newest_run(self) -> str:
        runs = [p for p in self.made() if (p / "run.json").is_file()]
        if not runs:  # the page trains nothing itself: a tiny Malcolm run for it
            run_command(self, "python train.py --config configs/experiments/malcolm_hetero_exp.yaml")
            return self.newest_run()
        malcolm = [p for p in runs if "__malcolm__" in p.name]
        return str(max(malcolm or runs, key=lambda p: p.stat().st_mtime).relative_to(self.tree))

    def substitute(self, text: str) -> str:
        from dcgym.agents.policies.zoo import list_zoo, zoo_dir

        if re.search(r"<run>|\bRUN\b", text):
            text = re.sub(r"runs/<run>|runs/RUN\b|<run>|\bRUN\b", self.newest_run(), text)
        cards = {n: (zoo_dir() / f"{n}.md").read_text() for n in list_zoo()}
        name = next(n for n, card in cards.items() if "--policy po2" in card)  # the commands compare with po2
        scenario = re.search(r"--scenario (\S+)", cards[name]).group(1)
        return text.replace("zoo:NAME", f"zoo:{name}").replace("SCENARIO", scenario)


def budgeted(page: Page, args: list[str]) -> list[str]:
    """The command with its budget shrunk (module docstring); AssertionError for a command no rule covers."""
    program = args[0]
    if program == "make":
        return ["make", "-n", *args[1:]]
    if program in ("c++", "mkdir", "build/deploy_dispatch"):
        return args
    if program.endswith("python") or program.endswith("python3"):
        args = [sys.executable, *args[1:]]
        script = args[1]
        rest = [a for a in args[2:] if not (a.startswith("[") or a.endswith("]"))]  # [--json]: optional, as shown
        if script == "train.py":
            rest = _replace_option(rest, "--iterations", "1")
            if "--out" in rest and rest[rest.index("--out") + 1].rstrip("/") == "runs":  # the default, said aloud
                rest = _replace_option(rest, "--out", None)
            return [
                *args[:2],
                *rest,
                "--set",
                "evaluation.tasks=1000",
                "--set",
                "evaluation.seeds=[1]",
                "--set",
                "evaluation.workers=0",
            ]
        if script == "evaluate.py":
            rest = _replace_option(_replace_option(rest, "--tasks", "1000"), "--seeds", "1")
            return [*args[:2], *_replace_option(rest, "--workers", "0")]
        if script == "-m" and args[2] in ("dcgym", "dcgym.export", "dcgym.train", "dcgym.evaluate"):
            return args
        if script == "benchmarks/build_zoo.py":
            return [*args[:2], *_replace_option(rest, "--out", str(page.tmp / "zoo"))]
        if script == "benchmarks/leaderboard.py":
            return [*args[:2], *_replace_option(rest, "--out", str(page.tmp / "leaderboard.md")), "--quick"]
        if script.startswith("benchmarks/"):
            if "--out" in rest:  # pages and figures go to a temporary folder, not over docs/
                rest = _replace_option(rest, "--out", str(page.tmp))
            if "--tasks" in rest:
                rest = _replace_option(rest, "--tasks", "1000")
            if "--seeds" in rest:
                rest = _replace_option(rest, "--seeds", "1")
            return [*args[:2], *rest, *(["--quick"] if "--tasks" not in rest and _has_quick(script) else [])]
    raise AssertionError(f"no rule runs this documented command with a small budget: {shlex.join(args)}")


def _has_quick(script: str) -> bool:
    """Whether a benchmark script has a --quick smoke mode (an option it declares)."""
    return '"--quick"' in (ROOT / script).read_text(encoding="utf-8")


IN_PROCESS_MODULES = ("dcgym", "dcgym.export", "dcgym.train", "dcgym.evaluate")


def in_process(args: list[str]) -> bool:
    """Whether a budgeted command is a Python command line this process runs itself (module docstring)."""
    if not (len(args) > 1 and args[0] == sys.executable):
        return False
    script = args[1]
    return (
        script in ("train.py", "evaluate.py")
        or script.startswith("benchmarks/")
        or (script == "-m" and args[2] in IN_PROCESS_MODULES)
    )


def run_here(page: Page, args: list[str]) -> tuple[int, str]:
    """Run ``python SCRIPT ARGS`` (or ``python -m MODULE ARGS``) in this process, as the interpreter would run it,
    in the page's view: ``(exit status, standard error)``. The command's changes to the environment, the working
    folder, the signal handlers and torch's threads are undone after it."""
    script, *rest = args[1:]
    page.request.getfixturevalue("ray_session")  # a command that trains uses the session's cluster, not its own
    rest = [m for a in rest for m in (sorted(glob.glob(a, root_dir=page.tree)) or [a] if "*" in a else [a])]
    environ, handlers = dict(os.environ), {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
    err = io.StringIO()
    status = 0
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        patch.chdir(page.tree)
        # PYTHONHASHSEED present: train.py keeps this process instead of restarting itself with a fixed hash seed
        patch.setenv("PYTHONHASHSEED", os.environ.get("PYTHONHASHSEED", "0"))
        try:
            if script == "-m":
                module, *rest = rest
                patch.setattr(sys, "argv", [module, *rest])
                with warnings.catch_warnings():
                    # the module was imported by an earlier test: running it as __main__ runs a fresh copy of its
                    # code, as `python -m` does, which is what the warning is about
                    warnings.filterwarnings("ignore", r".* found in sys\.modules after import", RuntimeWarning)
                    runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                patch.setattr(sys, "argv", [script, *rest])
                patch.syspath_prepend(str(page.tree / Path(script).parent))  # as the interpreter's sys.path[0]
                runpy.run_path(str(page.tree / script), run_name="__main__")
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if not isinstance(stop.code, int | None):
                print(stop.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - the command's traceback is the test's failure message
            traceback.print_exc()
            status = 1
    os.environ.clear()
    os.environ.update(environ)
    for sig, handler in handlers.items():
        signal.signal(sig, handler)
    if threads is not None:
        sys.modules["torch"].set_num_threads(threads)
    return status, err.getvalue()


def run_command(page: Page, text: str) -> None:
    args = budgeted(page, shlex.split(page.substitute(text)))
    joined = " ".join(a if SAFE.fullmatch(a) else shlex.quote(a) for a in args)  # globs and && stay the shell's
    trains = len(args) > 1 and args[1] == "train.py" and "--resume" not in args
    if trains and joined in TRAINED and TRAINED[joined].is_dir():
        page.runs.mkdir(exist_ok=True)
        link = page.runs / TRAINED[joined].name
        if not link.exists():
            link.symlink_to(TRAINED[joined])
        os.utime(TRAINED[joined])  # the newest run again, as if just made
        return
    before = page.made()
    if in_process(args):
        status, stderr = run_here(page, args)
    else:
        proc = subprocess.run(
            ["bash", "-c", joined], cwd=page.tree, capture_output=True, text=True, timeout=TIMEOUT_S, env=ENV
        )
        status, stderr = proc.returncode, proc.stderr
    assert status == 0, f"{text}\n(ran: {joined})\n{stderr[-3000:]}"
    made = page.made() - before
    if trains and len(made) == 1:
        TRAINED[joined] = made.pop()


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shell_command_of_the_page_runs_as_written(page, tmp_path, request):
    state = Page(tmp_path, request)
    for text in shell_commands(page):
        run_command(state, text)


def test_the_pages_show_commands():
    assert {"README.md", "docs/deployment.md", "docs/training.md"} <= {
        str(p.relative_to(ROOT)) for p in PAGES_WITH_COMMANDS
    }
