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

``network: rowwise`` replaces the flat network by one applied to each listed
long flow (:mod:`.rowwise`): its size does not grow with n_l.
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
from dcgym.agents.auto.rowwise import RowwiseNetwork
from dcgym.agents.policy_format import MlpPolicy
from dcgym.agents.rl.apis import PolicyFileAPI, PolicyFileContext

__all__ = ["NETWORKS", "PAPER_HIDDENS", "PGRLModule", "group_sizes"]

PAPER_HIDDENS = [300] * 10
"""§5.2.2: "a fully connected NN with 10 hidden layer of 300 neurons"."""
NETWORKS = ("paper", "rowwise")
"""paper: one flat network over the whole observation (§5.2.2); rowwise: one network per listed flow."""


def group_sizes(space: gym.Space) -> list[int]:
    """The number of choices of each categorical of ``space`` (Discrete: one group, MultiDiscrete: one per entry)."""
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n)]
    if isinstance(space, gym.spaces.MultiDiscrete) and len(space.nvec.shape) == 1:
        return [int(n) for n in space.nvec]
    raise ValueError(f"lRLA's policy needs a Discrete or one-axis MultiDiscrete action space, got {space}")


class PGRLModule(TorchRLModule, PolicyFileAPI):
    """lRLA's stochastic policy π(a | s): an MLP to the concatenated logits of the action's categoricals.

    ``model_config`` keys: ``hiddens`` (default :data:`PAPER_HIDDENS`); ``network`` (:data:`NETWORKS`,
    default ``paper``); for ``rowwise``: ``row_width`` (features of a listed flow's row), ``row_choices``
    (categoricals per row, default 3: level, cap, path), ``rule_init`` (start at pathbal's choice), ``rule_stay``
    (its margin), ``rule_levels`` (None: the last level; else MLFQ thresholds in bytes), ``keep_level`` (the level
    index has the environment's keep choice) and ``rule_pin`` (bytes: MLFQ's level below, the last from them).
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
        self.network = cfg.get("network", "paper")
        if self.network not in NETWORKS:
            raise ValueError(f"network: got {self.network!r}; expected one of {list(NETWORKS)}")
        if self.network == "rowwise":
            per_row, width = int(cfg.get("row_choices", 3)), int(cfg.get("row_width", 0))
            rows = len(self.groups) // per_row
            dim = int(self.observation_space.shape[0])
            if rows < 1 or rows * per_row != len(self.groups) or not 1 <= width <= dim // rows:
                raise ValueError(
                    f"network rowwise: {len(self.groups)} categoricals in rows of {per_row} and {dim} observations "
                    f"in rows of {width} do not make whole rows"
                )
            choices = self.groups[:per_row]
            if self.groups != choices * rows:
                raise ValueError(f"network rowwise: every row must have the same categoricals, got {self.groups}")
            self.policy = RowwiseNetwork(
                rows,
                width,
                dim - rows * width,
                choices,
                self.hiddens,
                bool(cfg.get("rule_init", False)),
                float(cfg.get("rule_stay", 0.0)),
                cfg.get("rule_levels"),
                bool(cfg.get("keep_level", False)),
                cfg.get("rule_pin"),
            )
            return
        layers: list[nn.Module] = []
        width = int(self.observation_space.shape[0])
        for h in self.hiddens:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, sum(self.groups)))
        self.policy = nn.Sequential(*layers)

    def logits(self, obs: torch.Tensor, mask: bool = False) -> torch.Tensor:
        """Every categorical's logits; ``mask``: a row-wise network's empty rows fixed (:mod:`.rowwise`)."""
        if self.network == "rowwise":
            return self.policy.logits(obs.float(), mask=mask)
        return self.policy(obs.float())

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.logits(batch[Columns.OBS], mask=True)}

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
        logits = self.logits(obs)
        return torch.stack([g.argmax(dim=-1) for g in torch.split(logits, self.groups, dim=-1)], dim=-1)
