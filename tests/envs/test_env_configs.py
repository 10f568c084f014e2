"""Every family's environment arguments are a pydantic config: unknown names and bad values are one line each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dcgym.envs import colo_v0, flow_v0, lb_central_v0, lb_v0, rack_v0
from dcgym.envs.colo.colo_v0 import ColoEnvConfig
from dcgym.envs.colo.vector import ColoVectorEnv
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.flow.game import FlowEnvConfig
from dcgym.envs.flow.vector import FlowVectorEnv
from dcgym.envs.lb.lb_v0 import LbEnvConfig
from dcgym.envs.rack.game import RackEnvConfig
from dcgym.envs.rack.vector import RackVectorEnv

ENVS: dict[str, tuple[Callable[..., Any], type]] = {
    "rack_v0": (rack_v0.parallel_env, RackEnvConfig),
    "lb_v0": (lb_v0.parallel_env, LbEnvConfig),
    "lb_central_v0": (lb_central_v0.parallel_env, LbEnvConfig),
    "flow_v0": (flow_v0.parallel_env, FlowEnvConfig),
    "colo_v0": (colo_v0.parallel_env, ColoEnvConfig),
    "RackVectorEnv": (lambda **kw: RackVectorEnv(2, **kw), RackEnvConfig),
    "FlowVectorEnv": (lambda **kw: FlowVectorEnv(2, **kw), FlowEnvConfig),
    "ColoVectorEnv": (lambda **kw: ColoVectorEnv(2, **kw), ColoEnvConfig),
}


@pytest.mark.parametrize("name", ENVS)
def test_an_unknown_argument_is_refused_naming_the_allowed_ones(name):
    make, config = ENVS[name]
    with pytest.raises(InvalidConfigError) as error:
        make(max_step=5)
    assert (error.value.field, error.value.suggestion) == ("max_step", "max_steps")
    assert error.value.allowed == "one of the fields " + ", ".join(config.model_fields)


@pytest.mark.parametrize(
    "make,kwargs,message",
    [
        (
            lb_v0.parallel_env,
            {"dispatch": "sde"},
            'dispatch: got "sde"; did you mean "sed"\\?; allowed: one of weights, sed',
        ),
        (lb_v0.parallel_env, {"max_steps": 2.5}, "max_steps: got 2.5; allowed: a positive integer"),
        (lb_v0.parallel_env, {"overrides": "lbs=3"}, 'overrides: got "lbs=3"; allowed: a mapping or null'),
        (lb_central_v0.parallel_env, {"reward": "jian"}, 'reward: got "jian"; did you mean "jain"'),
        (colo_v0.parallel_env, {"render_mode": "rgb_array"}, 'render_mode: got "rgb_array"; allowed: one of ansi'),
        (colo_v0.parallel_env, {"start": "even"}, 'start: got "even"; allowed: equal, or \\[cores, ways\\]'),
        (colo_v0.parallel_env, {"max_steps": True}, "max_steps: got true; allowed: a positive integer"),
    ],
)
def test_bad_values_of_lb_and_colo_are_one_line_naming_the_field(make, kwargs, message):
    with pytest.raises(InvalidConfigError, match="^" + message) as error:
        make(**kwargs)
    assert "\n" not in str(error.value)


def test_lb_and_colo_defaults_are_the_documented_ones():
    assert LbEnvConfig().model_dump() == {
        "scenario": "lb_sim",
        "load": None,
        "load_range": None,
        "reward": "vbf",
        "action_type": "discrete",
        "load_estimate": "fd_decayed",
        "max_steps": None,
        "overrides": None,
        "render_mode": None,
        "dispatch": "weights",
    }
    assert ColoEnvConfig().model_dump() == {
        "scenario": "osml_case_a",
        "mix": 0,
        "interval_s": 1.0,
        "max_steps": None,
        "overrides": None,
        "render_mode": None,
        "start": "equal",
        "reward": "qos",
    }
    env = colo_v0.parallel_env(start=[2, 1], max_steps=7)
    assert (env.start, env.max_steps, env.interval_s, env.mix) == ((2, 1), 7, 1.0, 0)
