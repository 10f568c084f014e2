"""One seeding rule for every environment: a bad seed is one InvalidConfigError; seeded episodes repeat."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import pytest

import dcgym.envs  # noqa: F401  (registers the ids)
from dcgym.envs import colo_v0, flow_v0, lb_central_v0, lb_v0, rack_v0
from dcgym.envs.error import InvalidConfigError

ENVS: dict[str, Callable[[], Any]] = {
    "rack_v0": lambda: rack_v0.parallel_env(scenario="malcolm_homog_exp"),
    "lb_v0": lambda: lb_v0.parallel_env(),
    "lb_central_v0": lambda: lb_central_v0.parallel_env(),
    "flow_v0": lambda: flow_v0.parallel_env(),
    "colo_v0": lambda: colo_v0.parallel_env(),
    "RackCentral-v0": lambda: gymnasium.make("dcgym/RackCentral-v0", scenario="malcolm_homog_exp"),
    "RackDispatch-v0": lambda: gymnasium.make("dcgym/RackDispatch-v0", scenario="malcolm_homog_exp"),
    "FlowSrla-v0": lambda: gymnasium.make("dcgym/FlowSrla-v0"),
    "FlowLrla-v0": lambda: gymnasium.make("dcgym/FlowLrla-v0"),
    "ColoCentral-v0": lambda: gymnasium.make("dcgym/ColoCentral-v0"),
}
ALLOWED = "an integer in [0, 18446744073709551616)"


@pytest.mark.parametrize("name", ENVS)
@pytest.mark.parametrize("seed", ["x", -1, 1.5, 2**64, True])
def test_a_seed_that_is_not_a_seed_is_one_invalid_config_error(name, seed):
    env = ENVS[name]()
    with pytest.raises(InvalidConfigError) as error:
        env.reset(seed=seed)
    assert (error.value.field, error.value.value, error.value.allowed) == ("seed", seed, ALLOWED)
    env.close()


@pytest.mark.parametrize("name", ENVS)
def test_the_engine_seed_is_the_seed_given_then_drawn_from_its_generator(name):
    env = ENVS[name]()
    raw = env.unwrapped
    seeds = []
    for seed in (12, None, None, 12, None):
        env.reset(seed=seed)
        seeds.append(raw.engine_seed)
    assert seeds[0] == 12 and seeds[3:] == seeds[:2] and len(set(seeds[:3])) == 3
    env.close()
