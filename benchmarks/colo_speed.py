"""Speed of the colo model: service-ticks/s of the C++ tick against a pure-Python implementation of it.

Scenarios (one core, wall time with time.perf_counter, best of --repeats runs
after a warm-up run; building the simulators is not timed):

  tick-N     N services of OSML's Table 1 (N = 1, 3, 5, 11) on the E5-2697 v4 at
             30-60% of their max loads, a new allocation every 10 ticks (a
             controller acting every second), ColoSim.step(10) between them.
             Measured with noise off (as the reference) and on (the default).
  reference  the same tick in pure Python (benchmarks/colo_reference.py), run
             on the same scenario after checking it agrees with the C++ p99 to
             1e-9; the ratio C++ / Python is the speed-up.
  batch      64 simulations of 3 services stepped by step_colo_batch(sims, 10).
  env-step   a Python loop of set_allocations + step(10) + reading counters,
             3 and 5 services: what colo_v0 can do at a 1-s decision interval
             at most (its own Python work comes on top).
  steady     steady_state_batch over 10,000 allocations of 3 services (the
             Oracle's and search-based schedulers' query).
  fig1       one 36 x 20 grid of OSML's Fig. 1 protocol (reproduce_osml_fig1.grid).
  colo_v0    colo_v0 steps/s (1-s steps, 10 ticks) with 3 and 5 services, every
             agent acting each step (a fixed cycle of actions, some clipped),
             against the env-step loop above measured in the same run: the
             ratio is what colo_v0's own Python work costs; and the batched
             form, ColoVectorEnv with 64 copies (env-steps/s).
  clite      one CLITE run on OSML's case A (180 s) under cProfile: the share of
             its time in the GP fit, the acquisition (SLSQP over the posterior)
             and the engine.
  comparison (with --comparison) the whole OSML comparison: osml_mixes x
             PARTIES, CLITE, Oracle, Unmanaged x 180 s on 2 processes, wall time
             and each scheduler's CPU seconds (about 10 minutes).

    python benchmarks/colo_speed.py            # about 1 minute
    python benchmarks/colo_speed.py --quick    # about 10 s
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import colo_reference  # noqa: E402
import reproduce_osml_fig1 as fig1  # noqa: E402

from dcgym.cpp_core import ColoSim, step_colo_batch  # noqa: E402
from dcgym.envs.colo import catalog as cc  # noqa: E402
from dcgym.envs.colo import colo_v0  # noqa: E402
from dcgym.envs.colo.scenario import load_colo_scenario  # noqa: E402
from dcgym.envs.colo.vector import ColoVectorEnv  # noqa: E402

TARGET_SERVICE_TICKS = 1e6  # per second on one core (the target)
TARGET_ENV_STEPS = 20e3  # colo_v0 steps/s with 3-5 services (the target)
TARGET_COMPARISON_S = 600  # the whole OSML comparison on 2 cores (the target)
ENV_ACTIONS = (24, 31, 17, 25, 23, 32, 16, 24)  # (0,0), (+1,0), (-1,0), (0,+1), (0,-1), (+1,+1), (-1,-1), (0,0)
MIX = [
    ("moses", 40),
    ("img-dnn", 60),
    ("xapian", 50),
    ("sphinx", 50),
    ("memcached", 30),
    ("specjbb", 40),
    ("masstree", 40),
    ("mongodb", 50),
    ("login", 50),
    ("nginx", 30),
    ("ads", 40),
]
QUIET = {"latency": 0.0, "counters": 0.0}
P99 = ColoSim.counter_names.index("P99_ms")


def config(catalog: dict, n: int, noise: bool) -> dict:
    services = [cc.service_config(catalog, name, pct=pct) for name, pct in MIX[:n]]
    return cc.sim_config(catalog, services, **({} if noise else {"noise": QUIET}))


def allocations(n: int, count: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random splits of the server's 36 cores and 20 ways (each service at least 1 of each)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        cores = 1 + rng.multinomial(36 - n, np.ones(n) / n) if n <= 20 else np.ones(n, int)
        ways = 1 + rng.multinomial(20 - n, np.ones(n) / n) if n <= 20 else np.ones(n, int)
        out.append((cores.astype(np.int64), ways.astype(np.int64)))
    return out


def best_of(repeats: int, run) -> float:
    run()  # warm-up
    return min(run() for _ in range(repeats))


def bench_tick(cfg: dict, decisions: int, repeats: int) -> float:
    """Seconds for `decisions` x (set_allocations, step(10)) on a fresh simulation."""
    n = len(cfg["services"])
    plan = allocations(n, decisions)

    def run() -> float:
        sim = ColoSim(cfg)
        t = time.perf_counter()
        for cores, ways in plan:
            sim.set_allocations(cores, ways)
            sim.step(10)
        return time.perf_counter() - t

    return best_of(repeats, run)


def bench_reference(cfg: dict, decisions: int) -> float:
    n = len(cfg["services"])
    plan = allocations(n, decisions)
    py = colo_reference.PyColo(cfg)
    t = time.perf_counter()
    for cores, ways in plan:
        for i in range(n):
            py.set_allocation(i, int(cores[i]), int(ways[i]))
        py.step(10)
    return time.perf_counter() - t


def check_reference(cfg: dict, decisions: int = 20) -> float:
    """Largest relative difference of the per-tick p99 between C++ and the Python reference."""
    n = len(cfg["services"])
    sim, py = ColoSim(cfg), colo_reference.PyColo(cfg)
    worst = 0.0
    for cores, ways in allocations(n, decisions, seed=1):
        sim.set_allocations(cores, ways)
        for i in range(n):
            py.set_allocation(i, int(cores[i]), int(ways[i]))
        for _ in range(10):
            sim.step(1)
            py.step(1)
            a, b = sim.counters[:, P99], np.array(py.p99)
            worst = max(worst, float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))))
    return worst


def bench_batch(catalog: dict, envs: int, calls: int, repeats: int) -> float:
    def run() -> float:
        sims = [ColoSim({**config(catalog, 3, True), "seed": s}) for s in range(envs)]
        for s in sims:
            s.set_allocations(np.array([14, 12, 10]), np.array([10, 5, 5]))
        t = time.perf_counter()
        for _ in range(calls):
            step_colo_batch(sims, 10)
        return time.perf_counter() - t

    return best_of(repeats, run)


def bench_env_step(catalog: dict, n: int, steps: int, repeats: int) -> float:
    plan = allocations(n, 64)

    def run() -> float:
        sim = ColoSim(config(catalog, n, True))
        counters = sim.counters
        t = time.perf_counter()
        for k in range(steps):
            cores, ways = plan[k % len(plan)]
            sim.set_allocations(cores, ways)
            sim.step(10)
            counters[:, P99].max()  # what an env reads for its observation and reward
        return time.perf_counter() - t

    return best_of(repeats, run)


def bench_steady(catalog: dict, count: int, repeats: int) -> float:
    sim = ColoSim(config(catalog, 3, False))
    plan = allocations(3, count)
    cores = np.array([c for c, _ in plan])
    ways = np.array([w for _, w in plan])
    rps = np.array([s["rps"] for s in config(catalog, 3, False)["services"]])

    def run() -> float:
        t = time.perf_counter()
        sim.steady_state_batch(cores, ways, rps)
        return time.perf_counter() - t

    return best_of(repeats, run)


def env_scenario(n: int):
    """colo_v0 on the first n services of MIX (loads as fractions of OSML's code's max loads)."""
    mix = [{"service": name, "load": pct / 100} for name, pct in MIX[:n]]
    return load_colo_scenario("osml_case_a", {"mixes": [mix]})


def bench_colo_v0(n: int, steps: int, repeats: int) -> float:
    """Seconds for `steps` colo_v0 steps (episodes of 180 steps, resets included)."""
    env = colo_v0.parallel_env(scenario=env_scenario(n))

    def run() -> float:
        t = time.perf_counter()
        env.reset(seed=1)
        for k in range(steps):
            if not env.agents:
                env.reset(seed=k)
            a = ENV_ACTIONS[k % len(ENV_ACTIONS)]
            env.step({agent: a for agent in env.agents})
        return time.perf_counter() - t

    return best_of(repeats, run)


def bench_colo_vector(n: int, envs: int, steps: int, repeats: int) -> float:
    """Seconds for `steps` steps of ColoVectorEnv with `envs` copies (every service acting)."""
    vec = ColoVectorEnv(envs, scenario=env_scenario(n))
    plan = [np.full((envs, n), a) for a in ENV_ACTIONS]

    def run() -> float:
        vec.reset(seed=1)
        t = time.perf_counter()
        for k in range(steps):
            vec.step(plan[k % len(plan)])
        return time.perf_counter() - t

    return best_of(repeats, run)


def profile_clite() -> dict[str, float]:
    """Shares of one CLITE run's time (OSML case A, 180 s) in the GP fit, the acquisition and the engine."""
    import cProfile
    import pstats

    from dcgym.agents.evaluation.colo import run as run_scheduler

    scenario = load_colo_scenario("osml_case_a")
    profiler = cProfile.Profile()
    t = time.perf_counter()
    profiler.enable()
    row, _ = run_scheduler(scenario.engine_config(mix=0, seed=1), "clite", 1, 180.0, scenario.hold_s)
    profiler.disable()
    total = time.perf_counter() - t
    stats = pstats.Stats(profiler).stats

    def cumulative(name: str, file_part: str) -> float:
        return sum(v[3] for (f, _, fn), v in stats.items() if fn == name and file_part in f)

    return {
        "total_s": total,
        "samples": row["actions"],
        "gp_fit_s": cumulative("fit", "_gpr.py"),
        "acquisition_s": cumulative("minimize", "_minimize.py"),
    }


def comparison() -> dict[str, float]:
    """The whole OSML comparison on 2 processes: wall time and each scheduler's CPU seconds."""
    from dcgym.agents.evaluation import evaluate

    t = time.perf_counter()
    doc = evaluate("osml_mixes", ["parties", "clite", "oracle", "unmanaged"], workers=2, progress=False)
    wall = time.perf_counter() - t
    cpu = {}
    for r in doc["results"]:
        cpu[r["policy"]] = cpu.get(r["policy"], 0.0) + r["wall_s"]
    return {"wall_s": wall, "runs": len(doc["results"]), **{f"cpu_{k}_s": v for k, v in cpu.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run (about 10 s)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    ap.add_argument("--comparison", action="store_true", help="also time the whole OSML comparison (10 minutes)")
    args = ap.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    catalog = cc.load_catalog()
    rows, results = [], {}

    worst = check_reference(config(catalog, 5, False))
    assert worst < 1e-9, f"the Python reference disagrees with the C++ tick: {worst:.3g}"
    results["reference_max_rel_diff"] = worst

    for n in (1, 3, 5, 11):
        decisions = max(50, int(20000 * scale / n))
        ticks = decisions * 10
        quiet = bench_tick(config(catalog, n, False), decisions, args.repeats)
        noisy = bench_tick(config(catalog, n, True), decisions, args.repeats)
        ref_decisions = max(5, int(300 * scale / n))
        ref = bench_reference(config(catalog, n, False), ref_decisions)
        cpp_rate, ref_rate = n * ticks / quiet, n * ref_decisions * 10 / ref
        results[f"tick_{n}"] = {
            "service_ticks_per_s": cpp_rate,
            "with_noise": n * ticks / noisy,
            "python_reference": ref_rate,
            "ratio": cpp_rate / ref_rate,
        }
        rows.append(
            (
                f"tick, {n} services",
                f"{cpp_rate:,.0f} service-ticks/s",
                f"{n * ticks / noisy:,.0f} with noise",
                f"Python {ref_rate:,.0f}",
                f"x{cpp_rate / ref_rate:,.0f}",
            )
        )

    envs, calls = 64, max(10, int(200 * scale))
    t = bench_batch(catalog, envs, calls, args.repeats)
    rate = envs * calls * 10 * 3 / t
    results["batch_64x3"] = {"service_ticks_per_s": rate, "env_steps_per_s": envs * calls / t}
    rows.append(
        ("step_colo_batch, 64 envs x 3", f"{rate:,.0f} service-ticks/s", f"{envs * calls / t:,.0f} env-steps/s", "", "")
    )

    for n in (3, 5):
        steps = max(500, int(20000 * scale))
        t = bench_env_step(catalog, n, steps, args.repeats)
        results[f"env_step_{n}"] = steps / t
        rows.append((f"env step loop, {n} services", f"{steps / t:,.0f} steps/s", "(10 ticks = 1 s each)", "", ""))

    count = max(1000, int(10000 * scale))
    t = bench_steady(catalog, count, args.repeats)
    results["steady_state_per_s"] = count / t
    rows.append(("steady_state_batch, 3 services", f"{count / t:,.0f} allocations/s", "", "", ""))

    for n in (3, 5):
        steps = max(1000, int(20000 * scale))
        env_rate = steps / bench_colo_v0(n, steps, args.repeats)
        bare = results[f"env_step_{n}"]
        results[f"colo_v0_{n}"] = {"steps_per_s": env_rate, "bare_loop": bare, "ratio": env_rate / bare}
        rows.append(
            (
                f"colo_v0, {n} services",
                f"{env_rate:,.0f} steps/s",
                f"bare loop {bare:,.0f}",
                f"x{env_rate / bare:.2f}",
                "",
            )
        )

    for n in (3, 5):
        envs, steps = 64, max(50, int(300 * scale))
        rate = envs * steps / bench_colo_vector(n, envs, steps, args.repeats)
        results[f"colo_vector_{n}"] = rate
        results[f"colo_v0_{n}"]["batched_64"] = rate
        rows.append((f"ColoVectorEnv, 64 x {n} services", f"{rate:,.0f} env-steps/s", "", "", ""))

    prof = profile_clite()
    results["clite_profile"] = prof
    rows.append(
        (
            "CLITE run, case A (180 s)",
            f"{prof['total_s']:.2f} s, {prof['samples']} samples",
            f"GP fit {prof['gp_fit_s'] / prof['total_s']:.0%}",
            f"acquisition {prof['acquisition_s'] / prof['total_s']:.0%}",
            "",
        )
    )
    if args.comparison:
        comp = comparison()
        results["comparison"] = comp
        cpu = ", ".join(f"{k[4:-2]} {v:,.0f} s" for k, v in comp.items() if k.startswith("cpu_"))
        rows.append(("OSML comparison, 2 processes", f"{comp['wall_s']:,.0f} s wall", f"{comp['runs']} runs", cpu, ""))

    t0 = time.perf_counter()
    fig1.grid(catalog, "moses", 800.0)
    results["fig1_grid_s"] = time.perf_counter() - t0
    rows.append(("Fig. 1 grid (720 cells, 21 s each)", f"{results['fig1_grid_s']:.2f} s", "", "", ""))

    machine = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"colo speed on {machine} (best of {args.repeats}; the C++ / Python reference agree to {worst:.1e})")
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    for r in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))
    ok = all(results[f"tick_{n}"]["service_ticks_per_s"] >= TARGET_SERVICE_TICKS for n in (3, 5, 11))
    print(f"target >= {TARGET_SERVICE_TICKS:,.0f} service-ticks/s with 3-11 services: {'met' if ok else 'NOT met'}")
    env_ok = all(results[f"colo_v0_{n}"]["steps_per_s"] >= TARGET_ENV_STEPS for n in (3, 5))
    print(f"target colo_v0 >= {TARGET_ENV_STEPS:,.0f} steps/s with 3-5 services: {'met' if env_ok else 'NOT met'}")
    vec_ok = all(results[f"colo_vector_{n}"] >= TARGET_ENV_STEPS for n in (3, 5))
    print(f"  batched (ColoVectorEnv, 64 copies): {'met' if vec_ok else 'NOT met'}")
    if "comparison" in results:
        met = results["comparison"]["wall_s"] <= TARGET_COMPARISON_S
        print(f"target OSML comparison within {TARGET_COMPARISON_S} s on 2 cores: {'met' if met else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
