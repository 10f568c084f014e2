"""What a learning system declares about its algorithms: one :class:`AlgorithmSpec` each, in one :class:`LearningSystem`.

A learning system is a folder of ``dcgym.agents`` (``malcolm/``, ``auto/``, ...) whose ``system.py`` holds
one :class:`LearningSystem`; the registry (:mod:`dcgym.agents.algorithms`) is the list of them. A spec is
plain data, light to import: its builder is a ``module:function`` string (or the function), imported when an
experiment is built, since builders import Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from dcgym.agents.rl.envs import agent_ids
from dcgym.agents.rl.hyperparameters import Hyperparameters
from dcgym.envs.families import load_entry_point

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

__all__ = ["AlgorithmSpec", "Builder", "LearningSystem", "OneAgentForm", "TrainingRun"]


class TrainingRun(Protocol):
    """What a builder reads of an experiment (:class:`dcgym.agents.training.experiment.Experiment`)."""

    algorithm: str
    env: str
    env_config: dict[str, Any]  # the environment's keyword arguments, scenario included
    hyperparameters: dict[str, Any]
    seed: int
    resources: Any  # num_env_runners, num_envs_per_env_runner, num_learners, torch_threads


Builder = Callable[[TrainingRun, dict[str, Any]], "AlgorithmConfig"]
"""``build(experiment, env_config) -> AlgorithmConfig``: the RLlib config of a training run."""


@dataclass(frozen=True)
class OneAgentForm:
    """One agent of a multi-agent environment trained alone, the others held by the environment's rules."""

    agent: str
    """The agent trained (``srla``)."""
    env_id: str
    """The Gymnasium id of the environment with that agent alone acting (``dcgym/FlowSrla-v0``)."""


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm ``train.py`` can run: everything the registry, the trainer and the exporter ask of it."""

    name: str
    """The name an experiment gives (``algorithm: ppo``)."""
    summary: str
    """One line: what it is and where it comes from (``dcgym list algorithms``, ``train.py --help``)."""
    builder: Builder | str
    """The builder, or its ``module:function`` (imported when an experiment is built)."""
    hyperparameters: type[Hyperparameters] | None = None
    """The schema of its hyperparameters (defaults filled in, unknown keys refused); None: the builder checks them."""
    envs: tuple[str, ...] = ()
    """The environments it trains on; empty: every one."""
    one_agent_forms: Mapping[str, OneAgentForm] = field(default_factory=dict)
    """Environments where it trains one agent alone (AuTO's agents on flow_v0; SAC there, for sRLA's thresholds)."""
    policy_file: str | None = None
    """``module:function(context) -> Policy`` for its trained modules when they do not say it themselves
    (:class:`dcgym.agents.rl.apis.PolicyFileAPI`): RLlib's default PPO and SAC modules. None: the modules say it."""

    def build(self, experiment: TrainingRun, env_config: dict[str, Any]) -> AlgorithmConfig:
        """The RLlib ``AlgorithmConfig`` of ``experiment`` on the environment's arguments ``env_config``."""
        builder = load_entry_point(self.builder) if isinstance(self.builder, str) else self.builder
        return builder(experiment, env_config)

    def trained_agents(self, env: str, env_config: Mapping[str, Any]) -> list[str]:
        """The agents it trains on ``env``: the one of its one-agent form there, else every agent (in order)."""
        agents = agent_ids(env, env_config)
        form = self.one_agent_forms.get(env)
        return [a for a in agents if a == form.agent] if form is not None else agents


@dataclass(frozen=True)
class LearningSystem:
    """A learning system: a folder of ``dcgym.agents`` and the algorithms it declares."""

    name: str
    """Its folder under ``agents/`` (``malcolm``)."""
    summary: str
    """One line: the paper or library it implements."""
    algorithms: tuple[AlgorithmSpec, ...]
    """Its algorithms, each registered under its own name."""
