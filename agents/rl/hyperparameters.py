"""The base of every learning system's hyperparameter schema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Hyperparameters"]


class Hyperparameters(BaseModel):
    """Base of the hyperparameter schemas: unknown keys are refused, each field documented."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
