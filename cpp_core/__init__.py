"""dcgym's C++ discrete-event engine.

The compiled module ``dcgym.cpp_core._engine`` is private; this package
re-exports what users need. Configs are the plain dicts produced by
:mod:`dcgym.envs.scenario`; build them from a scenario file rather than by hand.
"""

from dcgym.cpp_core._engine import (
    AutoAgents,
    ColoSim,
    Distribution,
    FlowSim,
    LbSim,
    LogHistogram,
    MalcolmLearner,
    RackController,
    RackSim,
    RuntimePolicy,
    check_colo_config,
    check_flow_config,
    check_lb_config,
    check_rack_config,
    flow_thresholds_from_action,
    flow_workloads,
    observe_flow_batch,
    rack_imbalance,
    rack_reward_costs,
    run_auto_policies,
    step_auto_batch,
    step_colo_batch,
    step_flow_batch,
    step_rack_batch,
    step_rack_game,
)

MultistageSim = LbSim
"""The lb family's engine under its earlier name (code written against it keeps running)."""
check_multistage_config = check_lb_config
"""check_lb_config under its earlier name."""

__all__ = [
    "AutoAgents",
    "ColoSim",
    "Distribution",
    "FlowSim",
    "LogHistogram",
    "MalcolmLearner",
    "LbSim",
    "RackController",
    "RackSim",
    "RuntimePolicy",
    "check_colo_config",
    "check_flow_config",
    "check_lb_config",
    "check_rack_config",
    "flow_thresholds_from_action",
    "flow_workloads",
    "observe_flow_batch",
    "rack_imbalance",
    "rack_reward_costs",
    "run_auto_policies",
    "step_auto_batch",
    "step_colo_batch",
    "step_flow_batch",
    "step_rack_batch",
    "step_rack_game",
]
