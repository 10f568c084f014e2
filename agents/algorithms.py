"""The algorithms ``train.py`` can run: the list of learning systems, each declaring its algorithms once.

Every learning system is a folder of ``dcgym.agents`` whose ``system.py`` holds one
:class:`~dcgym.agents.rl.spec.LearningSystem`: its algorithms, each an
:class:`~dcgym.agents.rl.spec.AlgorithmSpec` with its builder, hyperparameter schema, the environments it
trains on, its one-agent forms and how its trained modules become a policy file. :data:`LEARNING_SYSTEMS` is
their list; adding a learning system is its folder and one line here (docs/architecture.md). Importing this
module imports no learner: builders are imported when an experiment is built.

    spec = algorithm("ppo")
    config = spec.build(experiment, experiment.env_config)    # an RLlib AlgorithmConfig
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dcgym.agents.auto.system import AUTO
from dcgym.agents.malcolm.system import MALCOLM
from dcgym.agents.marl_lb.system import MARL_LB
from dcgym.agents.osml.system import OSML
from dcgym.agents.rl.baselines import BASELINES
from dcgym.agents.rl.hyperparameters import Hyperparameters
from dcgym.agents.rl.spec import AlgorithmSpec, LearningSystem, TrainingRun
from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.validation import validate

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

__all__ = [
    "LEARNING_SYSTEMS",
    "algorithm",
    "algorithms",
    "build_config",
    "check_algorithm",
    "check_env",
    "resolve_hyperparameters",
    "trained_agents",
]

LEARNING_SYSTEMS: list[LearningSystem] = [BASELINES, MALCOLM, AUTO, OSML, MARL_LB]
"""Every learning system, in the order ``dcgym list algorithms`` shows them."""


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every algorithm by name, in the order of :data:`LEARNING_SYSTEMS`."""
    return {spec.name: spec for system in LEARNING_SYSTEMS for spec in system.algorithms}


def algorithm(name: str) -> AlgorithmSpec:
    """The spec of algorithm ``name``; InvalidConfigError (with a suggestion) if there is none."""
    known = algorithms()
    if name not in known:
        raise InvalidConfigError("", name, "one of " + ", ".join(known), suggestion=did_you_mean(name, known))
    return known[name]


def check_algorithm(name: str) -> str:
    """``name`` if it is registered; InvalidConfigError (with a suggestion) otherwise."""
    return algorithm(name).name


def check_env(name: str, env: str) -> None:
    """Raise InvalidConfigError naming ``env`` if algorithm ``name`` does not train on it."""
    envs = algorithm(name).envs
    if envs and env not in envs:
        raise InvalidConfigError("env", env, f"{' or '.join(envs)} (where {name} trains)")


def hyperparameter_schema(name: str) -> type[Hyperparameters] | None:
    """The hyperparameter schema of algorithm ``name``, or None (its builder checks them)."""
    return algorithm(name).hyperparameters


def resolve_hyperparameters(name: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The hyperparameters with every default filled in (for schemas); raises InvalidConfigError naming the key."""
    schema = hyperparameter_schema(name)
    if schema is None:
        return dict(raw)
    return validate(schema, dict(raw)).model_dump(mode="json")


def trained_agents(name: str, env: str, env_config: Mapping[str, Any]) -> list[str]:
    """The agents algorithm ``name`` trains on ``env`` (all of them unless it trains one alone there)."""
    return algorithm(name).trained_agents(env, env_config)


def build_config(experiment: TrainingRun, env_config: dict[str, Any] | None = None) -> AlgorithmConfig:
    """The RLlib ``AlgorithmConfig`` of ``experiment`` (its algorithm's builder)."""
    config = experiment.env_config if env_config is None else env_config
    return algorithm(experiment.algorithm).build(experiment, config)
