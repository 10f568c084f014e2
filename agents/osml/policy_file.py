"""OSML's Models A, B and C as ``mlp`` policy files (docs/osml.md, "Export"; docs/policy_format.md).

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

:func:`dcgym.agents.export.osml_policies.export_osml` writes the three files into a folder. Outputs agree with the
trained models to float32 rounding (tests/agents/export/test_osml_export.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dcgym.agents.policy_format import Layer, MlpPolicy
from dcgym.agents.rl.torch_layers import layers_of, numpy

__all__ = ["model_c_policy", "supervised_policy"]


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
            layers.append(Layer(numpy(m.weight), numpy(m.bias)))
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
    layers = [
        Layer(np.asarray(x.weight, np.float64), np.asarray(x.bias, np.float64), x.activation)
        for x in layers_of(module.qnet)
    ]
    return MlpPolicy(int(layers[0].weight.shape[1]), [layers], [0], "identity")
