"""OSML's three models -> ``mlp`` policy files (docs/osml.md, "Export"; docs/policy_format.md).

- Model-A and Model-B (:class:`dcgym.agents.osml.supervised.Model`: 3 x 40 ReLU, dropout, which is off at
  inference): the file takes the raw counters (:data:`~dcgym.agents.osml.features.A_FEATURES`, Model-B also the
  allowed slowdown) and gives the targets in the data set's units, with the ``identity`` head. The min-max
  normalization is affine and is in the file's layers: a first layer with identity activation computes
  ``(x - x_min) / span`` (a diagonal weight ``1 / span``, bias ``-x_min / span``; ``span`` 1 for a counter that was
  constant in training, as the model scales it), then the trained layers, the last one multiplied out to
  ``y * span_y + y_min``. The input scaling is a layer of its own rather than folded into the first trained
  layer: a counter that was constant in training (the frequency, 2300 MHz) would otherwise enter as
  ``w * 2300 - w * 2300`` in float32, a cancellation that costs four digits.
- Model-C (:class:`dcgym.agents.osml.model_c_rllib.ModelCModule`: 3 x 30 ReLU to 49 Q-values): the file takes the
  *scaled* counters, :func:`dcgym.agents.osml.model_c.normalize` of colo_v0's eight observation features (its
  log(1 + x) terms are not affine, so they stay with the caller), and gives the 49 Q-values (``identity`` head,
  action k = (k // 7 - 3, k % 7 - 3) cores and ways); masking the forbidden actions stays in the control logic,
  which takes the best allowed one.

:func:`export_osml` writes the three files into a folder (``model_a.dcpol``, ``model_b.dcpol``,
``model_c.dcpol``): what ``evaluate.py --policy osml:files=DIR`` and a zoo entry ``zoo:NAME`` run. Outputs agree
with the trained models to float32 rounding (tests/agents/export/test_osml_export.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dcgym.agents.export.format import Layer, MlpPolicy, write_policy
from dcgym.agents.osml.files import FILES

__all__ = ["FILES", "export_osml", "load_model_c", "model_c_policy", "supervised_policy"]


def supervised_policy(model: Any) -> MlpPolicy:
    """Model-A or Model-B (a trained :class:`~dcgym.agents.osml.supervised.Model`) as a one-agent ``mlp`` policy on
    the raw counters, its outputs in the data set's units (module docstring)."""
    import torch

    x_min, x_max = np.asarray(model.x_min, np.float64), np.asarray(model.x_max, np.float64)
    y_min, y_max = np.asarray(model.y_min, np.float64), np.asarray(model.y_max, np.float64)
    span_x = np.where(x_max > x_min, x_max - x_min, 1.0)
    span_y = np.where(y_max > y_min, y_max - y_min, 1.0)
    layers = [Layer(np.diag(1.0 / span_x), -x_min / span_x, "identity")]
    for m in model.net.net:
        if isinstance(m, torch.nn.Linear):
            layers.append(Layer(_numpy(m.weight), _numpy(m.bias)))
        elif isinstance(m, torch.nn.ReLU) and layers[-1].activation == "identity" and len(layers) > 1:
            layers[-1].activation = "relu"
        elif not isinstance(m, torch.nn.Dropout):  # dropout is the identity at inference
            raise ValueError(f"model {model.kind}: layer {type(m).__name__} is not Linear, ReLU or Dropout")
    last = layers[-1]
    layers[-1] = Layer(last.weight * span_y[:, None], last.bias * span_y + y_min, last.activation)
    if layers[0].weight.shape[1] != len(model.features) or layers[-1].weight.shape[0] != len(model.targets):
        raise ValueError(f"model {model.kind}: its network does not map its {len(model.features)} features")
    return MlpPolicy(len(model.features), [layers], [0], "identity")


def model_c_policy(module: Any) -> MlpPolicy:
    """Model-C's Q-network (a :class:`~dcgym.agents.osml.model_c_rllib.ModelCModule`) as a one-agent ``mlp`` policy:
    scaled counters in, the 49 Q-values out (module docstring)."""
    from dcgym.agents.export.auto_policies import layers_of

    layers = [
        Layer(np.asarray(x.weight, np.float64), np.asarray(x.bias, np.float64), x.activation)
        for x in layers_of(module.qnet)
    ]
    return MlpPolicy(int(layers[0].weight.shape[1]), [layers], [0], "identity")


def export_osml(models: str | Path, model_c: str | Path | None, out: str | Path) -> dict[str, Path]:
    """Write ``out/model_a.dcpol`` and ``out/model_b.dcpol`` from a folder of ``model_a.pt`` and ``model_b.pt``
    (benchmarks/osml_models.py) and, if given, ``out/model_c.dcpol`` from a Model-C module folder, checkpoint or
    train.py run folder; returns the paths written by model. InvalidConfigError naming the argument otherwise."""
    from dcgym.agents.osml.supervised import Model
    from dcgym.envs.error import InvalidConfigError

    folder = Path(models)
    for f in ("model_a.pt", "model_b.pt"):
        if not (folder / f).is_file():
            raise InvalidConfigError("models", str(models), f"a folder holding {f} (benchmarks/osml_models.py)")
    policies = {  # every model read before any file is written
        "model_a": supervised_policy(Model.load(folder / "model_a.pt")),
        "model_b": supervised_policy(Model.load(folder / "model_b.pt")),
    }
    if model_c is not None:
        policies["model_c"] = model_c_policy(load_model_c(model_c))
    written = {which: write_policy(policy, Path(out) / FILES[which]) for which, policy in policies.items()}
    return written


def load_model_c(path: str | Path) -> Any:
    """The Model-C module of a module folder (``.../rl_module/shared``), a checkpoint or a train.py run folder (its
    newest checkpoint's shared module); InvalidConfigError naming ``model_c`` otherwise."""
    from dcgym.envs.error import InvalidConfigError

    where = Path(path)
    candidates = [where, where / "learner_group" / "learner" / "rl_module" / "shared"]
    if where.is_dir() and not any(
        (c / "module_state.pkl").exists() or (c / "module_state").exists() for c in candidates
    ):
        from dcgym.agents.training.checkpoints import find_checkpoint

        try:
            candidates.append(find_checkpoint(where) / "learner_group" / "learner" / "rl_module" / "shared")
        except Exception:  # noqa: BLE001 - not a run folder: the error below says what is expected
            pass
    for c in candidates:
        if c.is_dir() and any(c.glob("module_state*")):
            from ray.rllib.core.rl_module.rl_module import RLModule

            module = RLModule.from_checkpoint(str(c))
            if not hasattr(module, "qnet"):
                raise InvalidConfigError("model_c", str(path), "a Model-C module (algorithm osml_dqn)")
            return module
    raise InvalidConfigError(
        "model_c", str(path), "a Model-C module folder, checkpoint or train.py run folder (algorithm osml_dqn)"
    )


def _numpy(tensor: Any) -> np.ndarray:
    return tensor.detach().cpu().numpy().astype(np.float64)
