"""Torch networks as policy-file layers: what the learning systems' exports share."""

from __future__ import annotations

from typing import Any

import numpy as np

from dcgym.agents.policy_format import Layer

__all__ = ["ACTIVATIONS", "layers_of", "numpy"]

ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "SiLU": "silu", "ELU": "elu"}
"""torch activation class -> the policy file's activation."""


def numpy(tensor: Any) -> np.ndarray:
    """A torch tensor's values as float64 numpy."""
    return tensor.detach().cpu().numpy().astype(np.float64)


def layers_of(sequential) -> list[Layer]:
    """The dense layers of a torch ``nn.Sequential`` of Linear layers and activations, as policy-file layers."""
    import torch  # a trained network is given: torch is loaded already

    layers: list[Layer] = []
    for m in sequential:
        if isinstance(m, torch.nn.Linear):
            layers.append(
                Layer(
                    m.weight.detach().cpu().numpy().astype(np.float32), m.bias.detach().cpu().numpy().astype(np.float32)
                )
            )
        elif type(m).__name__ in ACTIVATIONS and layers and layers[-1].activation == "identity":
            layers[-1].activation = ACTIVATIONS[type(m).__name__]
        else:
            raise ValueError(f"layer {type(m).__name__}: expected Linear or one of {sorted(ACTIVATIONS)} after one")
    return layers
