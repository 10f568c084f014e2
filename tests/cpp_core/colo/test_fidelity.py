"""The colo model's latency against a request-level simulation of the same queue.

The reference is the rack kernel (dcgym.cpp_core.RackSim): one node of c
FCFS workers, Poisson arrivals, the very service-time distribution the colo
model assumes (colo/queueing.hpp: deterministic, shifted exponential or H2 by
cv2). The colo model sees the same queue as a service with c threads on c
cores, no hyperthreads, no memory stalls (colo_helpers.bare_queue), and
reports its p99 analytically.

Run lengths: each point runs SEEDS independent seeds of TASKS[rho] arrivals
(10^6 below rho = 0.9, 8 x 10^6 at 0.9, where a queue's tail decorrelates
slowly) after WARMUP discarded ones (the empty start relaxes within ~400
service times at rho = 0.9, Abate & Whitt 1987), and the reference p99 is
their mean. Each
check asserts the standard error of that mean is below 1.5% of it, so the 10%
tolerance on the model is not eaten by sampling noise; the histogram's bucket
error (0.2%) is negligible beside it.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import colo_helpers as h
import numpy as np
import pytest

from dcgym.cpp_core import ColoSim, Distribution, RackSim

SEEDS = (1, 2, 3, 4)
TASKS = {0.3: 1_000_000, 0.6: 1_000_000, 0.9: 8_000_000}
WARMUP = 100_000
TOLERANCE = 0.10  # the bound, utilization <= 0.9
MAX_REL_SE = 0.015
SERVERS = (1, 2, 6, 16)
CV2 = (0.0, 0.25, 1.0, 4.0)
RHOS = (0.3, 0.6, 0.9)
P99 = ColoSim.counter_names.index("P99_ms")


def reference_p99(servers: int, cv2: float, rho: float) -> tuple[float, float]:
    """Mean and standard error over seeds of the rack kernel's p99, in mean service times."""

    def one(seed: int) -> float:
        sim = RackSim(h.rack_config(servers, cv2, rho, seed, WARMUP))
        sim.run_tasks(TASKS[rho] + WARMUP)
        return sim.results()["latency_us"]["p99"]

    with ThreadPoolExecutor(2) as pool:
        values = np.array(list(pool.map(one, SEEDS)))
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))


def model_p99(servers: int, cv2: float, rho: float) -> tuple[float, float]:
    """The colo model's stationary p99 and its per-tick p99 after 2 s, in mean service times (1 ms)."""
    service_ms = 1.0
    rps = rho * servers / (service_ms * 1e-3)
    sim = ColoSim(h.bare_queue(servers, service_ms, cv2, rps))
    steady = sim.steady_state([servers], [sim.ways[0]], [rps])[0] * 1e3 / service_ms
    sim.step(20)
    return steady, sim.counters[0, P99] / service_ms


@pytest.mark.parametrize("cv2", CV2)
def test_reference_distribution_has_the_models_moments(cv2):
    d = Distribution(h.rack_service(cv2))
    assert d.mean == pytest.approx(1.0, rel=2e-3)
    assert d.second_moment - d.mean**2 == pytest.approx(cv2, abs=5e-3)


@pytest.mark.slow
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("cv2", CV2)
@pytest.mark.parametrize("servers", SERVERS)
def test_p99_within_10_percent_of_request_level_simulation(servers, cv2, rho):
    steady, tick = model_p99(servers, cv2, rho)
    mean, se = reference_p99(servers, cv2, rho)
    assert se <= MAX_REL_SE * mean, f"reference too noisy: SE {se:.3g} of {mean:.3g}"
    assert tick == pytest.approx(steady, rel=1e-12), "the tick's p99 below capacity is the stationary one"
    assert abs(steady / mean - 1) <= TOLERANCE, (
        f"c={servers} cv2={cv2} rho={rho}: model {steady:.4g} vs request-level {mean:.4g} "
        f"({100 * (steady / mean - 1):+.1f}%)"
    )


if __name__ == "__main__":
    # The table of docs/colo.md: python tests/cpp_core/colo/test_fidelity.py
    print("| c | cv2 | rho | request-level p99 (+- SE) | model p99 | error |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for servers in SERVERS:
        for cv2 in CV2:
            for rho in RHOS:
                steady, _ = model_p99(servers, cv2, rho)
                mean, se = reference_p99(servers, cv2, rho)
                err = steady / mean - 1
                worst = max(worst, abs(err))
                print(
                    f"| {servers} | {cv2:g} | {rho:g} | {mean:.3f} +- {se:.3f} | {steady:.3f} | {100 * err:+.1f}% |",
                    flush=True,
                )
    print(f"\nlargest error: {100 * worst:.1f}% (p99 in mean service times)")
