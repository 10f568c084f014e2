"""sRLA's update: DDPG's actor-critic step (AuTO §4.1, Algorithm 1).

On a mini-batch of N transitions (s_i, a_i, r_i, s'_i) sampled from the
replay (``r_i`` summed over n steps when ``n_step`` > 1, as
:class:`~dcgym.agents.rl.transition_replay.TransitionReplay` returns it):

- target (line 2): y_i = r_i + γ^n (1 - terminated_i) Q'(s'_i, μ'(s'_i));
- critic (line 3): L_Q = (1/N) Σ_i (y_i - Q(s_i, a_i))², no gradient through y;
- actor (line 4): L_μ = -(1/N) Σ_i Q(s_i, μ(s_i)), whose gradient with
  respect to the actor's weights is minus the sampled deterministic policy
  gradient (1/N) Σ_i ∇_θ μ(s_i) ∇_a Q(s_i, a)|_{a = μ(s_i)} (eq. 4). The
  critic's weights enter L_μ detached, so L_μ moves the actor only and L_Q
  the critic only: one backward pass of L_Q + L_μ gives each optimizer
  exactly its own gradient (tests/agents/auto/test_ddpg.py checks both
  against a plain torch recomputation);
- targets (line 5): θ' ← τ θ + (1 - τ) θ' for both networks, after every
  update (RLlib's DQN learner with ``target_network_update_freq`` 0).

With ``twin_q`` (clipped double Q-learning, Fujimoto et al. 2018, TD3 §4.2) a second critic Q_2 and its target
join: y_i = r_i + γ^n (1 - terminated_i) min(Q'_1, Q'_2)(s'_i, μ'(s'_i)), L_Q sums both critics' squared errors
on that y (one Adam over both), and the actor still follows Q_1.

Two Adam optimizers: ``actor_lr`` and ``critic_lr``, the critic's with
``critic_weight_decay`` (L2, DDPG §7 used 1e-2; AuTO gives none, 0 here).
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.dqn.dqn_learner import DQNLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.rl_module.apis import TargetNetworkAPI
from ray.rllib.utils.typing import ModuleID

from dcgym.agents.auto.ddpg_rl_module import DDPGRLModule

__all__ = ["DDPGTorchLearner", "ddpg_losses"]


def ddpg_losses(
    module: DDPGRLModule, batch: dict[str, Any], *, gamma: float
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """(critic loss, actor loss, diagnostics) of Algorithm 1 lines 2-4 on ``batch``; see the module docstring."""
    obs = batch[Columns.OBS].float()
    actions = batch[Columns.ACTIONS].float()
    with torch.no_grad():
        q_next = module.forward_target(batch)["q_target_next"]
        not_done = 1.0 - batch[Columns.TERMINATEDS].float()
        n_step = batch.get("n_step")
        discount = gamma ** n_step.float() if n_step is not None else torch.full_like(q_next, gamma)
        y = batch[Columns.REWARDS].float() + discount * not_done * q_next
    q = module.critic(obs, actions)
    critic_loss = ((y - q) ** 2).mean()
    for critic in module.critics()[1:]:  # twin_q: the second regresses on the same clipped target
        critic_loss = critic_loss + ((y - critic(obs, actions)) ** 2).mean()
    frozen = {name: p.detach() for name, p in module.critic.named_parameters()}
    q_pi = torch.func.functional_call(module.critic, frozen, (obs, module.actor(obs)))
    actor_loss = -q_pi.mean()
    return critic_loss, actor_loss, {"q_mean": q.detach().mean(), "td_error_abs_mean": (y - q).detach().abs().mean()}


class DDPGTorchLearner(DQNLearner, TorchLearner):
    """DDPG's learner: RLlib's DQN learner for the target networks and next observations, DDPG's losses."""

    @classmethod
    def rl_module_required_apis(cls) -> list[type]:
        return [TargetNetworkAPI]

    def configure_optimizers_for_module(self, module_id: ModuleID, config=None) -> None:
        """Adam for the actor (``actor_lr``) and for the critic (``critic_lr``, ``critic_weight_decay``)."""
        module = self.module[module_id].unwrapped()
        cfg = config or self.config
        for name, nets, lr, decay in (
            ("actor", [module.actor], cfg.actor_lr, 0.0),
            ("critic", module.critics(), cfg.critic_lr, cfg.critic_weight_decay),
        ):
            params = [p for net in nets for p in self.get_parameters(net)]
            optimizer = torch.optim.Adam(params, weight_decay=decay)
            self.register_optimizer(
                module_id=module_id, optimizer_name=name, optimizer=optimizer, params=params, lr_or_lr_schedule=lr
            )

    def compute_loss_for_module(self, *, module_id: ModuleID, config, batch: dict[str, Any], fwd_out: dict[str, Any]):
        module: DDPGRLModule = self.module[module_id].unwrapped()
        critic_loss, actor_loss, stats = ddpg_losses(module, batch, gamma=config.gamma)
        log = self.metrics.log_value
        log((module_id, "critic_loss"), critic_loss.item(), window=1)
        log((module_id, "actor_loss"), actor_loss.item(), window=1)
        for key, value in stats.items():
            log((module_id, key), value.item(), window=1)
        return critic_loss + actor_loss
