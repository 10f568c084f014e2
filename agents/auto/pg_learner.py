"""lRLA's update: REINFORCE with a baseline (AuTO §2.1 eq. 2, §4.2).

On a batch of T consecutive steps: v_t = Σ_{k >= t} γ^{k-t} r_k, the
Monte Carlo return to the end of the sampled stretch of the episode (RLlib's
``ComputeReturnsToGo``; flow_v0 never terminates, so the stretch ends where
sampling stopped and γ keeps the cut's effect small), and

    θ ← θ + α Σ_t ∇θ log π_θ(a_t | s_t) (v_t - b),

with b "the cumulative average of experienced rewards" (§2.1): the mean
of every return v seen so far, this batch's included. The learner hands
Adam the surrogate loss L = -(1/T) Σ_t log π_θ(a_t | s_t) (v_t - b), whose
gradient is the update's direction divided by T (checked against a plain
torch recomputation in tests/agents/auto/test_pg.py). For a
multi-categorical action, log π is the sum over its categoricals (each long
flow's level, rate cap and path). The baseline's running count and mean are
learner state, saved and restored with checkpoints.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.connectors.learner import ComputeReturnsToGo
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.typing import ModuleID, StateDict

__all__ = ["BASELINE_STATE", "PGTorchLearner", "reinforce_loss"]

BASELINE_STATE = "reinforce_baseline"
"""Key of the baselines (per module: count and mean of the returns seen) in ``Learner.get_state()``."""


def reinforce_loss(logp: torch.Tensor, returns: torch.Tensor, baseline: float) -> torch.Tensor:
    """-(1/T) Σ_t logp_t (v_t - b): the surrogate whose gradient is minus eq. (2)'s direction over T."""
    return -(logp * (returns - baseline)).mean()


class PGTorchLearner(TorchLearner):
    """REINFORCE with the cumulative-average baseline; see the module docstring."""

    def build(self) -> None:
        super().build()
        if self.config.add_default_connectors_to_learner_pipeline:
            self._learner_connector.prepend(ComputeReturnsToGo(gamma=self.config.gamma))
        self._baselines: dict[ModuleID, tuple[int, float]] = {}

    def baseline(self, module_id: ModuleID, returns: torch.Tensor) -> float:
        """Fold ``returns`` into the module's running mean and return the new mean (0 with no returns yet)."""
        count, mean = self._baselines.get(module_id, (0, 0.0))
        n = int(returns.numel())
        if n:
            total = count + n
            mean = mean + (float(returns.double().sum()) - n * mean) / total
            count = total
        self._baselines[module_id] = (count, mean)
        return mean

    def compute_loss_for_module(self, *, module_id: ModuleID, config, batch: dict[str, Any], fwd_out: dict[str, Any]):
        module = self.module[module_id].unwrapped()
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        logp = dist.logp(batch[Columns.ACTIONS])
        returns = batch[Columns.RETURNS_TO_GO].to(logp.dtype)
        b = self.baseline(module_id, returns) if config.use_baseline else 0.0
        loss = reinforce_loss(logp, returns, b)
        log = self.metrics.log_value
        log((module_id, "policy_loss"), loss.item(), window=1)
        log((module_id, "baseline"), b, window=1)
        log((module_id, "return_mean"), returns.mean().item(), window=1)
        log((module_id, "entropy"), dist.entropy().mean().item(), window=1)
        return loss

    def get_state(self, components=None, *, not_components=None, **kwargs) -> StateDict:
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._check_component(BASELINE_STATE, components, not_components):
            state[BASELINE_STATE] = {mid: [c, m] for mid, (c, m) in self._baselines.items()}
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        own = state.get(BASELINE_STATE)
        if own is not None:
            self._baselines = {mid: (int(c), float(m)) for mid, (c, m) in own.items()}
