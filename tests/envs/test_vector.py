"""The batched-environment base every family shares: shared arrays, seeds, copies, Gymnasium's batched spaces."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dcgym.envs  # noqa: F401  (registers the ids)
from dcgym.envs.colo.vector import ColoVectorEnv
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.flow.vector import FlowVectorEnv
from dcgym.envs.rack.vector import RackVectorEnv
from dcgym.envs.registration import GYMNASIUM_IDS

RACK = {"scenario": "malcolm_homog_exp", "max_steps": 3}
FLOW = {"scenario": "auto_websearch", "max_steps": 3}
VECTORS = {
    "rack": lambda b, **kw: RackVectorEnv(b, **RACK, **kw),
    "flow": lambda b, **kw: FlowVectorEnv(b, **FLOW, **kw),
    "colo": lambda b, **kw: ColoVectorEnv(b, scenario="osml_case_a", max_steps=3, **kw),
}


def _actions(family: str, rng: np.random.Generator, b: int):
    if family == "rack":
        return rng.uniform(-10, 10, (b, 10, 20))
    if family == "flow":
        return {"srla": rng.uniform(-1, 1, (b, 3)), "lrla": rng.integers(0, np.tile([4, 4, 3], 11), (b, 33))}
    return rng.integers(0, 49, (b, 3))


def _arrays(result) -> list[np.ndarray]:
    out = []
    for value in result:
        out.extend(value[key] for key in sorted(value)) if isinstance(value, dict) else out.append(value)
    return out


@pytest.mark.parametrize("family", ["rack", "flow"])
def test_without_copies_every_step_returns_the_same_arrays_with_the_same_numbers(family):
    shared, copied = VECTORS[family](2, copy=False), VECTORS[family](2)
    rng = np.random.default_rng(3)
    for got, want in zip(_arrays(shared.reset(seed=4)), _arrays(copied.reset(seed=4))):
        np.testing.assert_array_equal(got, want)
    shared_before = copied_before = None
    for _ in range(7):  # two autoresets
        actions = _actions(family, rng, 2)
        got, want = shared.step(actions), copied.step(actions)
        for g, w in zip(_arrays(got), _arrays(want)):
            np.testing.assert_array_equal(g, w)
        shared_now, copied_now = _arrays(got[:2]), _arrays(want[:2])  # observations and rewards
        if shared_before is not None:
            assert all(a is b for a, b in zip(shared_now, shared_before))  # written in place
            assert not any(np.shares_memory(a, b) for a, b in zip(copied_now, copied_before))
        shared_before, copied_before = shared_now, copied_now


@pytest.mark.parametrize("family", VECTORS)
@pytest.mark.parametrize(
    "seed,field,allowed",
    [
        ("x", "seed", "an integer in [0, 18446744073709551616), or a list of 2 such seeds (one per copy)"),
        ([1, 2, 3], "seed", "an integer in [0, 18446744073709551616), or a list of 2 such seeds (one per copy)"),
        ([1, -1], "seed.1", "an integer in [0, 18446744073709551616)"),
        (2**64 - 1, "seed", "an integer in [0, 18446744073709551616)"),  # copy 1 would get 2^64
    ],
)
def test_bad_seeds_are_refused_naming_the_seed(family, seed, field, allowed):
    with pytest.raises(InvalidConfigError) as error:
        VECTORS[family](2).reset(seed=seed)
    assert (error.value.field, error.value.allowed) == (field, allowed)


@pytest.mark.parametrize("family", VECTORS)
@pytest.mark.parametrize("num_envs", [0, -1, 1.5, True, "2"])
def test_the_number_of_copies_is_checked(family, num_envs):
    with pytest.raises(InvalidConfigError, match="num_envs: got .*; allowed: a positive integer"):
        VECTORS[family](num_envs)


@pytest.mark.parametrize("family", VECTORS)
def test_copy_k_seeded_with_a_list_is_the_copy_seeded_with_s_plus_k(family):
    by_list, by_int = VECTORS[family](2), VECTORS[family](2)
    for want, got in zip(_arrays(by_int.reset(seed=8)), _arrays(by_list.reset(seed=[8, 9]))):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("env_id", [i for i, spec in GYMNASIUM_IDS.items() if "vector_entry_point" in spec])
def test_batched_spaces_are_gymnasiums_batch_space(env_id):
    family = {"dcgym/Rack": "malcolm_homog_exp", "dcgym/Colo": "osml_case_a", "dcgym/Flow": "auto_websearch"}
    kwargs = {"scenario": family[env_id[:10]]}
    native = gymnasium.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", **kwargs)
    synced = gymnasium.make_vec(env_id, num_envs=3, vectorization_mode="sync", **kwargs)
    assert native.observation_space == synced.observation_space
    assert native.action_space == synced.action_space
    native.close()
    synced.close()
