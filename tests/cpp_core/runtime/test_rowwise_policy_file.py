"""The mlp kind's row layout (format version 5, docs/policy_format.md): one network applied to each row of the
input, in the Python reader and the C++ runtime, against a numpy reference; damaged layouts refused by field."""

from __future__ import annotations

import re
import struct
import zlib

import numpy as np
import pytest

from dcgym.agents import policy_format as fmt
from dcgym.agents.policy_format import Layer, MlpPolicy
from dcgym.cpp_core._engine import RuntimePolicy

ROWS, WIDTH, SHARED, GROUPS = 5, 3, 2, [2, 3]  # 17 inputs; the network maps 5 to 5 per row


def rowwise(head: str = "multi_categorical", seed: int = 0) -> MlpPolicy:
    rng = np.random.default_rng(seed)
    layers = [
        Layer(rng.uniform(-1, 1, (6, WIDTH + SHARED)), rng.uniform(-1, 1, 6), "relu"),
        Layer(rng.uniform(-2, 2, (5, 6)), rng.uniform(-1, 1, 5)),
    ]
    groups = GROUPS * ROWS if head == "multi_categorical" else None
    return MlpPolicy(ROWS * WIDTH + SHARED, [layers], [0], head, groups=groups, rows=ROWS, row_width=WIDTH)


def reference(policy: MlpPolicy, obs: np.ndarray) -> np.ndarray:
    """The layers in float64 on each row with the shared features appended; outputs side by side, before the head."""
    out = []
    shared = obs[ROWS * WIDTH :]
    for r in range(ROWS):
        x = np.concatenate([obs[r * WIDTH : (r + 1) * WIDTH], shared]).astype(np.float64)
        for layer in policy.networks[0]:
            x = layer.weight @ x + layer.bias
            x = np.maximum(x, 0) if layer.activation == "relu" else x
        out.append(x)
    return np.concatenate(out)


def refused(data: bytes) -> tuple[str, str]:
    """The C++ loader's and the Python reader's messages for ``data``."""
    with pytest.raises(ValueError) as cpp:
        RuntimePolicy.from_bytes(data)
    with pytest.raises(ValueError) as py:
        fmt.from_bytes(data)
    return str(cpp.value), str(py.value)


def patch(data: bytes, offset: int, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<I", b, offset, value)
    return bytes(b[:-4]) + struct.pack("<I", zlib.crc32(bytes(b[:-4])))


def test_row_layout_round_trips_and_matches_the_reference_in_both_readers():
    policy = rowwise("identity")
    data = fmt.to_bytes(policy)
    assert struct.unpack_from("<I", data, 8)[0] == fmt.ROWS_VERSION == 5
    back = fmt.from_bytes(data)
    assert (back.rows, back.row_width, back.num_outputs, back.network_inputs) == (ROWS, WIDTH, 25, WIDTH + SHARED)
    runtime = RuntimePolicy.from_bytes(data)
    for seed in range(5):
        obs = np.random.default_rng(seed).uniform(-1, 1, ROWS * WIDTH + SHARED).astype(np.float32)
        np.testing.assert_allclose(runtime.outputs(obs), reference(policy, obs), rtol=1e-5, atol=1e-5)


def test_multi_categorical_over_rows_takes_each_rows_argmaxes():
    policy = rowwise()
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(policy))
    obs = np.random.default_rng(3).uniform(-1, 1, (30, ROWS * WIDTH + SHARED)).astype(np.float32)
    logits = np.stack([reference(policy, o) for o in obs])
    expected = np.concatenate(
        [logits[:, s : s + g].argmax(-1)[:, None] for s, g in zip(np.cumsum([0] + GROUPS * ROWS), GROUPS * ROWS)], 1
    )
    np.testing.assert_array_equal(runtime.act(obs), expected)
    assert len({tuple(r) for r in expected}) > 5


def test_flat_policies_keep_their_older_versions_and_bytes():
    flat = MlpPolicy(3, [[Layer(np.ones((2, 3)), np.zeros(2))]], [0], "identity")
    data = fmt.to_bytes(flat)
    assert struct.unpack_from("<I", data, 8)[0] == 1
    assert fmt.from_bytes(data).rows == 0
    assert RuntimePolicy.from_bytes(data).outputs(np.ones(3, np.float32)).tolist() == [3.0, 3.0]


# A version-5 file without settings text: header (32), settings size (4), then num_inputs (36), num_networks (40),
# head (44), num_outputs (48), rows (52), row_width (56), agent_network (60), num_groups (64), groups (68 ..).
DATA = fmt.to_bytes(rowwise())
LAYER0 = 68 + 4 * len(GROUPS) * ROWS + 4  # after the groups and network 0's num_layers


@pytest.mark.parametrize(
    ("offset", "value", "message", "field"),
    [
        (52, 4, r"mlp.rows: got 4; expected a divisor of mlp.num_outputs \(25\)", "mlp.rows: got 4"),
        (52, 18, r"mlp.rows: got 18; expected 0 .. 17", "mlp.rows: got 18"),
        (56, 0, r"mlp.row_width: got 0; expected 1 .. 3 \(mlp.num_inputs / mlp.rows\)", "mlp.row_width: got 0"),
        (56, 4, r"mlp.row_width: got 4; expected 1 .. 3", "mlp.row_width: got 4"),
        (
            56,
            2,
            r"network\[0\].layer\[0\].in: got 5; expected 9 \(mlp.row_width \+ the shared inputs\)",
            "network[0].layer[0].in: got 5; expected 9",
        ),
        (52, 0, r"mlp.row_width: got 3; expected 0 \(a flat network: mlp.rows is 0\)", "mlp.row_width: got 3"),
        (
            LAYER0,
            4,
            r"network\[0\].layer\[0\].in: got 4; expected 5 \(mlp.row_width \+ the shared inputs\)",
            "network[0].layer[0].in: got 4; expected 5",
        ),
    ],
)
def test_damaged_row_layouts_are_refused_by_field_in_both_readers(offset, value, message, field):
    cpp, py = refused(patch(DATA, offset, value))
    assert re.match(message, cpp), cpp
    assert py.startswith(field), py


def test_a_version_4_file_may_not_carry_a_row_layout():
    older = patch(DATA, 8, 4)  # read as version 4: rows and row_width become the agent map and the groups
    cpp, py = refused(older)
    assert cpp and py


@pytest.mark.parametrize(
    ("rows", "width", "message"),
    [(4, 3, r"mlp.rows: got 4; expected 1 .. 17 dividing mlp.num_outputs"), (5, 4, r"mlp.row_width: got 4")],
)
def test_the_writer_refuses_bad_row_layouts(rows, width, message):
    policy = rowwise()
    policy.rows, policy.row_width = rows, width
    policy.num_outputs = 25
    with pytest.raises(ValueError, match=message):
        fmt.to_bytes(policy)
