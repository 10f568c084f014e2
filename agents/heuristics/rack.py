"""The rack family's baselines: the dispatch policies the rack engine runs (:mod:`dcgym.envs.rack.dispatch`).

The policies are engine features (C++, ``cpp_core/include/dcgym/rack/dispatch.hpp``), so their names and
parameters are part of the scenario schema; this module presents them as the family's heuristics.
"""

from __future__ import annotations

from dcgym.envs.rack.dispatch import (
    HEURISTICS,
    Heuristic,
    Policy,
    Rack,
    known_policy_names,
    parse_policy,
    policy_parameters,
)

__all__ = [
    "BASELINES",
    "HEURISTICS",
    "POLICIES",
    "Heuristic",
    "Policy",
    "Rack",
    "known_policy_names",
    "parse_policy",
    "policy_parameters",
]

BASELINES: dict[str, str] = {
    "random": HEURISTICS["random"].summary,
    "round_robin": HEURISTICS["round_robin"].summary,
    "po2": "power-of-2 choices: " + HEURISTICS["po_d"].summary,
    "jsq": HEURISTICS["jsq"].summary,
    "jbt": HEURISTICS["jbt"].summary,
    "sed": HEURISTICS["sed"].summary,
    "water_fill": HEURISTICS["water_fill"].summary,
}
"""The heuristics a rack leaderboard runs on every scenario it can (water_fill on node-entry racks only, the rest at
every entry point)."""

POLICIES: dict[str, str] = {
    name: ("po2, po4, ... (poN) for d = N; " if name == "po_d" else "")
    + h.summary
    + (f"; parameters {', '.join(h.params.model_fields)}" if h.params.model_fields else "")
    + ("" if len(h.entries) == 3 else f"; entry points {', '.join(h.entries)} only")
    for name, h in HEURISTICS.items()
}
"""Every dispatch policy the rack engine runs (``dcgym list policies``), its parameters and where it can run."""
