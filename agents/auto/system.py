"""AuTO's two agents as the registry sees them (:mod:`dcgym.agents.algorithms`): each trained alone on flow_v0."""

from __future__ import annotations

from dcgym.agents.rl.spec import AlgorithmSpec, LearningSystem, OneAgentForm

__all__ = ["AUTO", "AUTO_LRLA", "AUTO_SRLA"]

AUTO_SRLA = AlgorithmSpec(
    "auto_srla",
    "AuTO's sRLA: DDPG for the MLFQ thresholds, lRLA held by MLFQ's rules (hyperparameters: DDPGConfig.training)",
    "dcgym.agents.auto.ddpg:build_srla",
    envs=("flow_v0",),
    one_agent_forms={"flow_v0": OneAgentForm("srla", "dcgym/FlowSrla-v0")},
)
AUTO_LRLA = AlgorithmSpec(
    "auto_lrla",
    "AuTO's lRLA: REINFORCE for the long flows, thresholds held at the scenario's (hyperparameters: PGConfig.training)",
    "dcgym.agents.auto.pg:build_lrla",
    envs=("flow_v0",),
    one_agent_forms={"flow_v0": OneAgentForm("lrla", "dcgym/FlowLrla-v0")},
)
AUTO = LearningSystem(
    "auto", "AuTO (SIGCOMM 2018): the sRLA and lRLA agents of its central system", (AUTO_SRLA, AUTO_LRLA)
)
