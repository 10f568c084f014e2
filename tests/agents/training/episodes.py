"""Episode comparison the env-runner tests share: two RLlib episodes' states, field by field, exactly."""

from __future__ import annotations

import numpy as np

IGNORED = {
    "id_",  # random episode ids (uuid4), as RLlib draws them
    "agent_episode_ids",
    "multi_agent_episode_id",
    "_start_time",  # wall clock
    "_last_step_time",
    "agent_to_module_mapping_fn",  # the same function, a fresh reference
    "_np_random",  # the spaces' own generators
}


def assert_same_state(a, b, path: str = "") -> None:
    """Assert that two episode states (nested dicts, lists, arrays, objects with state) are equal."""
    if isinstance(a, dict):
        keys = {k for k in a if k not in IGNORED}
        assert keys == {k for k in b if k not in IGNORED}, path
        for k in keys:
            assert_same_state(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_state(x, y, f"{path}[{i}]")
    elif isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and np.array_equal(a, b), path
    elif hasattr(a, "get_state"):
        assert_same_state(a.get_state(), b.get_state(), path)
    elif type(a).__name__ in ("Box", "Discrete", "MultiDiscrete", "Dict"):
        assert a == b, path
    elif hasattr(a, "__dict__") and not callable(a):
        assert_same_state(vars(a), vars(b), path)
    else:
        assert a == b, (path, a, b)
