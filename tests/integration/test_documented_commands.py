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

Placeholders: ``runs/<run>`` (also ``RUN``) is the newest run folder the page's earlier commands made (a
Malcolm run if there is one: the pages export it to run in the engine), or one made for the page;
``zoo:NAME`` and ``SCENARIO`` are the zoo's first rack policy (the commands compare it with po2) and its
scenario. A command no rule below covers fails the test: a new kind of documented command needs a rule (or a
small budget of its own).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
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

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
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
    """Whether a benchmark script has a --quick smoke mode (its --help says so)."""
    proc = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, env=ENV)
    return "--quick" in proc.stdout


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
    proc = subprocess.run(
        ["bash", "-c", joined], cwd=page.tree, capture_output=True, text=True, timeout=TIMEOUT_S, env=ENV
    )
    assert proc.returncode == 0, f"{text}\n(ran: {joined})\n{proc.stderr[-3000:]}"
    made = page.made() - before
    if trains and len(made) == 1:
        TRAINED[joined] = made.pop()


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shell_command_of_the_page_runs_as_written(page, tmp_path):
    state = Page(tmp_path)
    for text in shell_commands(page):
        run_command(state, text)


def test_the_pages_show_commands():
    assert {"README.md", "docs/deployment.md", "docs/training.md"} <= {
        str(p.relative_to(ROOT)) for p in PAGES_WITH_COMMANDS
    }
