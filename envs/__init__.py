"""dcgym's environments, scenario files and errors, one folder per family (``envs/rack``, ``envs/lb``).

The versioned PettingZoo environments are modules, imported on first use::

    from dcgym.envs import rack_v0, lb_v0
    env = rack_v0.parallel_env(scenario="malcolm_homog_exp")

Importing this package registers every environment with Gymnasium
(``gymnasium.make("dcgym/RackCentral-v0")``) and PettingZoo
(``pettingzoo.make("parallel", "dcgym/rack_v0")``); see
:mod:`dcgym.envs.registration`. :mod:`dcgym.envs.families` lists the
families and their environments.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from dcgym.envs import registration as _registration  # noqa: F401  (registers the ids)
from dcgym.envs.families import known_envs

__all__ = sorted(known_envs())


def __getattr__(name: str) -> ModuleType:
    envs = known_envs()
    if name in envs:
        return importlib.import_module(envs[name])
    raise AttributeError(f"module 'dcgym.envs' has no attribute {name!r}")
