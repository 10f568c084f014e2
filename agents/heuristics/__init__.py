"""Heuristic dispatch policies from the papers, as baselines (DESIGN.md, "The three problem families").

The policies themselves run in the C++ engine; this package names them and
validates their parameters (see :mod:`dcgym.agents.heuristics.registry`).
"""

from dcgym.agents.heuristics.registry import HEURISTICS, Heuristic, Policy, known_policy_names, parse_policy

__all__ = ["HEURISTICS", "Heuristic", "Policy", "known_policy_names", "parse_policy"]
