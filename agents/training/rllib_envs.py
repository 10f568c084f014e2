"""dcgym's environments for RLlib, named so that a fresh process finds them: no ``register_env`` call needed.

RLlib's env runners create an environment whose id is not in Tune's
registry with ``gymnasium.make(id, **env_config)``, and Gymnasium imports the
module of a ``module:id`` string before looking the id up. So every
versioned environment of :data:`dcgym.envs.families.FAMILIES` is registered
with Gymnasium here, as ``dcgym-rllib/<name>`` (``dcgym-rllib/rack-v0``),
and RLlib is given ``dcgym.agents.training.rllib_envs:dcgym-rllib/rack-v0``:
an algorithm built with it (and every checkpoint it writes) restores with
plain ``Algorithm.from_checkpoint(path)``.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
from gymnasium.envs.registration import registry

from dcgym.envs.families import known_envs

__all__ = ["GYMNASIUM_NAMESPACE", "env_id", "gymnasium_id", "make_rllib_env"]

GYMNASIUM_NAMESPACE = "dcgym-rllib"
"""The Gymnasium namespace of the RLlib-wrapped environments (apart from the single-agent ``dcgym/`` ids)."""


def make_rllib_env(name: str, **env_config: Any):
    """The PettingZoo ParallelEnv ``name`` with ``env_config``, wrapped as an RLlib MultiAgentEnv."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    from dcgym.agents.training.algorithms import make_env

    return ParallelPettingZooEnv(make_env(name, env_config))


def gymnasium_id(name: str) -> str:
    """``rack_v0`` -> ``dcgym-rllib/rack-v0``."""
    base, _, version = name.rpartition("_v")
    return f"{GYMNASIUM_NAMESPACE}/{base}-v{version}"


def env_id(name: str) -> str:
    """The id RLlib is given for the versioned environment ``name``."""
    return f"{__name__}:{gymnasium_id(name)}"


for _name in known_envs():
    if gymnasium_id(_name) not in registry:
        gymnasium.register(
            gymnasium_id(_name),
            entry_point=functools.partial(make_rllib_env, _name),
            disable_env_checker=True,
            order_enforce=False,
        )
