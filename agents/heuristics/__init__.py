"""The papers' heuristics, as baselines, one module per family.

| family | module | what the heuristics are |
|---|---|---|
| rack | :mod:`dcgym.agents.heuristics.rack` | the rack engine's dispatch policies (RAND, RR, power-of-d, JSQ, JBT, ...) |
| lb | :mod:`dcgym.agents.heuristics.lb` | the multi-LB engine's balancer policies (ECMP, WCMP, LSQ, SED, Oracle) |
| colo | :mod:`dcgym.agents.heuristics.colo` | schedulers of one server (Unmanaged, equal split, PARTIES, CLITE, Oracle) |
| flow | :mod:`dcgym.agents.heuristics.flow` | the flow engine's scheduling policies (fair, QSJF, QLAS, PIAS, LAS, SRPT) and PIAS's threshold optimizer |

Each module has ``BASELINES``: the policy specs the family's leaderboard runs, by name, with a one-line summary
(:func:`baselines`); a family with more, the rack, lists every one in ``POLICIES`` (:func:`policies`, what
``dcgym list policies`` shows).
"""

from __future__ import annotations

import importlib

from dcgym.envs.families import family

__all__ = ["FAMILY_MODULES", "baselines", "policies"]

FAMILY_MODULES: dict[str, str] = {
    "rack": "dcgym.agents.heuristics.rack",
    "lb": "dcgym.agents.heuristics.lb",
    "colo": "dcgym.agents.heuristics.colo",
    "flow": "dcgym.agents.heuristics.flow",
}
"""The heuristics module of each family."""


def baselines(kind: str) -> dict[str, str]:
    """The built-in baselines of family ``kind``: policy spec -> one-line summary."""
    return dict(importlib.import_module(FAMILY_MODULES[family(kind).name]).BASELINES)


def policies(kind: str) -> dict[str, str]:
    """Every heuristic family ``kind`` runs by name (its ``POLICIES``; the baselines where those are all):
    policy name -> one-line summary."""
    module = importlib.import_module(FAMILY_MODULES[family(kind).name])
    return dict(getattr(module, "POLICIES", module.BASELINES))
