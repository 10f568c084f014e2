"""Malcolm's update: decentralized TD actor-critic with consensus (POMACS 2022, Algorithm 1, §6.1-6.2).

One mini-batch is D consecutive heartbeats of one node (``minibatch_size``,
20 by default). For each heartbeat t with observation x_t, next observation
x'_t, team reward u_t (the environment's, times ``reward_scale``) and the
node's decision counts c_t (from ``info["migrate"]`` / ``info["steal"]``,
one entry per destination):

- **paper** (Algorithm 1, the default): δ_t = u_t + γ V(x'_t) - V(x_t);
  the actor direction of one heartbeat is Σ_j c_tj ∇ log π_j(x_t), i.e.
  ``(c_t - Σc_t π(x_t)) ⊗ φ_a(x_t)`` for a linear softmax.
- **code** (the authors' public implementation): average-reward TD,
  δ_t = u_t - R̄_t + V(x'_t) - V(x_t) with R̄_{t+1} = R̄_t + η δ_t
  (η = ``average_reward_step``, 1e-3); actor direction
  ``(c_t / Σc_t - π(x_t)) ⊗ φ_a(x_t)`` (0 when nothing was decided).

Both use eligibility traces e_t = κ e_{t-1} + ∇_t (κ = γλ, or λ for the
average-reward form; λ = ``trace_lambda``: 0 for the paper, 0.6 for the
code), reset at episode starts, carried across mini-batches; the ascent
direction of a mini-batch is (1/D) Σ_t δ_t e_t for the critic (∇_t = φ_c(x_t))
and for each actor. δ is a semi-gradient (no gradient through V(x')).
All D heartbeats use the parameters of the update, as in the paper (§6.1:
"between two updates, the policy parameters remain unchanged"). The learner
hands AdamW the negated direction through a surrogate loss whose gradient
is exactly that (checked against numpy in tests/agents/test_malcolm.py).

Each node has its own three AdamW optimizers (critic, migration, stealing)
and keeps its own optimizer state. Every ``consensus_period`` updates the
critics of all nodes are replaced by their average (Algorithm 1's consensus
step); the actors are never averaged. R̄, the traces and the update counter
are learner state, saved and restored with checkpoints.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.learner import AddNextObservationsFromEpisodesToTrainBatch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.typing import ModuleID, ParamDict, StateDict

from dcgym.agents.malcolm.fill_rl_module import (
    MIGRATION_LOGP,
    TASK_ARRIVALS,
    TASK_DEST,
    TASK_LEVELS,
    TASK_MASK,
    MalcolmFillRLModule,
)
from dcgym.agents.malcolm.malcolm_rl_module import MIGRATION_LOGITS, STEALING_LOGITS, MalcolmRLModule, log_softmax

__all__ = [
    "EPISODE_START",
    "LEARNER_STATE",
    "MIGRATE_COUNTS",
    "STEAL_COUNTS",
    "AddDecisionCounts",
    "MalcolmTorchLearner",
    "trace_weights",
]

MIGRATE_COUNTS = "migrate_counts"
"""Batch column: the node's migration decisions per destination in the heartbeat after the observation (D, N)."""
STEAL_COUNTS = "steal_counts"
"""Batch column: the node's stealing decisions per victim in that heartbeat (D, N)."""
EPISODE_START = "episode_start"
"""Batch column: 1 where the row is the first heartbeat of an episode (its trace starts from 0)."""
LEARNER_STATE = "malcolm"
"""Key of Malcolm's own learner state (update counter, R̄, traces) in ``Learner.get_state()``."""

_TRACE_KEYS = ("critic", "migration", "stealing")


class AddDecisionCounts(ConnectorV2):
    """Learner connector: the decision counts of each step (from the env's infos) and episode-start flags; with
    rack_v0's ``action_type="fill"`` also each step's decisions (``info["decisions"]``) as the per-task columns
    (:data:`~dcgym.agents.malcolm.fill_rl_module.TASK_DEST` ...), padded to the most decisions of a step in the
    batch.

    rack_v0 reports a node's decisions of heartbeat t in the info returned
    with the observation of t + 1, so the counts of step t are infos[t + 1].
    """

    def __call__(self, *, rl_module, batch, episodes, explore=None, shared_data=None, **kwargs):
        episodes = list(self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False))
        infos_of = [episode.get_infos(slice(1, len(episode) + 1)) for episode in episodes]
        per_task = [info["decisions"] for infos in infos_of for info in infos if "decisions" in info]
        width = max((len(d["dest"]) for d in per_task), default=0)
        for episode, infos in zip(episodes, infos_of, strict=True):
            n = len(episode)
            try:
                migrate = np.asarray([info["migrate"] for info in infos], dtype=np.float32)
                steal = np.asarray([info["steal"] for info in infos], dtype=np.float32)
            except KeyError as err:
                raise KeyError(
                    f"Malcolm learns from the decision counts in each step's info (key {err}); agent "
                    f"{episode.agent_id!r} did not report them: use rack_v0 (info['migrate'], info['steal'])"
                ) from None
            start = np.zeros(n, dtype=np.float32)
            start[0] = float(episode.t_started == 0)
            columns = {MIGRATE_COUNTS: migrate, STEAL_COUNTS: steal, EPISODE_START: start}
            if per_task:
                columns |= _padded_decisions(infos, width, steal.shape[1])
            for column, items in columns.items():
                self.add_n_batch_items(batch, column, items_to_add=items, num_items=n, single_agent_episode=episode)
        return batch


def _padded_decisions(infos: list[dict[str, Any]], width: int, n: int) -> dict[str, np.ndarray]:
    """The per-task columns of an episode's steps from their infos' ``decisions``, padded to ``width`` decisions
    (padding: destination 0, levels 0, arrivals 1, mask 0: a valid table whose log-probability the mask drops)."""
    steps = len(infos)
    dest = np.zeros((steps, width), np.int64)
    levels = np.zeros((steps, width, n))
    arrivals = np.ones((steps, width))
    mask = np.zeros((steps, width), np.float32)
    for t, info in enumerate(infos):
        d = info["decisions"]
        k = len(d["dest"])
        dest[t, :k] = d["dest"]
        levels[t, :k] = d["levels"]
        arrivals[t, :k] = d["arrivals"]
        mask[t, :k] = 1.0
    return {TASK_DEST: dest, TASK_LEVELS: levels, TASK_ARRIVALS: arrivals, TASK_MASK: mask}


def trace_weights(episode_start: torch.Tensor, kappa: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights of the traces within a mini-batch: e_t = carry_t E + Σ_s W[t, s] ∇_s.

    ``W[t, s] = κ^(t-s)`` for s <= t within the same episode (no episode start
    in (s, t]), else 0; ``carry_t = κ^(t+1)`` while no episode has started in
    [0, t] (the trace E left by the previous mini-batch continues), else 0.
    With κ = 0, W is the identity and carry is 0 (plain TD(0)).
    """
    d = episode_start.shape[0]
    dtype = torch.float64
    t = torch.arange(d)
    segment = torch.cumsum(episode_start.to(torch.int64), 0)
    lag = (t[:, None] - t[None, :]).to(dtype)
    same = (segment[:, None] == segment[None, :]) & (lag >= 0)
    k, zero = torch.tensor(kappa, dtype=dtype), torch.zeros((), dtype=dtype)
    weights = torch.where(same, k ** lag.clamp(min=0), zero)
    carry = torch.where(segment == 0, k ** (t + 1).to(dtype), zero)
    return weights, carry


class MalcolmTorchLearner(TorchLearner):
    """Learner of Malcolm's per-node linear actor-critic; see the module docstring for the update."""

    def build(self) -> None:
        super().build()
        if self.config.add_default_connectors_to_learner_pipeline:
            self._learner_connector.prepend(AddDecisionCounts())
            self._learner_connector.prepend(AddNextObservationsFromEpisodesToTrainBatch())
        self._num_updates = 0
        self._reward_rate: dict[ModuleID, float] = {}
        self._traces: dict[ModuleID, dict[str, torch.Tensor]] = {}

    # ----------------------------------------------------------- optimizers

    def configure_optimizers_for_module(self, module_id: ModuleID, config=None) -> None:
        """AdamW optimizers per node: critic (``lr_critic``), migration and stealing actors (``lr_actor``); the fill
        actor's three gain parts (``lr_actor``) in place of the two actors."""
        module = self.module[module_id].unwrapped()
        cfg = config or self.config
        if isinstance(module, MalcolmFillRLModule):
            actors = tuple((name, p, cfg.lr_actor) for name, p in module.actor_parameters().items())
        else:
            actors = (
                ("migration", module.migration_weights, cfg.lr_actor),
                ("stealing", module.stealing_weights, cfg.lr_actor),
            )
        groups = (("critic", module.critic_weights, cfg.lr_critic), *actors)
        for name, param, lr in groups:
            optimizer = torch.optim.AdamW(
                [param], lr=1e-3, betas=tuple(cfg.adam_betas), eps=cfg.adam_epsilon, weight_decay=cfg.weight_decay
            )
            self.register_optimizer(
                module_id=module_id, optimizer_name=name, optimizer=optimizer, params=[param], lr_or_lr_schedule=lr
            )

    # ----------------------------------------------------------------- loss

    def compute_loss_for_module(self, *, module_id: ModuleID, config, batch: dict[str, Any], fwd_out: dict[str, Any]):
        """A surrogate loss whose gradient is minus Malcolm's ascent direction for this mini-batch."""
        module: MalcolmRLModule = self.module[module_id].unwrapped()
        dtype = module.critic_weights.dtype
        value = fwd_out[Columns.VF_PREDS]
        d = value.shape[0]
        average_reward = config.variant == "code"
        kappa = config.resolved_trace_lambda * (1.0 if average_reward else config.gamma)

        with torch.no_grad():
            not_terminal = 1.0 - batch[Columns.TERMINATEDS].to(dtype)
            next_value = module.compute_values({Columns.OBS: batch[Columns.NEXT_OBS]}) * not_terminal
            reward = batch[Columns.REWARDS].to(dtype) * config.reward_scale
            if average_reward:
                advantage = reward + next_value - value
                rate = self._reward_rates(module_id, advantage, config.average_reward_step)
                delta = advantage - rate
            else:
                delta = reward + config.gamma * next_value - value
            weights, carry = trace_weights(batch[EPISODE_START], kappa)
            weights, carry = weights.to(dtype), carry.to(dtype)
            delta_trace = weights.T @ delta  # Σ_{t>=s} W[t, s] δ_t: how much of δ each ∇_s receives
            carry_coef = (carry * delta).sum()

        if MIGRATION_LOGP in fwd_out:
            return self._fill_loss(module_id, batch, fwd_out, value, delta, delta_trace, dtype)
        traces = self._traces.get(module_id)
        counts = {
            "migration": self._count_weights(batch[MIGRATE_COUNTS].to(dtype), average_reward),
            "stealing": self._count_weights(batch[STEAL_COUNTS].to(dtype), average_reward),
        }
        logits = {"migration": fwd_out[MIGRATION_LOGITS], "stealing": fwd_out[STEALING_LOGITS]}
        params = {
            "critic": module.critic_weights,
            "migration": module.migration_weights,
            "stealing": module.stealing_weights,
        }
        objective = {"critic": value}
        for name in ("migration", "stealing"):
            objective[name] = (counts[name] * log_softmax(logits[name])).sum(dim=-1)

        losses = {}
        for name in _TRACE_KEYS:
            surrogate = (delta_trace * objective[name]).sum()
            if traces is not None:
                surrogate = surrogate + carry_coef * (traces[name] * params[name]).sum()
            losses[name] = -surrogate / d

        if kappa > 0.0:
            self._traces[module_id] = self._next_traces(module, batch, counts, logits, weights[-1], carry[-1], traces)

        self._log(module_id, delta, value, logits, average_reward)
        return losses["critic"] + losses["migration"] + losses["stealing"]

    def _fill_loss(self, module_id, batch, fwd_out, value, delta, delta_trace, dtype) -> torch.Tensor:
        """The fill actor's surrogate (TD(0)): minus (1/D) sum_t delta_t (V(x_t) + sum_j c_tj log p_j(x_t)), the
        migration decisions c only (the stealing table is a rule, not a distribution with a gradient); per task,
        sum_k log p_{dest_k}(levels_k) over the step's decisions in place of the counts."""
        per_task = TASK_MASK in batch
        weights = batch[TASK_MASK] if per_task else batch[MIGRATE_COUNTS]
        counts = self._count_weights(weights.to(dtype), self.config.variant == "code")
        logp = fwd_out[MIGRATION_LOGP]
        objective = value + (counts.to(logp.dtype) * logp).sum(dim=-1).to(dtype)
        log = self.metrics.log_value
        log((module_id, "td_error_mean"), delta.mean().item(), window=1)
        log((module_id, "td_error_sq_mean"), (delta * delta).mean().item(), window=1)
        log((module_id, "value_mean"), value.detach().mean().item(), window=1)
        if per_task:
            log((module_id, "decisions_per_step"), weights.sum(-1).float().mean().item(), window=1)
        else:
            p = logp.detach().exp()
            log((module_id, "migration_entropy"), -(p * logp.detach()).sum(-1).mean().item(), window=1)
        if self.config.variant == "code":
            log((module_id, "reward_rate"), self._reward_rate[module_id], window=1)
        return -(delta_trace * objective).sum() / value.shape[0]

    @staticmethod
    def _count_weights(counts: torch.Tensor, normalize: bool) -> torch.Tensor:
        """Raw counts (paper: Σ_j c_j ∇ log π_j) or counts / total (code; 0 when nothing was decided)."""
        if not normalize:
            return counts
        total = counts.sum(dim=-1, keepdim=True)
        return torch.where(total > 0, counts / total.clamp(min=1.0), torch.zeros_like(counts))

    def _reward_rates(self, module_id: ModuleID, advantage: torch.Tensor, step: float) -> torch.Tensor:
        """R̄_t for each row (R̄_{t+1} = R̄_t + η (a_t - R̄_t)); stores R̄ after the last row."""
        rate = self._reward_rate.get(module_id, 0.0)
        rates = torch.empty_like(advantage)
        for t, a in enumerate(advantage.tolist()):
            rates[t] = rate
            rate += step * (a - rate)
        self._reward_rate[module_id] = rate
        return rates

    @staticmethod
    def _next_traces(module, batch, counts, logits, last_weights, last_carry, traces) -> dict[str, torch.Tensor]:
        """e at the end of the mini-batch: carry E + Σ_s W[D-1, s] ∇_s, with ∇_s in closed form."""
        with torch.no_grad():
            obs = batch[Columns.OBS]
            phi_a = module.actor_features(obs)
            new = {"critic": last_weights @ module.critic_features(obs)}
            for name in ("migration", "stealing"):
                c = counts[name]
                direction = c - c.sum(dim=-1, keepdim=True) * log_softmax(logits[name]).exp()
                new[name] = (last_weights[:, None] * direction).T @ phi_a
            if traces is not None:
                new = {k: v + last_carry * traces[k] for k, v in new.items()}
        return new

    def _log(self, module_id, delta, value, logits, average_reward) -> None:
        """Per node: mean and mean square TD error, mean V, entropy of both policies, R̄ (code variant)."""
        log = self.metrics.log_value
        log((module_id, "td_error_mean"), delta.mean().item(), window=1)
        log((module_id, "td_error_sq_mean"), (delta * delta).mean().item(), window=1)
        log((module_id, "value_mean"), value.detach().mean().item(), window=1)
        for name in ("migration", "stealing"):
            logp = log_softmax(logits[name].detach())
            log((module_id, f"{name}_entropy"), -(logp.exp() * logp).sum(-1).mean().item(), window=1)
        if average_reward:
            log((module_id, "reward_rate"), self._reward_rate[module_id], window=1)

    # ------------------------------------------------------------ consensus

    def apply_gradients(self, gradients_dict: ParamDict) -> None:
        super().apply_gradients(gradients_dict)
        self._num_updates += 1
        period = self.config.consensus_period
        if period and self._num_updates % period == 0:
            self.consensus()

    def consensus(self) -> None:
        """θ_i ← (1/N) Σ_j θ_j over every node's critic (Algorithm 1); actors and optimizer states untouched."""
        modules = [m.unwrapped() for m in self.module.values() if isinstance(m.unwrapped(), MalcolmRLModule)]
        if len(modules) < 2:
            return
        with torch.no_grad():
            mean = torch.stack([m.critic_weights for m in modules]).mean(dim=0)
            for m in modules:
                m.critic_weights.copy_(mean)
        self.metrics.log_value("num_consensus_steps", 1, reduce="lifetime_sum")

    @property
    def num_updates(self) -> int:
        """Mini-batch updates done so far (the consensus clock)."""
        return self._num_updates

    # ---------------------------------------------------------------- state

    def get_state(self, components=None, *, not_components=None, **kwargs) -> StateDict:
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._check_component(LEARNER_STATE, components, not_components):
            state[LEARNER_STATE] = {
                "num_updates": self._num_updates,
                "reward_rate": dict(self._reward_rate),
                "traces": {
                    mid: {k: v.detach().cpu().numpy().copy() for k, v in tr.items()} for mid, tr in self._traces.items()
                },
            }
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        own = state.get(LEARNER_STATE)
        if own is None:
            return
        self._num_updates = int(own["num_updates"])
        self._reward_rate = {mid: float(r) for mid, r in own["reward_rate"].items()}
        self._traces = {}
        for mid, tr in own["traces"].items():
            if mid in self.module:
                dtype = self.module[mid].unwrapped().critic_weights.dtype
                self._traces[mid] = {
                    k: torch.as_tensor(np.asarray(v), dtype=dtype, device=self._device) for k, v in tr.items()
                }
