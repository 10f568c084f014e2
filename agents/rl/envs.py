"""dcgym's environments for RLlib, named so that a fresh process finds them: no ``register_env`` call needed.

RLlib's env runners create an environment whose id is not in Tune's
registry with ``gymnasium.make(id, **env_config)``, and Gymnasium imports the
module of a ``module:id`` string before looking the id up. So every
versioned environment of :data:`dcgym.envs.families.FAMILIES` is registered
with Gymnasium here, as ``dcgym-rllib/<name>`` (``dcgym-rllib/rack-v0``),
and RLlib is given ``dcgym.agents.rl.envs:dcgym-rllib/rack-v0``
(:data:`RLLIB_ENV_IDS`): an algorithm built with it (and every checkpoint it
writes) restores with plain ``Algorithm.from_checkpoint(path)``.

:func:`make_env` is the one way every layer above builds a PettingZoo environment by its versioned name.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium
from gymnasium.envs.registration import registry

from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.families import env_module, known_envs

__all__ = [
    "GYMNASIUM_NAMESPACE",
    "LEGACY_RLLIB_ENV_IDS",
    "RLLIB_ENV_IDS",
    "agent_ids",
    "env_id",
    "gymnasium_id",
    "make_env",
    "make_rllib_env",
    "matrix_observations",
    "register_envs",
]

GYMNASIUM_NAMESPACE = "dcgym-rllib"
"""The Gymnasium namespace of the RLlib-wrapped environments (apart from the single-agent ``dcgym/`` ids)."""


def make_env(env: str, env_config: Mapping[str, Any]):
    """The PettingZoo ParallelEnv ``env`` (``rack_v0``, ``lb_v0``, ...) with ``env_config`` as its arguments.

    An environment whose constructor takes named arguments (no schema of its own) gets an unknown one
    refused here, with the argument named.
    """
    module = env_module(env)
    signature = inspect.signature(module.raw_env.__init__)
    if not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        known = [p for p in signature.parameters if p != "self"]
        for key in env_config:
            if key not in known:
                raise InvalidConfigError(
                    key,
                    env_config[key],
                    "one of the arguments " + ", ".join(known),
                    suggestion=did_you_mean(key, known),
                )
    return module.parallel_env(**env_config)


def agent_ids(env: str, env_config: Mapping[str, Any]) -> list[str]:
    """The environment's agents (``possible_agents``), in order; validates ``env_config`` on the way."""
    return list(make_env(env, env_config).possible_agents)


def matrix_observations(env: str, env_config: Mapping[str, Any]) -> bool:
    """Whether some agent of ``env`` observes an array of more than one axis (lb_v0: servers x features)."""
    probe = make_env(env, env_config)
    return any(len(probe.observation_space(a).shape or ()) > 1 for a in probe.possible_agents)


def make_rllib_env(name: str, **env_config: Any):
    """The PettingZoo ParallelEnv ``name`` with ``env_config``, wrapped as an RLlib MultiAgentEnv."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv  # Ray: only in processes that train

    return ParallelPettingZooEnv(make_env(name, env_config))


def gymnasium_id(name: str) -> str:
    """``rack_v0`` -> ``dcgym-rllib/rack-v0``."""
    base, _, version = name.rpartition("_v")
    return f"{GYMNASIUM_NAMESPACE}/{base}-v{version}"


def env_id(name: str) -> str:
    """The id RLlib is given for the versioned environment ``name``."""
    return f"{__name__}:{gymnasium_id(name)}"


RLLIB_ENV_IDS: dict[str, str] = {name: env_id(name) for name in known_envs()}
"""The id each environment has in RLlib: an import path, so no registration is needed."""

LEGACY_RLLIB_ENV_IDS: dict[str, str] = {"rack_v0": "dcgym_rack_v0", "lb_v0": "dcgym_lb_v0"}
"""The ids of checkpoints written before the import-path ids: :func:`register_envs` registers them."""


def register_envs() -> None:
    """Register the legacy ids with RLlib, so checkpoints that use them restore (new ones need nothing)."""
    from ray.tune.registry import register_env  # Ray: only to restore such a checkpoint

    for name, legacy in LEGACY_RLLIB_ENV_IDS.items():
        register_env(legacy, lambda config, name=name: make_rllib_env(name, **dict(config)))


for _name in known_envs():
    if gymnasium_id(_name) not in registry:
        gymnasium.register(
            gymnasium_id(_name),
            entry_point=functools.partial(make_rllib_env, _name),
            disable_env_checker=True,
            order_enforce=False,
        )
