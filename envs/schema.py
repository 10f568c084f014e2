"""Schema pieces every family's scenario shares: the base model, seeds, loads and the common fields.

A family's scenario class (``RackScenario``, ``LbScenario``, ...) derives from
:class:`ScenarioBase` and declares its ``kind`` as a one-value ``Literal``:
:mod:`dcgym.envs.scenario` validates a file against the union of every
registered family's class, discriminated on ``kind``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from dcgym.cpp_core import MAX_LOAD
from dcgym.envs.validation import OneLine

__all__ = ["Load", "ScenarioBase", "Schema", "Seed"]

Load = Annotated[float, Field(gt=0, le=MAX_LOAD, allow_inf_nan=False)]
"""Offered load as a fraction of the scenario's capacity (each family defines its capacity); up to the engine's
MAX_LOAD (10)."""

Seed = Annotated[int, Field(ge=0, lt=2**64)]
"""The one seed every random stream of a run derives from."""


class Schema(BaseModel):
    """A mapping of a scenario or config file: unknown fields are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ScenarioBase(Schema):
    """The fields of every scenario file, whatever its family (each also has ``loads``, its default grid)."""

    kind: str = Field(description="the family of the scenario (each family's class allows its own name only)")
    description: OneLine | None = Field(
        None, description="one line: what the scenario is and the paper section it comes from"
    )
    _name: str = PrivateAttr("")

    @property
    def name(self) -> str:
        """The file name without its extension (empty if built in Python)."""
        return self._name

    @property
    def family(self) -> str:
        """The family the scenario belongs to: its ``kind``."""
        return self.kind
