"""The policy file format (docs/policy_format.md): writing and reading, in pure Python and numpy.

A policy file holds everything a deployment needs to act: the policy's kind,
its input specification (basis functions and normalisation), shapes, float32
parameters, the settings it was trained under (format version 3: the
environment settings its evaluation must act with, such as the multi-LB
dispatch rule) and a CRC32. The C++ runtime (``cpp_core/include/dcgym/runtime/policy_file.hpp``)
is the reference reader; :func:`from_bytes` here reads what :func:`to_bytes`
writes (for inspection and tests) and refuses files whose header, shapes or
checksum do not add up, with a ``ValueError`` naming the field.

Four kinds, one dataclass each, each with the ``settings`` (name -> text) it was trained under:

- :class:`LinearPairPolicy`: Malcolm's rack policy, per node a migration and a
  stealing softmax actor over the basis features of the node's N loads, and
  optionally a linear critic;
- :class:`MlpPolicy`: dense networks (one shared or one per agent) with
  per-layer activations and an output head;
- :class:`LinearValuePolicy`: a linear value function per agent;
- :class:`MlpPolicy` with ``rows`` (format version 5): one network applied to each row of the input (AuTO's
  lRLA over any number of long flows: its parameters do not grow with the rows);
- :class:`FillPolicy` (format version 4): Malcolm's rack policy as water-filling tables adjusted by linear gains
  (``cpp_core/include/dcgym/runtime/fill.hpp``; :mod:`dcgym.agents.malcolm.fill` evaluates it in numpy).
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "ACTIVATIONS",
    "BASES",
    "FILL_FEATURES",
    "FILL_VERSION",
    "HEADS",
    "KINDS",
    "MAGIC",
    "MAX_PARAMETER",
    "NEW_HEADS_VERSION",
    "PER_TASK_VERSION",
    "ROWS_VERSION",
    "SETTINGS_VERSION",
    "VERSION",
    "FillPolicy",
    "InputSpec",
    "Layer",
    "LinearPairPolicy",
    "LinearValuePolicy",
    "MlpPolicy",
    "Policy",
    "from_bytes",
    "num_features",
    "read_policy",
    "to_bytes",
    "with_settings",
    "write_policy",
]

MAGIC = b"DCGYMPOL"
"""The first 8 bytes of every policy file."""
VERSION = 6
"""The newest format version: this module reads versions 1 to 6 and writes the oldest one the policy needs."""
NEW_HEADS_VERSION = 2
"""The version that added the ``increasing`` and ``multi_categorical`` heads."""
SETTINGS_VERSION = 3
"""The version that added the settings section (the settings a policy was trained under)."""
FILL_VERSION = 4
"""The version that added the ``fill`` kind."""
ROWS_VERSION = 5
"""The version that added the mlp kind's row layout (``rows``, ``row_width``)."""
PER_TASK_VERSION = 6
"""The version that added the ``fill`` kind's ``per_task`` rule."""
MAX_ROWS = 65536
"""The most rows of a row-wise mlp (``dcgym::runtime::kMaxRows``)."""
FILL_FEATURES = 4
"""The fill kind's features per node: [1, utilisation, tanh(mean level), tanh(own level)]."""
MAX_PARAMETER = 1e6
"""The largest magnitude of a weight or bias: larger ones overflow float32 evaluation (no trained policy nears it)."""
MAX_SETTINGS_SIZE = 65536
"""The largest settings section, in bytes."""
SETTING_KEY = re.compile(r"[a-z][a-z0-9_]{0,63}")
"""What a setting's name may be."""
SETTING_VALUE = re.compile(r"[\x21-\x7e]{1,1024}")
"""What a setting's value may be: 1 to 1024 printable ASCII characters, no spaces."""
KINDS = {"linear_pair": 1, "mlp": 2, "linear_value": 3, "fill": 4}
"""Policy kind -> the number the header stores."""
BASES = {"raw": 0, "sort": 1, "customized": 2, "quadratic": 3}
"""Basis function -> number (``dcgym::runtime::Basis``; the maps of ``dcgym.agents.malcolm.basis``)."""
ACTIVATIONS = {"identity": 0, "relu": 1, "tanh": 2, "sigmoid": 3, "elu": 4, "silu": 5}
"""Layer activation -> number (``dcgym::runtime::Activation``)."""
HEADS = {"identity": 0, "unsquash": 1, "tanh": 2, "softmax": 3, "argmax": 4, "increasing": 5, "multi_categorical": 6}
"""Output head -> number (``dcgym::runtime::Head``)."""
NO_CRITIC = 0xFFFFFFFF
"""``critic_basis`` of a linear pair without a critic."""

_BOUNDED_HEADS = ("unsquash", "tanh", "increasing")
_NEW_HEADS = ("increasing", "multi_categorical")
_HEADER = struct.Struct("<8sIIIIQ")  # magic, version, kind, num_agents, flags, body_size: 32 bytes
_INPUT = struct.Struct("<II4f")  # num_loads, basis, scale, offset, lo, hi: 24 bytes
_FLOAT_MAX = float(np.finfo(np.float32).max)


def num_features(basis: str, n: int) -> int:
    """How many features ``basis`` makes from ``n`` loads (as ``dcgym.agents.malcolm.basis.num_features``)."""
    return {"raw": n + 1, "sort": 2 * n + 1, "customized": n * (n + 7) // 2 + 1, "quadratic": n * (n + 3) // 2 + 1}[
        basis
    ]


@dataclass
class InputSpec:
    """How the linear kinds turn N raw loads into features: x = clip(raw * scale + offset, lo, hi), then ``basis``."""

    num_loads: int
    basis: str
    scale: float = 1.0
    offset: float = 0.0
    lo: float = 0.0
    hi: float = _FLOAT_MAX

    @property
    def num_features(self) -> int:
        return num_features(self.basis, self.num_loads)


@dataclass
class LinearPairPolicy:
    """Malcolm's rack policy: node i's actors ``migration[i]``, ``stealing[i]`` (N x F each) and critic ``critic[i]``.

    ``max_logit`` > 0: each half's logits are centred and clipped to
    ±max_logit before the softmax, as rack_v0 applies its action.
    """

    input: InputSpec
    migration: np.ndarray  # (N, N, F_a): node, destination, feature
    stealing: np.ndarray  # (N, N, F_a)
    critic_basis: str | None = None
    critic: np.ndarray | None = None  # (N, F_c)
    max_logit: float = 0.0
    settings: dict[str, str] = field(default_factory=dict)

    kind = "linear_pair"

    @property
    def num_agents(self) -> int:
        return self.input.num_loads


@dataclass
class LinearValuePolicy:
    """A linear value function per agent: V_a(x) = <φ(x), weights[a]>."""

    input: InputSpec
    weights: np.ndarray  # (A, F)
    settings: dict[str, str] = field(default_factory=dict)

    kind = "linear_value"

    @property
    def num_agents(self) -> int:
        return int(np.shape(self.weights)[0])


@dataclass
class Layer:
    """A dense layer y = activation(weight x + bias), weight (out, in) as torch.nn.Linear stores it."""

    weight: np.ndarray
    bias: np.ndarray
    activation: str = "identity"


@dataclass
class MlpPolicy:
    """Dense networks, agent a using ``networks[agent_network[a]]``, and the output head.

    ``low`` and ``high`` (one per output) bound the ``unsquash``, ``tanh``
    and ``increasing`` heads and are absent for the others (``increasing``:
    one range, the same value in every entry, 0 < low). ``groups`` lists the
    sizes of the ``multi_categorical`` head's categoricals (summing to the
    outputs) and is None for the others.

    ``rows`` > 0 (format version 5) makes the network row-wise: the input is
    ``rows`` rows of ``row_width`` features, then ``num_inputs - rows x
    row_width`` shared features; the network maps one row with the shared
    features appended to its outputs, and the policy's outputs are every
    row's, row after row, before the head (``num_outputs`` = rows x the last
    layer's width).
    """

    num_inputs: int
    networks: list[list[Layer]]
    agent_network: list[int]
    head: str
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    groups: list[int] | None = None
    settings: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    row_width: int = 0
    num_outputs: int = field(init=False)

    kind = "mlp"

    def __post_init__(self) -> None:
        self.num_outputs = int(np.shape(self.networks[0][-1].weight)[0]) * max(1, self.rows)

    @property
    def network_inputs(self) -> int:
        """The first layer's width: the whole input, or one row and the shared features."""
        return self.num_inputs - (self.rows - 1) * self.row_width if self.rows else self.num_inputs

    @property
    def num_agents(self) -> int:
        return len(self.agent_network)


@dataclass
class FillPolicy:
    """Malcolm's rack policy as water-filling (docs/policy_format.md, kind 4): node i's tables are the water-filling
    table over the levels and capacities its gains ``gains[i]`` (2N + 3 rows of :data:`FILL_FEATURES`) adjust; all
    gains 0 give the ``water_fill`` heuristic with ``horizon``, ``mix``, ``steal`` and ``per_task``.

    ``level_scale`` turns the engine's raw loads (expected wait, us) into levels (mean service times);
    ``heartbeat_services`` is the heartbeat in mean service times (the utilisation feature's unit).
    ``per_task`` (format version 6): a node's migration table is recomputed at each arriving task, from what it
    believes then, instead of once per heartbeat.
    """

    level_scale: float
    heartbeat_services: float
    horizon: float
    mix: float
    steal: bool
    capacity: np.ndarray  # (N,): workers x speed of each node
    gains: np.ndarray  # (N, 2N + 3, FILL_FEATURES): node, row, feature
    settings: dict[str, str] = field(default_factory=dict)
    per_task: bool = False

    kind = "fill"

    @property
    def num_agents(self) -> int:
        return int(np.shape(self.capacity)[0])


Policy = LinearPairPolicy | MlpPolicy | LinearValuePolicy | FillPolicy


# ------------------------------------------------------------------------------ writing


def _f32(a, shape: tuple[int, ...], what: str, bound: float = _FLOAT_MAX) -> bytes:
    """``a`` as little-endian float32 bytes, after checking its shape and that it is finite and within ``bound``."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{what}: got shape {arr.shape}; expected {shape}")
    if not np.isfinite(arr).all() or (np.abs(arr) > bound).any():
        raise ValueError(f"{what}: got non-finite values or values beyond ±{bound:g}; expected finite float32 numbers")
    return arr.astype("<f4").tobytes()


def _settings(settings: dict[str, str]) -> bytes:
    """The settings section: its size, then one ``key=value`` line per setting."""
    for key, value in settings.items():
        if not SETTING_KEY.fullmatch(str(key)):
            raise ValueError(f"settings: got name {key!r}; expected {SETTING_KEY.pattern}")
        if not SETTING_VALUE.fullmatch(str(value)):
            raise ValueError(f"settings.{key}: got {value!r}; expected 1 to 1024 printable ASCII characters, no spaces")
    text = "".join(f"{k}={v}\n" for k, v in settings.items()).encode("ascii")
    if len(text) > MAX_SETTINGS_SIZE:
        raise ValueError(f"settings: got {len(text)} bytes; expected at most {MAX_SETTINGS_SIZE}")
    return struct.pack("<I", len(text)) + text


def _input(spec: InputSpec) -> bytes:
    values = (spec.scale, spec.offset, spec.lo, spec.hi)
    if spec.basis not in BASES:
        raise ValueError(f"input.basis: got {spec.basis!r}; expected one of {list(BASES)}")
    if not (np.isfinite(values).all() and spec.lo <= spec.hi):
        raise ValueError(f"input: got scale, offset, lo, hi = {values}; expected finite numbers with lo <= hi")
    return _INPUT.pack(spec.num_loads, BASES[spec.basis], *values)


def _body(policy: Policy) -> bytes:
    if isinstance(policy, LinearPairPolicy):
        n, f = policy.input.num_loads, policy.input.num_features
        has_critic = policy.critic_basis is not None
        if has_critic and policy.critic_basis not in BASES:
            raise ValueError(f"critic_basis: got {policy.critic_basis!r}; expected one of {list(BASES)} or None")
        fc = num_features(policy.critic_basis, n) if has_critic else 0
        parts = [
            _input(policy.input),
            struct.pack("<If", BASES[policy.critic_basis] if has_critic else NO_CRITIC, policy.max_logit),
        ]
        migration, stealing = np.asarray(policy.migration), np.asarray(policy.stealing)
        critic = np.asarray(policy.critic) if has_critic else None
        for name, a, shape in (
            ("migration", migration, (n, n, f)),
            ("stealing", stealing, (n, n, f)),
            ("critic", critic, (n, fc)),
        ):
            if a is not None and a.shape != shape:
                raise ValueError(f"{name}: got shape {a.shape}; expected {shape}")
        for i in range(n):
            parts.append(_f32(migration[i], (n, f), f"node[{i}].migration", MAX_PARAMETER))
            parts.append(_f32(stealing[i], (n, f), f"node[{i}].stealing", MAX_PARAMETER))
            if critic is not None:
                parts.append(_f32(critic[i], (fc,), f"node[{i}].critic", MAX_PARAMETER))
        return b"".join(parts)
    if isinstance(policy, LinearValuePolicy):
        f = policy.input.num_features
        return _input(policy.input) + _f32(policy.weights, (policy.num_agents, f), "weights", MAX_PARAMETER)
    if isinstance(policy, FillPolicy):
        n = policy.num_agents
        fields = (policy.level_scale, policy.heartbeat_services, policy.horizon)
        _check_fill(fields, policy.mix, policy.capacity)
        capacity = np.asarray(policy.capacity, np.float64)
        rules = int(bool(policy.steal)) | 2 * int(bool(policy.per_task))  # bit 0: steal; bit 1: per task
        header = struct.pack("<I4fI", n, *fields, policy.mix, rules)
        return (
            header
            + _f32(capacity, (n,), "fill.capacity", MAX_PARAMETER)
            + _f32(policy.gains, (n, 2 * n + 3, FILL_FEATURES), "gains", MAX_PARAMETER)
        )
    if isinstance(policy, MlpPolicy):
        if policy.head not in HEADS:
            raise ValueError(f"mlp.head: got {policy.head!r}; expected one of {list(HEADS)}")
        k = policy.num_outputs
        parts = [struct.pack("<4I", policy.num_inputs, len(policy.networks), HEADS[policy.head], k)]
        if policy.rows:
            _check_rows(policy.rows, policy.row_width, policy.num_inputs, k)
            parts.append(struct.pack("<2I", policy.rows, policy.row_width))
        parts.append(struct.pack(f"<{policy.num_agents}I", *policy.agent_network))
        if policy.head in _BOUNDED_HEADS:
            parts += [_f32(policy.low, (k,), "mlp.low"), _f32(policy.high, (k,), "mlp.high")]
        if policy.head == "increasing":
            low, high = np.asarray(policy.low, np.float32), np.asarray(policy.high, np.float32)
            if not (low[0] > 0 and (low == low[0]).all() and (high == high[0]).all() and high[0] >= low[0]):
                raise ValueError(
                    f"mlp.low, mlp.high: got {policy.low}, {policy.high}; expected one range 0 < low <= high in every entry"
                )
        if policy.head == "multi_categorical":
            groups = list(policy.groups or [])
            if not groups or min(groups) < 1 or sum(groups) != k:
                raise ValueError(
                    f"mlp.groups: got {policy.groups}; expected sizes >= 1 summing to {k} (mlp.num_outputs)"
                )
            parts.append(struct.pack(f"<{len(groups) + 1}I", len(groups), *groups))
        for m, layers in enumerate(policy.networks):
            parts.append(struct.pack("<I", len(layers)))
            for li, layer in enumerate(layers):
                out, inp = np.shape(layer.weight)
                if layer.activation not in ACTIVATIONS:
                    raise ValueError(
                        f"network[{m}].layer[{li}].activation: got {layer.activation!r}; "
                        f"expected one of {list(ACTIVATIONS)}"
                    )
                parts.append(struct.pack("<3I", inp, out, ACTIVATIONS[layer.activation]))
                parts.append(_f32(layer.weight, (out, inp), f"network[{m}].layer[{li}].weight", MAX_PARAMETER))
                parts.append(_f32(layer.bias, (out,), f"network[{m}].layer[{li}].bias", MAX_PARAMETER))
        return b"".join(parts)
    raise TypeError(f"not a policy: {type(policy).__name__}")


def _check_rows(rows: int, row_width: int, num_inputs: int, num_outputs: int) -> None:
    """A row-wise layout: 1 .. MAX_ROWS rows dividing the outputs, rows x row_width at most the inputs."""
    if not 1 <= rows <= min(num_inputs, MAX_ROWS) or num_outputs % rows:
        raise ValueError(
            f"mlp.rows: got {rows}; expected 1 .. {min(num_inputs, MAX_ROWS)} dividing mlp.num_outputs ({num_outputs})"
        )
    if not 1 <= row_width <= num_inputs // rows:
        raise ValueError(f"mlp.row_width: got {row_width}; expected 1 .. {num_inputs // rows} (num_inputs / rows)")


def _check_fill(fields: tuple[float, ...], mix: float, capacity) -> None:
    """The fill kind's level_scale, heartbeat_services, horizon (finite, > 0), mix (0 .. 1) and capacities (> 0)."""
    if not (np.isfinite(fields).all() and min(fields) > 0 and 0 <= mix <= 1):
        raise ValueError(
            f"fill: got level_scale, heartbeat_services, horizon, mix = {(*fields, mix)}; "
            "expected finite numbers > 0 and a mix in [0, 1]"
        )
    capacity = np.asarray(capacity, np.float64)
    if capacity.ndim != 1 or not (capacity > 0).all():
        raise ValueError(f"fill.capacity: got {capacity}; expected N numbers > 0")


def to_bytes(policy: Policy) -> bytes:
    """The policy file of ``policy``: header, body (after the settings section if it has settings), CRC32."""
    body = _body(policy)
    if isinstance(policy, FillPolicy):  # a kind of version 4 (6 with per_task): the settings section is always there
        version = PER_TASK_VERSION if policy.per_task else FILL_VERSION
        body = _settings(policy.settings) + body
    elif getattr(policy, "rows", 0):  # a row-wise mlp: version 5, settings section included
        version = ROWS_VERSION
        body = _settings(policy.settings) + body
    elif policy.settings:
        version = SETTINGS_VERSION
        body = _settings(policy.settings) + body
    else:  # old readers keep reading the rest
        version = NEW_HEADS_VERSION if getattr(policy, "head", None) in _NEW_HEADS else 1
    head = _HEADER.pack(MAGIC, version, KINDS[policy.kind], policy.num_agents, 0, len(body)) + body
    return head + struct.pack("<I", zlib.crc32(head))


def write_policy(policy: Policy, path: str | Path) -> Path:
    """Write ``policy`` to ``path`` (folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_bytes(policy))
    return path


# ------------------------------------------------------------------------------ reading


class _Cursor:
    """Little-endian reads over the body that refuse to run past its end."""

    def __init__(self, data: bytes, start: int, end: int) -> None:
        self.data, self.pos, self.end = data, start, end

    def take(self, size: int, what: str) -> bytes:
        if size > self.end - self.pos:
            raise ValueError(
                f"{what}: needs {size} bytes at offset {self.pos} but the body has {self.end - self.pos} "
                "left; expected header.body_size to cover the declared shapes"
            )
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def u32(self, count: int, what: str) -> tuple[int, ...]:
        return struct.unpack(f"<{count}I", self.take(4 * count, what))

    def f32(self, shape: tuple[int, ...], what: str, bound: float = np.inf) -> np.ndarray:
        a = np.frombuffer(self.take(4 * int(np.prod(shape)), what), dtype="<f4").reshape(shape).astype(np.float32)
        if not np.isfinite(a).all():
            raise ValueError(f"{what}: got non-finite values; expected finite numbers")
        if (np.abs(a) > bound).any():
            index = tuple(int(i) for i in np.argwhere(np.abs(a) > bound)[0])
            raise ValueError(
                f"{what}{''.join(f'[{i}]' for i in index)}: got {a[index]:.9g}; expected a number within "
                f"±{bound:g} (larger ones overflow the policy's float32 evaluation)"
            )
        return a

    def weights(self, shape: tuple[int, ...], what: str) -> np.ndarray:
        """Trained parameters: finite and within ±MAX_PARAMETER."""
        return self.f32(shape, what, MAX_PARAMETER)


def _name(table: dict[str, int], value: int, what: str) -> str:
    for name, number in table.items():
        if number == value:
            return name
    raise ValueError(f"{what}: got {value}; expected one of {table}")


def _read_input(c: _Cursor) -> InputSpec:
    n, basis, *values = _INPUT.unpack(c.take(_INPUT.size, "input"))
    return InputSpec(n, _name(BASES, basis, "input.basis"), *values)


def _read_settings(c: _Cursor) -> dict[str, str]:
    (size,) = c.u32(1, "settings.size")
    if size > MAX_SETTINGS_SIZE:
        raise ValueError(f"settings.size: got {size}; expected at most {MAX_SETTINGS_SIZE}")
    text = c.take(size, "settings")
    if text and not text.endswith(b"\n"):
        raise ValueError("settings: got a last line without a newline; expected key=value lines, each ending in one")
    settings: dict[str, str] = {}
    for number, line in enumerate(text.split(b"\n")[:-1] if text else []):
        key, eq, value = line.decode("latin-1").partition("=")
        if not (eq and SETTING_KEY.fullmatch(key)) or key in settings:
            raise ValueError(
                f"settings line {number}: got {line[:80]!r}; expected a new key=value, key {SETTING_KEY.pattern}"
            )
        if not SETTING_VALUE.fullmatch(value):
            raise ValueError(
                f"settings.{key}: got {value[:80]!r}; expected 1 to 1024 printable ASCII characters, no spaces"
            )
        settings[key] = value
    return settings


def from_bytes(data: bytes) -> Policy:
    """The policy in a policy file's bytes; ValueError naming the field if the file is not valid."""
    data = bytes(data)
    if data[:8] != MAGIC:
        raise ValueError(f"header.magic: got {data[:8]!r}; expected {MAGIC!r}: not a dcgym policy file")
    if len(data) < _HEADER.size + 4:
        raise ValueError(f"file size: got {len(data)} bytes; expected at least {_HEADER.size + 4}")
    _, version, kind, agents, flags, body_size = _HEADER.unpack_from(data)
    if not 1 <= version <= VERSION:
        raise ValueError(f"header.version: got {version}; expected 1 .. {VERSION}")
    if body_size != len(data) - _HEADER.size - 4:
        raise ValueError(f"file size: got {len(data)} bytes; expected header.body_size ({body_size}) + 36")
    (stored,) = struct.unpack_from("<I", data, len(data) - 4)
    if stored != zlib.crc32(data[:-4]):
        raise ValueError(f"checksum: got {stored:#010x}; expected {zlib.crc32(data[:-4]):#010x}: the file is corrupted")
    if flags != 0:
        raise ValueError(f"header.flags: got {flags}; expected 0")
    c = _Cursor(data, _HEADER.size, len(data) - 4)
    kind_name = _name(KINDS, kind, "header.kind")
    if kind_name == "fill" and version < FILL_VERSION:
        raise ValueError(f"header.kind: got {kind}; expected 1 .. 3 in a version-{version} file")
    settings = _read_settings(c) if version >= SETTINGS_VERSION else {}
    policy: Policy
    if kind_name == "linear_pair":
        spec = _read_input(c)
        critic_id, max_logit = struct.unpack("<If", c.take(8, "critic_basis"))
        critic_basis = None if critic_id == NO_CRITIC else _name(BASES, critic_id, "critic_basis")
        n, f = spec.num_loads, spec.num_features
        fc = num_features(critic_basis, n) if critic_basis else 0
        if agents != n:
            raise ValueError(f"header.num_agents: got {agents}; expected {n} (input.num_loads)")
        migration, stealing, critic = [], [], []
        for i in range(n):
            migration.append(c.weights((n, f), f"node[{i}].migration"))
            stealing.append(c.weights((n, f), f"node[{i}].stealing"))
            if critic_basis:
                critic.append(c.weights((fc,), f"node[{i}].critic"))
        policy = LinearPairPolicy(
            spec,
            np.stack(migration),
            np.stack(stealing),
            critic_basis,
            np.stack(critic) if critic_basis else None,
            max_logit,
            settings,
        )
    elif kind_name == "fill":
        n, *fields, rules = struct.unpack("<I4fI", c.take(24, "fill"))
        if n != agents:
            raise ValueError(f"header.num_agents: got {agents}; expected {n} (fill.num_nodes)")
        if rules > (3 if version >= PER_TASK_VERSION else 1):
            allowed = (
                "0 .. 3 (bit 0: the steal rule, bit 1: per task)"
                if version >= PER_TASK_VERSION
                else "0 or 1 (the steal rule) in a version-4 or -5 file"
            )
            raise ValueError(f"fill.rules: got {rules}; expected {allowed}")
        capacity = c.weights((n,), "fill.capacity")
        _check_fill(tuple(fields[:3]), fields[3], capacity)
        gains = c.weights((n, 2 * n + 3, FILL_FEATURES), "gains")
        policy = FillPolicy(*fields, bool(rules & 1), capacity, gains, settings, per_task=bool(rules & 2))
    elif kind_name == "linear_value":
        spec = _read_input(c)
        policy = LinearValuePolicy(spec, c.weights((agents, spec.num_features), "weights"), settings)
    else:
        d, m, head_id, k = c.u32(4, "mlp")
        head = _name(HEADS, head_id, "mlp.head")
        if head in _NEW_HEADS and version < NEW_HEADS_VERSION:
            raise ValueError(f"mlp.head: got {head_id}; expected 0 .. 4 in a version-{version} file")
        rows = row_width = 0
        if version >= ROWS_VERSION:
            rows, row_width = c.u32(2, "mlp.rows")
            if rows:
                _check_rows(rows, row_width, d, k)
            elif row_width:
                raise ValueError(f"mlp.row_width: got {row_width}; expected 0 (a flat network: mlp.rows is 0)")
        net_in = d - (rows - 1) * row_width if rows else d
        net_out = k // rows if rows else k
        agent_network = list(c.u32(agents, "mlp.agent_network"))
        if not all(0 <= a < m for a in agent_network):
            raise ValueError(f"mlp.agent_network: got {agent_network}; expected networks 0 .. {m - 1}")
        low = high = None
        if head in _BOUNDED_HEADS:
            low, high = c.f32((k,), "mlp.low"), c.f32((k,), "mlp.high")
        groups = None
        if head == "multi_categorical":
            (g,) = c.u32(1, "mlp.num_groups")
            groups = list(c.u32(g, "mlp.groups"))
            if not groups or min(groups) < 1 or sum(groups) != k:
                raise ValueError(f"mlp.groups: got {groups}; expected sizes >= 1 summing to {k} (mlp.num_outputs)")
        networks = []
        for net in range(m):
            (num_layers,) = c.u32(1, f"network[{net}].num_layers")
            layers, width = [], net_in
            for li in range(num_layers):
                where = f"network[{net}].layer[{li}]"
                inp, out, act = c.u32(3, where)
                if inp != width:
                    raise ValueError(f"{where}.in: got {inp}; expected {width}")
                layers.append(
                    Layer(
                        c.weights((out, inp), f"{where}.weight"),
                        c.weights((out,), f"{where}.bias"),
                        _name(ACTIVATIONS, act, f"{where}.activation"),
                    )
                )
                width = out
            if width != net_out:
                raise ValueError(f"network[{net}].layer[{num_layers - 1}].out: got {width}; expected {net_out}")
            networks.append(layers)
        policy = MlpPolicy(d, networks, agent_network, head, low, high, groups, settings, rows, row_width)
    if c.pos != c.end:
        raise ValueError(f"header.body_size: got {body_size}; the declared shapes end at {c.pos - _HEADER.size}")
    return policy


def with_settings(policy: Policy, settings: dict[str, str]) -> Policy:
    """``policy`` with ``settings`` added to its own (the same object, for chaining)."""
    policy.settings = {**policy.settings, **settings}
    return policy


def read_policy(path: str | Path) -> Policy:
    """The policy in the file at ``path`` (:func:`from_bytes`)."""
    return from_bytes(Path(path).read_bytes())
