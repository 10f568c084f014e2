"""Speed of the flow engine: simulated flows per second on one core, as a ratio
to the same engine recomputing every rate at every event, measured in the
same run.

Cases (web search sizes, 8 priority levels with PIAS's web-search thresholds
{46, 1084, 1717, 1943, 1989, 1999, 2001} packets, MLFQ):

  single   single_link at load 0.8, 10^6 flows            target >= 5 M flows/s
  auto     AuTO's testbed (Chen et al. SIGCOMM 2018 §6): 32 hosts, 3 planes of 1 Gbps, load 0.8
           of a host link (each host offers 0.8 Gbps, spread over its 3 ports)
                                                           target >= 250 K flows/s (stretch 1 M)
  auto-x3  the same testbed with every port at 0.8 (load 2.4): ~600 flows in flight
  pias     PIAS's leaf-spine (9 racks x 16 hosts, 4 spines, 10 Gbps), load 0.8

The reference is `solver: full`: the same model and event loop, but every
Solve() recomputes every level over every link (progressive filling from
scratch), as a simulator without incremental rates would. Each is timed
after an untimed warm-up (a tenth of its flows) so both run in steady state;
rates use the thread's CPU time (time.thread_time), which other processes
sharing the core do not inflate, best of --repeats. Also: flow_v0's steps
per second at 10 ms decision intervals on AuTO's testbed (target >= 5 K), alone
and as 8 vector copies, each as a ratio to 10 ms intervals of the bare engine
(step_flow_batch + observe(), no agents, no Python per step) in the same run,
and 10 ms intervals with an exported sRLA of the paper's size deciding the
thresholds every interval through the C++ runtime (as ``evaluate.py --policy
FILE.dcpol`` runs it), as a ratio to the same reference;
and the process's peak RSS before and after 5 x 10^6 more single-link flows
(memory flat in flows simulated).

    python benchmarks/flow_speed.py              # about 2 minutes
    python benchmarks/flow_speed.py --quick      # about 20 s
    python benchmarks/flow_speed.py --json out/flow_speed.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from dcgym.cpp_core import FlowSim, step_flow_batch

PIAS_WS = [46, 1084, 1717, 1943, 1989, 1999, 2001]
TARGETS = {"single": (5e6, None), "auto": (2.5e5, 1e6)}

console = Console(width=None if sys.stdout.isatty() else 150)


LINK_UNIT = {"load_unit": "link"}
"""The environment cases keep the load of the recorded numbers (each host 0.8 of one port, every port at 27%)."""


def config(topology: dict, load: float, solver: str = "incremental") -> dict:
    return {
        "topology": topology,
        "workload": {"sizes": "web_search", "load": load},
        "scheduling": {"discipline": "pias", "levels": 8, "thresholds_packets": PIAS_WS},
        "solver": solver,
        "seed": 1,
    }


CASES = {
    "single": ("single_link, load 0.8", config({"kind": "single_link", "link_gbps": 1.0}, 0.8), 1_000_000, 200_000),
    "auto": (
        "AuTO 32 x 3 planes, load 0.8",
        config({"kind": "planes", "hosts": 32, "planes": 3}, 0.8),
        1_000_000,
        100_000,
    ),
    "auto-x3": (
        "AuTO 32 x 3 planes, 0.8 per port",
        config({"kind": "planes", "hosts": 32, "planes": 3}, 2.4),
        100_000,
        5_000,
    ),
    "pias": (
        "PIAS leaf-spine 144 x 10G, load 0.8",
        config({"kind": "leaf_spine", "racks": 9, "hosts_per_rack": 16, "spines": 4, "link_gbps": 10.0}, 0.8),
        30_000,
        3_000,
    ),
}


def timed_flows(cfg: dict, flows: int, repeats: int) -> dict:
    """Best of `repeats`: flows/s of CPU time for `flows` flows after flows // 10 untimed."""
    best = None
    for _ in range(repeats):
        sim = FlowSim(cfg)
        sim.run_flows(max(1, flows // 10))
        before = sim.results()
        cpu, wall = time.thread_time(), time.perf_counter()
        sim.run_flows(flows)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        if best is None or cpu < best["cpu_s"]:
            after = sim.results()
            best = {
                "flows": flows,
                "cpu_s": cpu,
                "wall_s": wall,
                "flows_per_s": flows / cpu,
                "events_per_flow": (after["events"] - before["events"]) / flows,
                "mean_active": after["mean_active_flows"],
            }
    return best


def timed_steps(cfg: dict, steps: int, repeats: int) -> float:
    """10 ms intervals per CPU second of step_flow_batch on one simulation, after 1 s simulated."""
    best = None
    for _ in range(repeats):
        sim = FlowSim(cfg)
        sim.run_for(1.0)
        cpu = time.thread_time()
        for _ in range(steps):
            step_flow_batch([sim], 0.01)
            sim.observe()
        cpu = time.thread_time() - cpu
        best = cpu if best is None else min(best, cpu)
    return steps / best


def _lrla_default(env) -> np.ndarray:
    """lRLA's action leaving long flows as MLFQ would: the lowest level, no cap (index 0), path 0."""
    nvec = env.action_space("lrla").nvec
    a = np.zeros(len(nvec), np.int64)
    a[0::3] = nvec[0::3] - 1
    return a


def timed_env_steps(steps: int, repeats: int, copies: int = 1) -> float:
    """flow_v0 steps (agent-steps of both agents: one interval of one copy) per CPU second on AuTO's testbed at
    load 0.8, 10 ms intervals, after 1 s simulated; copies > 1: FlowVectorEnv, all copies in one engine call."""
    from dcgym.envs.flow.flow_v0 import parallel_env
    from dcgym.envs.flow.vector import FlowVectorEnv

    kwargs = {"scenario": "auto_websearch", "load": 0.8, "max_steps": 10**9, "warmup_s": 1.0, "overrides": LINK_UNIT}
    best = None
    for _ in range(repeats):
        env = parallel_env(**kwargs)
        lrla = _lrla_default(env)
        srla = np.zeros(env.action_space("srla").shape, np.float32)
        if copies == 1:
            target, actions = env, {"srla": srla, "lrla": lrla}
        else:
            target = FlowVectorEnv(copies, **kwargs)
            actions = {"srla": np.tile(srla, (copies, 1)), "lrla": np.tile(lrla, (copies, 1))}
        target.reset(seed=1)
        cpu = time.thread_time()
        for _ in range(steps):
            target.step(actions)
        cpu = time.thread_time() - cpu
        best = cpu if best is None else min(best, cpu)
    return steps * copies / best


def memory(cfg: dict, more: int) -> dict:
    """Peak RSS (MB) after 10^6 flows and after `more` more, and the flow records allocated."""
    sim = FlowSim(cfg)
    sim.run_flows(1_000_000)
    rss0, slots0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, sim.slots
    sim.run_flows(more)
    return {
        "flows": 1_000_000 + more,
        "rss_mb_before": rss0,
        "rss_mb_after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "records_before": slots0,
        "records_after": sim.slots,
    }


def machine() -> dict:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "git": commit,
        "loadavg_at_start": os.getloadavg(),
    }


def timed_policy_file_steps(steps: int, repeats: int) -> float:
    """10 ms intervals per CPU second of flow_v0's engine on AuTO's testbed at load 0.8 with an exported sRLA at
    the paper's size (600-600, random weights; the increasing head) deciding the thresholds every interval
    inside the engine (run_auto_policies, as evaluate.py --policy FILE.dcpol runs it; lRLA held by the rules)."""
    import tempfile
    import types

    import torch

    from dcgym.agents.auto.policy_file import srla_policy
    from dcgym.agents.policy_format import write_policy
    from dcgym.cpp_core import run_auto_policies
    from dcgym.envs.flow.flow_v0 import parallel_env

    env = parallel_env(scenario="auto_websearch", load=0.8, max_steps=10**9, warmup_s=1.0, overrides=LINK_UNIT)
    n_obs, k = int(np.prod(env.observation_space("srla").shape)), env.action_space("srla").shape[0]
    torch.manual_seed(0)
    actor = torch.nn.Sequential(
        torch.nn.Linear(n_obs, 600), torch.nn.ReLU(), torch.nn.Linear(600, 600), torch.nn.ReLU(),
        torch.nn.Linear(600, k), torch.nn.Tanh(),
    )  # fmt: skip
    module = types.SimpleNamespace(actor=actor, num_obs=n_obs)
    best = None
    with tempfile.TemporaryDirectory() as folder:
        path = str(write_policy(srla_policy(module, env.game.config.threshold_range_bytes), Path(folder) / "s.dcpol"))
        for _ in range(repeats):
            env.reset(seed=1)
            flows = env.sim.results()["flows_arrived"] + 20 * steps  # about 20 arrivals an interval at 0.8
            cpu = time.thread_time()
            intervals = run_auto_policies(env.sim, env.game.agents[0], path, None, env.game.interval_s, flows, 0.0)
            rate = intervals / (time.thread_time() - cpu)
            best = rate if best is None else max(best, rate)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the flows, one repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ", ".join(CASES))
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    scale, repeats = (0.1, 1) if args.quick else (1.0, args.repeats)
    info = machine()
    console.print(
        f"[bold]flow engine speed[/bold]  {info['cpu']}, {info['cores']} cores, Python {info['python']}, "
        f"git {info['git']}, load average {info['loadavg_at_start'][0]:.2f}"
    )
    out = {"machine": info, "cases": {}}
    table = Table(
        "case", "flows", "engine flows/s", "full-recompute flows/s", "ratio", "events/flow", "mean in flight", "target"
    )
    for key in args.cases.split(","):
        title, cfg, flows, ref_flows = CASES[key]
        engine = timed_flows(cfg, max(1000, int(flows * scale)), repeats)
        reference = timed_flows({**cfg, "solver": "full"}, max(500, int(ref_flows * scale)), repeats)
        ratio = engine["flows_per_s"] / reference["flows_per_s"]
        target = ""
        if key in TARGETS:
            must, stretch = TARGETS[key]
            target = f">= {must:,.0f}: {'met' if engine['flows_per_s'] >= must else 'MISSED'}"
            if stretch:
                target += f"; stretch {stretch:,.0f}: {'met' if engine['flows_per_s'] >= stretch else 'not met'}"
        table.add_row(
            title,
            f"{engine['flows']:,}",
            f"{engine['flows_per_s']:,.0f}",
            f"{reference['flows_per_s']:,.0f}",
            f"{ratio:,.1f}x",
            f"{engine['events_per_flow']:.2f}",
            f"{engine['mean_active']:.0f}",
            target,
        )
        out["cases"][key] = {"title": title, "engine": engine, "full_recompute": reference, "ratio": ratio}
    console.print(table)

    n = max(100, int(2000 * scale))
    steps = timed_steps(CASES["auto"][1], n, repeats)
    env_steps = timed_env_steps(n, repeats)
    vec_steps = timed_env_steps(max(20, n // 8), repeats, copies=8)
    file_steps = timed_policy_file_steps(n, repeats)
    verdict = "met" if env_steps >= 5000 else "MISSED"
    console.print(
        f"AuTO's testbed (load 0.8, 10 ms intervals), per CPU second:\n"
        f"  reference: step_flow_batch + observe() (engine only, PIAS's 8 levels): {steps:,.0f} intervals\n"
        f"  flow_v0 (4 levels, both agents act, observations, rewards, infos): {env_steps:,.0f} steps "
        f"= {env_steps / steps:.2f}x the reference; target >= 5,000: {verdict}\n"
        f"  FlowVectorEnv, 8 copies in one engine call: {vec_steps:,.0f} copy-steps = {vec_steps / steps:.2f}x\n"
        f"  an exported sRLA (600-600) deciding every interval inside the engine (evaluate.py --policy FILE): "
        f"{file_steps:,.0f} intervals = {file_steps / steps:.2f}x the reference"
    )
    mem = memory(CASES["single"][1], int(5_000_000 * scale))
    console.print(
        f"memory: peak RSS {mem['rss_mb_before']:.1f} MB after 10^6 single-link flows, "
        f"{mem['rss_mb_after']:.1f} MB after {mem['flows']:,}; flow records {mem['records_before']} -> "
        f"{mem['records_after']} (the most flows in flight at once)"
    )
    out["steps_per_s"] = steps
    out["flow_v0_steps_per_s"] = env_steps
    out["flow_v0_vector8_steps_per_s"] = vec_steps
    out["srla_file_intervals_per_s"] = file_steps
    out["memory"] = mem
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
