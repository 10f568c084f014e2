"""QMIX-LB's update (and the independent learners'): TD(lambda) losses over whole episodes, the target copies.

A batch is B episodes of T steps (:class:`dcgym.agents.marl_lb.qmix.EpisodeBatch`,
numpy): every LB's observations (T + 1 of them), actions (one weight level
per server) and the team reward (the mean of the LBs' rewards, times
``reward_scale``), with terminated and mask flags. For each step t:

- each LB i's utility of what it did, Q_i(tau_t, a_t) = mean_j Q_ij(tau_t, a_tj),
  from its GRU run over the episode from a zero state;
- Q_tot(s_t, a_t) = mixer(Q_1..Q_M, s_t), s_t every LB's observation;
- the target y_t: TD(lambda) returns over the target network's
  Q_tot(s_{t+1}, a*_{t+1}), a* the online networks' greedy actions (double Q,
  ``double_q``) or the target's own: y_t = r_t + gamma ((1 - lambda) Qtgt_{t+1}
  + lambda y_{t+1}), bootstrapping from Qtgt of the last state at a
  truncation (lb_v0's episodes end so) and from nothing after a terminal
  step (:func:`td_lambda_targets`);
- loss = mean over the valid steps of (Q_tot - y)^2.

With ``mixing: independent`` (Distr-LB, Centr-LB: :func:`independent_loss`)
there is no mixer: each LB's Q_i fits the TD(lambda) targets of its own
reward with its own target network.

The gradient step goes through RLlib's Learner (its Adam optimizers, one
per module, gradient clipping per module); every ``target_update_interval``
updates the online networks are copied into the targets. The update count is
learner state, checkpointed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.typing import ModuleID, StateDict

from dcgym.agents.marl_lb.qmix_rl_module import MIXER, QmixAgentRLModule, QmixMixerRLModule

__all__ = ["LEARNER_STATE", "STATS", "QmixTorchLearner", "independent_loss", "qmix_loss", "td_lambda_targets"]

LEARNER_STATE = "qmix_lb"
"""Key of QMIX-LB's own learner state (the update counter) in ``Learner.get_state()``."""
STATS = "value_learning"
"""The id the loss statistics are logged under (the loss couples every module)."""


def td_lambda_targets(
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    mask: torch.Tensor,
    target_qs: torch.Tensor,
    gamma: float,
    td_lambda: float,
) -> torch.Tensor:
    """TD(lambda) returns y (B, T) from rewards, terminated, mask (B, T) and target Q_tot (B, T + 1).

    ``target_qs[:, t]`` is the target's Q_tot in the state of step t (t = T:
    the state after the last step). Backwards from y_T = Qtgt_T:
    y_t = r_t + gamma (1 - terminated_t) ((1 - lambda) Qtgt_{t+1} + lambda y_{t+1})
    on real steps, and y_t = Qtgt_t on padding (mask 0), so an episode that
    ended by truncation before the batch's last step bootstraps from its
    last state (pymarl's ``build_td_lambda_targets``, with the padding made
    explicit).
    """
    ret = torch.zeros_like(target_qs)
    ret[:, -1] = target_qs[:, -1]
    for t in range(rewards.shape[1] - 1, -1, -1):
        ahead = (1 - td_lambda) * target_qs[:, t + 1] + td_lambda * ret[:, t + 1]
        step = rewards[:, t] + gamma * (1 - terminated[:, t]) * ahead
        ret[:, t] = mask[:, t] * step + (1 - mask[:, t]) * target_qs[:, t]
    return ret[:, :-1]


def agent_q_values(agents: Sequence[QmixAgentRLModule], obs: torch.Tensor, target: bool = False) -> torch.Tensor:
    """Q (B, T + 1, M, N, L) of every LB's network over whole episodes, from zero hidden states."""
    qs = [m.q_values(obs[:, :, i], target=target)[0] for i, m in enumerate(agents)]
    return torch.stack(qs, dim=2)


def qmix_loss(
    agents: Sequence[QmixAgentRLModule],
    mixer: QmixMixerRLModule,
    batch: Mapping[str, np.ndarray],
    *,
    gamma: float,
    td_lambda: float,
    double_q: bool = True,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss of one batch of episodes (module docstring) and what it measured."""
    obs = torch.as_tensor(batch["obs"], dtype=torch.float32)  # (B, T + 1, M, D)
    actions = torch.as_tensor(batch["actions"], dtype=torch.int64)  # (B, T, M, N)
    rewards = torch.as_tensor(batch["rewards"], dtype=torch.float32).mean(dim=-1)  # (B, T, M) -> team (B, T)
    terminated = torch.as_tensor(batch["terminated"], dtype=torch.float32)
    mask = torch.as_tensor(batch["mask"], dtype=torch.float32)

    q = agent_q_values(agents, obs)
    chosen = torch.gather(q[:, :-1], -1, actions.unsqueeze(-1)).squeeze(-1).mean(dim=-1)  # (B, T, M)
    q_tot = mixer.mix(chosen, obs[:, :-1])
    with torch.no_grad():
        target_q = agent_q_values(agents, obs, target=True)
        best = q.detach().argmax(dim=-1, keepdim=True) if double_q else target_q.argmax(dim=-1, keepdim=True)
        target_agent = torch.gather(target_q, -1, best).squeeze(-1).mean(dim=-1)  # (B, T + 1, M)
        target_tot = mixer.mix(target_agent, obs, target=True)  # (B, T + 1)
        targets = td_lambda_targets(rewards, terminated, mask, target_tot, gamma, td_lambda)
    error = (q_tot - targets) * mask
    n = mask.sum().clamp(min=1.0)
    loss = (error**2).sum() / n
    stats = {
        "td_error_abs_mean": float(error.detach().abs().sum() / n),
        "q_tot_mean": float((q_tot.detach() * mask).sum() / n),
        "target_mean": float((targets * mask).sum() / n),
    }
    return loss, stats


def independent_loss(
    agents: Sequence[QmixAgentRLModule],
    batch: Mapping[str, np.ndarray],
    *,
    gamma: float,
    td_lambda: float,
    double_q: bool = True,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Independent learners (Distr-LB, Centr-LB): each LB's Q_i fits TD(lambda) targets of its own reward.

    The same targets as :func:`qmix_loss` with Q_tot replaced by each LB's
    own Q_i(tau_t, a_t) = mean_j Q_ij and r_t by the LB's own reward; the loss
    is the sum over LBs of their mean squared errors (the networks share
    nothing, so each LB's gradient is its own term's).
    """
    obs = torch.as_tensor(batch["obs"], dtype=torch.float32)
    actions = torch.as_tensor(batch["actions"], dtype=torch.int64)
    rewards = torch.as_tensor(batch["rewards"], dtype=torch.float32)  # (B, T, M)
    terminated = torch.as_tensor(batch["terminated"], dtype=torch.float32)
    mask = torch.as_tensor(batch["mask"], dtype=torch.float32)

    q = agent_q_values(agents, obs)
    chosen = torch.gather(q[:, :-1], -1, actions.unsqueeze(-1)).squeeze(-1).mean(dim=-1)  # (B, T, M)
    with torch.no_grad():
        target_q = agent_q_values(agents, obs, target=True)
        best = q.detach().argmax(dim=-1, keepdim=True) if double_q else target_q.argmax(dim=-1, keepdim=True)
        target_value = torch.gather(target_q, -1, best).squeeze(-1).mean(dim=-1)  # (B, T + 1, M)
        targets = torch.stack(
            [
                td_lambda_targets(rewards[..., i], terminated, mask, target_value[..., i], gamma, td_lambda)
                for i in range(len(agents))
            ],
            dim=-1,
        )
    n = mask.sum().clamp(min=1.0)
    error = (chosen - targets) * mask.unsqueeze(-1)
    loss = (error**2).sum() / n
    stats = {
        "td_error_abs_mean": float(error.detach().abs().sum() / (n * len(agents))),
        "q_mean": float((chosen.detach() * mask.unsqueeze(-1)).sum() / (n * len(agents))),
        "target_mean": float((targets * mask.unsqueeze(-1)).sum() / (n * len(agents))),
    }
    return loss, stats


class QmixTorchLearner(TorchLearner):
    """Learner of QMIX-LB: :meth:`qmix_update` on a batch of episodes (module docstring)."""

    def build(self) -> None:
        super().build()
        self._num_updates = 0

    def configure_optimizers_for_module(self, module_id: ModuleID, config=None) -> None:
        """One Adam per module over its online network only (the target copies are not trained)."""
        module = self.module[module_id].unwrapped()
        online = module.mixer if isinstance(module, QmixMixerRLModule) else module.q_net
        params = list(online.parameters())
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params),
            params=params,
            lr_or_lr_schedule=(config or self.config).lr,
        )

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        raise NotImplementedError("QMIX-LB's loss couples every module: qmix_update computes it over whole episodes")

    def agent_modules(self) -> list[QmixAgentRLModule]:
        """The LBs' modules in agent order (``lb_0``, ``lb_1``, ...)."""
        ids = sorted((mid for mid in self.module.keys() if mid != MIXER), key=_agent_order)
        return [self.module[mid].unwrapped() for mid in ids]

    def qmix_update(self, batch: Mapping[str, np.ndarray]) -> dict[str, float]:
        """One gradient step on ``batch``; copies the targets every ``target_update_interval`` updates."""
        cfg = self.config
        settings = {"gamma": cfg.gamma, "td_lambda": cfg.td_lambda, "double_q": cfg.double_q}
        if cfg.mixing == "qmix":
            loss, stats = qmix_loss(self.agent_modules(), self.module[MIXER].unwrapped(), batch, **settings)
        else:
            loss, stats = independent_loss(self.agent_modules(), batch, **settings)
        gradients = self.compute_gradients({STATS: loss})
        self.apply_gradients(self.postprocess_gradients(gradients))
        self._num_updates += 1
        if self._num_updates % cfg.target_update_interval == 0:
            self.update_targets()
        stats["loss"] = float(loss.detach())
        for key, value in stats.items():  # under one id: the statistics of the joint loss
            self.metrics.log_value((STATS, key), value, window=cfg.updates_per_episode)
        self.metrics.log_value((STATS, "num_updates"), self._num_updates, reduce="max", window=1)
        return stats

    def update_targets(self) -> None:
        """Copy every online network into its target."""
        with torch.no_grad():
            for module in self.agent_modules():
                module.target_q_net.load_state_dict(module.q_net.state_dict())
            if MIXER in self.module.keys():
                mixer = self.module[MIXER].unwrapped()
                mixer.target_mixer.load_state_dict(mixer.mixer.state_dict())

    @property
    def num_updates(self) -> int:
        return self._num_updates

    def get_state(self, components=None, *, not_components=None, **kwargs) -> StateDict:
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._check_component(LEARNER_STATE, components, not_components):
            state[LEARNER_STATE] = {"num_updates": self._num_updates}
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        own: Any = state.get(LEARNER_STATE)
        if own is not None:
            self._num_updates = int(own["num_updates"])


def _agent_order(module_id: str) -> tuple[int, str]:
    """``lb_10`` after ``lb_9``: by the number after the last underscore, then by name."""
    tail = module_id.rpartition("_")[2]
    return (int(tail) if tail.isdigit() else 0, module_id)
