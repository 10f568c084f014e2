"""OSML's sweep (dcgym.agents.osml.dataset_cli collect): labels by OSML's rule, resumable, the same bits with any
number of processes, and a command that refuses bad input with one line."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from dcgym.agents.osml import dataset as ds
from dcgym.agents.osml import dataset_cli
from dcgym.envs.colo import catalog as cc

CATALOG = cc.load_catalog()

SWEEP = {"services": ["img-dnn"], "threads": [36], "cores": [1, 2, 4, 8, 16], "ways": [1, 4, 10]}


def _collect(root, workers=1):
    return ds.collect(
        CATALOG, root, rps={"img-dnn": [1300.0, 2300.0]}, seed=3, workers=workers, progress=False, **SWEEP
    )


def _bytes(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_rcliff_is_the_fewest_resources_meeting_qos():
    cores = np.array([1, 1, 2, 2, 3, 3])
    ways = np.array([1, 5, 1, 5, 1, 2])
    lat = np.array([50.0, 9.0, 20.0, 8.0, 9.5, 7.0])
    # (1, 5) and (3, 1) both sum to 6 and meet 10 ms; the tie goes to fewer cores; (3, 2) sums to 5 but (3, 1) is 4
    assert ds.rcliff(cores, ways, lat, 10.0) == (3, 1)
    assert ds.rcliff(cores, ways, lat, 9.2) == (3, 2)
    assert ds.rcliff(cores, ways, lat, 5.0) is None


def test_collect_writes_every_cell_and_labels(tmp_path):
    out = _collect(tmp_path)
    assert out == {"written": 2 * 5 * 3, "skipped": 0, "cells": 30}
    with open(tmp_path / "img-dnn" / "labels.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["rps"] for r in rows] == ["1300.0", "2300.0"]
    data = ds.read_dataset(tmp_path, "img-dnn")
    assert len(data["Latency"]) == 30 * ds.SAMPLES
    cells = ds._cells(data)
    qos = CATALOG["services"]["img-dnn"]["qos_ms"]["value"]
    for r in rows:
        c, w = int(r["RCliff_Core"]), int(r["RCliff_Cache"])
        sel = (cells["rps"] == float(r["rps"])) & (cells["cores"] == c) & (cells["ways"] == w)
        assert cells["Latency"][sel][0] < qos
        # OAA is two cores and two ways more, within the platform
        assert (int(r["OAA_Core"]), int(r["OAA_Cache"])) == (min(c + 2, 36), min(w + 2, 20))
        # nothing with fewer cores + ways meets QoS
        grp = cells["rps"] == float(r["rps"])
        fewer = grp & (cells["cores"] + cells["ways"] < c + w)
        assert (cells["Latency"][fewer] >= qos).all()


def test_collect_resumes_and_does_not_depend_on_workers(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _collect(a)
    first = _bytes(a)
    victim = ds.cell_path(a, "img-dnn", 36, 2300.0, 4, 10)
    victim.unlink()
    (victim.parent / "half.part").write_text("CPU_Utilization\n")  # a killed write is ignored
    assert _collect(a) == {"written": 1, "skipped": 29, "cells": 30}
    (victim.parent / "half.part").unlink()
    assert _bytes(a) == first
    _collect(b, workers=2)
    assert _bytes(b) == first


@pytest.mark.parametrize(
    "args, field",
    [
        (["--cores", "0"], "cores"),
        (["--ways", "21"], "ways"),
        (["--workers", "0"], "workers"),
        (["--services", "nope"], "service"),
    ],
)
def test_collect_command_refuses_bad_input(tmp_path, capsys, args, field):
    assert dataset_cli.main(["collect", str(tmp_path), "--no-progress", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0]


def test_large_rps_levels_keep_their_digits_in_the_file_names(tmp_path):
    # memcached's levels are x1024: "%g" would write 1.31072e+06, whose "+" splits OSML's name wrongly
    path = ds.cell_path(tmp_path, "memcached", 36, 1310720.0, 4, 2)
    assert path.name == "memcached+36+1310720+3+1"
    assert ds.cell_path(tmp_path, "sphinx", 36, 2.5, 1, 1).name == "sphinx+36+2.5+0+0"
