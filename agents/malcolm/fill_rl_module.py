"""One Malcolm node with the ``fill`` actor: water-filling tables adjusted by learned gains, in torch.

The actor of ``actor: fill`` (docs/malcolm.md "The fill head"). Node i's migration distribution is the table of
the ``fill`` policy file (docs/policy_format.md, kind 4) computed from its observation: its levels u (the N loads
it believes, rack_v0's ``expected_wait`` unit: mean service times), the rack's offered load rho (rack_v0's
``offered_load`` extra), features ``psi = [1, min(rho, 2), tanh(mean u), tanh(u_i)]`` and the gains of three
learned parts:

| part | rows of the file's gains | sets |
|---|---|---|
| ``volume_gains`` (1, 4) | 0 | the fill volume ``horizon x a x exp(<w, psi>)``, a = rho x sum c x heartbeat_services |
| ``capacity_gains`` (N, 4) | 3 .. 3 + N - 1 | ``c'_j = c_j exp(<w_j, psi>)`` |
| ``level_gains`` (N, 4) | 3 + N .. 3 + 2N - 1 | ``u'_j = u_j + <w_j, psi>`` |

Every gain starts at 0, where the table is the engine's ``water_fill`` heuristic. The mix (row 1) and the steal
margin (row 2) stay 0 and are not learned: with the mix fixed at the file's ``mix`` > 0 every destination keeps
at least ``mix x c'_j / sum c'`` of the table, so every probability is > 0 and every sampled destination's
log-probability is finite; the steal rule is a threshold on the levels (a one-hot table), whose margin has no
policy gradient. The stealing half of the action is that one-hot table (on the node itself, no steal, unless
``steal`` is on).

The operations follow :func:`dcgym.agents.malcolm.fill.fill_tables` (float32 parameters, float64 arithmetic), so
the exported file (:func:`dcgym.agents.malcolm.policy_file.fill_from_modules`) acts as the module does; the tables
agree with numpy's to 1e-9 (tests/agents/malcolm/test_fill_actor.py). Two ways to act:

- **per heartbeat** (``per_task`` false): the action is the table itself, computed from the observation (rack_v0's
  ``action_type="probabilities"``), through :class:`PassThroughLogits`; the learner's direction for a heartbeat is
  ``sum_j c_j grad log p_j`` over the decisions c the engine drew from it.
- **per task** (``per_task`` true): the action is the node's gains (rack_v0's ``action_type="fill"``), and the
  engine recomputes the node's table at every task that arrives at it, from what the node believes then. Each
  decision k of a heartbeat comes back with the levels and arrivals its table was computed from (the batch columns
  :data:`TASK_DEST`, :data:`TASK_LEVELS`, :data:`TASK_ARRIVALS`, :data:`TASK_MASK`), and the direction is
  ``sum_k grad log p_{dest_k}(levels_k)``: each decision under the table of its own moment. When every decision
  saw the heartbeat's levels the two are the same.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from torch import nn

from dcgym.agents.malcolm.basis import num_features
from dcgym.agents.malcolm.fill import MAX_EXPONENT
from dcgym.agents.malcolm.malcolm_rl_module import MalcolmRLModule, _uniform, act_with_logits
from dcgym.agents.malcolm.policy_file import fill_policy
from dcgym.agents.policy_format import FILL_FEATURES, FillPolicy
from dcgym.agents.rl.apis import PolicyFileContext
from dcgym.envs.rack.game import fill_rows

__all__ = [
    "MIGRATION_LOGP",
    "TASK_ARRIVALS",
    "TASK_DEST",
    "TASK_LEVELS",
    "TASK_MASK",
    "MalcolmFillRLModule",
    "fill_migration",
    "water_fill_torch",
]

MIGRATION_LOGP = "migration_logp"
"""forward_train output of the fill actor: log of the migration table (B, N), or per task the log-probability of
each decision (B, K) (0 where :data:`TASK_MASK` is 0)."""
TASK_DEST = "task_dest"
"""Batch column (per task): the destination of each decision of the heartbeat, padded with 0 (B, K)."""
TASK_LEVELS = "task_levels"
"""Batch column (per task): the levels each decision's table was computed from (B, K, N), padded with 0."""
TASK_ARRIVALS = "task_arrivals"
"""Batch column (per task): the rack's arrivals per heartbeat each decision's table used (B, K), padded with 1."""
TASK_MASK = "task_mask"
"""Batch column (per task): 1 for a decision, 0 for padding (B, K)."""

_MAX_UTILISATION = 2.0


def water_fill_torch(level: torch.Tensor, capacity: torch.Tensor, volume: torch.Tensor, mix: torch.Tensor):
    """Rows of water-filling tables (B, N) as :func:`dcgym.agents.malcolm.fill.water_fill_table`: the level L with
    sum_j c_j (L - u_j)^+ = volume, p_j = (1 - mix) c_j (L - u_j)^+ / sum + mix c_j / sum c. Differentiable in
    level, capacity and volume wherever the set of nodes below L does not change."""
    u, order = torch.sort(level, dim=-1, stable=True)  # ascending, ties by node id
    c = torch.gather(capacity, -1, order)
    fills = (volume[:, None] + torch.cumsum(c * u, -1)) / torch.cumsum(c, -1)
    stop = torch.cat([fills[:, :-1] <= u[:, 1:], torch.ones_like(fills[:, :1], dtype=torch.bool)], -1)
    k = torch.argmax(stop.to(torch.int8), dim=-1, keepdim=True)  # the first k whose level stays below the next
    fill = torch.gather(fills, -1, k)
    headroom = torch.relu(fill - level)
    weighted = capacity * headroom
    headroom_sum = weighted.sum(-1, keepdim=True)
    split = capacity / capacity.sum(-1, keepdim=True)
    m = mix[:, None]
    table = (1 - m) * weighted / torch.where(headroom_sum > 0, headroom_sum, torch.ones_like(headroom_sum)) + m * split
    lowest = torch.zeros_like(level).scatter_(-1, order[:, :1], 1.0)
    fallback = m * split + (1 - m) * lowest  # the volume lost in the rounding of huge levels
    return torch.where(headroom_sum > 0, table, fallback)


def fill_migration(
    gains: torch.Tensor,
    levels: torch.Tensor,
    offered: torch.Tensor,
    node: int,
    capacity: torch.Tensor,
    heartbeat_services: float,
    horizon: float,
    mix: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Node ``node``'s migration tables (B, N) and its levels u' (B, N) from gains (2N + 3, 4) as in a fill file,
    levels (B, N) and offered loads (B,), all float64; capacity (N,) float64 of the file's float32 values."""
    n = levels.shape[-1]
    total = capacity.sum()
    rho = offered.clamp(0.0, _MAX_UTILISATION)
    mean = levels.sum(-1) / n
    psi = torch.stack([torch.ones_like(rho), rho, torch.tanh(mean), torch.tanh(levels[:, node])], -1)  # (B, 4)
    z = psi @ gains.T  # (B, 2N + 3)
    gain = torch.exp(z.clamp(-MAX_EXPONENT, MAX_EXPONENT))
    arrivals = offered * total * heartbeat_services
    volume = torch.clamp(horizon * arrivals * gain[:, 0], min=1e-12)
    mixes = torch.clamp(mix + z[:, 1], 0.0, 1.0)
    level = levels + z[:, 3 + n :]
    return water_fill_torch(level, capacity * gain[:, 3 : 3 + n], volume, mixes), level


class MalcolmFillRLModule(MalcolmRLModule):
    """A Malcolm node whose migration actor is the fill table (see the module docstring); critic as the paper's.

    ``model_config`` keys, besides MalcolmRLModule's critic ones: ``node`` (this node's index), ``capacity`` (N:
    workers x speed), ``heartbeat_services`` (the heartbeat in mean service times), ``horizon``, ``mix``,
    ``steal`` (the rule's settings), ``offered_load_index`` (the observation column of rack_v0's
    ``offered_load``), ``per_task`` (act with gains, rack_v0's ``action_type="fill"``; default false). The first N
    observation entries are the levels (rack_v0's wait loads, in mean service times).
    """

    def setup(self) -> None:
        cfg = self.model_config or {}
        self.critic_basis = cfg.get("critic_basis", "customized")
        self.actor_basis = "fill"
        self.load_scale = float(cfg.get("load_scale", 1.0))
        self.capacity = [float(np.float32(c)) for c in cfg["capacity"]]
        n = len(self.capacity)
        self.num_nodes = n
        self.node = int(cfg["node"])
        self.per_task = bool(cfg.get("per_task", False))
        self.heartbeat_services = float(np.float32(cfg["heartbeat_services"]))
        self.horizon = float(np.float32(cfg["horizon"]))
        self.mix = float(np.float32(cfg["mix"]))
        self.steal = bool(cfg["steal"])
        self.offered_load_index = int(cfg["offered_load_index"])
        width = fill_rows(n) * FILL_FEATURES if self.per_task else 2 * n
        if not (0 <= self.node < n and self.action_space.shape == (width,) and 0 < self.mix <= 1):
            raise ValueError(
                f"MalcolmFillRLModule: node {self.node}, action space {self.action_space.shape} and mix {self.mix} "
                f"for {n} capacities; expected a node in [0, {n}), actions ({width},) and a mix in (0, 1] (every "
                "probability > 0)"
            )
        if self.observation_space.shape[0] <= self.offered_load_index:
            raise ValueError(f"the observation ({self.observation_space.shape}) has no offered_load column")
        self.critic_weights = nn.Parameter(_uniform((num_features(self.critic_basis, n),)))
        self.volume_gains = nn.Parameter(torch.zeros(1, FILL_FEATURES))
        self.capacity_gains = nn.Parameter(torch.zeros(n, FILL_FEATURES))
        self.level_gains = nn.Parameter(torch.zeros(n, FILL_FEATURES))

    def actor_parameters(self) -> dict[str, nn.Parameter]:
        return {"volume": self.volume_gains, "capacity": self.capacity_gains, "level": self.level_gains}

    def gains(self) -> torch.Tensor:
        """The file's gains of this node (2N + 3, 4): the learned parts, mix and steal-margin rows 0."""
        fixed = torch.zeros(2, FILL_FEATURES, dtype=self.volume_gains.dtype, device=self.volume_gains.device)
        return torch.cat([self.volume_gains, fixed, self.capacity_gains, self.level_gains])

    def loads(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[..., : self.num_nodes].to(self.volume_gains.dtype) * self.load_scale

    def _capacity(self, device: torch.device) -> torch.Tensor:
        return torch.tensor(self.capacity, dtype=torch.float64, device=device)

    def decision_logp(self, batch: dict[str, Any]) -> torch.Tensor:
        """Per task: the log-probability (B, K) of each decision under the table of its own levels and arrivals
        (0 on padding)."""
        levels = batch[TASK_LEVELS].to(torch.float64)
        b, k, n = levels.shape
        capacity = self._capacity(levels.device)
        arrivals = batch[TASK_ARRIVALS].to(torch.float64).reshape(-1)
        offered = arrivals / (capacity.sum() * self.heartbeat_services)
        migration, _ = fill_migration(
            self.gains().to(torch.float64),
            levels.reshape(-1, n),
            offered,
            self.node,
            capacity,
            self.heartbeat_services,
            self.horizon,
            self.mix,
        )
        taken = migration.gather(-1, batch[TASK_DEST].reshape(-1, 1).long())[:, 0]
        return torch.log(taken).reshape(b, k) * batch[TASK_MASK].to(torch.float64)

    def tables(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The migration tables (B, N) and one-hot stealing tables (B, N), float64."""
        obs = obs.to(torch.float64)
        levels = obs[..., : self.num_nodes]
        capacity = self._capacity(obs.device)
        migration, level = fill_migration(
            self.gains().to(torch.float64),
            levels,
            obs[..., self.offered_load_index],
            self.node,
            capacity,
            self.heartbeat_services,
            self.horizon,
            self.mix,
        )
        with torch.no_grad():
            victim = torch.argmax(level, dim=-1)  # the first of the highest u'_j
            own = level[:, self.node]
            steals = level.gather(-1, victim[:, None])[:, 0] > own  # margin 0: row 2 is not learned
            if not self.steal:
                steals = torch.zeros_like(steals)
            victim = torch.where(steals, victim, torch.full_like(victim, self.node))
            stealing = torch.zeros_like(level).scatter_(-1, victim[:, None], 1.0)
        return migration, stealing

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        if self.per_task:  # the gains themselves: the engine asks them at every arriving task
            gains = self.gains().detach().reshape(1, -1).to(torch.float32)
            return {Columns.ACTION_DIST_INPUTS: gains.expand(obs.shape[0], -1)}
        migration, stealing = self.tables(obs)
        return {Columns.ACTION_DIST_INPUTS: torch.cat([migration, stealing], -1).to(torch.float32)}

    def group_key(self) -> Hashable | None:
        """Per task, the nodes act together (their gains, stacked); with tables, each node alone."""
        return (type(self), self.action_space.shape, self.volume_gains.dtype) if self.per_task else None

    @classmethod
    def group_act(
        cls, modules: Sequence[MalcolmFillRLModule], observations: Sequence[torch.Tensor], explore: bool
    ) -> dict[str, torch.Tensor]:
        """Each node's gains (:meth:`_forward`, per task) repeated over its rows."""
        gains = torch.cat([m.gains().detach().reshape(1, -1) for m in modules]).to(torch.float32)
        counts = torch.tensor([len(o) for o in observations])
        return act_with_logits(modules[0], gains.repeat_interleave(counts, dim=0), explore)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if self.per_task:
            logp = self.decision_logp(batch)
        else:
            logp = torch.log(self.tables(batch[Columns.OBS])[0])
        return {MIGRATION_LOGP: logp, Columns.VF_PREDS: self.compute_values(batch)}

    def policy_file(self, context: PolicyFileContext) -> FillPolicy:
        """Every node's module as one ``fill`` file (:func:`dcgym.agents.malcolm.policy_file.fill_policy`)."""
        return fill_policy(context)
