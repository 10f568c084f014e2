"""OSML's Model-C as the registry sees it (:mod:`dcgym.agents.algorithms`); Models A and B are trained apart
(:mod:`dcgym.agents.osml.supervised`, docs/osml.md)."""

from __future__ import annotations

from dcgym.agents.osml.model_c import ModelCHyperparameters
from dcgym.agents.rl.spec import AlgorithmSpec, LearningSystem

__all__ = ["OSML", "OSML_DQN"]

OSML_DQN = AlgorithmSpec(
    "osml_dqn",
    "OSML's Model-C: RLlib's DQN with OSML's network, loss and RMSProp, one Model-C shared by the services",
    "dcgym.agents.osml.model_c_rllib:build",
    ModelCHyperparameters,
    envs=("colo_v0",),
)
OSML = LearningSystem(
    "osml", "OSML (FAST 2023): Models A, B and C for resource partitioning on one server", (OSML_DQN,)
)
