"""Speed of the multi-stage multi-LB engine against a SimPy implementation of the same model.

The large-scale setting of the multi-LB paper (configs/scenarios/lb_large:
6 LBs running SED, 10 x 2 + 10 x 4 CPU servers, one CPU stage Exp(25 ms),
2000 flows/s at load 0.833, hops of 0.1-1 ms, backlog 64, the LBs' passive
measurements on) runs in dcgym's C++ engine and in a pure-Python SimPy model
(one process per flow, processor-sharing CPU and IO with virtual clocks, the
same local counts and reservoirs). Both report flows/s on one core (wall time
of the run alone, best of --repeats for the engine) and their mean FCTs,
which must agree within a few percent. Events/s counts the engine's events
(arrivals, hops, stage ends, notifications).

    python benchmarks/lb_speed.py            # about 30 s
    python benchmarks/lb_speed.py --quick    # about 5 s
"""

from __future__ import annotations

import argparse
import heapq
import random
import time

import simpy

from dcgym.cpp_core._engine import LbSim
from dcgym.envs.lb.scenario import load_lb_scenario

LOAD = 0.833


def bench_engine(cfg: dict, flows: int, repeats: int) -> tuple[float, float, float]:
    """(flows/s, events/s, mean FCT in us) of the best of `repeats` runs."""
    best = None
    for _ in range(repeats):
        sim = LbSim(cfg)
        t = time.perf_counter()
        sim.run_flows(flows)
        dt = time.perf_counter() - t
        r = sim.results()
        if best is None or dt < best[0]:
            best = (dt, r["events"], r["fct_us"]["mean"])
    dt, events, fct = best
    return flows / dt, events / dt, fct


# --------------------------------------------------------------------------- SimPy model


class PsQueue:
    """Processor sharing over `parallel` units of `speed`, with a virtual clock (as the engine)."""

    def __init__(self, env: simpy.Environment, parallel: int, speed: float = 1.0):
        self.env, self.c, self.s = env, parallel, speed
        self.jobs: list = []  # heap of (tag, seq, event)
        self.v = self.v_at = 0.0
        self.version = self.seq = 0

    def rate(self) -> float:
        n = len(self.jobs)
        return self.s if n <= self.c else self.s * self.c / n

    def advance(self) -> None:
        if self.jobs:
            self.v += (self.env.now - self.v_at) * self.rate()
        self.v_at = self.env.now

    def serve(self, work: float) -> simpy.Event:
        self.advance()
        done = self.env.event()
        self.seq += 1
        heapq.heappush(self.jobs, (self.v + work, self.seq, done))
        self.reschedule()
        return done

    def reschedule(self) -> None:
        self.version += 1
        if self.jobs:
            version = self.version
            wake = self.env.timeout(max(0.0, self.jobs[0][0] - self.v) / self.rate())
            wake.callbacks.append(lambda _: self.finish(version))

    def finish(self, version: int) -> None:
        if version != self.version:
            return  # superseded by a later change
        self.advance()
        _, _, done = heapq.heappop(self.jobs)
        if not self.jobs:
            self.v = 0.0
        self.reschedule()
        done.succeed()


class Server:
    def __init__(self, env, workers: int, mp_level: int = 1):
        self.env, self.workers, self.slots = env, workers, workers * mp_level
        self.cpu, self.io = PsQueue(env, workers), PsQueue(env, 1)
        self.wait: list = []
        self.in_cpu = 0
        self.jobs = 0

    def run_cpu(self, work: float):
        """A generator: wait for a CPU slot (FIFO), then run `work`."""
        if self.in_cpu >= self.slots:
            slot = self.env.event()
            self.wait.append(slot)
            yield slot
        else:
            self.in_cpu += 1
        yield self.cpu.serve(work)
        if self.wait:
            self.wait.pop(0).succeed()  # the slot passes to the first waiting flow
        else:
            self.in_cpu -= 1


class Lb:
    def __init__(self, rng: random.Random, weights: list[float], reservoir: int):
        self.rng, self.w = rng, weights
        self.count = [0] * len(weights)
        self.tracked: dict[int, tuple[float, int]] = {}
        self.last = 0.0
        self.fd = [[] for _ in weights]
        self.fct = [[] for _ in weights]
        self.k = reservoir

    def add(self, buf: list, sample) -> None:
        if len(buf) < self.k:
            buf.append(sample)
        else:
            buf[self.rng.randrange(self.k)] = sample

    def sample_durations(self, now: float, density: int, min_us: float) -> None:
        for t0, j in self.tracked.values():
            for _ in range(self.rng.randrange(density + 1)):
                t = self.last + (now - self.last) * self.rng.random()
                if t - t0 > min_us:
                    self.add(self.fd[j], (t, t - t0))
        self.last = now

    def pick_sed(self) -> int:
        best, ties, score_best = 0, 0, float("inf")
        for j, (c, w) in enumerate(zip(self.count, self.w)):
            score = (c + 1) / w
            if score < score_best:
                best, ties, score_best = j, 1, score
            elif score == score_best:
                ties += 1
                if self.rng.randrange(ties) == 0:
                    best = j
        return best


def simpy_model(cfg: dict, flows: int, seed: int = 1) -> tuple[float, float]:
    """(flows/s, mean FCT in us) of the SimPy model of `cfg` (SED LBs, one CPU stage, exponential CPU time)."""
    env = simpy.Environment()
    rng = random.Random(seed)
    servers = [Server(env, g["workers"], g["mp_level"]) for g in cfg["servers"] for _ in range(g["count"])]
    weights = [float(s.workers) for s in servers]
    obs = cfg["observation"]
    lbs = [Lb(random.Random(seed * 100 + i), weights, obs["reservoir_size"]) for i in range(len(cfg["lbs"]))]
    mean_cpu = cfg["application"]["cpu"]["mean_us"]
    rate = cfg["load"] * sum(weights) / mean_cpu
    hop_lo, hop_hi = cfg["hop_delay_us"]["min"], cfg["hop_delay_us"]["max"]
    stats = {"done": 0, "fct": 0.0}
    ids = iter(range(10**12))

    def hop() -> float:
        return rng.uniform(hop_lo, hop_hi)

    def flow(lb: Lb, fid: int, work: float):
        t0 = env.now
        lb.sample_durations(t0, obs["fd_density"], obs["fd_min_us"])
        j = lb.pick_sed()
        lb.count[j] += 1
        lb.tracked[fid] = (t0, j)
        yield env.timeout(hop())
        server = servers[j]
        rejected = server.jobs > cfg["backlog"]
        if not rejected:
            server.jobs += 1
            yield from server.run_cpu(work)
            server.jobs -= 1
        yield env.timeout(hop())
        stats["done"] += 1
        stats["fct"] += env.now - t0 + (cfg["timeout_us"] if rejected else 0.0)
        yield env.timeout(hop())
        lb.count[j] -= 1
        del lb.tracked[fid]
        lb.add(lb.fct[j], (env.now, env.now - t0))

    def arrivals():
        for _ in range(flows):
            yield env.timeout(rng.expovariate(rate))
            env.process(flow(lbs[rng.randrange(len(lbs))], next(ids), rng.expovariate(1 / mean_cpu)))

    env.process(arrivals())
    t = time.perf_counter()
    env.run()
    return flows / (time.perf_counter() - t), stats["fct"] / stats["done"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    engine_flows, simpy_flows = (500_000, 30_000) if args.quick else (5_000_000, 200_000)

    cfg = load_lb_scenario("lb_large").engine_config(LOAD, seed=1)
    fps, eps, fct = bench_engine(cfg, engine_flows, args.repeats)
    sfps, sfct = simpy_model(cfg, simpy_flows)
    print(f"lb_large, SED on 6 LBs, load {LOAD} (2000 flows/s), observations on")
    print(
        f"  dcgym engine: {fps / 1e6:7.3f} M flows/s  {eps / 1e6:7.2f} M events/s  mean FCT {fct / 1e3:.2f} ms"
        f"  ({engine_flows:,} flows)"
    )
    print(
        f"  SimPy model:  {sfps / 1e6:7.4f} M flows/s                     mean FCT {sfct / 1e3:.2f} ms"
        f"  ({simpy_flows:,} flows)"
    )
    print(f"  ratio: {fps / sfps:,.0f}x")


if __name__ == "__main__":
    main()
