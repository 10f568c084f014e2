"""The families of dcgym's environment layer, as data: one entry per family.

A family is one problem with its own engine model, scenario files
(``configs/scenarios/<family>/``), schema and environments
(``envs/<family>/``). Shared code looks a family up here and never tests a
family's name: adding a family adds its folders and one entry below.
Entry points are lazy ``module:attribute`` strings, so importing this module
imports no family.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from dcgym.envs.error import InvalidConfigError, did_you_mean

__all__ = ["FAMILIES", "Family", "env_family", "env_module", "family", "known_envs", "load_entry_point"]


@dataclass(frozen=True)
class Family:
    """One family: its scenario class, its versioned PettingZoo environments, the kinds it also answers to."""

    name: str
    summary: str
    scenario: str  # "module:Class" of the scenario schema (kind: <name>)
    envs: dict[str, str] = field(default_factory=dict)  # versioned env name -> module (env, parallel_env, raw_env)
    legacy_kinds: tuple[str, ...] = ()  # earlier spellings of ``kind`` still accepted in scenario files
    title: str = ""  # how messages name the family's scenarios ("a multi-LB scenario"); the name if empty

    def scenario_error(self, given: Any, known: list[str]) -> InvalidConfigError:
        """The error for a scenario of another family where one of this family is needed (naming ``scenario``)."""
        title = self.title or self.name
        return InvalidConfigError(
            "scenario", str(given), f"a {title} scenario (kind {self.name}): " + ", ".join(known) + ", or a file path"
        )


FAMILIES: dict[str, Family] = {
    "rack": Family(
        "rack",
        "rack-scale load balancing: nodes with worker cores, dispatchers at a switch, balancers or the nodes "
        "themselves, migration and stealing (Malcolm, RackSched)",
        "dcgym.envs.rack.scenario:RackScenario",
        {"rack_v0": "dcgym.envs.rack.rack_v0"},
    ),
    "lb": Family(
        "lb",
        "multi-LB network load balancing: several load balancers over servers whose flows alternate CPU and IO "
        "stages (Yao et al., multi-agent RL for network load balancing)",
        "dcgym.envs.lb.scenario:LbScenario",
        {"lb_v0": "dcgym.envs.lb.lb_v0", "lb_central_v0": "dcgym.envs.lb.lb_central_v0"},
        legacy_kinds=("multistage",),
        title="multi-LB",
    ),
    "colo": Family(
        "colo",
        "resource partitioning on one server: latency-critical services sharing cores, LLC ways and memory "
        "bandwidth under a scheduler (OSML, PARTIES, CLITE)",
        "dcgym.envs.colo.scenario:ColoScenario",
        {"colo_v0": "dcgym.envs.colo.colo_v0"},
    ),
    "flow": Family(
        "flow",
        "datacenter flow scheduling: flows share links by strict priority and max-min fairness, MLFQ thresholds "
        "and per-flow priority, rate cap and path (PIAS, AuTO)",
        "dcgym.envs.flow.scenario:FlowScenario",
        {"flow_v0": "dcgym.envs.flow.flow_v0"},
    ),
}
"""Every family, by name (the ``kind`` of its scenario files)."""


def family(kind: str) -> Family:
    """The family of a scenario ``kind`` (or a legacy spelling); InvalidConfigError naming ``kind`` otherwise."""
    if kind in FAMILIES:
        return FAMILIES[kind]
    for f in FAMILIES.values():
        if kind in f.legacy_kinds:
            return f
    raise InvalidConfigError("kind", kind, "one of " + ", ".join(FAMILIES), suggestion=did_you_mean(kind, FAMILIES))


def load_entry_point(spec: str) -> Any:
    """The object a ``module:attribute`` string names."""
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def env_family(env: Any) -> str | None:
    """The name of the family whose versioned environments include ``env`` (None for any other value)."""
    return next((f.name for f in FAMILIES.values() if env in f.envs), None) if isinstance(env, str) else None


def known_envs() -> dict[str, str]:
    """Every versioned environment of every family: name -> module."""
    return {name: module for f in FAMILIES.values() for name, module in f.envs.items()}


def env_module(name: str) -> ModuleType:
    """The module of a versioned environment (``rack_v0``); InvalidConfigError naming ``env`` otherwise."""
    envs = known_envs()
    if name not in envs:
        raise InvalidConfigError("env", name, "one of " + ", ".join(envs), suggestion=did_you_mean(name, envs))
    return importlib.import_module(envs[name])
