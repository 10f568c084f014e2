"""dcgym's C++ discrete-event engine.

The compiled module ``dcgym.cpp_core._engine`` is private; this package
re-exports what users need. Configs are the plain dicts produced by
:mod:`dcgym.envs.scenario`; build them from a scenario file rather than by hand.

Facts the engine defines once and the Python side reads from here: each
simulator's ``limits`` (the largest value of each bounded config field, which
the scenario schemas take as their bounds), :data:`MAX_LOAD`,
:data:`RACK_REWARDS` (the rack game's reward names) and the colo config's
field names (``ColoSim.platform_fields``, ``ColoSim.service_fields``).
"""

from dcgym.cpp_core._engine import (
    AutoAgents,
    ColoSim,
    Distribution,
    FillController,
    FillLearner,
    FlowSim,
    LbSim,
    LogHistogram,
    MalcolmLearner,
    RackController,
    RackSim,
    RuntimePolicy,
    TaskFill,
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
    step_lb_batch,
    step_rack_batch,
    step_rack_game,
)
from dcgym.cpp_core._engine import fill_features as _fill_features
from dcgym.cpp_core._engine import max_load as _max_load
from dcgym.cpp_core._engine import rack_rewards as _rack_rewards

FILL_FEATURES: int = _fill_features
"""The features of a fill policy's gains (runtime/fill.hpp's kFillFeatures): ``[1, min(rho, 2), tanh(mean u),
tanh(u_i)]``."""

MAX_LOAD: float = _max_load
"""The most offered load a rack or lb config takes, as a fraction of its capacity."""

RACK_REWARDS: tuple[str, ...] = _rack_rewards
"""The rack game's team rewards, by name (rack/game.hpp): the environments' ``reward`` argument."""

__all__ = [
    "FILL_FEATURES",
    "MAX_LOAD",
    "RACK_REWARDS",
    "AutoAgents",
    "ColoSim",
    "Distribution",
    "FlowSim",
    "LbSim",
    "LogHistogram",
    "MalcolmLearner",
    "FillController",
    "TaskFill",
    "FillLearner",
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
    "step_lb_batch",
    "step_rack_batch",
    "step_rack_game",
]
