"""Scenario suites per family: a seeded generator of training scenarios and a fixed, held-out test suite.

``configs/suites/<family>.yaml`` declares both. ``train``: base scenarios and, per axis (a dotted scenario field),
the values a generated scenario draws from; :func:`generate` draws scenarios from it with a seed (the same seed,
the same scenarios). ``test``: fixed scenarios, each a base with overrides and loads, each with at least one axis
value (or field) the training distribution never takes, so no generated scenario is a test scenario; no packaged
scenario, and so no zoo policy's training scenario, is one either. ``evaluate.py --suite FAMILY:test`` runs the
test suite (``FAMILY:train:SEED:COUNT`` a generated one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dcgym.agents.evaluation.family import Options, family_of
from dcgym.agents.policies.sources import classify
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import apply_overrides, load_scenario, read_yaml, scenario_path

__all__ = ["SuiteScenario", "applies", "generate", "held_out", "read_suite", "suite_families", "suite_scenarios"]


PROBE_WORK = 1000
"""Units of work of the short run that tells whether a policy applies to a scenario."""


@dataclass(frozen=True)
class SuiteScenario:
    """One scenario of a suite: its name, base scenario, overrides and loads."""

    name: str
    base: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    loads: tuple[float, ...] = ()

    def load(self) -> Any:
        """The scenario object (the base with the overrides, named after the suite entry)."""
        scenario = load_scenario(self.base, dict(self.overrides))
        scenario._name = self.name  # results name the suite entry, not its base
        return scenario

    def write(self, folder: Path) -> Path:
        """Write the scenario file ``folder/NAME.yaml`` (the base's file with the overrides) and return its path: a
        path every run can load again, in a worker or a policy's environment, and that documents the results."""
        raw = read_yaml(scenario_path(self.base), self.base)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.yaml"
        path.write_text(yaml.safe_dump(apply_overrides(raw, self.overrides), sort_keys=False), encoding="utf-8")
        load_scenario(path)  # checked before any run
        return path


def suite_families() -> list[str]:
    """The families with a suite file."""
    root = resources.files("dcgym.configs") / "suites"
    return sorted(f.name.removesuffix(".yaml") for f in root.iterdir() if f.name.endswith(".yaml"))


def read_suite(family: str) -> dict[str, Any]:
    """The suite file of ``family`` (``train`` and ``test``); InvalidConfigError naming ``suite`` otherwise."""
    if family not in suite_families():
        raise InvalidConfigError("suite", family, "a family with a suite: " + ", ".join(suite_families()))
    return yaml.safe_load((resources.files("dcgym.configs") / "suites" / f"{family}.yaml").read_text("utf-8"))


def held_out(entry: SuiteScenario, train: Mapping[str, Any]) -> bool:
    """Whether ``entry`` lies outside the training distribution ``train``: a field or value it never draws."""
    axes = train["axes"]
    return any(key not in axes or value not in axes[key] for key, value in entry.overrides.items())


def generate(family: str, seed: int, count: int) -> list[SuiteScenario]:
    """``count`` training scenarios of ``family`` drawn with ``seed``: a base and one value per axis each, uniformly
    (the loads of the base with those values: its own, or on a colo scenario its mixes' indexes)."""
    train = read_suite(family)["train"]
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        base = train["bases"][rng.integers(len(train["bases"]))]
        overrides = {key: values[rng.integers(len(values))] for key, values in train["axes"].items()}
        loads = tuple(load_scenario(base, overrides).loads)  # a colo scenario's loads are its mixes' indexes
        out.append(SuiteScenario(f"{family}_train_{seed}_{k}", base, overrides, loads))
    return out


def suite_scenarios(spec: str) -> list[SuiteScenario]:
    """The scenarios of ``FAMILY:test`` or ``FAMILY:train:SEED:COUNT``; InvalidConfigError naming ``suite``."""
    allowed = "FAMILY:test or FAMILY:train:SEED:COUNT, FAMILY one of " + ", ".join(suite_families())
    parts = str(spec).split(":")
    if len(parts) == 2 and parts[1] == "test":
        return [
            SuiteScenario(e["name"], e["base"], e.get("overrides", {}), tuple(e["loads"]))
            for e in read_suite(parts[0])["test"]
        ]
    if len(parts) == 4 and parts[1] == "train" and parts[2].isdigit() and parts[3].isdigit() and int(parts[3]) > 0:
        return generate(parts[0], int(parts[2]), int(parts[3]))
    raise InvalidConfigError("suite", spec, allowed)


def applies(policy: str, scenario: str | Path, load: float) -> bool:
    """Whether ``policy`` runs on ``scenario`` (a name or path) at ``load``: a policy file or trained policy made
    for a fixed number of nodes, servers or agents runs only where the scenario has as many. One short run tells
    (the engine checks a policy file's shape when it starts)."""
    loaded = load_scenario(scenario)
    try:
        family_of(loaded.kind).jobs(loaded, scenario, [classify(policy)], [load], [1], PROBE_WORK, Options())[0].run()
    except (InvalidConfigError, ValueError):
        return False
    return True
