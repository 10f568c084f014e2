"""The multi-LB family's baselines: the balancer policies the lb engine runs (App. C.3 of Yao et al., CIKM 2022).

The policies are engine features (``cpp_core/include/dcgym/lb/lb_sim.hpp``), named in the scenario
schema (:data:`dcgym.envs.lb.scenario.LB_POLICIES`); ``weights`` is lb_v0's action, not a baseline.
"""

from __future__ import annotations

from dcgym.envs.lb.scenario import LB_POLICIES

__all__ = ["BASELINES"]

BASELINES: dict[str, str] = {name: summary for name, summary in LB_POLICIES.items() if name != "weights"}
"""ECMP, WCMP, LSQ, SED and the Oracle."""
