"""Shared fixtures."""

from __future__ import annotations

import os

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
