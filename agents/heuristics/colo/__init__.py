"""The colo family's baselines: schedulers that partition one server among latency-critical services.

A scheduler is an agent acting on :class:`dcgym.envs.colo.server.ColoServer`
every ``interval_s`` seconds: it reads the counters (latency, CPU
utilization, ...) and sets allocations. :func:`make_scheduler` builds one
from a spec (``parties``, ``parties:variant=code``, ``{policy: clite}``);
``dcgym.agents.evaluation.colo`` drives one through a run. OSML's own scheduler (``osml``,
:mod:`dcgym.agents.osml.scheduler`, with trained models) is a :class:`Scheduler` too; the colo policies
(:func:`dcgym.agents.policies.colo.make_scheduler`) add it to these.

| name | what | source |
|---|---|---|
| ``unmanaged`` | every running service on every core and way (one share group) | OSML §6.2 |
| ``equal`` | an equal split of cores and ways | PARTIES §4 (its start) |
| ``parties`` | one unit of one resource at a time by slack; ``variant: paper`` or ``code`` | PARTIES Alg. 1; sc2682cornell/PARTIES |
| ``clite`` | Bayesian optimisation of the partition | CLITE §4 |
| ``oracle`` | the cheapest allocation meeting every QoS target (exhaustive) | OSML §6.2, PARTIES §5 |

Modules: ``base`` (the Scheduler class, Unmanaged, Equal), ``parties``, ``clite``, ``oracle``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dcgym.agents.heuristics.colo.base import Equal, Scheduler, Unmanaged, equal_split
from dcgym.envs.colo.scenario import SCHEDULERS, SchedulerSpec, parse_scheduler
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import load_entry_point

__all__ = [
    "BASELINES",
    "Equal",
    "Scheduler",
    "Unmanaged",
    "equal_split",
    "make_scheduler",
    "scheduler_class",
    "scheduler_names",
]

_CLASSES: dict[str, str] = {
    "unmanaged": "dcgym.agents.heuristics.colo.base:Unmanaged",
    "equal": "dcgym.agents.heuristics.colo.base:Equal",
    "parties": "dcgym.agents.heuristics.colo.parties:Parties",
    "clite": "dcgym.agents.heuristics.colo.clite:Clite",
    "oracle": "dcgym.agents.heuristics.colo.oracle:Oracle",
}
"""Each heuristic scheduler's class, imported when first used (CLITE imports scikit-learn)."""

BASELINES: dict[str, str] = {name: SCHEDULERS[name] for name in _CLASSES}
"""The built-in schedulers a colo leaderboard runs (OSML needs trained models: its rows come from the zoo)."""


def scheduler_names() -> list[str]:
    """Names :func:`make_scheduler` builds."""
    return list(_CLASSES)


def scheduler_class(name: str) -> type[Scheduler]:
    """The class of scheduler ``name`` (one of :func:`scheduler_names`)."""
    return load_entry_point(_CLASSES[name])


def make_scheduler(
    spec: str | Mapping[str, Any] | SchedulerSpec, others: Mapping[str, type[Scheduler]] | None = None
) -> Scheduler:
    """A scheduler from a spec: ``parties``, ``parties:variant=code``, ``{policy: clite, samples: 50}``; ``others``
    adds schedulers by name beside the heuristics (a learned one, such as OSML's).

    Raises InvalidConfigError naming ``policy`` (an unknown or unimplemented one) or the parameter.
    """
    parsed = parse_scheduler(spec)
    others = dict(others or {})
    known = [*_CLASSES, *others]
    if parsed.policy not in known:
        raise InvalidConfigError("policy", parsed.policy, "a scheduler implemented so far: " + ", ".join(known))
    cls = others[parsed.policy] if parsed.policy in others else scheduler_class(parsed.policy)
    params = parsed.params
    unknown = [k for k in params if k not in cls.PARAMS]
    if unknown:
        allowed = f"a parameter of {parsed.policy}: " + ", ".join(cls.PARAMS)
        raise InvalidConfigError(unknown[0], params[unknown[0]], allowed)
    return cls(**params)
