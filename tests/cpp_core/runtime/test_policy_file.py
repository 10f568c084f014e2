"""The policy file: Python writer <-> C++ loader round trips, one refusal per field, fuzzing, the deployment example.

The C++ loader is ``cpp_core/include/dcgym/runtime/policy_file.hpp`` through
``dcgym.cpp_core._engine.RuntimePolicy``; the layout and offsets used here
are docs/policy_format.md's.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from dcgym.agents import policy_format as fmt
from dcgym.agents.malcolm.basis import features
from dcgym.agents.policy_format import InputSpec, Layer, LinearPairPolicy, LinearValuePolicy, MlpPolicy
from dcgym.cpp_core._engine import RuntimePolicy

ROOT = Path(__file__).resolve().parents[3]
BASES = ["raw", "sort", "customized", "quadratic"]


# ------------------------------------------------------------------------------ policies and references


def linear_pair(
    n: int = 3,
    seed: int = 0,
    *,
    critic: str | None = "customized",
    max_logit: float = 0.0,
    basis: str = "sort",
    weight_scale: float = 1.0,
) -> LinearPairPolicy:
    rng = np.random.default_rng(seed)
    spec = InputSpec(n, basis, scale=0.1 / 75.0, offset=0.0, lo=0.0, hi=10.0)
    f = spec.num_features
    fc = fmt.num_features(critic, n) if critic else 0
    return LinearPairPolicy(
        spec,
        weight_scale * rng.uniform(-1, 1, (n, n, f)),
        weight_scale * rng.uniform(-1, 1, (n, n, f)),
        critic,
        rng.uniform(-1, 1, (n, fc)) if critic else None,
        max_logit,
    )


def mlp(
    seed: int = 0, head: str = "unsquash", activations=("tanh", "identity"), widths=(4, 5, 2), agent_network=(0, 1, 1)
) -> MlpPolicy:
    rng = np.random.default_rng(seed)
    networks = [
        [
            Layer(rng.normal(0, 1, (widths[i + 1], widths[i])), rng.normal(0, 1, widths[i + 1]), activations[i])
            for i in range(len(widths) - 1)
        ]
        for _ in range(max(agent_network) + 1)
    ]
    k = widths[-1]
    bounded = head in ("unsquash", "tanh")
    return MlpPolicy(
        widths[0],
        networks,
        list(agent_network),
        head,
        np.linspace(-1, 0, k) if bounded else None,
        np.linspace(1, 5, k) if bounded else None,
    )


def linear_value(seed: int = 0, basis: str = "quadratic", agents: int = 2, n: int = 4) -> LinearValuePolicy:
    spec = InputSpec(n, basis, scale=0.02, offset=-0.5, lo=-1.0, hi=3.0)
    return LinearValuePolicy(spec, np.random.default_rng(seed).uniform(-1, 1, (agents, spec.num_features)))


def normalise(spec: InputSpec, raw: np.ndarray) -> torch.Tensor:
    x = np.clip(raw.astype(np.float32) * np.float32(spec.scale) + np.float32(spec.offset), spec.lo, spec.hi)
    return torch.from_numpy(x.astype(np.float32))


def reference_probabilities(p: LinearPairPolicy, node: int, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """softmax(W φ(x)), each half centred and clipped to ±max_logit first when max_logit > 0 (float64)."""
    phi = features(p.input.basis, normalise(p.input, raw)).double().numpy()
    out = []
    for w in (p.migration[node], p.stealing[node]):
        z = np.asarray(w) @ phi
        if p.max_logit > 0:
            z = np.clip(z - 0.5 * (z.max() + z.min()), -p.max_logit, p.max_logit)
        e = np.exp(z - z.max())
        out.append(e / e.sum())
    return out[0], out[1]


def reference_value(spec: InputSpec, weights: np.ndarray, raw: np.ndarray, basis: str | None = None) -> float:
    return float(features(basis or spec.basis, normalise(spec, raw)).double().numpy() @ weights)


_NUMPY_ACTIVATIONS = {
    "identity": lambda z: z,
    "relu": lambda z: np.maximum(z, 0),
    "tanh": np.tanh,
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
    "elu": lambda z: np.where(z > 0, z, np.expm1(z)),
    "silu": lambda z: z / (1 + np.exp(-z)),
}


def reference_outputs(p: MlpPolicy, agent: int, obs: np.ndarray) -> np.ndarray:
    y = obs.astype(np.float64)
    for layer in p.networks[p.agent_network[agent]]:
        y = _NUMPY_ACTIVATIONS[layer.activation](layer.weight @ y + layer.bias)
    if p.head == "softmax":
        e = np.exp(y - y.max())
        return e / e.sum()
    if p.head in ("unsquash", "tanh"):
        u = np.tanh(y) if p.head == "tanh" else y
        return np.clip(p.low + (u + 1) * (p.high - p.low) / 2, p.low, p.high)
    return y


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("basis", BASES)
@pytest.mark.parametrize("critic", [None, "customized", "raw"])
def test_linear_pair_round_trip_matches_the_reference(basis, critic):
    p = linear_pair(4, seed=3, critic=critic, basis=basis)
    data = fmt.to_bytes(p)
    runtime = RuntimePolicy.from_bytes(data)
    assert (runtime.kind, runtime.num_agents, runtime.num_inputs) == ("linear_pair", 4, 4)
    raw = np.random.default_rng(1).uniform(0, 1500, (50, 4))  # beyond hi / scale = 7500 us too, clipped
    raw[0] = [9000.0, 20.0, 20.0, 0.0]  # a tie and a clipped load
    for node in range(4):
        migration, stealing = runtime.probabilities(node, raw)
        for row in range(len(raw)):
            want_m, want_s = reference_probabilities(p, node, raw[row])
            np.testing.assert_allclose(migration[row], want_m, atol=1e-6)
            np.testing.assert_allclose(stealing[row], want_s, atol=1e-6)
            if critic:
                assert runtime.value(node, raw[row]) == pytest.approx(
                    reference_value(p.input, p.critic[node], raw[row], critic), abs=1e-4, rel=1e-5
                )
    if critic is None:
        with pytest.raises(ValueError, match="no critic"):
            runtime.value(0, raw[0])
    back = fmt.from_bytes(data)  # the Python reader reads what the writer wrote
    assert (back.input.num_loads, back.input.basis, back.input.hi, back.critic_basis, back.max_logit) == (
        4,
        basis,
        10.0,
        critic,
        0.0,
    )
    assert back.input.scale == np.float32(p.input.scale)  # stored as float32
    np.testing.assert_array_equal(back.stealing, p.stealing.astype(np.float32))


def test_max_logit_centres_and_clips_each_half_as_rack_v0_does():
    p = linear_pair(3, seed=5, max_logit=2.0, weight_scale=30.0)  # logits spread far beyond ±2
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(p))
    raw = np.array([100.0, 900.0, 400.0])
    migration, _ = runtime.probabilities(1, raw)
    np.testing.assert_allclose(migration, reference_probabilities(p, 1, raw)[0], atol=1e-6)
    assert migration.max() / migration.min() == pytest.approx(np.exp(4.0), rel=1e-4)  # clipped to ±2
    unclipped = RuntimePolicy.from_bytes(fmt.to_bytes(linear_pair(3, seed=5, weight_scale=30.0)))
    assert unclipped.probabilities(1, raw)[0].max() / unclipped.probabilities(1, raw)[0].min() > 1e6


@pytest.mark.parametrize("head", ["identity", "unsquash", "tanh", "softmax", "argmax"])
def test_mlp_round_trip_matches_the_reference_for_every_head(head):
    p = mlp(seed=2, head=head, activations=("relu", "tanh", "identity"), widths=(4, 6, 5, 3))
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(p))
    assert (runtime.kind, runtime.num_agents, runtime.num_inputs, runtime.head) == ("mlp", 3, 4, head)
    obs = np.random.default_rng(0).normal(0, 2, (40, 4))
    for agent in range(3):
        outputs = runtime.outputs(obs, agent)
        want = np.stack([reference_outputs(p, agent, o) for o in obs])
        np.testing.assert_allclose(outputs, want, atol=1e-5, rtol=1e-5)
        actions = runtime.act(obs, agent)
        if head in ("softmax", "argmax"):
            np.testing.assert_array_equal(actions, want.argmax(axis=1))
            assert runtime.act(obs[0], agent) == int(want[0].argmax())
        else:
            np.testing.assert_allclose(actions, outputs)
    # agents 1 and 2 share network 1; agent 0 has its own
    np.testing.assert_array_equal(runtime.outputs(obs, 1), runtime.outputs(obs, 2))
    assert not np.allclose(runtime.outputs(obs, 0), runtime.outputs(obs, 1))


@pytest.mark.parametrize("activation", list(fmt.ACTIVATIONS))
def test_every_activation(activation):
    p = mlp(seed=4, head="identity", activations=(activation, "identity"), agent_network=(0,))
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(p))
    obs = np.random.default_rng(1).normal(0, 2, (30, 4))
    np.testing.assert_allclose(
        runtime.outputs(obs), np.stack([reference_outputs(p, 0, o) for o in obs]), atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize("basis", BASES)
def test_linear_value_round_trip(basis, tmp_path):
    p = linear_value(seed=1, basis=basis, agents=3)
    path = fmt.write_policy(p, tmp_path / "v.dcpol")
    runtime = RuntimePolicy.from_file(str(path))
    assert (runtime.kind, runtime.num_agents, runtime.num_inputs) == ("linear_value", 3, 4)
    raw = np.random.default_rng(2).uniform(0, 250, (20, 4))
    for agent in range(3):
        np.testing.assert_allclose(
            runtime.value(agent, raw),
            [reference_value(p.input, p.weights[agent], r) for r in raw],
            atol=1e-4,
            rtol=1e-5,
        )
    np.testing.assert_array_equal(fmt.read_policy(path).weights, p.weights.astype(np.float32))


def test_evaluation_refuses_wrong_kinds_agents_and_shapes():
    pair = RuntimePolicy.from_bytes(fmt.to_bytes(linear_pair(3)))
    net = RuntimePolicy.from_bytes(fmt.to_bytes(mlp()))
    cases = [
        (lambda: pair.probabilities(3, np.zeros(3)), "node: got 3; expected 0 .. 2"),
        (lambda: pair.probabilities(0, np.zeros(4)), r"raw_loads: got shape \(4\); expected \(3,\) or \(B, 3\)"),
        (lambda: pair.act(np.zeros(3)), "act: the policy is linear_pair; expected mlp"),
        (lambda: net.probabilities(0, np.zeros(4)), "probabilities: the policy is mlp; expected linear_pair"),
        (lambda: net.act(np.zeros(4), 3), "agent: got 3; expected 0 .. 2"),
        (lambda: net.value(0, np.zeros(4)), "value: the policy is mlp"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


# ------------------------------------------------------------------------------ one refusal per field


def crc(data: bytes) -> bytes:
    """``data`` with its last 4 bytes replaced by the CRC32 of the rest."""
    return data[:-4] + struct.pack("<I", zlib.crc32(data[:-4]))


def patch(data: bytes, offset: int, fmt_: str, value, *, fix_crc: bool = True) -> bytes:
    b = bytearray(data)
    struct.pack_into("<" + fmt_, b, offset, value)
    return crc(bytes(b)) if fix_crc else bytes(b)


def refused(data: bytes) -> str:
    with pytest.raises(ValueError) as info:
        RuntimePolicy.from_bytes(data)
    return str(info.value)


# linear_pair with N = 3, sort actors (F_a = 7), customized critic (F_c = 16): docs/policy_format.md's offsets
PAIR = fmt.to_bytes(linear_pair(3, critic="customized", max_logit=10.0))
NODE = (2 * 3 * 7 + 16) * 4  # bytes per node
W0 = 64  # node 0's migration weights


def test_header_fields_are_each_refused_by_name():
    cases = {
        "magic": (
            b"PK\x03\x04" + PAIR[4:],
            "header.magic: got 50 4b 03 04 4d 50 4f 4c; expected 44 43 47 59 4d 50 4f 4c",
        ),
        "version": (patch(PAIR, 8, "I", 7), "header.version: got 7; expected 1 .. 6"),
        "kind": (patch(PAIR, 12, "I", 4), "header.kind: got 4; expected 1 .. 3"),
        "kind 0": (patch(PAIR, 12, "I", 0), "header.kind: got 0; expected 1 .. 3"),
        "agents 0": (patch(PAIR, 16, "I", 0), "header.num_agents: got 0; expected 1 .. 65536"),
        "agents too many": (patch(PAIR, 16, "I", 70000), "header.num_agents: got 70000; expected 1 .. 65536"),
        "agents != nodes": (patch(PAIR, 16, "I", 2), r"header.num_agents: got 2; expected 3 \(input.num_loads"),
        "flags": (patch(PAIR, 20, "I", 1), "header.flags: got 1; expected 0"),
        "body_size large": (patch(PAIR, 24, "Q", len(PAIR)), "file size: got .* the file is truncated"),
        "body_size huge": (patch(PAIR, 24, "Q", 2**64 - 1), "file size: got .* the file is truncated"),
        "body_size small": (patch(PAIR, 24, "Q", 8), "file size: got .* there are bytes after the checksum"),
        "truncated": (PAIR[:-1], f"file size: got {len(PAIR) - 1} bytes; expected {len(PAIR) - 36} \\+ 36"),
        "tiny": (PAIR[:20], "file size: got 20 bytes; expected at least 36"),
        "empty": (b"", "file size: got 0 bytes; expected at least 36"),
        "trailing": (
            PAIR + b"\0",
            r"file size: got 765 bytes; expected header.body_size \(728\) \+ 36: there are bytes",
        ),
        "checksum": (patch(PAIR, len(PAIR) - 4, "I", 0, fix_crc=False), "checksum: got 0x00000000; expected 0x"),
        "body flipped": (patch(PAIR, W0, "f", 0.5, fix_crc=False), "checksum: got 0x.*the file is corrupted"),
        "other kind's shapes": (
            patch(PAIR, 12, "I", 3),
            r"header.body_size: got 728; expected 108 for 3 agents, 3 loads, "
            r"basis sort \(7 features\)",
        ),
    }
    for name, (data, message) in cases.items():
        assert re.match(message, refused(data)), (name, refused(data))


def test_linear_pair_fields_are_each_refused_by_name():
    nan, inf = float("nan"), float("inf")
    cases = {
        "num_loads 0": (patch(PAIR, 32, "I", 0), "input.num_loads: got 0; expected 1 .. 65536"),
        "num_loads big": (patch(PAIR, 32, "I", 1 << 20), "input.num_loads: got 1048576; expected 1 .. 65536"),
        "num_loads other": (
            patch(patch(PAIR, 32, "I", 4), 16, "I", 4),
            r"header.body_size: got 728; expected 1552 for 4 nodes, actor basis sort \(9 features\), "
            r"critic basis customized \(23 features\)",
        ),
        "basis": (patch(PAIR, 36, "I", 4), r"input.basis: got 4; expected 0 .. 3 \(raw, sort, customized, quadratic\)"),
        "basis other": (
            patch(PAIR, 36, "I", 0),
            r"header.body_size: got 728; expected .* actor basis raw \(4 features",
        ),
        "scale": (patch(PAIR, 40, "f", nan), "input.scale: got nan; expected a finite number"),
        "offset": (patch(PAIR, 44, "f", inf), "input.offset: got inf; expected a finite number"),
        "lo": (patch(PAIR, 48, "f", -inf), "input.lo: got -inf; expected a finite number"),
        "hi": (patch(PAIR, 52, "f", nan), "input.hi: got nan; expected a finite number"),
        "hi < lo": (patch(PAIR, 52, "f", -1.0), r"input.hi: got -1; expected at least input.lo \(0\)"),
        "critic_basis": (patch(PAIR, 56, "I", 5), "critic_basis: got 5; expected 0 .. 3 .* or 4294967295 \\(none\\)"),
        "critic none": (patch(PAIR, 56, "I", 0xFFFFFFFF), r"header.body_size: got 728; expected 536 .* no critic"),
        "max_logit": (patch(PAIR, 60, "f", -1.0), r"max_logit: got -1; expected a finite number >= 0"),
        "max_logit nan": (patch(PAIR, 60, "f", nan), "max_logit: got nan"),
        "migration": (patch(PAIR, W0 + (1 * 7 + 2) * 4, "f", nan), r"node\[0\].migration\[1\]\[2\]: got nan"),
        "stealing": (
            patch(PAIR, W0 + NODE + (3 * 7 + 2 * 7 + 6) * 4, "f", inf),
            r"node\[1\].stealing\[2\]\[6\]: got inf; expected a finite number",
        ),
        "critic": (patch(PAIR, W0 + 2 * NODE + 2 * 21 * 4 + 15 * 4, "f", -inf), r"node\[2\].critic\[15\]: got -inf"),
    }
    for name, (data, message) in cases.items():
        assert re.match(message, refused(data)), (name, refused(data))


# mlp: 3 agents on 2 networks, 4 -> 5 (tanh) -> 2, unsquash head
MLP = fmt.to_bytes(mlp())
MLP_IDENTITY = fmt.to_bytes(mlp(head="identity"))  # no bounds
LOW, HIGH, NET0 = 60, 68, 76  # after num_inputs, num_networks, head, num_outputs (32..48), agent_network (48..60)
L0_W = NET0 + 4 + 12  # layer 0's weights, after num_layers and (in, out, activation)
L1 = L0_W + (5 * 4 + 5) * 4  # layer 1's (in, out, activation)
NET1 = L1 + 12 + (2 * 5 + 2) * 4


def test_mlp_fields_are_each_refused_by_name():
    nan = float("nan")
    assert RuntimePolicy.from_bytes(MLP).head == "unsquash" and len(MLP) == NET1 + (NET1 - NET0) + 4
    cases = {
        "num_inputs 0": (patch(MLP, 32, "I", 0), "mlp.num_inputs: got 0; expected 1 .. 16777216"),
        "num_inputs": (patch(MLP, 32, "I", 3), r"network\[0\].layer\[0\].in: got 4; expected 3 \(mlp.num_inputs\)"),
        "num_networks 0": (patch(MLP, 36, "I", 0), r"mlp.num_networks: got 0; expected 1 .. 3 \(header.num_agents\)"),
        "num_networks > agents": (patch(MLP, 36, "I", 4), "mlp.num_networks: got 4; expected 1 .. 3"),
        "num_networks 3": (
            patch(MLP, 36, "I", 3),
            r"network\[2\].num_layers: needs 4 bytes at offset \d+ but the "
            "body has 0 left",
        ),
        "head": (patch(MLP, 40, "I", 5), r"mlp.head: got 5; expected 0 .. 4 \(identity, unsquash, tanh, softmax"),
        # without bounds, low[0] = -1.0f (0xbf800000) is read as network 0's number of layers
        "head unbounded": (patch(MLP, 40, "I", 0), r"network\[0\].num_layers: got 3212836864; expected 1 .. 64"),
        "num_outputs": (
            patch(MLP_IDENTITY, 44, "I", 3),
            r"network\[0\].layer\[1\].out: got 2; expected 3 \(mlp.num_outputs\)",
        ),
        "num_outputs bounded": (
            patch(MLP, 44, "I", 3),  # 3 lows, 3 highs: high[2] reads layer 0's in (4)
            r"mlp.high\[2\]: got 5.6\d*e-45; expected at least mlp.low\[2\]",
        ),
        "num_outputs 0": (patch(MLP, 44, "I", 0), "mlp.num_outputs: got 0; expected 1 .. 16777216"),
        "agent_network": (patch(MLP, 52, "I", 2), r"mlp.agent_network\[1\]: got 2; expected 0 .. 1"),
        "low": (patch(MLP, LOW + 4, "f", nan), r"mlp.low\[1\]: got nan; expected a finite number"),
        "high": (patch(MLP, HIGH, "f", float("inf")), r"mlp.high\[0\]: got inf"),
        "high < low": (patch(MLP, HIGH + 4, "f", -2.0), r"mlp.high\[1\]: got -2; expected at least mlp.low\[1\] \(0\)"),
        "num_layers 0": (patch(MLP, NET0, "I", 0), r"network\[0\].num_layers: got 0; expected 1 .. 64"),
        "num_layers 65": (patch(MLP, NET0, "I", 65), r"network\[0\].num_layers: got 65; expected 1 .. 64"),
        "num_layers 3": (patch(MLP, NET1, "I", 3), r"network\[1\].layer\[2\]: needs 12 bytes at offset"),
        "num_layers 1": (patch(MLP, NET0, "I", 1), r"network\[0\].layer\[0\].out: got 5; expected 2 \(mlp.num_outputs"),
        "in": (patch(MLP, L1, "I", 4), r"network\[0\].layer\[1\].in: got 4; expected 5 \(the previous layer's out\)"),
        "out 0": (patch(MLP, NET0 + 8, "I", 0), r"network\[0\].layer\[0\].out: got 0; expected 1 .. 16777216"),
        "out huge": (
            patch(MLP, NET0 + 8, "I", 1 << 24),
            r"network\[0\].layer\[0\].weight: needs 335544320 bytes at offset 92 but the body has \d+ left",
        ),
        "out too huge": (patch(MLP, NET0 + 8, "I", (1 << 24) + 1), r"network\[0\].layer\[0\].out: got 16777217"),
        "activation": (patch(MLP, NET0 + 12, "I", 6), r"network\[0\].layer\[0\].activation: got 6; expected 0 .. 5"),
        "weight": (patch(MLP, L0_W + (2 * 4 + 3) * 4, "f", nan), r"network\[0\].layer\[0\].weight\[2\]\[3\]: got nan"),
        "bias": (patch(MLP, L0_W + 20 * 4 + 4 * 4, "f", nan), r"network\[0\].layer\[0\].bias\[4\]: got nan"),
        "second network": (patch(MLP, NET1 + 16 + 4, "f", nan), r"network\[1\].layer\[0\].weight\[0\]\[1\]: got nan"),
    }
    longer = bytearray(MLP[:-4] + b"\0" * 8 + MLP[-4:])  # 8 bytes more body than the networks declare
    struct.pack_into("<Q", longer, 24, len(longer) - 36)
    cases["trailing body"] = (
        crc(bytes(longer)),
        f"header.body_size: got {len(MLP) - 28}; expected {len(MLP) - 36} "
        r"\(the declared networks end there\)",
    )
    for name, (data, message) in cases.items():
        assert re.match(message, refused(data)), (name, refused(data))


def test_linear_value_shapes_are_checked():
    data = fmt.to_bytes(linear_value(agents=2, basis="quadratic"))
    assert RuntimePolicy.from_bytes(data).num_agents == 2
    assert refused(patch(data, 16, "I", 3)).startswith(
        "header.body_size: got 144; expected 204 for 3 agents, 4 loads, basis quadratic (15 features)"
    )
    assert refused(patch(data, 56 + 7 * 4, "f", float("nan"))) == (
        "agent[0].value[7]: got nan; expected a finite number"
    )


def test_python_reader_refuses_bad_files_too():
    for data, message in [
        (PAIR[:-3], "file size"),
        (b"XX" + PAIR[2:], "header.magic"),
        (patch(PAIR, 8, "I", 9), "header.version"),
        (patch(PAIR, 40, "f", 1.0, fix_crc=False), "checksum"),
        (patch(MLP, 36, "I", 3), r"network\[2\].num_layers: needs 4 bytes"),
    ]:
        with pytest.raises(ValueError, match=message):
            fmt.from_bytes(data)
    with pytest.raises(ValueError, match=r"migration: got shape \(3, 2, 7\); expected \(3, 3, 7\)"):
        p = linear_pair(3)
        p.migration = p.migration[:, :2]
        fmt.to_bytes(p)


# ------------------------------------------------------------------------------ fuzzing


# ------------------------------------------------------------------------------ version 3: settings, parameter bound


def with_settings_text(text: bytes, policy=None) -> bytes:
    """A version-3 file of ``policy`` (default: mlp()) whose settings section holds ``text`` as given."""
    plain = fmt.to_bytes(policy or mlp())
    body = struct.pack("<I", len(text)) + text + plain[32:-4]
    head = plain[:8] + struct.pack("<IIIIQ", 3, *struct.unpack_from("<III", plain, 12), len(body))
    return crc(head + body + b"\0\0\0\0")


def test_settings_round_trip_in_both_readers_and_leave_the_policy_unchanged():
    for policy in (mlp(), linear_pair(3, max_logit=10.0), fmt.from_bytes(fmt.to_bytes(linear_pair(4, basis="raw")))):
        plain = fmt.to_bytes(policy)
        policy.settings = {"env": "lb_v0", "dispatch": "sed", "rate_caps": "1;0.5"}
        data = fmt.to_bytes(policy)
        assert struct.unpack_from("<I", data, 8)[0] == 3 and struct.unpack_from("<I", plain, 8)[0] in (1, 2)
        assert fmt.from_bytes(data).settings == policy.settings
        loaded = RuntimePolicy.from_bytes(data)
        assert loaded.settings == policy.settings and RuntimePolicy.from_bytes(plain).settings == {}
        assert fmt.from_bytes(plain).settings == {}
        x = np.linspace(0, 1, loaded.num_inputs, dtype=np.float32)
        if policy.kind == "mlp":
            assert np.array_equal(loaded.outputs(x, 0), RuntimePolicy.from_bytes(plain).outputs(x, 0))
        else:
            assert np.array_equal(loaded.probabilities(0, x)[0], RuntimePolicy.from_bytes(plain).probabilities(0, x)[0])
    assert RuntimePolicy.from_bytes(with_settings_text(b"")).settings == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"env=lb_v0", "settings: got a last line without a newline"),
        (b"env=lb_v0\nenv=lb_v0\n", 'settings line 1: got "env=lb_v0"'),
        (b"Env=x\n", 'settings line 0: got "Env=x"'),
        (b"novalue\n", 'settings line 0: got "novalue"'),
        (b"=x\n", 'settings line 0: got "=x"'),
        (b"env=\n", "settings.env: got 0 bytes of value"),
        (b"env=a b\n", "settings.env: got 3 bytes of value"),
        (b"env=\xff\n", "settings.env: got 1 bytes of value"),
        (b"k=" + b"x" * 1025 + b"\n", "settings.k: got 1025 bytes of value"),
    ],
)
def test_bad_settings_are_refused_by_both_readers(text, message):
    data = with_settings_text(text)
    assert refused(data).startswith(message), refused(data)
    with pytest.raises(ValueError, match=r"settings"):
        fmt.from_bytes(data)


def test_settings_sizes_are_checked_before_reading():
    data = with_settings_text(b"env=lb_v0\n")
    assert refused(patch(data, 32, "I", 65537)).startswith("settings.size: got 65537; expected at most 65536")
    assert refused(patch(data, 32, "I", 60000)).startswith("settings: needs 60000 bytes at offset 36")
    with pytest.raises(ValueError, match="settings"):
        fmt.from_bytes(patch(data, 32, "I", 60000))
    with pytest.raises(ValueError, match="settings: got name 'Bad'"):
        fmt.to_bytes(fmt.with_settings(mlp(), {"Bad": "x"}))


@pytest.mark.parametrize("value", [3e38, -3e38, 1.5e6])
def test_huge_finite_weights_are_refused_by_both_readers_and_the_writer(value):
    """A file of ±3e38 weights with a valid checksum would act on NaN (float32 overflow): every reader refuses it."""
    data = patch(MLP_IDENTITY, len(MLP_IDENTITY) - 8, "f", value)  # the last bias
    message = refused(data)
    assert re.fullmatch(
        r"network\[1\]\.layer\[1\]\.bias\[1\]: got \S+; expected a number within \+-1000000 .*", message
    )
    with pytest.raises(ValueError, match=r"network\[1\]\.layer\[1\]\.bias\[1\]: got .*within ±1e\+06"):
        fmt.from_bytes(data)
    pair = patch(PAIR, W0, "f", value)
    assert refused(pair).startswith("node[0].migration[0][0]: got ")
    with pytest.raises(ValueError, match=r"node\[0\]\.migration\[0, 0\]|node\[0\]\.migration\[0\]\[0\]"):
        fmt.from_bytes(pair)
    with pytest.raises(ValueError, match="beyond ±1e\\+06"):
        fmt.to_bytes(linear_pair(3, weight_scale=value))
    assert RuntimePolicy.from_bytes(patch(MLP_IDENTITY, len(MLP_IDENTITY) - 8, "f", 9.9e5)).num_agents == 3


def test_random_mutations_and_truncations_load_or_are_refused():
    """Thousands of corrupted files: each loads (and evaluates) or raises ValueError; nothing else happens."""
    rng = np.random.default_rng(12345)
    seeds = [PAIR, MLP, fmt.to_bytes(linear_value()), fmt.to_bytes(mlp(head="softmax", agent_network=(0,)))]
    interesting = [
        0,
        1,
        2,
        3,
        5,
        0xFF,
        1 << 16,
        (1 << 16) + 1,
        1 << 24,
        0x7FFFFFFF,
        0x80000000,
        0xFFFFFFFF,
        0x7FC00000,
        0x7F800000,
    ]
    outcomes = {"loaded": 0, "refused": 0}
    messages = set()
    for seed in seeds:
        for cut in range(len(seed)):  # every truncation
            assert refused(seed[:cut]).startswith("file size")
    for _ in range(20000):
        data = bytearray(seeds[rng.integers(len(seeds))])
        for _ in range(rng.integers(1, 4)):
            op = rng.integers(5) if data else 3
            if op == 0:
                data[rng.integers(len(data))] ^= 1 << int(rng.integers(8))
            elif op == 1 and len(data) >= 4:
                struct.pack_into(
                    "<I", data, 4 * int(rng.integers(len(data) // 4)), interesting[rng.integers(len(interesting))]
                )
            elif op == 2:
                del data[rng.integers(len(data) + 1) :]
            elif op == 3:
                data += rng.bytes(int(rng.integers(1, 32)))
            else:
                data[rng.integers(len(data))] = int(rng.integers(256))
        if len(data) >= 36 and rng.random() < 0.7:  # repair body_size and the checksum to reach the field checks
            struct.pack_into("<Q", data, 24, len(data) - 36)
            data = bytearray(crc(bytes(data)))
        try:
            policy = RuntimePolicy.from_bytes(bytes(data))
        except ValueError as exc:
            outcomes["refused"] += 1
            messages.add(str(exc).split(":")[0])
            continue
        outcomes["loaded"] += 1
        if policy.kind == "linear_pair":
            policy.probabilities(0, rng.uniform(0, 1000, policy.num_inputs))
        elif policy.kind == "mlp":
            policy.outputs(rng.normal(0, 1, policy.num_inputs))
    assert outcomes["loaded"] > 1000 and outcomes["refused"] > 10000
    assert {
        "checksum",
        "file size",
        "header.magic",
        "header.version",
        "header.kind",
        "header.num_agents",
        "header.flags",
        "header.body_size",
        "input.num_loads",
        "input.basis",
        "input.scale",
        "critic_basis",
        "max_logit",
        "mlp.num_inputs",
        "mlp.num_networks",
        "mlp.head",
        "mlp.num_outputs",
        "mlp.agent_network[0]",
        "network[0].num_layers",
        "network[0].layer[0].in",
        "network[0].layer[0].activation",
    } <= messages


# ------------------------------------------------------------------------------ the deployment header alone


@pytest.mark.skipif(shutil.which("c++") is None, reason="needs a C++ compiler")
def test_deployment_example_builds_from_the_runtime_headers_alone_and_refuses_bad_files(tmp_path):
    binary = tmp_path / "deploy_dispatch"
    subprocess.run(
        [
            "c++",
            "-std=c++17",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-I",
            str(ROOT / "cpp_core/include"),
            str(ROOT / "cpp_core/examples/deploy_dispatch.cpp"),
            "-o",
            str(binary),
        ],
        check=True,
        timeout=120,
    )
    good = fmt.write_policy(linear_pair(3, critic=None, max_logit=10.0), tmp_path / "good.dcpol")
    proc = subprocess.run([str(binary), str(good), "2000"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "linear_pair, 3 nodes, actor basis sort (7 features), no critic" in proc.stdout
    assert "2000 requests" in proc.stdout
    served = [int(line.split()[3]) for line in proc.stdout.splitlines()[3:]]
    assert len(served) == 3 and sum(served) == 2000

    fill = fmt.FillPolicy(1 / 75, 100 / 75, 2.0, 0.1, True, np.array([1.0, 2.0, 3.0]), np.zeros((3, 9, 4)))
    proc = subprocess.run(
        [str(binary), str(fmt.write_policy(fill, tmp_path / "fill.dcpol")), "2000"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert "fill, 3 nodes, horizon 2, mix 0.1, steal rule, per heartbeat" in proc.stdout
    assert sum(int(line.split()[3]) for line in proc.stdout.splitlines()[3:]) == 2000

    bad = tmp_path / "bad.dcpol"
    bad.write_bytes(patch(good.read_bytes(), 8, "I", 7))
    proc = subprocess.run([str(binary), str(bad)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: header.version: got 7; expected 1 .. 6 (the versions this reader reads)"
    other = fmt.write_policy(mlp(), tmp_path / "mlp.dcpol")
    proc = subprocess.run([str(binary), str(other)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1 and "holds a mlp policy" in proc.stderr
