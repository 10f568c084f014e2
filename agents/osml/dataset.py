"""OSML's data set: read it, write it from the colo model, and fit service parameters to it.

Layout (Sys-Inventor-Lab/AI4System-OSML data/collect_single.py): for each
service, thread count, RPS level and allocation, one CSV file

    <root>/<service>/<threads>/<rps>/<service>+<threads>+<rps>+<core_idx>+<way_idx>

(indices from 0, no extension) of ten 1-s samples with the columns
CPU_Utilization (% of one core), Frequency (MHz), IPC, Misses (LLC misses,
thousands; taken here as per second), MBL (MB/s), Virt_Memory and Res_Memory
(bytes), Allocated_Cache (MB), Allocated_Core, Latency (ms). The colo model's
counters carry the same names and units, so `generate` writes the model's
own data set and `fit` reads either.

`fit` recovers a service's parameters in stages, each a small regression:
  1. bytes_per_miss = MBL / Misses;
  2. instructions per request I = IPC x CPU time per request x frequency, and
     per cell the MPKI = misses per request / I; the miss-rate curve
     (floor + pow C^-alpha + a hot working set of hot_mb) by non-negative least
     squares over a grid of alpha and hot_mb, refined by
     scipy.optimize.least_squares;
  3. cpi_core and mlp by linear least squares on the CPU time per request,
     net of hyperthread sharing and context switches (the model's own
     speeds, from the measured utilization) and the loaded memory latency (from
     MBL); then ipc and service_ms at the catalog's reference point;
  4. cv2 by scipy.optimize.minimize_scalar on the log error of the model's
     steady-state p99 against the measured latency.
Only allocations the service does not saturate (CPU below 90% of its
cores) enter stages 2-4. Platform constants (SMT gain, memory latency and
bandwidth) and ctx_overhead come from the catalog.

`collect` runs OSML's whole sweep (services x threads x RPS levels x cores x
ways) in a pool of processes with a progress bar, skips the cells already on
disk (so a killed run resumes), and labels every (service, threads, RPS) by
OSML's rule (data/scripts/annotation.py): RCliff = the allocation with the
fewest cores + ways whose mean latency over the ten samples is below QoS,
OAA = RCliff + 2 cores + 2 ways, in ``<root>/<service>/labels.csv``.

    python -m dcgym.agents.osml.dataset_cli collect /tmp/osml_data --workers 2
    python -m dcgym.agents.osml.dataset_cli generate /tmp/osml_data --service moses --rps 400 800 --threads 36 20
    python -m dcgym.agents.osml.dataset_cli fit /tmp/osml_data --service moses
    python -m dcgym.agents.osml.dataset_cli colocate /tmp/osml_coloc --quick   # Models A' and B' (colocation.py)

(:mod:`dcgym.agents.osml.dataset_cli`, also ``benchmarks/colo_dataset.py``)."""

from __future__ import annotations

import csv
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize
from tqdm import tqdm

from dcgym.agents.osml.features import A_FEATURES
from dcgym.cpp_core import ColoSim
from dcgym.envs.colo import catalog as cc

__all__ = [
    "COLUMNS",
    "LABEL_COLUMNS",
    "cell_path",
    "cell_seed",
    "collect",
    "fit",
    "fit_mrc",
    "generate",
    "label",
    "labels",
    "rcliff",
    "read_dataset",
    "read_labels",
]

COLUMNS = [*A_FEATURES, "Latency"]
"""The ten columns of OSML's layout: Model-A's nine counters and the latency."""
SAMPLES = 10
OSML_SERVICES = (
    "img-dnn",
    "xapian",
    "moses",
    "sphinx",
    "specjbb",
    "masstree",
    "mongodb",
    "memcached",
    "login",
    "nginx",
    "ads",
)
"""The services of OSML's data set (configs.py NAMES, without the unseen ones)."""
SATURATED = 0.9  # CPU utilization above this fraction of the cores: the allocation is saturated
HOT_WIDTH_MB = 1.0  # the cliff's ramp width is not identifiable from whole ways; fixed


def cell_seed(seed: int, cores: int, ways: int) -> int:
    """Each cell its own noise streams, as each of OSML's measurements is a separate run."""
    return seed * 1_000_003 + cores * 1_000 + ways


def cell_path(root: Path, service: str, threads: int, rps: float, cores: int, ways: int) -> Path:
    r = f"{rps:.15g}"  # no exponent: "1.31072e+06" would put a "+" in the name
    return Path(root) / service / str(threads) / r / f"{service}+{threads}+{r}+{cores - 1}+{ways - 1}"


# ----------------------------------------------------------------------------- reading and writing


def read_dataset(root: str | Path, service: str) -> dict[str, np.ndarray]:
    """Every sample of a service: the ten columns plus threads, rps, cores and ways (1-based), one row per sample."""
    rows: dict[str, list[float]] = {k: [] for k in [*COLUMNS, "threads", "rps", "cores", "ways"]}
    base = Path(root) / service
    if not base.is_dir():
        raise FileNotFoundError(f"no data for {service!r} under {root}")
    for path in sorted(base.glob("*/*/*")):
        if path.name.endswith(".part"):
            continue
        name, threads, rps, core_idx, way_idx = path.name.split("+")
        with open(path, newline="") as f:
            for record in csv.DictReader(f):
                for k in COLUMNS:
                    rows[k].append(float(record[k]))
                rows["threads"].append(int(threads))
                rows["rps"].append(float(rps))
                rows["cores"].append(int(core_idx) + 1)
                rows["ways"].append(int(way_idx) + 1)
    if not rows["Latency"]:
        raise FileNotFoundError(f"no samples for {service!r} under {root}")
    return {k: np.asarray(v) for k, v in rows.items()}


def _complete(path: Path) -> bool:
    """A cell file written in full (a header and ten samples): a resumed collection skips it."""
    try:
        with open(path) as f:
            return sum(1 for line in f if line.strip()) == SAMPLES + 1
    except OSError:
        return False


def _write_cell(path: Path, samples: list[np.ndarray]) -> None:
    """Write to a temporary name, then rename: a killed collection never leaves half a cell behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        out.writerows([[repr(float(x)) for x in row] for row in samples])
    tmp.replace(path)


def generate(
    catalog: dict,
    service: str,
    root: str | Path,
    *,
    rps_levels: list[float],
    threads: list[int],
    cores: list[int],
    ways: list[int],
    seed: int = 0,
    platform: str | None = None,
    overrides: dict | None = None,
    resume: bool = False,
) -> int:
    """Writes the model's data set in OSML's layout with its collection protocol; returns the files written.

    With ``resume``, cells already written in full are left alone (and not counted).
    """
    written = 0
    warmup = float(cc.value(catalog["services"][service]["warmup_s"]))
    for t in threads:
        for rps in rps_levels:
            todo = [(c, w) for c in cores for w in ways]
            if resume:
                todo = [(c, w) for c, w in todo if not _complete(cell_path(root, service, t, rps, c, w))]
            if not todo:
                continue
            svc = cc.service_config(catalog, service, rps=rps, threads=t, **(overrides or {}))
            sim = ColoSim(cc.sim_config(catalog, [svc], platform=platform, seed=seed))
            names = ColoSim.counter_names
            columns = [names.index(k) for k in COLUMNS]
            for c, w in todo:
                sim.reset(cell_seed(seed, c, w) + 7919 * t + int(rps))
                sim.set_allocation(0, sim.idle_cores, sim.idle_ways)
                sim.step(round(warmup / sim.dt_s))
                sim.set_allocation(0, c, w)
                sim.step(round(1.0 / sim.dt_s))
                samples = []
                for _ in range(SAMPLES):
                    sim.step(round(1.0 / sim.dt_s))
                    samples.append(sim.counters[0, columns].copy())
                _write_cell(cell_path(root, service, t, rps, c, w), samples)
                written += 1
    return written


# ----------------------------------------------------------------------------- the sweep, in parallel


@dataclass(frozen=True)
class Chunk:
    """One unit of a sweep: a service at one thread count and RPS level, one core count, every way count."""

    service: str
    threads: int
    rps: float
    cores: int


def _run_chunk(args: tuple) -> tuple[Chunk, int]:
    chunk, root, ways, seed, platform = args
    n = generate(
        cc.load_catalog(),
        chunk.service,
        root,
        rps_levels=[chunk.rps],
        threads=[chunk.threads],
        cores=[chunk.cores],
        ways=ways,
        seed=seed,
        platform=platform,
        resume=True,
    )
    return chunk, n


def collect(
    catalog: dict,
    root: str | Path,
    *,
    services: list[str],
    threads: list[int],
    rps: dict[str, list[float]],
    cores: list[int],
    ways: list[int],
    seed: int = 0,
    platform: str | None = None,
    workers: int = 1,
    progress: bool = True,
) -> dict[str, int]:
    """OSML's sweep (every service x threads x RPS level x cores x ways) in ``workers`` processes, resumable.

    Cells already on disk are skipped, so a killed collection continues where it stopped. Each cell's
    samples depend only on (seed, service, threads, RPS, cores, ways), never on the order or the number of
    workers. Then every service is labelled (:func:`label`). Returns the cells written and skipped.
    """
    root = Path(root)
    for name in services:
        cc.qos_ms(catalog, name)  # unknown names fail here, before any work
    chunks = [Chunk(s, t, r, c) for s in services for t in threads for r in rps[s] for c in cores]
    total = len(chunks) * len(ways)
    done = sum(_complete(cell_path(root, k.service, k.threads, k.rps, k.cores, w)) for k in chunks for w in ways)
    todo = [
        k for k in chunks if not all(_complete(cell_path(root, k.service, k.threads, k.rps, k.cores, w)) for w in ways)
    ]
    bar = tqdm(total=total, initial=done, desc="osml data", unit="cell", disable=not progress, file=sys.stderr)
    written = 0
    jobs = [(k, root, list(ways), seed, platform) for k in todo]
    if workers <= 1:
        results = map(_run_chunk, jobs)
        for _, n in results:
            written += n
            bar.update(n)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for _, n in pool.map(_run_chunk, jobs, chunksize=1):
                written += n
                bar.update(n)
    bar.close()
    for name in services:
        label(catalog, root, name, platform=platform)
    return {"written": written, "skipped": done, "cells": total}


# ----------------------------------------------------------------------------- labels

LABEL_COLUMNS = ["threads", "rps", "RCliff_Core", "RCliff_Cache", "OAA_Core", "OAA_Cache", "OAA_Bandwidth"]
OAA_MARGIN = 2
"""OAA = RCliff + 2 cores + 2 ways (OSML data/scripts/annotation.py), capped at the platform."""


def cell_means(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Means over the ten samples of each (threads, rps, cores, ways) cell."""
    return _cells(data)


def rcliff(cores: np.ndarray, ways: np.ndarray, latency_ms: np.ndarray, qos_ms: float) -> tuple[int, int] | None:
    """The allocation with the fewest cores + ways whose mean latency is below QoS (ties: fewer cores); None if none."""
    ok = np.flatnonzero(latency_ms < qos_ms)
    if not len(ok):
        return None
    key = np.lexsort((ways[ok], cores[ok], cores[ok] + ways[ok]))
    i = ok[key[0]]
    return int(cores[i]), int(ways[i])


def labels(catalog: dict, data: dict[str, np.ndarray], service: str, *, platform: str | None = None) -> list[dict]:
    """RCliff and OAA (cores, ways) and OAA bandwidth (MB/s, the MBL measured at OAA) per (threads, rps).

    Ways are counted in ways (Allocated_Cache in the samples is in MB). A group where no allocation meets QoS
    gets no row.
    """
    pf = cc.platform_config(catalog, platform)
    qos = cc.qos_ms(catalog, service)
    cells = _cells(data)
    rows = []
    for t, r in sorted({(int(a), float(b)) for a, b in zip(cells["threads"], cells["rps"])}):
        sel = (cells["threads"] == t) & (cells["rps"] == r)
        c, w, lat, mbl = cells["cores"][sel], cells["ways"][sel], cells["Latency"][sel], cells["MBL"][sel]
        cliff = rcliff(c, w, lat, qos)
        if cliff is None:
            continue
        oaa = (min(cliff[0] + OAA_MARGIN, pf["logical_cores"]), min(cliff[1] + OAA_MARGIN, pf["ways"]))
        at = np.flatnonzero((c == oaa[0]) & (w == oaa[1]))
        if not len(at):  # OAA outside the sweep: the nearest swept allocation at or below it
            near = np.flatnonzero((c <= oaa[0]) & (w <= oaa[1]))
            at = near[np.lexsort((w[near], c[near]))][-1:]
        rows.append(
            {
                "threads": t,
                "rps": r,
                "RCliff_Core": cliff[0],
                "RCliff_Cache": cliff[1],
                "OAA_Core": oaa[0],
                "OAA_Cache": oaa[1],
                "OAA_Bandwidth": float(mbl[at[0]]),
            }
        )
    return rows


def label(catalog: dict, root: str | Path, service: str, *, platform: str | None = None) -> Path:
    """Write ``<root>/<service>/labels.csv`` (:data:`LABEL_COLUMNS`) from the service's samples."""
    rows = labels(catalog, read_dataset(root, service), service, platform=platform)
    path = Path(root) / service / "labels.csv"
    with open(path, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=LABEL_COLUMNS)
        out.writeheader()
        out.writerows(rows)
    return path


def read_labels(root: str | Path, service: str) -> list[dict]:
    with open(Path(root) / service / "labels.csv", newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


# ----------------------------------------------------------------------------- fitting


def _cells(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Means over the samples of each (threads, rps, cores, ways) cell."""
    keys = np.stack([data["threads"], data["rps"], data["cores"], data["ways"]], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    counts = np.bincount(inverse)
    out = {k: np.bincount(inverse, weights=data[k]) / counts for k in COLUMNS}
    out.update(threads=uniq[:, 0], rps=uniq[:, 1], cores=uniq[:, 2], ways=uniq[:, 3])
    return out


def _mrc(params: np.ndarray, mb: np.ndarray) -> np.ndarray:
    floor, pow_, alpha, hot, hot_mb = params
    c = np.maximum(mb, 0.25)
    return floor + pow_ * c ** (-alpha) + hot * np.clip((hot_mb - c) / HOT_WIDTH_MB, 0.0, 1.0)


def fit_mrc(mb: np.ndarray, mpki: np.ndarray) -> dict[str, float]:
    """floor + pow C^-alpha + hot x ramp(hot_mb - C): NNLS over a grid of (alpha, hot_mb), then least squares."""
    weights = 1.0 / np.maximum(mpki, 1e-9)  # relative errors
    best = None
    for alpha in np.linspace(0.0, 1.5, 61):
        for hot_mb in np.concatenate([[0.0], np.arange(mb.min(), mb.max() + 2.0, 0.25)]):
            basis = np.stack(
                [np.ones_like(mb), np.maximum(mb, 0.25) ** (-alpha), np.clip((hot_mb - mb) / HOT_WIDTH_MB, 0.0, 1.0)],
                axis=1,
            )
            coef, resid = optimize.nnls(basis * weights[:, None], mpki * weights)
            if best is None or resid < best[0]:
                best = (resid, np.array([coef[0], coef[1], alpha, coef[2], hot_mb]))
    x0 = best[1]
    lo, hi = [0, 0, 0, 0, 0], [np.inf, np.inf, 3.0, np.inf, mb.max() + 5.0]
    res = optimize.least_squares(lambda p: (_mrc(p, mb) - mpki) * weights, np.clip(x0, lo, hi), bounds=(lo, hi))
    floor, pow_, alpha, hot, hot_mb = res.x
    if hot < 1e-2 * mpki.max():  # below the counters' noise: no working-set cliff
        hot, hot_mb = 0.0, 0.0
        basis = np.stack([np.ones_like(mb), np.maximum(mb, 0.25) ** (-alpha)], axis=1)
        (floor, pow_), _ = optimize.nnls(basis * weights[:, None], mpki * weights)
    return {
        "floor": float(floor),
        "pow": float(pow_),
        "alpha": float(alpha),
        "hot": float(hot),
        "hot_mb": float(hot_mb),
        "hot_width_mb": HOT_WIDTH_MB,
    }


def _speed_sum(cores: np.ndarray, servers: np.ndarray, busy: np.ndarray, loss: float) -> np.ndarray:
    """Sum of the servers' speeds of a service alone from core 0 (colo/contention.cpp's rule)."""
    if loss == 0:
        return servers.astype(float)
    own, partial = cores // 2, cores % 2
    alone = np.minimum(servers, own)
    rest = servers - alone
    on_partial = np.minimum(rest, partial)
    doubled = rest - on_partial
    return alone + doubled - 2.0 * doubled * loss * busy + on_partial


def fit(data: dict[str, np.ndarray], catalog: dict, service: str, *, platform: str | None = None) -> dict:
    """Service parameters that reproduce `data` (see the module docstring); keys as in the engine config."""
    pf = cc.platform_config(catalog, platform)
    base = cc.service_config(catalog, service)
    ref = {k: float(cc.value(v)) for k, v in catalog["reference"].items()}
    cells = _cells(data)
    # 1. traffic per miss.
    has_misses = cells["Misses"] > 0
    bytes_per_miss = float(np.median(cells["MBL"][has_misses] / cells["Misses"][has_misses]) * 1e3)
    # Unsaturated cells: the offered load is the throughput.
    servers = np.minimum(cells["threads"], cells["cores"])
    busy = cells["CPU_Utilization"] / (100.0 * servers)
    ok = (busy < SATURATED) & has_misses & (cells["rps"] > 0)
    if ok.sum() < 10:
        raise ValueError(f"only {ok.sum()} unsaturated cells; need at least 10 to fit")
    c = {k: v[ok] for k, v in cells.items()}
    busy, servers = busy[ok], servers[ok]
    # 2. instructions per request, then the miss-rate curve.
    t_cpu = c["CPU_Utilization"] / (100.0 * c["rps"])  # CPU seconds of one server per request
    instructions = float(np.median(c["IPC"] * t_cpu * c["Frequency"] * 1e6))
    mpki = c["Misses"] * 1e3 / c["rps"] / instructions * 1e3
    mb = c["ways"] * pf["mb_per_way"]
    levels = np.unique(mb)
    mrc = fit_mrc(levels, np.array([np.median(mpki[mb == x]) for x in levels]))
    # 3. cpi_core and mlp: t0 / I = cpi_core / f + (1 / mlp) x mpki / 1000 x L.
    loss = 1 - pf["smt_gain"] / 2 if pf["logical_cores"] == 2 * pf["physical_cores"] else 0.0
    ctx = 1 + base["ctx_overhead"] * np.maximum(0.0, c["threads"] / c["cores"] - 1)
    t0 = t_cpu * _speed_sum(c["cores"], servers, busy, loss) / servers / ctx
    u = c["MBL"] * 1e6 / (pf["mem_bw_gbs"] * 1e9)
    latency = pf["mem_latency_ns"] * 1e-9 * (1 + u / (2 * (1 - u)))
    a = np.stack([1.0 / (c["Frequency"] * 1e6), _mrc(np.array(list(mrc.values())[:5]), mb) * 1e-3 * latency], axis=1)
    (cpi_core, inv_mlp), *_ = np.linalg.lstsq(a, t0 / instructions, rcond=None)
    mlp = float(1.0 / inv_mlp)
    mem_cpi = (
        _mrc(np.array(list(mrc.values())[:5]), np.array([ref["cache_mb"]]))[0]
        * 1e-3
        * ref["mem_latency_ns"]
        * ref["freq_mhz"]
        * 1e-3
        / mlp
    )
    ipc = float(1.0 / (cpi_core + mem_cpi))
    service_ms = float(instructions / (ipc * ref["freq_mhz"] * 1e6) * 1e3)
    fitted = {"service_ms": service_ms, "ipc": ipc, "mlp": mlp, "bytes_per_miss": bytes_per_miss, "mrc": mrc}
    # 4. cv2 from the latency of moderately loaded cells (well below capacity, far above idle).
    cv2 = fit_cv2(catalog, service, fitted, c, platform)
    fitted["cv2"] = cv2
    fitted["diagnostics"] = {
        "cells": int(len(cells["rps"])),
        "unsaturated": int(ok.sum()),
        "instructions": instructions,
        "cpi_core": float(cpi_core),
    }
    return fitted


def fit_cv2(catalog: dict, service: str, fitted: dict, c: dict[str, np.ndarray], platform: str | None) -> float:
    params = {k: v for k, v in fitted.items() if k != "diagnostics"}
    groups = sorted({(int(t), float(r)) for t, r in zip(c["threads"], c["rps"])})

    def loss(cv2: float) -> float:
        err = []
        for t, r in groups:
            sel = (c["threads"] == t) & (c["rps"] == r)
            svc = cc.service_config(catalog, service, rps=r, threads=t, **{**params, "cv2": cv2})
            sim = ColoSim(cc.sim_config(catalog, [svc], platform=platform, noise={"latency": 0.0, "counters": 0.0}))
            p99 = (
                sim.steady_state_batch(
                    c["cores"][sel].astype(np.int64)[:, None], c["ways"][sel].astype(np.int64)[:, None], np.array([r])
                )[:, 0]
                * 1e3
            )
            good = np.isfinite(p99)
            err.append(np.log(p99[good]) - np.log(c["Latency"][sel][good]))
        e = np.concatenate(err)
        return float(np.mean(e * e))

    res = optimize.minimize_scalar(loss, bounds=(0.0, 4.0), method="bounded", options={"xatol": 1e-4})
    return float(res.x)
