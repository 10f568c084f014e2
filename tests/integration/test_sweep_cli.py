"""sweep.py on a two-node Ray cluster that the test starts (one CPU per node), interrupted by Ctrl-C and resumed.

The cluster (``ray.cluster_utils.Cluster``: a head and a second node, each its own raylet) lives in a process of its
own, with its own Ray temp folder and free ports, so it neither meets the tests' session Ray nor another Ray on the
machine; the sweeps run as commands against its address, as users run them. The nodes take the machine's own
address, not loopback: Ray turns a loopback ``--address`` into the machine's address before it connects.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "OMP_NUM_THREADS": "1"}
# The cheapest trial: smoke.yaml's PPO, one iteration, the trained policy alone evaluated at one load.
TINY = [
    "--config",
    "smoke",
    "--iterations",
    "1",
    "--set",
    "evaluation.loads=[0.9]",
    "--set",
    "evaluation.heuristics=[]",
]

TIMEOUT_S = 300  # a hang fails the test; a sweep here takes about a minute on a loaded 2-core machine
CLUSTER = """
import sys
from ray.cluster_utils import Cluster

gcs, agent = (int(p) for p in sys.argv[1:3])
cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": 1, "gcs_server_port": gcs, "dashboard_agent_listen_port": agent, "include_dashboard": False})
second = cluster.add_node(num_cpus=1)
print(cluster.address, cluster.head_node.node_id, second.node_id, flush=True)
sys.stdin.read()  # until the test closes it
cluster.shutdown()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """``(address, node ids)`` of a running two-node cluster; shut down (its processes only) after the module."""
    with tempfile.TemporaryDirectory(prefix="ray2n", dir="/tmp") as tmp:  # short: Ray's socket paths live in it
        proc = subprocess.Popen(
            [sys.executable, "-c", CLUSTER, str(_free_port()), str(_free_port())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**ENV, "RAY_TMPDIR": tmp},
        )
        try:
            address, *nodes = proc.stdout.readline().split()
            assert nodes, "the cluster did not start"
            yield address, set(nodes)
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


def sweep(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "sweep.py"), *args],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"sweep.py did not finish within {TIMEOUT_S} s: {err}")
    return proc.returncode, out, err


def test_sweep_on_two_nodes_interrupted_and_resumed(cluster, tmp_path):
    """2 grid points x 2 seeds on two one-CPU nodes (two trials at a time, one per node). Ctrl-C once a trial
    finished: exit 130 and a table of the finished trials; --resume runs only the others, and the table has a row
    per point with both seeds, from trials on both nodes."""
    address, nodes = cluster
    out = tmp_path / "sweep"
    grid = ["--grid", "hyperparameters.lr=1e-4,3e-4", "--seeds", "1,2"]
    proc = sweep(*TINY, *grid, "--address", address, "--out", str(out))
    lines: list[str] = []
    first = threading.Event()

    def watch():
        for line in proc.stderr:
            lines.append(line)
            if " finished: " in line:
                first.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        assert first.wait(timeout=TIMEOUT_S), "".join(lines)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=TIMEOUT_S) == 130, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watcher.join()
        proc.stdout.close()
        proc.stderr.close()
    partial = json.loads((out / "results.json").read_text())
    done = {(p, s): t for p, row in enumerate(partial["rows"]) for s, t in row["seeds"].items()}
    assert 1 <= partial["finished"] == len(done) < 4, partial
    run_files = {key: (out / t["run"] / "run.json").read_text() for key, t in done.items()}

    rc, stdout, stderr = finish(sweep("--resume", str(out), "--address", address))
    assert rc == 0, stderr
    # the unfinished trials ran; a trial that finished as Ctrl-C came can be missing from Tune's saved state and
    # reported again, from its finished run folder without training (its run.json is checked unchanged below)
    assert 4 - len(done) <= stderr.count(" finished: ") <= 4 - len(done) + 1, stderr
    table = json.loads((out / "results.json").read_text())
    assert table["metric"]["name"] == "latency_us.p99" and table["finished"] == table["trials"] == 4
    assert [row["point"] for row in table["rows"]] == [{"hyperparameters.lr": 1e-4}, {"hyperparameters.lr": 3e-4}]
    ran_on = set()
    for p, row in enumerate(table["rows"]):
        assert row["n"] == 2 and sorted(row["seeds"]) == ["1", "2"]
        values = [t["value"] for t in row["seeds"].values()]
        assert all(v > 0 for v in values) and row["mean"] == pytest.approx(sum(values) / 2)
        assert row["ci95"] is not None and row["ci95"] >= 0
        for seed, trial in row["seeds"].items():
            ran_on.add(trial["node_id"])
            # the trial trained the grid point's value with its seed, in the run folder it names
            config = yaml.safe_load((out / trial["run"] / "config.yaml").read_text())
            assert (config["hyperparameters"]["lr"], config["seed"]) == (row["point"]["hyperparameters.lr"], int(seed))
            assert json.loads((out / trial["run"] / "run.json").read_text())["status"] == "finished"
            if (p, seed) in done:  # kept from before the interruption, not trained again
                assert trial == done[p, seed]  # value, run folder and the node it trained on
                assert (out / trial["run"] / "run.json").read_text() == run_files[p, seed]
    assert ran_on == nodes
    assert "| hyperparameters.lr=0.0001 |" in stdout and (out / "results.md").read_text() in stdout
