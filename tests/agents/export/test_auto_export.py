"""AuTO's networks exported as mlp policy files (format version 2 heads) agree with the torch modules within 1e-5,
in the Python reader and in the C++ runtime; older readers' files stay version 1."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from dcgym.agents import policy_format as fmt
from dcgym.agents.auto import DDPGConfig, DDPGRLModule, PGConfig, PGRLModule
from dcgym.agents.auto.policy_file import lrla_policy, srla_policy
from dcgym.cpp_core import RuntimePolicy, flow_thresholds_from_action

LO, HI = 1460.0, 1460.0 * 65536  # flow_v0's default threshold_range_bytes


def _srla(seed: int = 0, num_obs: int = 700, k: int = 3) -> DDPGRLModule:
    torch.manual_seed(seed)
    module = DDPGRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (num_obs,), np.float32),
        action_space=gym.spaces.Box(-1.0, 1.0, (k,), np.float32),
        model_config=DDPGConfig()._model_config_auto_includes,
    )
    with torch.no_grad():  # the last layer starts near 0; spread it so the thresholds differ across observations
        module.actor[-2].weight.mul_(300.0)
    return module


def _lrla(seed: int = 0, hiddens=None) -> PGRLModule:
    torch.manual_seed(seed)
    config = PGConfig()._model_config_auto_includes | ({"hiddens": hiddens} if hiddens else {})
    return PGRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (136,), np.float32),
        action_space=gym.spaces.MultiDiscrete([4, 4, 3] * 11),
        model_config=config,
    )


def test_srla_thresholds_from_the_runtime_equal_the_environments_map_of_the_torch_action():
    module = _srla()
    data = fmt.to_bytes(srla_policy(module, (LO, HI)))
    assert data[8] == 2  # a version-2 head: version 2
    runtime = RuntimePolicy.from_bytes(data)
    assert runtime.head == "increasing"
    obs = np.random.default_rng(1).random((64, 700), dtype=np.float32)
    with torch.no_grad():
        action = module.forward_inference({Columns.OBS: torch.as_tensor(obs)})[Columns.ACTION_DIST_INPUTS].numpy()
    assert action.std(axis=0).min() > 0.05  # the actions vary, so the comparison means something
    expected = np.stack([flow_thresholds_from_action(a.astype(np.float64), LO, HI) for a in action])
    got = runtime.outputs(obs)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert (np.diff(got, axis=1) >= 0).all() and got.min() >= LO and got.max() <= HI
    # Without a range: the action itself, in a version-1 file every older reader takes.
    plain = fmt.to_bytes(srla_policy(module))
    assert plain[8] == 1
    np.testing.assert_allclose(RuntimePolicy.from_bytes(plain).outputs(obs), action, atol=1e-5)


def test_lrla_choices_from_the_runtime_equal_the_modules_greedy_action():
    module = _lrla(hiddens=[64, 64])
    policy = lrla_policy(module)
    assert policy.groups == [4, 4, 3] * 11
    data = fmt.to_bytes(policy)
    runtime = RuntimePolicy.from_bytes(data)
    assert runtime.head == "multi_categorical"
    obs = np.random.default_rng(2).random((50, 136), dtype=np.float32)
    with torch.no_grad():
        greedy = module.greedy(torch.as_tensor(obs)).numpy()
        logits = module.forward_inference({Columns.OBS: torch.as_tensor(obs)})[Columns.ACTION_DIST_INPUTS]
    probs = torch.cat([torch.softmax(g, -1) for g in torch.split(logits, module.groups, -1)], -1).numpy()
    np.testing.assert_allclose(runtime.outputs(obs), probs, atol=1e-5)
    np.testing.assert_array_equal(runtime.act(obs), greedy)
    np.testing.assert_array_equal(runtime.act(obs[0]), greedy[0])
    assert len(set(map(tuple, greedy[:, :3]))) > 1  # choices differ across observations


def test_the_papers_lrla_network_round_trips_through_the_python_reader():
    module = _lrla()  # 10 hidden layers of 300
    back = fmt.from_bytes(fmt.to_bytes(lrla_policy(module)))
    assert back.head == "multi_categorical" and back.groups == module.groups
    assert [layer.weight.shape for layer in back.networks[0]] == [(300, 136)] + [(300, 300)] * 9 + [(121, 300)]
    assert [layer.activation for layer in back.networks[0]] == ["relu"] * 10 + ["identity"]
    for layer, linear in zip(back.networks[0], [m for m in module.policy if isinstance(m, torch.nn.Linear)]):
        np.testing.assert_array_equal(layer.weight, linear.weight.detach().numpy())


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            fmt.MlpPolicy(1, [[fmt.Layer(np.ones((2, 1)), np.zeros(2))]], [0], "multi_categorical", groups=[1, 2]),
            "mlp.groups: got \\[1, 2\\]; expected sizes >= 1 summing to 2",
        ),
        (
            fmt.MlpPolicy(1, [[fmt.Layer(np.ones((2, 1)), np.zeros(2))]], [0], "increasing", np.zeros(2), np.ones(2)),
            "expected one range 0 < low <= high",
        ),
    ],
)
def test_the_writer_refuses_bad_new_heads_by_field(policy, message):
    with pytest.raises(ValueError, match=message):
        fmt.to_bytes(policy)


def test_a_version_1_file_may_not_use_a_version_2_head():
    data = bytearray(fmt.to_bytes(lrla_policy(_lrla(hiddens=[4]))))
    data[8] = 1
    body = bytes(data[:-4])
    import struct
    import zlib

    data = body + struct.pack("<I", zlib.crc32(body))
    with pytest.raises(ValueError, match="mlp.head: got 6; expected 0 .. 4 in a version-1 file"):
        fmt.from_bytes(data)
    with pytest.raises(ValueError, match="mlp.head: got 6; expected 0 .. 4"):
        RuntimePolicy.from_bytes(data)
