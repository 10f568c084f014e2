"""Co-location sweeps for OSML's Models A' and B' (FAST'23 §4.1-4.2): a service among running neighbours.

OSML's shadow models see the neighbours: Model-A' predicts a service's OAA and RCliff from its counters and its
neighbours' (OSML's code, ``get_colocated_features``: their mean memory bandwidth, allocated cache and allocated
cores), Model-B' the QoS slowdown a service suffers if it keeps fewer cores and ways. Their data: a service swept
over the cores and ways its neighbours leave, the neighbours held at fixed loads and allocations.

A *neighbourhood* is a service at one RPS level among one to three neighbours, each at an RPS level with fixed
cores and ways. :func:`sweep` measures every (cores, ways) of the service within what the neighbours leave, as
OSML's single-service collection does (the service starts with everything idle for its warm-up, then one second
at the cell's allocation, then ten one-second samples), and writes one CSV per neighbourhood:

    <root>/<service>/<neighbourhood>.csv

with the ten columns of OSML's layout (:data:`dcgym.agents.osml.dataset.COLUMNS`), the three neighbour columns
(:data:`NEIGHBOUR_COLUMNS`) and the cell's ``rps``, ``cores`` and ``ways``. :func:`neighbourhoods` draws them.
Labels (:func:`labels`) are OSML's rule within a neighbourhood (RCliff = the fewest cores + ways meeting QoS, OAA =
RCliff + 2 + 2, within what the neighbours leave).

    python -m dcgym.agents.osml.dataset_cli colocate /tmp/osml_coloc --quick
"""

from __future__ import annotations

import csv
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from dcgym.agents.osml import dataset as ds
from dcgym.cpp_core import ColoSim
from dcgym.envs.colo import catalog as cc

__all__ = ["NEIGHBOUR_COLUMNS", "labels", "neighbourhoods", "read_colocated", "sweep"]

NEIGHBOUR_COLUMNS = ["Neighbour_MBL", "Neighbour_Allocated_Cache", "Neighbour_Allocated_Core"]
"""The neighbours' mean memory bandwidth (MB/s), their allocated cache (MB) and cores, as OSML's code."""


def neighbourhoods(
    catalog: dict, services: list[str], per_service: int, seed: int = 0, platform: str | None = None
) -> list[dict]:
    """``per_service`` neighbourhoods for each service: one to three other services of ``services`` at code RPS
    levels, each holding 4-12 cores and 2-6 ways, the service at a code RPS level (a seeded draw)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in services:
        others = [o for o in services if o != s]
        for _ in range(per_service):
            k = int(rng.integers(1, min(3, len(others)) + 1))
            picked = [others[i] for i in rng.choice(len(others), size=k, replace=False)]
            out.append(
                {
                    "service": s,
                    "rps": float(rng.choice(cc.rps_levels(catalog, s, "code"))),
                    "neighbours": [
                        {
                            "service": o,
                            "rps": float(rng.choice(cc.rps_levels(catalog, o, "code"))),
                            "cores": int(rng.integers(4, 13)),
                            "ways": int(rng.integers(2, 7)),
                        }
                        for o in picked
                    ],
                }
            )
    return out


def _name(hood: dict) -> str:
    parts = [f"{hood['rps']:.15g}"] + [
        f"{n['service']}@{n['rps']:.15g}:{n['cores']}:{n['ways']}" for n in hood["neighbours"]
    ]
    return "+".join(parts)


def sweep(
    catalog: dict, root: str | Path, hood: dict, *, step: int = 1, seed: int = 0, platform: str | None = None
) -> Path:
    """Measure ``hood``'s service at every (cores, ways) in steps of ``step`` within what its neighbours leave;
    write ``<root>/<service>/<neighbourhood>.csv`` (skipped if it exists: a killed sweep resumes)."""
    path = Path(root) / hood["service"] / f"{_name(hood)}.csv"
    if path.exists():
        return path
    pf = cc.platform_config(catalog, platform)
    nbs = hood["neighbours"]
    svcs = [cc.service_config(catalog, hood["service"], rps=hood["rps"])]
    svcs += [cc.service_config(catalog, n["service"], rps=n["rps"]) for n in nbs]
    for k, svc in enumerate(svcs):
        svc["name"] = f"{svc['name']}_{k}"  # a service may be its own neighbour's kind
    sim = ColoSim(cc.sim_config(catalog, svcs, platform=platform, seed=seed))
    names = ColoSim.counter_names
    cols = [names.index(k) for k in ds.COLUMNS]
    mbl, cache, core = (names.index(k) for k in ("MBL", "Allocated_Cache", "Allocated_Core"))
    left_c = pf["logical_cores"] - sum(n["cores"] for n in nbs)
    left_w = pf["ways"] - sum(n["ways"] for n in nbs)
    warmup = max(float(cc.value(catalog["services"][s["service"]]["warmup_s"])) for s in [hood, *nbs])
    held_c = np.array([0] + [n["cores"] for n in nbs])
    held_w = np.array([0] + [n["ways"] for n in nbs])
    first = np.eye(len(svcs), dtype=np.int64)[0]
    rows = []
    for c in range(1, left_c + 1, step):
        for w in range(1, left_w + 1, step):
            sim.reset(ds.cell_seed(seed, c, w) + int(hood["rps"]))
            sim.set_allocations(held_c + first * left_c, held_w + first * left_w)  # the warm-up on what is left
            sim.step(round(warmup / sim.dt_s))
            sim.set_allocations(held_c + first * c, held_w + first * w)
            sim.step(round(1.0 / sim.dt_s))
            for _ in range(ds.SAMPLES):
                sim.step(round(1.0 / sim.dt_s))
                counters = sim.counters
                rows.append(
                    [
                        *counters[0, cols],
                        float(np.mean(counters[1:, mbl])),
                        float(np.sum(counters[1:, cache])),
                        float(np.sum(counters[1:, core])),
                        hood["rps"],
                        c,
                        w,
                    ]
                )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow([*ds.COLUMNS, *NEIGHBOUR_COLUMNS, "rps", "cores", "ways"])
        out.writerows([[repr(float(x)) for x in row] for row in rows])
    tmp.replace(path)
    return path


def _sweep_one(args: tuple) -> str:
    root, hood, step, seed, platform = args
    return str(sweep(cc.load_catalog(), root, hood, step=step, seed=seed, platform=platform))


def collect(
    catalog: dict,
    root: str | Path,
    hoods: list[dict],
    *,
    step: int = 1,
    seed: int = 0,
    platform: str | None = None,
    workers: int = 1,
) -> list[str]:
    """:func:`sweep` every neighbourhood, in ``workers`` processes; returns the files."""
    jobs = [(str(root), h, step, seed, platform) for h in hoods]
    if workers <= 1:
        return [_sweep_one(j) for j in jobs]
    with ProcessPoolExecutor(min(workers, os.cpu_count() or 1)) as pool:
        return list(pool.map(_sweep_one, jobs))


def read_colocated(root: str | Path, service: str) -> list[tuple[str, dict[str, np.ndarray]]]:
    """Every neighbourhood of ``service`` under ``root``: (its file's name, its columns)."""
    out = []
    for path in sorted((Path(root) / service).glob("*.csv")):
        with open(path, newline="") as f:
            records = list(csv.DictReader(f))
        out.append((path.stem, {k: np.array([float(r[k]) for r in records]) for k in records[0]}))
    return out


def labels(catalog: dict, data: dict[str, np.ndarray], service: str) -> dict | None:
    """RCliff, OAA (within what the neighbours leave: the largest swept cell) and OAA bandwidth of one
    neighbourhood, by OSML's rule on the cells' mean latency; None when no cell meets QoS."""
    keys = np.stack([data["cores"], data["ways"]], axis=1)
    cells, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    lat = np.bincount(inverse, weights=data["Latency"]) / np.bincount(inverse)
    mbl = np.bincount(inverse, weights=data["MBL"]) / np.bincount(inverse)
    cliff = ds.rcliff(cells[:, 0], cells[:, 1], lat, cc.qos_ms(catalog, service))
    if cliff is None:
        return None
    top_c, top_w = int(cells[:, 0].max()), int(cells[:, 1].max())
    oaa = (min(cliff[0] + ds.OAA_MARGIN, top_c), min(cliff[1] + ds.OAA_MARGIN, top_w))
    near = np.flatnonzero((cells[:, 0] <= oaa[0]) & (cells[:, 1] <= oaa[1]))
    at = near[np.lexsort((cells[near, 1], cells[near, 0]))][-1]
    return {
        "RCliff_Core": cliff[0],
        "RCliff_Cache": cliff[1],
        "OAA_Core": oaa[0],
        "OAA_Cache": oaa[1],
        "OAA_Bandwidth": float(mbl[at]),
        "cells": cells,
        "latency": lat,
    }
