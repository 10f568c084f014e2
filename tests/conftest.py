"""Shared fixtures."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest


def pytest_configure(config):
    """Under ``pytest -n 2`` (``make test``) each worker keeps to one core: two workers on two cores.

    The commands the tests start (train.py, evaluate.py, benchmarks) inherit ``OMP_NUM_THREADS=1``: torch's
    threads for a small network otherwise contend with the other worker's (an update of OSML's 3 x 30 network
    measured 9 ms on one thread, 170 ms on two beside a loaded core).
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        import torch

        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def ray_session():
    """One small local Ray cluster for the whole test session (starting one takes seconds)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 * 2**20,
        _node_ip_address="127.0.0.1",
    )
    yield ray
    ray.shutdown()


@pytest.fixture
def storage(tmp_path, monkeypatch):
    """An Algorithm built outside Tune makes a log folder under ~/ray_results: keep it in tmp_path."""
    monkeypatch.setattr("ray.tune.trainable.trainable.DEFAULT_STORAGE_PATH", str(tmp_path))
    return tmp_path


ROOT = Path(__file__).resolve().parents[1]


def _cli_entry(script: str) -> Callable[[list[str]], int]:
    """The function a command's ``__main__`` calls with its arguments, returning the exit status."""
    if script == "evaluate.py":
        from dcgym.evaluate import run

        return lambda argv: run(argv, prog="evaluate.py")
    if script == "train.py":  # trains on the session's Ray cluster: request the ray_session fixture
        from dcgym.train import run

        return lambda argv: run(argv, prog="train.py")
    if script == "dcgym.export":
        from dcgym.export import run

        return lambda argv: run(argv, prog="python -m dcgym.export")
    if script == "dcgym":  # python -m dcgym COMMAND ...
        from dcgym.__main__ import main

        return main
    if script.startswith("benchmarks/"):
        spec = importlib.util.spec_from_file_location(Path(script).stem, ROOT / script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.run
    raise ValueError(f"no in-process entry for {script}")


@pytest.fixture
def cli_here(capsys, monkeypatch):
    """Run a command line in this process, as its script's ``__main__`` does: ``cli_here("evaluate.py", *args)``.

    For tests of what a command computes and prints; starting a Python with torch for each would cost seconds.
    Tests of the process itself (exit status of the real command, Ctrl-C, installed scripts) start it.
    ``env`` sets environment variables for the call, ``cwd`` its working folder (default the repository).
    """

    def call(script: str, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None):
        with monkeypatch.context() as patch:
            patch.chdir(cwd)
            for key, value in (env or {}).items():
                patch.setenv(key, value)
            capsys.readouterr()
            status = _cli_entry(script)([str(a) for a in args])
            out, err = capsys.readouterr()
        return subprocess.CompletedProcess([script, *args], status, out, err)

    return call
