"""The multi-LB learners as the registry sees them (:mod:`dcgym.agents.algorithms`)."""

from __future__ import annotations

from dcgym.agents.marl_lb.hyperparameters import (
    CentrLbHyperparameters,
    DistrLbHyperparameters,
    DistrLbPpoHyperparameters,
    QmixLbHyperparameters,
    RlbSacHyperparameters,
)
from dcgym.agents.rl.baselines import PPO
from dcgym.agents.rl.spec import AlgorithmSpec, LearningSystem

__all__ = ["MARL_LB"]

_MARL_LB = "dcgym.agents.marl_lb"

MARL_LB = LearningSystem(
    "marl_lb",
    "multi-agent RL for network load balancing (Yao et al., CIKM 2022) and its baselines",
    (
        AlgorithmSpec(
            "distr_lb",
            "Distr-LB, the paper's method: an independent Q-learner per LB, per-server weight heads",
            f"{_MARL_LB}.qmix:build_distr_lb",
            DistrLbHyperparameters,
            envs=("lb_v0",),
        ),
        AlgorithmSpec(
            "centr_lb",
            "Centr-LB: the same Q-learner as one agent over every LB",
            f"{_MARL_LB}.qmix:build_centr_lb",
            CentrLbHyperparameters,
            envs=("lb_central_v0",),
        ),
        AlgorithmSpec(
            "qmix_lb",
            "QMIX-LB: per-LB recurrent Q-networks mixed by a monotone hypernetwork",
            f"{_MARL_LB}.qmix:build_qmix_lb",
            QmixLbHyperparameters,
            envs=("lb_v0",),
        ),
        AlgorithmSpec(
            "rlb_sac",
            "RLB-SAC (ref. [40]): RLlib's SAC run by every LB, continuous weights",
            f"{_MARL_LB}.builders:build_rlb_sac",
            RlbSacHyperparameters,
            envs=("lb_v0",),
            policy_file=PPO.policy_file,
        ),
        AlgorithmSpec(
            "distr_lb_ppo",
            "Distr-LB on RLlib's PPO: one independent PPO learner per LB (learns too slowly here)",
            f"{_MARL_LB}.builders:build_distr_lb_ppo",
            DistrLbPpoHyperparameters,
            envs=("lb_v0",),
            policy_file=PPO.policy_file,
        ),
    ),
)
