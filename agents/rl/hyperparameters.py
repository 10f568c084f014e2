"""The base of every learning system's hyperparameter schema."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_LAYER_SIZE", "Hyperparameters", "LayerSizes"]

MAX_LAYER_SIZE = 65_536
"""Widest hidden layer a schema accepts (a square layer of this size is 16 GB of float32 weights)."""

LayerSizes = Annotated[list[Annotated[int, Field(ge=1, le=MAX_LAYER_SIZE)]], Field(min_length=1, max_length=64)]
"""Hidden layer sizes of a network, input side first: at least one layer, each of at least one unit, checked before
Ray or torch starts."""


class Hyperparameters(BaseModel):
    """Base of the hyperparameter schemas: unknown keys are refused, each field documented."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
