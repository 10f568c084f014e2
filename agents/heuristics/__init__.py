"""Heuristic dispatch policies from the papers, as baselines (DESIGN.md, "The three problem families").

The policies themselves run in the C++ engine; this package names them and
validates their parameters (see :mod:`dcgym.agents.heuristics.registry`).
"""

from dcgym.agents.heuristics.registry import (
    HEURISTICS,
    Heuristic,
    Policy,
    Rack,
    known_policy_names,
    parse_policy,
    policy_parameters,
)

__all__ = ["HEURISTICS", "Heuristic", "Policy", "Rack", "known_policy_names", "parse_policy", "policy_parameters"]
