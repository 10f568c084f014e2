"""Engine speed benchmark: simulated tasks/s and events/s of dcgym's C++ engine.

Scenarios (one core, wall time with time.perf_counter, best of --repeats runs
after one warm-up run; building the simulator is not timed):

  (a) M/M/16 FCFS at rho = 0.9: one node, 16 workers, Exp(1) service.
  (b) power-of-2 (with replacement) over N = 1000 single-worker nodes, rho = 0.9.
  (c) the Malcolm heterogeneous cluster: 4 nodes x 14 workers + 10 nodes x 3
      workers, Exp(75 us), queue capacity = workers x 32, power-of-2, rho = 0.9.

Scenario (a) is also run in Ciw and in SimPy, with a task count calibrated so
each run takes about --baseline-seconds, and the three mean response times are
checked against each other and against the exact Erlang-C value. The peak RSS
of this process (resource.getrusage) is read after 10^6 tasks of (a) and after
2x10^7 more, before anything else runs, to show memory does not grow with the
number of tasks.

    python benchmarks/engine_speed.py                 # full size (about 3 minutes)
    python benchmarks/engine_speed.py --quick         # smoke run (about 25 s)
    python benchmarks/engine_speed.py --json out/engine_speed.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from dcgym.cpp_core import RackSim

RHO = 0.9
MM_SERVERS = 16
TARGETS = {"a": 20e6, "b": 5e6, "d": 5e6}  # tasks/s on one core
BATCHES = 20  # batch means for the standard error of a mean response time

console = Console(width=None if sys.stdout.isatty() else 170)  # wide tables in logs too


# --------------------------------------------------------------------------- scenarios


def rack_config(nodes: list[dict], policy: str, mean_us: float, n_tasks: int, seed: int = 1) -> dict:
    return {
        "nodes": nodes,
        "service": {"dist": "exp", "mean_us": mean_us},
        "load": RHO,
        "seed": seed,
        # Statistics only (the timing covers every task): start-empty bias is
        # about 1% of the mean for (b) without it.
        "warmup_tasks": n_tasks // 20,
        "intra_node": {"discipline": "fcfs"},
        "dispatch": {"policy": policy, "d": 2, "replace": True},
        "load_info": {"model": "fresh"},
    }


def scenario_configs(scale: float, mm16_policy: str) -> dict[str, tuple[str, dict, int]]:
    n_a, n_bc = max(1000, int(20e6 * scale)), max(1000, int(10e6 * scale))
    return {
        "a": (
            "M/M/16 FCFS",
            rack_config(
                [{"count": 1, "workers": MM_SERVERS, "speed": 1.0, "queue_capacity": -1}], mm16_policy, 1.0, n_a
            ),
            n_a,
        ),
        "b": (
            "Po2, N=1000 x 1",
            rack_config([{"count": 1000, "workers": 1, "speed": 1.0, "queue_capacity": -1}], "po_d", 1.0, n_bc),
            n_bc,
        ),
        "c": (
            "Malcolm 4x14+10x3, Po2",
            rack_config(
                [
                    {"count": 4, "workers": 14, "speed": 1.0, "queue_capacity": 14 * 32},
                    {"count": 10, "workers": 3, "speed": 1.0, "queue_capacity": 3 * 32},
                ],
                "po_d",
                75.0,
                n_bc,
            ),
            n_bc,
        ),
        "d": ("Malcolm, tables + stale loads", malcolm_tables_config(n_bc), n_bc),
    }


def malcolm_tables_config(n_tasks: int) -> dict:
    """Malcolm's setting: tasks enter at nodes whose migration and stealing
    tables are active (set by `apply_tables`), loads broadcast every 100 us."""
    cfg = rack_config(
        [
            {"count": 4, "workers": 14, "speed": 1.0, "queue_capacity": 14 * 32},
            {"count": 10, "workers": 3, "speed": 1.0, "queue_capacity": 3 * 32},
        ],
        "table",
        75.0,
        n_tasks,
    )
    cfg["entry"] = {"kind": "nodes"}
    cfg["dispatch"] = {"policy": "table", "metric": "expected_wait"}
    cfg["load_info"] = {"model": "periodic", "period_us": 100.0, "local_increment": True}
    cfg["migration"] = {"delay_us": 2.0}
    return cfg


def apply_tables(sim: RackSim, cfg: dict) -> RackSim:
    """For (d): every node keeps 70% of its arrivals and migrates the rest in
    proportion to capacity; on completion it steals from a node drawn the same way."""
    if cfg["dispatch"]["policy"] != "table":
        return sim
    capacity = np.array([14.0] * 4 + [3.0] * 10)
    n = capacity.size
    spread = capacity / capacity.sum()
    migration = 0.7 * np.eye(n) + 0.3 * spread[None, :]
    stealing = 0.5 * np.eye(n) + 0.5 * spread[None, :]
    sim.set_tables(migration / migration.sum(1, keepdims=True), stealing / stealing.sum(1, keepdims=True))
    return sim


# --------------------------------------------------------------------------- exact values


def erlang_c(c: int, a: float) -> float:
    """Probability of waiting in M/M/c with offered load a = lambda/mu (< c)."""
    b = 1.0  # Erlang B by the stable recursion B(k) = a B(k-1) / (k + a B(k-1))
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


def mmc_mean_response(c: int, rho: float, mu: float = 1.0) -> float:
    lam = rho * c * mu
    return 1.0 / mu + erlang_c(c, lam / mu) / (c * mu - lam)


def po2_mean_field_response(rho: float, d: int = 2) -> float:
    """N -> infinity limit of power-of-d, Exp(1): E[T] = (1/rho) sum_{i>=1} rho^((d^i - 1)/(d - 1)) (Mitzenmacher)."""
    total, i = 0.0, 1
    while True:
        s = rho ** ((d**i - 1) / (d - 1))
        if s < 1e-17:
            return total / rho
        total += s
        i += 1


# --------------------------------------------------------------------------- statistics


@dataclass
class MeanEstimate:
    mean: float
    se: float  # standard error from batch means (or pooled replications)
    n: int


def batch_means(values: list[float], batches: int = BATCHES) -> MeanEstimate:
    m = len(values) // batches
    means = [statistics.fmean(values[k * m : (k + 1) * m]) for k in range(batches)]
    return MeanEstimate(statistics.fmean(values), statistics.stdev(means) / math.sqrt(batches), len(values))


def pool(estimates: list[MeanEstimate]) -> MeanEstimate:
    """Equal-weight pool of independent replications."""
    k = len(estimates)
    return MeanEstimate(
        statistics.fmean(e.mean for e in estimates),
        math.sqrt(sum(e.se**2 for e in estimates)) / k,
        sum(e.n for e in estimates),
    )


# --------------------------------------------------------------------------- dcgym


@dataclass
class SpeedResult:
    name: str
    simulator: str
    tasks: int
    times_s: list[float]  # wall clock (time.perf_counter)
    cpu_times_s: list[float]  # CPU time of the running thread (time.thread_time), same runs
    events: int | None = None
    mean_response_us: float | None = None
    mean_response_se: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def best_s(self) -> float:
        return min(self.times_s)

    @property
    def cpu_of_best_s(self) -> float:
        return self.cpu_times_s[self.times_s.index(self.best_s)]

    @property
    def tasks_per_s(self) -> float:
        return self.tasks / self.best_s

    @property
    def tasks_per_cpu_s(self) -> float:
        """Robust to other processes taking the core: tasks per second of this thread's CPU time (best run)."""
        return self.tasks / min(self.cpu_times_s)

    @property
    def events_per_s(self) -> float | None:
        return None if self.events is None else self.events / self.best_s

    def to_json(self) -> dict:
        d = asdict(self)
        d.update(
            best_s=self.best_s,
            cpu_of_best_s=self.cpu_of_best_s,
            tasks_per_s=self.tasks_per_s,
            tasks_per_cpu_s=self.tasks_per_cpu_s,
            events_per_s=self.events_per_s,
        )
        return d


def dcgym_batch_means(cfg: dict, n: int) -> tuple[MeanEstimate, dict, float]:
    """The warm-up run: n tasks, measured in BATCHES chunks after the warm-up tasks (batch means)."""
    sim = apply_tables(RackSim(cfg), cfg)
    warm = cfg["warmup_tasks"]
    t0 = time.perf_counter()
    sim.run_tasks(warm)
    prev_sum, prev_cnt = 0.0, 0
    means = []
    chunk = (n - warm) // BATCHES
    for k in range(BATCHES):
        sim.run_tasks(chunk if k < BATCHES - 1 else n - warm - chunk * (BATCHES - 1))
        lat = sim.results()["latency_us"]
        s, c = lat["mean"] * lat["count"], lat["count"]
        means.append((s - prev_sum) / (c - prev_cnt))
        prev_sum, prev_cnt = s, c
    wall = time.perf_counter() - t0
    r = sim.results()
    est = MeanEstimate(r["latency_us"]["mean"], statistics.stdev(means) / math.sqrt(BATCHES), r["latency_us"]["count"])
    return est, r, wall


def bench_dcgym(name: str, cfg: dict, n: int, repeats: int) -> SpeedResult:
    est, r, warm_wall = dcgym_batch_means(cfg, n)
    times, cpu, events = [], [], None
    for _ in range(repeats):
        sim = apply_tables(RackSim(cfg), cfg)
        c0, t0 = time.thread_time(), time.perf_counter()
        sim.run_tasks(n)
        times.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        events = sim.results()["events"]
    extra = {
        "warmup_run_s": warm_wall,
        "p99_us": r["latency_us"]["p99"],
        "dropped_fraction": r["tasks_dropped"] / max(1, r["tasks_arrived"]),
        "events_per_task": events / n,
    }
    return SpeedResult(name, "dcgym", n, times, cpu, events, est.mean, est.se, extra)


# --------------------------------------------------------------------------- Ciw and SimPy


def ciw_run(n: int, seed: int) -> tuple[float, float, list[float]]:
    import ciw

    ciw.seed(seed)
    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(rate=RHO * MM_SERVERS)],
        service_distributions=[ciw.dists.Exponential(rate=1.0)],
        number_of_servers=[MM_SERVERS],
    )
    q = ciw.Simulation(network)
    c0, t0 = time.thread_time(), time.perf_counter()
    q.simulate_until_max_customers(n, method="Finish")
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    return wall, cpu, [rec.exit_date - rec.arrival_date for rec in q.get_all_records()]


def simpy_run(n: int, seed: int) -> tuple[float, float, list[float]]:
    import simpy

    env = simpy.Environment()
    servers = simpy.Resource(env, capacity=MM_SERVERS)
    arrivals, services = random.Random(seed), random.Random(seed + 10_000)
    lam = RHO * MM_SERVERS
    out: list[float] = []

    def customer():
        t0 = env.now
        with servers.request() as req:
            yield req
            yield env.timeout(services.expovariate(1.0))
        out.append(env.now - t0)

    def source():
        for _ in range(n):
            yield env.timeout(arrivals.expovariate(lam))
            env.process(customer())

    env.process(source())
    c0, t0 = time.thread_time(), time.perf_counter()
    env.run()
    return time.perf_counter() - t0, time.thread_time() - c0, out


def bench_baseline(
    simulator: str,
    run: Callable[[int, int], tuple[float, float, list[float]]],
    target_s: float,
    repeats: int,
    fixed_n: int | None,
) -> SpeedResult:
    if fixed_n is None:  # pilot run: warm-up and calibration (on CPU time: steadier on a busy machine)
        pilot_n = 50_000
        _, pilot_cpu_s, _ = run(pilot_n, 99)
        n = int(pilot_n / pilot_cpu_s * target_s)
        n = max(10_000, int(round(n, -(len(str(n)) - 2))))  # two significant digits
    else:
        run(min(fixed_n, 50_000), 99)  # warm-up
        n = fixed_n
    times, cpu, estimates = [], [], []
    for rep in range(repeats):
        wall, cpu_s, resp = run(n, rep + 1)  # independent seeds, pooled for the mean
        times.append(wall)
        cpu.append(cpu_s)
        estimates.append(batch_means(resp[len(resp) // 20 :]))  # drop the first 5% (start-empty bias)
    est = pool(estimates)
    return SpeedResult("M/M/16 FCFS", simulator, n, times, cpu, None, est.mean, est.se)


# --------------------------------------------------------------------------- memory


def _proc_status_mib(field_name: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return None


def measure_memory(cfg: dict) -> dict:
    """Peak RSS of this process (getrusage) and current RSS around 10^6, then 2x10^7 more, tasks of (a).

    Runs first, in this process, before Ciw or SimPy allocate anything, so the
    peak is the interpreter (numpy, rich, the engine) plus the simulator.
    """

    def point() -> dict:
        return {
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB on Linux
            "rss_mib": _proc_status_mib("VmRSS"),
        }

    out = {"before_build": point()}
    sim = RackSim(cfg)
    out["after_build"] = point()
    sim.run_tasks(1_000_000)
    out["after_1e6_tasks"] = point()
    sim.run_tasks(20_000_000)
    out["after_2.1e7_tasks"] = point()
    return out


# --------------------------------------------------------------------------- machine


def machine_info() -> dict:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = {}
    for mod in ("ciw", "simpy"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = None
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--", "cpp_core"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        commit += " (cpp_core modified)" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    import hashlib

    import dcgym.cpp_core._engine as engine

    so = Path(engine.__file__)
    engine_info = (
        f"{so.name} built {time.strftime('%Y-%m-%d %H:%M', time.localtime(so.stat().st_mtime))}, "
        f"sha256 {hashlib.sha256(so.read_bytes()).hexdigest()[:12]}"
    )
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": os.getloadavg(),
        "git": commit,
        "engine": engine_info,
        **versions,
    }


# --------------------------------------------------------------------------- main


def fmt_rate(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.1f} k"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--tasks",
        type=float,
        default=1.0,
        help="scale of the dcgym task counts (1.0 = 20 M for (a), 10 M for (b) and (c))",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="short run: --tasks 0.05 and 2 s baselines (the memory check keeps its size)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats after the warm-up run (best is kept)")
    ap.add_argument("--baseline-seconds", type=float, default=15.0, help="target wall time of one Ciw/SimPy run")
    ap.add_argument("--ciw-tasks", type=int, help="fixed Ciw task count (default: calibrated)")
    ap.add_argument("--simpy-tasks", type=int, help="fixed SimPy task count (default: calibrated)")
    ap.add_argument("--no-baselines", action="store_true", help="skip Ciw and SimPy")
    ap.add_argument(
        "--mm16-policy",
        default="random",
        choices=["random", "round_robin", "po_d", "jsq"],
        help="dispatch policy of (a); with one node every policy sends to it",
    )
    ap.add_argument("--json", type=Path, help="also save the numbers here")
    args = ap.parse_args(argv)
    if args.quick:
        args.tasks = min(args.tasks, 0.05)
        args.baseline_seconds = min(args.baseline_seconds, 2.0)

    info = machine_info()
    console.rule("[bold]dcgym engine speed")
    console.print(
        f"CPU: {info['cpu']}  |  cores: {info['logical_cores']} (usable {info['usable_cores']})  |  "
        f"Python {info['python']}  |  {info['platform']}"
    )
    console.print(f"dcgym git {info['git']}  |  engine {info['engine']}")
    console.print(
        f"ciw {info['ciw']}  |  simpy {info['simpy']}  |  "
        f"load average at start {', '.join(f'{x:.2f}' for x in info['loadavg_at_start'])}"
    )

    configs = scenario_configs(args.tasks, args.mm16_policy)
    with console.status("memory: peak RSS around 1e6, then 2e7 more, tasks of (a)"):
        memory = measure_memory(configs["a"][1])
    results: dict[str, SpeedResult] = {}
    for key, (name, cfg, n) in configs.items():
        with console.status(f"dcgym ({key}) {name}: {n:,} tasks x (1 + {args.repeats})"):
            results[key] = bench_dcgym(name, cfg, n, args.repeats)
        console.print(f"  dcgym ({key}) {fmt_rate(results[key].tasks_per_s)}tasks/s")

    if not args.no_baselines:
        for sim_name, run, fixed in (("Ciw", ciw_run, args.ciw_tasks), ("SimPy", simpy_run, args.simpy_tasks)):
            if info[sim_name.lower()] is None:
                console.print(f"  {sim_name} is not installed (pip install -e '.[bench]'): skipped")
                continue
            with console.status(f"{sim_name}: M/M/16, ~{args.baseline_seconds:.0f} s x (1 + {args.repeats})"):
                results[sim_name] = bench_baseline(sim_name, run, args.baseline_seconds, args.repeats, fixed)
            console.print(f"  {sim_name} {fmt_rate(results[sim_name].tasks_per_s)}tasks/s")

    # ---- speed table
    exact = mmc_mean_response(MM_SERVERS, RHO)
    mean_field = po2_mean_field_response(RHO)
    table = Table(
        title="Simulated tasks per wall-clock second at rho = 0.9 (one core, best of "
        f"{args.repeats} after a warm-up run)"
    )
    for col, just in (
        ("scenario", "left"),
        ("simulator", "left"),
        ("tasks", "right"),
        ("best wall s", "right"),
        ("its CPU s", "right"),
        ("tasks/s", "right"),
        ("tasks/CPU-s", "right"),
        ("events/s", "right"),
        ("mean resp. (us)", "right"),
        ("reference", "left"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    refs = {
        "a": f"Erlang C {exact:.4f}",
        "b": f"mean field N=inf {mean_field:.4f}",
        "c": f"{results['c'].extra['dropped_fraction']:.2%} dropped (full queues)",
        "d": f"{results['d'].extra['dropped_fraction']:.2%} dropped",
    }
    for key, r in results.items():
        label = f"({key}) {r.name}" if key in configs else f"(a) {r.name}"
        table.add_row(
            label,
            r.simulator,
            f"{r.tasks:,}",
            f"{r.best_s:.3f}",
            f"{r.cpu_of_best_s:.3f}",
            fmt_rate(r.tasks_per_s),
            fmt_rate(r.tasks_per_cpu_s),
            fmt_rate(r.events_per_s),
            f"{r.mean_response_us:.4f} ± {r.mean_response_se:.4f}",
            refs.get(key, f"Erlang C {exact:.4f}"),
        )
    console.print(table)
    stolen = [k for k, r in results.items() if r.best_s > 1.1 * r.cpu_of_best_s]
    if stolen:
        console.print(
            f"[yellow]warning: wall time exceeds the thread's CPU time by > 10% for {', '.join(stolen)}: "
            "other processes shared the core; rerun on a quiet machine for clean numbers"
        )

    # ---- ratios and agreement
    a = results["a"]
    ratios = {}
    checks: dict[str, Any] = {"erlang_c_mean_response": exact}
    agree = Table(title="M/M/16, rho=0.9: mean response time (Exp(1) service; ± 1 standard error)")
    for col in ("simulator", "mean", "± SE", "z vs Erlang C", "z vs dcgym", "agrees (|z| < 3)"):
        agree.add_column(col, justify="left" if col == "simulator" else "right")
    agree.add_row("Erlang C (exact)", f"{exact:.5f}", "-", "-", "-", "-")
    for key in ("a", "Ciw", "SimPy"):
        if key not in results:
            continue
        r = results[key]
        z_exact = (r.mean_response_us - exact) / r.mean_response_se
        z_dcgym = None
        if key != "a":
            z_dcgym = (r.mean_response_us - a.mean_response_us) / math.hypot(r.mean_response_se, a.mean_response_se)
            ratios[f"dcgym/{key}"] = a.tasks_per_s / r.tasks_per_s
            ratios[f"dcgym/{key} (CPU time)"] = a.tasks_per_cpu_s / r.tasks_per_cpu_s
        ok = abs(z_exact) < 3 and (z_dcgym is None or abs(z_dcgym) < 3)
        checks[r.simulator] = {
            "mean": r.mean_response_us,
            "se": r.mean_response_se,
            "z_vs_exact": z_exact,
            "z_vs_dcgym": z_dcgym,
            "agrees": ok,
        }
        agree.add_row(
            r.simulator,
            f"{r.mean_response_us:.5f}",
            f"{r.mean_response_se:.5f}",
            f"{z_exact:+.2f}",
            "-" if z_dcgym is None else f"{z_dcgym:+.2f}",
            "[green]yes" if ok else "[red]NO",
        )
    console.print(agree)
    for k, v in ratios.items():
        console.print(f"speed ratio {k}, M/M/16: [bold]{v:,.0f}x")

    # ---- memory
    if memory:
        mem = Table(title="dcgym process memory during (a) (measured first, before Ciw and SimPy run)")
        mem.add_column("point")
        mem.add_column("peak RSS, getrusage (MiB)", justify="right")
        mem.add_column("current RSS, VmRSS (MiB)", justify="right")
        for k, v in memory.items():
            mem.add_row(k, f"{v['peak_rss_mib']:.1f}", "-" if v["rss_mib"] is None else f"{v['rss_mib']:.1f}")
        console.print(mem)
        growth = memory["after_2.1e7_tasks"]["peak_rss_mib"] - memory["after_1e6_tasks"]["peak_rss_mib"]
        console.print(f"peak RSS growth over the last 2x10^7 tasks: {growth:+.2f} MiB")

    # ---- targets
    targets = {}
    for key, goal in TARGETS.items():
        got, got_cpu = results[key].tasks_per_s, results[key].tasks_per_cpu_s
        targets[key] = {
            "target_tasks_per_s": goal,
            "tasks_per_s": got,
            "met": got >= goal,
            "tasks_per_cpu_s": got_cpu,
            "met_by_cpu_time": got_cpu >= goal,
        }
        colour = "green" if got >= goal else "red"
        console.print(
            f"target ({key}) {results[key].name}: >= {goal / 1e6:.0f} M tasks/s -> "
            f"[{colour}]{fmt_rate(got)}tasks/s, {'met' if got >= goal else 'NOT met'} "
            f"({got / goal:.0%} of target)[/]; by CPU time {fmt_rate(got_cpu)}tasks/s "
            f"({got_cpu / goal:.0%})"
        )

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "machine": info,
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "results": {k: r.to_json() for k, r in results.items()},
            "ratios": ratios,
            "mean_response_check": checks,
            "po2_mean_field_response": mean_field,
            "memory": memory,
            "targets": targets,
        }
        args.json.write_text(json.dumps(payload, indent=2))
        console.print(f"saved {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
