"""Every batched environment's numbers, pinned: a digest of a few hundred steps across autoresets.

The digests were recorded before the vector environments moved onto one shared base
(:mod:`dcgym.envs.vector`) and the rack batch step onto preallocated buffers: equal digests prove
the same bits for the same seed and actions. Actions come from a fixed generator; episodes are
short so that drawn-seed autoresets are covered, not only the seeded first episode.
Regenerate (only when numbers are meant to change): ``python tests/envs/test_vector_pinned.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from dcgym.envs.colo.vector import ColoVectorEnv
from dcgym.envs.flow.vector import FlowLrlaVectorEnv, FlowSrlaVectorEnv, FlowVectorEnv
from dcgym.envs.rack.vector import RackCentralVectorEnv, RackVectorEnv

B = 3
# load_unit: link keeps the load of the recording (each host 0.8 of one port) since AuTO's scenarios moved to
# every port's share: the same engine config, so the same digests.
LIGHT = {"load_unit": "link"}
LONG_FLOWS = {"scenario": "auto_websearch", "overrides": {"long_flow_bytes": 100_000, **LIGHT}}  # so that lRLA acts
NVEC = np.tile([4, 4, 3], 11)  # auto_websearch: 4 levels, 4 rate caps, 3 paths for each of 11 long flows


def _digest(outputs: list[Any]) -> str:
    """SHA-256 over every array (dtype, shape, bytes) and scalar, dict keys in sorted order."""
    h = hashlib.sha256()

    def add(x: Any) -> None:
        if isinstance(x, Mapping):
            for key in sorted(x):
                h.update(str(key).encode())
                add(x[key])
        elif isinstance(x, (tuple, list)):
            h.update(b"[")
            for item in x:
                add(item)
            h.update(b"]")
        else:
            a = np.ascontiguousarray(x)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())

    add(outputs)
    return h.hexdigest()


def _run(env: Any, steps: int, act: Callable[[np.random.Generator], Any], seed: int = 5, infos: bool = True) -> str:
    """The digest of a reset and ``steps`` steps; ``infos`` false: of everything but the infos."""
    rng = np.random.default_rng(seed)
    outputs: list[Any] = [env.reset(seed=seed)]
    for _ in range(steps):
        outputs.append(env.step(act(rng)))
    env.close()
    return _digest(outputs if infos else [out[:-1] for out in outputs])


def _rack(steps: int) -> str:
    env = RackVectorEnv(B, scenario="malcolm_homog_exp", max_steps=7, obs_extras=("arrival_rate", "rank"))
    return _run(env, steps, lambda rng: rng.uniform(-10, 10, (B, 10, 20)))


def _rack_central(steps: int) -> str:
    env = RackCentralVectorEnv(B, scenario="malcolm_hetero_paper_exp", max_steps=9, action_type="probabilities")
    return _run(env, steps, lambda rng: rng.uniform(0, 1, (B, 14 * 28)).astype(np.float32), infos=False)


def _flow_actions(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "srla": rng.uniform(-1, 1, (B, 3)).astype(np.float32),
        "lrla": rng.integers(0, NVEC, (B, 33)),
    }


def _flow(steps: int) -> str:
    return _run(FlowVectorEnv(B, max_steps=9, **LONG_FLOWS), steps, _flow_actions)


def _flow_srla(steps: int) -> str:
    env = FlowSrlaVectorEnv(B, scenario="auto_websearch", overrides=LIGHT, max_steps=7)
    return _run(env, steps, lambda rng: rng.uniform(-1, 1, (B, 3)).astype(np.float32), infos=False)


def _flow_lrla(steps: int) -> str:
    env = FlowLrlaVectorEnv(B, max_steps=20, **LONG_FLOWS)
    return _run(env, steps, lambda rng: rng.integers(0, NVEC, (B, 33)), infos=False)


def _colo(steps: int) -> str:
    env = ColoVectorEnv(B, scenario="colo_churn", max_steps=40)
    return _run(env, steps, lambda rng: rng.integers(0, 49, (B, env.num_agents)))


CASES: dict[str, tuple[Callable[[int], str], int, str]] = {
    "rack": (_rack, 300, "f298f70873b022d9fd91d8e53994d28020d91d3016122ce8d3ea316fb7000a92"),
    "rack_central": (_rack_central, 300, "cffbe236b3d90b34784fc1808d07d80816bde32428efd2ae8b6993dbe7815f42"),
    "flow": (_flow, 200, "ae2f585aa75419710ac53d906c016326b2d1618ea8d8ffeb39c2ea6b7ae5210f"),
    "flow_srla": (_flow_srla, 200, "abbac154ccbf0cad612f44efcfd70096ac44ca7de022e6c4a1304a9ac92667a2"),
    "flow_lrla": (_flow_lrla, 200, "833594c7b5d97618e6def32ddd995d2d8c5c263dd9945831ef1e062a164a3641"),
    "colo": (_colo, 300, "321e817ac652671429e7f9495b2dd61207fbebcfca2aef2a73fd1d952ed12fb9"),
}
"""Case -> (runner, steps, digest recorded before the shared vector base; colo re-recorded when the catalog's warm-up
slowdown became 0 and colo_v0's default reward the qos one). The one-agent forms (rack_central, flow_srla,
flow_lrla) digest everything but their infos since those became their single environments' (tests/test_conformance.py
compares them with Gymnasium's sync vectorisation): recorded with the code before that change and after, equal."""


@pytest.mark.parametrize("case", CASES)
def test_batched_trajectories_keep_their_pinned_digest(case):
    run, steps, digest = CASES[case]
    assert run(steps) == digest


if __name__ == "__main__":
    for name, (run, steps, _) in CASES.items():
        print(f'    "{name}": (_{name}, {steps}, "{run(steps)}"),')
