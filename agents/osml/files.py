"""OSML's models from policy files, run by the C++ runtime (``RuntimePolicy``): no torch, no Ray.

A folder of ``model_a.dcpol`` and ``model_b.dcpol`` (and optionally ``model_c.dcpol``, and Models A' and B' as
``model_a_shadow.dcpol`` and ``model_b_shadow.dcpol``), as
:func:`dcgym.agents.export.osml_policies.export_osml` writes it and a zoo entry holds it, gives the scheduler
(:class:`dcgym.agents.osml.scheduler.OSML`, ``osml:files=DIR``) what its PyTorch and RLlib models give:

- :class:`FileModel`: Model-A or Model-B, :meth:`FileModel.predict` on raw counters (rows of
  :data:`~dcgym.agents.osml.features.A_FEATURES`, Model-B with the slowdown appended) in the data set's units;
  Model-A' or Model-B' on their co-location inputs (:func:`load_shadows`);
- :func:`file_q_values`: Model-C's Q-values of the 49 actions for colo_v0 observations, the forbidden ones
  (mask 0) at -inf; the file takes the scaled counters (:func:`dcgym.agents.osml.model_c.normalize`).

:func:`load_files` checks the folder and each file (the runtime's own checks, then the shapes and head each
model needs) and refuses anything else with an InvalidConfigError naming ``files``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from dcgym.agents.osml.features import (
    A_FEATURES,
    A_SHADOW_FEATURES,
    A_TARGETS,
    B_FEATURES,
    B_SHADOW_FEATURES,
    B_SHADOW_TARGETS,
    B_TARGETS,
)
from dcgym.agents.osml.model_c import normalize
from dcgym.cpp_core import RuntimePolicy
from dcgym.envs.colo.colo_v0 import ACTIONS, OBSERVATION_FEATURES
from dcgym.envs.error import InvalidConfigError

__all__ = [
    "FILES",
    "SCHEDULER_SETTINGS",
    "SHAPES",
    "FileModel",
    "file_q_values",
    "is_osml_folder",
    "load_files",
    "load_shadows",
    "model_c_file",
    "scheduler_settings",
]

FILES = {
    "model_a": "model_a.dcpol",
    "model_b": "model_b.dcpol",
    "model_c": "model_c.dcpol",
    "model_a_shadow": "model_a_shadow.dcpol",
    "model_b_shadow": "model_b_shadow.dcpol",
}
"""The file of each model in an OSML folder (Models A' and B' are the shadows)."""
SHAPES = {
    "model_a": (len(A_FEATURES), len(A_TARGETS)),
    "model_b": (len(B_FEATURES), len(B_TARGETS)),
    "model_c": (len(OBSERVATION_FEATURES), ACTIONS),
    "model_a_shadow": (len(A_SHADOW_FEATURES), len(A_TARGETS)),
    "model_b_shadow": (len(B_SHADOW_FEATURES), len(B_SHADOW_TARGETS)),
}
"""(inputs, outputs) of each model's file."""
SCHEDULER_SETTINGS = ("rule", "reclaim", "shadows")
"""The scheduler's parameters a folder's ``model_c.dcpol`` may record beside ``model`` (the configuration it was
built to run with: :func:`scheduler_settings`)."""


def is_osml_folder(given: object) -> bool:
    """Whether a policy spec is a folder of OSML's policy files (it holds ``model_a.dcpol``)."""
    return isinstance(given, (str, Path)) and (Path(given) / FILES["model_a"]).is_file()


class FileModel:
    """Model-A or Model-B from its policy file: :meth:`predict` as :meth:`dcgym.agents.osml.supervised.Model.predict`."""

    def __init__(self, runtime) -> None:
        self.runtime = runtime

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.runtime.outputs(np.asarray(x, dtype=np.float32).reshape(-1, self.runtime.num_inputs)).astype(
            np.float64
        )


def file_q_values(runtime) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Model-C's Q-values from its policy file, as a function of (observations, masks), forbidden actions -inf."""

    def q_values(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        x = normalize(np.asarray(obs, dtype=np.float32)).astype(np.float32)
        q = runtime.outputs(x.reshape(-1, runtime.num_inputs))
        return np.where(np.asarray(mask) > 0, q, -np.inf)

    return q_values


def _runtime(folder: Path, which: str, given: str, field: str = "files", whose: str | None = None):
    """The checked runtime of ``folder``'s file of model ``which`` (``whose``: how messages name the file)."""
    path = folder / FILES[which] if whose is None else folder
    whose = whose or f"a folder whose {FILES[which]}"
    try:
        runtime = RuntimePolicy.from_file(str(path))
    except ValueError as exc:
        raise InvalidConfigError(field, given, f"{whose} is a valid policy file ({exc})") from None
    n_in, n_out = SHAPES[which]
    got_out = None
    if runtime.kind == "mlp" and runtime.head == "identity" and runtime.num_inputs == n_in:
        got_out = runtime.outputs(np.zeros(n_in, dtype=np.float32)).shape[0]
    if got_out != n_out:
        shape = f"{runtime.kind}, head {runtime.head if runtime.kind == 'mlp' else '-'}, {runtime.num_inputs} inputs"
        raise InvalidConfigError(
            field,
            given,
            f"{whose} is an mlp with the identity head, {n_in} inputs and {n_out} outputs "
            f"(its {which}; this one: {shape}{'' if got_out is None else f', {got_out} outputs'})",
        )
    recorded = runtime.settings.get("model", which)  # files before format version 3 record no role
    if recorded != which:
        raise InvalidConfigError(field, given, f"{whose} is OSML's {which}; its settings say model={recorded}")
    return runtime


def model_c_file(path: str | Path) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Model-C's Q-values from one policy file (``python -m dcgym export`` of an osml_dqn run); InvalidConfigError
    naming ``model_c`` otherwise."""
    return file_q_values(_runtime(Path(path), "model_c", str(path), "model_c", "a policy file that"))


def load_files(files: str | Path) -> tuple[FileModel, FileModel, Callable | None]:
    """(Model-A, Model-B, Model-C's Q-values or None) from an OSML folder of policy files (module docstring)."""
    folder = Path(str(files))
    if not folder.is_dir():
        raise InvalidConfigError(
            "files", str(files), "a folder holding model_a.dcpol and model_b.dcpol (and model_c.dcpol)"
        )
    for which in ("model_a", "model_b"):
        if not (folder / FILES[which]).is_file():
            raise InvalidConfigError(
                "files", str(files), f"a folder holding {FILES[which]} (an OSML export or zoo entry; it has none)"
            )
    model_a = FileModel(_runtime(folder, "model_a", str(files)))
    model_b = FileModel(_runtime(folder, "model_b", str(files)))
    q = file_q_values(_runtime(folder, "model_c", str(files))) if (folder / FILES["model_c"]).is_file() else None
    return model_a, model_b, q


def load_shadows(files: str | Path) -> tuple[FileModel | None, FileModel | None]:
    """(Model-A', Model-B') from an OSML folder of policy files (:func:`load_files` checked the folder); None for
    each absent file (the scheduler then places with Model-A and shares nothing, as without them)."""
    folder = Path(str(files))
    return tuple(
        FileModel(_runtime(folder, which, str(files))) if (folder / FILES[which]).is_file() else None
        for which in ("model_a_shadow", "model_b_shadow")
    )


def scheduler_settings(files: str | Path) -> dict[str, str]:
    """The scheduler's parameters recorded in an OSML folder's ``model_c.dcpol`` (:data:`SCHEDULER_SETTINGS`); none
    when the file is absent or unreadable (:func:`load_files` then says what is wrong)."""
    path = Path(str(files)) / FILES["model_c"]
    try:
        settings = RuntimePolicy.from_file(str(path)).settings if path.is_file() else {}
    except ValueError:
        return {}
    return {k: v for k, v in settings.items() if k in SCHEDULER_SETTINGS}
