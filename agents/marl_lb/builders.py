"""The multi-LB learners built on RLlib's own algorithms: RLB-SAC, and Distr-LB's PPO variant.

- **RLB-SAC** (``rlb_sac``, ref. [40], the authors' single-LB SAC run by
  every LB): RLlib's SAC through the generic builder, continuous weights
  (``action_type: continuous``), with the paper's hyperparameters as defaults
  (:class:`~dcgym.agents.marl_lb.hyperparameters.RlbSacHyperparameters`);
  Jain's index is its reward in the paper.
- **Distr-LB on PPO** (``distr_lb_ppo``): one independent RLlib PPO learner
  per LB (no parameter sharing), per-server categorical heads
  (``MultiDiscrete([3] * N)``, PPO's multi-categorical). RLlib's SAC takes
  only a single ``Discrete`` or a ``Box`` action, so discrete per-server
  heads would need one categorical over 3^N joint actions; PPO handles them
  as such. Kept as the on-policy variant: it learns too slowly here
  (docs/results/multilb.md), and ``distr_lb`` is the replay-based
  independent Q-learner of :mod:`dcgym.agents.marl_lb.qmix`.

Distr-LB, Centr-LB and QMIX-LB are in :mod:`dcgym.agents.marl_lb.qmix`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gymnasium.spaces import MultiDiscrete

from dcgym.agents.rl.baselines import build_ppo, build_sac
from dcgym.agents.rl.envs import make_env
from dcgym.agents.rl.spec import TrainingRun
from dcgym.agents.rl.wiring import require_continuous
from dcgym.envs.error import InvalidConfigError

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

__all__ = ["build_distr_lb_ppo", "build_rlb_sac", "require_discrete"]


def require_discrete(experiment: TrainingRun, env_config: dict[str, Any], algorithm: str) -> None:
    """Raise InvalidConfigError naming ``env_args`` unless every agent picks weight levels (MultiDiscrete)."""
    probe = make_env(experiment.env, env_config)
    agent = next((a for a in probe.possible_agents if not isinstance(probe.action_space(a), MultiDiscrete)), None)
    if agent is not None:
        raise InvalidConfigError(
            "env_args",
            dict(env_config),
            f"arguments that give {experiment.env} discrete weight levels (action_type discrete): {algorithm} "
            f"has one head per server, and {agent} acts in {probe.action_space(agent)}",
        )


def build_distr_lb_ppo(experiment: TrainingRun, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Distr-LB on RLlib's PPO, one module per LB, on lb_v0's discrete weight levels."""
    require_discrete(experiment, env_config, "distr_lb_ppo")
    return build_ppo(experiment, env_config)


def build_rlb_sac(experiment: TrainingRun, env_config: dict[str, Any]) -> AlgorithmConfig:
    """RLB-SAC: the generic SAC builder, one module per LB, with the paper's hyperparameters as defaults."""
    require_continuous(experiment, env_config, "rlb_sac")
    return build_sac(experiment, env_config)
