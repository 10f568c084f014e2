"""AuTO's lRLA policy network as an RLModule: per long flow, categorical choices (AuTO §4.2, §5.2.2).

One fully connected network maps the observation (flow_v0's lRLA
observation: n_l active and m_l finished long flows, 136 features with
AuTO's sizes) through ``hiddens`` ReLU layers (the paper's 10 layers of 300
by default; ``[64, 64]`` is a small option that trains in minutes on two
cores) to the logits of every choice: for a ``MultiDiscrete`` action space
(flow_v0's ``[K, C, P] x n_l``: level, rate cap and path of each long flow)
one categorical per entry, for a ``Discrete`` space one categorical. The
paper names no activation; ReLU. The action distribution is RLlib's
multi-categorical over those groups; the greedy action takes the argmax of
each group, which is what the exported policy file computes.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical, TorchMultiCategorical
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

from dcgym.agents.auto.policy_file import lrla_policy, one_module
from dcgym.agents.policy_format import MlpPolicy
from dcgym.agents.rl.apis import PolicyFileAPI, PolicyFileContext

__all__ = ["PAPER_HIDDENS", "PGRLModule", "group_sizes"]

PAPER_HIDDENS = [300] * 10
"""§5.2.2: "a fully connected NN with 10 hidden layer of 300 neurons"."""


def group_sizes(space: gym.Space) -> list[int]:
    """The number of choices of each categorical of ``space`` (Discrete: one group, MultiDiscrete: one per entry)."""
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n)]
    if isinstance(space, gym.spaces.MultiDiscrete) and len(space.nvec.shape) == 1:
        return [int(n) for n in space.nvec]
    raise ValueError(f"lRLA's policy needs a Discrete or one-axis MultiDiscrete action space, got {space}")


class PGRLModule(TorchRLModule, PolicyFileAPI):
    """lRLA's stochastic policy π(a | s): an MLP to the concatenated logits of the action's categoricals.

    ``model_config`` keys: ``hiddens`` (default :data:`PAPER_HIDDENS`).
    """

    def policy_file(self, context: PolicyFileContext) -> MlpPolicy:
        """lRLA's policy with a softmax per categorical (:mod:`dcgym.agents.auto.policy_file`)."""
        return lrla_policy(one_module(context))

    def setup(self) -> None:
        cfg = self.model_config or {}
        self.hiddens = list(cfg.get("hiddens", PAPER_HIDDENS))
        if not (isinstance(self.observation_space, gym.spaces.Box) and len(self.observation_space.shape) == 1):
            raise ValueError(f"PGRLModule needs a flat Box observation space, got {self.observation_space}")
        self.groups = group_sizes(self.action_space)
        layers: list[nn.Module] = []
        width = int(self.observation_space.shape[0])
        for h in self.hiddens:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, sum(self.groups)))
        self.policy = nn.Sequential(*layers)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.policy(batch[Columns.OBS].float())}

    def _dist_cls(self):
        if isinstance(self.action_space, gym.spaces.Discrete):
            return TorchCategorical
        return TorchMultiCategorical.get_partial_dist_cls(input_lens=list(self.groups))

    def get_inference_action_dist_cls(self):
        return self._dist_cls()

    def get_exploration_action_dist_cls(self):
        return self._dist_cls()

    def get_train_action_dist_cls(self):
        return self._dist_cls()

    def greedy(self, obs: torch.Tensor) -> torch.Tensor:
        """The argmax of each group's logits, shape (B, groups): the deterministic action the runtime takes."""
        logits = self.policy(obs.float())
        return torch.stack([g.argmax(dim=-1) for g in torch.split(logits, self.groups, dim=-1)], dim=-1)
