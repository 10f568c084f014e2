"""Config builders shared by the colo tests.

The catalog helpers live in dcgym.envs.colo.catalog; this module adds the
tests' own configs: a bare multi-server queue for the
fidelity checks and its request-level twin on the rack kernel.
"""

from __future__ import annotations

import math

import numpy as np

from dcgym.envs.colo import catalog as cc

CATALOG = cc.load_catalog()
QUIET = {"latency": 0.0, "counters": 0.0}


def sim_config(services: list[dict], **kw) -> dict:
    """A config on the default platform with the catalog's simulation defaults."""
    return cc.sim_config(CATALOG, services, **kw)


def service(name: str, **kw) -> dict:
    return cc.service_config(CATALOG, name, **kw)


def bare_queue(servers: int, service_ms: float, cv2: float, rps: float) -> dict:
    """A service that is only a c-server FCFS queue: no hyperthreads (one thread per core), no memory
    stalls (zero miss rates), no context switches, `servers` threads on as many cores.

    Its mean service time is exactly service_ms with squared coefficient of variation cv2.
    """
    platform = cc.platform_config(CATALOG, logical_cores=servers, physical_cores=servers)
    svc = {
        "name": "queue",
        "qos_ms": 1.0,
        "service_ms": service_ms,
        "cv2": cv2,
        "ipc": 1.0,
        "mrc": {"floor": 0.0, "pow": 0.0, "alpha": 0.5},
        "ctx_overhead": 0.0,
        "threads": servers,
        "rps": rps,
        "cores": servers,
        "ways": platform["ways"],
    }
    return cc.sim_config(CATALOG, [svc], platform=platform, noise=QUIET)


def rack_service(cv2: float, mean_us: float = 1.0) -> dict:
    """The rack kernel's form of the colo model's service-time distribution (colo/queueing.hpp):
    deterministic, shifted exponential (cv2 <= 1, as a fine piecewise-linear CDF) or balanced H2."""
    if cv2 == 0:
        return {"dist": "det", "value_us": mean_us}
    if cv2 == 1:
        return {"dist": "exp", "mean_us": mean_us}
    if cv2 < 1:
        m = mean_us * math.sqrt(cv2)
        shift = mean_us - m
        # CDF points of shift + Exp(m), dense where the density is, out to 1 - e^-18.
        xs = np.concatenate([np.linspace(0, 4, 400), np.linspace(4.01, 18, 400)])
        cdf = [[shift + m * x, 1 - math.exp(-x)] for x in xs]
        cdf[0][1], cdf[-1][1] = 0.0, 1.0
        return {"dist": "empirical", "cdf": cdf}
    r = math.sqrt((cv2 - 1) / (cv2 + 1))
    p1 = (1 + r) / 2
    return {"dist": "hyperexp", "phases": [[p1, mean_us / (2 * p1)], [1 - p1, mean_us / (2 * (1 - p1))]]}


def rack_config(servers: int, cv2: float, rho: float, seed: int, warmup: int) -> dict:
    """One node of `servers` FCFS workers at utilization rho: the request-level reference."""
    return {
        "nodes": [{"count": 1, "workers": servers, "speed": 1.0, "queue_capacity": -1}],
        "service": rack_service(cv2),
        "load": rho,
        "seed": seed,
        "warmup_tasks": warmup,
        "intra_node": {"discipline": "fcfs"},
        "dispatch": {"policy": "random"},
        "load_info": {"model": "fresh"},
    }
