"""Malcolm's algorithm as the registry sees it (:mod:`dcgym.agents.algorithms`)."""

from __future__ import annotations

from dcgym.agents.rl.spec import AlgorithmSpec, LearningSystem

__all__ = ["MALCOLM"]

MALCOLM = LearningSystem(
    "malcolm",
    "Malcolm (POMACS 2022): decentralized linear actor-critic with consensus, one agent per rack node",
    (
        AlgorithmSpec(
            "malcolm",
            "Malcolm's actor-critic, one module per node (its hyperparameters: MalcolmConfig.training's fields)",
            "dcgym.agents.malcolm.malcolm:build",
            envs=("rack_v0",),
        ),
    ),
)
