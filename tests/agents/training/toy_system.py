"""A toy learning system, as a test adds one: a module of its own and one line in the registry.

RLlib's PPO with a module of its own that says its own policy file (the ``PolicyFileAPI`` capability): no
``policy_file`` in its spec, so the exporter can only ask the module.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo.ppo_catalog import PPOCatalog
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from dcgym.agents.policy_format import MlpPolicy
from dcgym.agents.rl.apis import PolicyFileAPI, PolicyFileContext
from dcgym.agents.rl.baselines import PPOHyperparameters, build_ppo
from dcgym.agents.rl.default_modules import mlp_policy
from dcgym.agents.rl.spec import AlgorithmSpec, LearningSystem, TrainingRun


class ToyModule(DefaultPPOTorchRLModule, PolicyFileAPI):
    """RLlib's default PPO module, saying its own policy file."""

    exported = 0
    """How many policy files modules of this class made (the test checks the exporter asked them)."""

    def policy_file(self, context: PolicyFileContext) -> MlpPolicy:
        type(self).exported += 1
        return mlp_policy(context)


def build(experiment: TrainingRun, env_config: dict[str, Any]):
    """PPO with :class:`ToyModule` for every agent."""
    config = build_ppo(experiment, env_config)
    config.rl_module(rl_module_spec=RLModuleSpec(module_class=ToyModule, catalog_class=PPOCatalog))
    return config


TOY = LearningSystem(
    "toy",
    "a toy: RLlib's PPO with a module that says its own policy file",
    (AlgorithmSpec("toy_ppo", "PPO with ToyModule", build, PPOHyperparameters, envs=("rack_v0",)),),
)
