"""Malcolm's ``fill`` head in numpy: water-filling tables adjusted by linear gains (docs/policy_format.md, kind 4).

The C++ runtime (``cpp_core/include/dcgym/runtime/fill.hpp``) is the reference; this module computes the same
tables in float64 for tests and for searching the gains, and builds the file whose gains are 0 — the engine's
``water_fill`` heuristic — for a rack scenario (:func:`water_fill_policy`). Node i, seeing levels u (N, in mean
service times) and the rack's arrivals per heartbeat a, has features
``psi = [1, min(rho, 2), tanh(mean u), tanh(u_i)]`` with ``rho = a / (sum c x heartbeat_services)``, and its gains
W_i (2N + 3 rows) set the fill volume ``horizon a exp(<W_i[0], psi>)``, the mix ``mix + <W_i[1], psi>``, the steal
margin ``<W_i[2], psi>``, capacity gains ``exp(<W_i[3 + j], psi>)`` and level offsets ``<W_i[3 + N + j], psi>``
(exponents clipped to ±8, the mix to [0, 1]).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dcgym.agents.policy_format import FILL_FEATURES, FillPolicy

__all__ = ["MAX_EXPONENT", "features", "fill_tables", "water_fill_policy", "water_fill_table"]

MAX_EXPONENT = 8.0
"""The log gains are clipped to ±8."""
_MAX_UTILISATION = 2.0


def water_fill_table(level: np.ndarray, capacity: np.ndarray, volume: float, mix: float) -> np.ndarray:
    """The water-filling table (``runtime/water_fill.hpp``'s ``WaterFillTable`` over every node), in the same
    order of operations: p_j = (1 - mix) c_j (L - u_j)^+ / sum + mix c_j / sum c, L absorbing ``volume``."""
    level, capacity = np.asarray(level, np.float64), np.asarray(capacity, np.float64)
    order = sorted(range(len(level)), key=lambda j: (level[j], j))
    c_sum = cu_sum = fill = 0.0
    for k, j in enumerate(order):
        c_sum += capacity[j]
        cu_sum += capacity[j] * level[j]
        fill = (volume + cu_sum) / c_sum
        if k + 1 == len(order) or fill <= level[order[k + 1]]:
            break
    total = 0.0
    for c in capacity:
        total += c
    headroom = np.maximum(fill - level, 0.0)
    headroom_sum = 0.0
    for c, h in zip(capacity, headroom, strict=True):
        headroom_sum += c * h
    if not headroom_sum > 0:  # the volume lost in the rounding of huge levels
        out = mix * capacity / total
        out[order[0]] += 1 - mix
        return out
    return np.array(
        [(1 - mix) * c * h / headroom_sum + mix * c / total for c, h in zip(capacity, headroom, strict=True)]
    )


def features(policy: FillPolicy, node: int, levels: np.ndarray, arrivals: float) -> np.ndarray:
    """psi of ``node`` (:data:`~dcgym.agents.policy_format.FILL_FEATURES` entries)."""
    levels = np.asarray(levels, np.float64)
    total = 0.0
    for c in np.asarray(policy.capacity, np.float32).astype(np.float64):
        total += c
    rho = arrivals / (total * float(np.float32(policy.heartbeat_services)))
    mean = 0.0
    for u in levels:
        mean += u
    mean /= len(levels)
    return np.array([1.0, min(max(rho, 0.0), _MAX_UTILISATION), np.tanh(mean), np.tanh(levels[node])])


def fill_tables(policy: FillPolicy, node: int, levels: np.ndarray, arrivals: float) -> tuple[np.ndarray, np.ndarray]:
    """Node ``node``'s (migration, stealing) tables for the levels it believes and the rack's arrivals per
    heartbeat (> 0), as the C++ runtime computes them (float32 parameters, float64 arithmetic)."""
    n = policy.num_agents
    levels = np.asarray(levels, np.float64)
    psi = features(policy, node, levels, arrivals)
    w = np.asarray(policy.gains, np.float32)[node].astype(np.float64)  # (2N + 3, FILL_FEATURES)
    z = [sum(w[row, k] * psi[k] for k in range(FILL_FEATURES)) for row in range(2 * n + 3)]
    gain = [np.exp(min(max(v, -MAX_EXPONENT), MAX_EXPONENT)) for v in z]
    volume = max(float(np.float32(policy.horizon)) * arrivals * gain[0], 1e-12)
    mix = min(max(float(np.float32(policy.mix)) + z[1], 0.0), 1.0)
    capacity = np.asarray(policy.capacity, np.float32).astype(np.float64) * np.array(gain[3 : 3 + n])
    level = levels + np.array(z[3 + n :])
    migration = water_fill_table(level, capacity, volume, mix)
    victim = int(np.argmax(level))
    if not (policy.steal and level[victim] > level[node] + z[2]):
        victim = node
    return migration, np.eye(n)[victim]


def water_fill_policy(
    scenario: Any,
    *,
    horizon: float = 2.0,
    mix: float = 0.1,
    steal: bool = False,
    per_task: bool = False,
    metric: str = "expected_wait",
    heartbeat_us: float = 100.0,
    settings: dict[str, str] | None = None,
) -> FillPolicy:
    """The ``fill`` policy whose gains are 0 for a rack ``scenario``: the engine's ``water_fill`` heuristic with
    ``horizon``, ``mix``, ``steal``, ``per_task`` and ``metric`` (its defaults), capacities workers x speed of every
    node in node order."""
    config = scenario.engine_config(scenario.loads[0], 1)
    capacity = [g["workers"] * g.get("speed", 1.0) for g in config["nodes"] for _ in range(g.get("count", 1))]
    mean = _mean_service_us(config)
    n = len(capacity)
    return FillPolicy(
        level_scale=1.0 / mean,
        heartbeat_services=heartbeat_us / mean,
        horizon=horizon,
        mix=mix,
        steal=steal,
        per_task=per_task,
        capacity=np.asarray(capacity, np.float64),
        gains=np.zeros((n, 2 * n + 3, FILL_FEATURES)),
        settings={"env": "rack_v0", "heartbeat_us": f"{heartbeat_us:g}", "load_metric": metric} | (settings or {}),
    )


def _mean_service_us(config: dict[str, Any]) -> float:
    """The mean task size (us) the engine's levels divide by (``RackConfig::MeanSize``: types weighted by share)."""
    from dcgym.cpp_core import Distribution

    types = config.get("types") or []
    if not types:
        return Distribution(config["service"]).mean
    total = sum(t["share"] for t in types)
    return sum(t["share"] / total * Distribution(t["service"]).mean for t in types)
