"""Schema pieces every family's scenario shares: the base model, seeds, loads and the common fields.

A family's scenario class (``RackScenario``, ``LbScenario``, ...) derives from
:class:`ScenarioBase` and declares its ``kind`` as a one-value ``Literal``:
:mod:`dcgym.envs.scenario` validates a file against the union of every
registered family's class, discriminated on ``kind``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, PrivateAttr, model_validator

from dcgym.cpp_core import MAX_LOAD
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.validation import OneLine

__all__ = ["EpisodeLoads", "Load", "MaxSteps", "ScenarioBase", "Schema", "Seed"]

Load = Annotated[float, Field(gt=0, le=MAX_LOAD, allow_inf_nan=False)]
"""Offered load as a fraction of the scenario's capacity (each family defines its capacity); up to the engine's
MAX_LOAD (10)."""

Seed = Annotated[int, Field(ge=0, lt=2**64)]
"""The one seed every random stream of a run derives from."""


def _max_steps(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidConfigError("", value, "a positive integer (steps per episode)")
    return int(value)


MaxSteps = Annotated[int | None, PlainValidator(_max_steps, json_schema_input_type=int | None)]
"""An environment's episode length in steps; None: the environment derives it from its scenario."""


class EpisodeLoads(BaseModel):
    """An environment config's ``load`` and optional ``load_range`` (declared by the subclass, with its defaults):
    each episode runs at ``load``, or at a load drawn uniformly from ``load_range`` with the episode's engine
    seed and the subclass's ``load_stream`` (so the load is part of the seeded episode)."""

    load_stream: ClassVar[int]

    @model_validator(mode="after")
    def _ordered_range(self) -> EpisodeLoads:
        if self.load_range is not None and self.load_range[0] > self.load_range[1]:
            raise InvalidConfigError("load_range", list(self.load_range), "[low, high] with low <= high")
        return self

    def episode_load(self, engine_seed: int) -> float:
        """The load of an episode with ``engine_seed``: ``load``, or a draw from ``load_range``."""
        if self.load_range is None:
            return self.load
        low, high = self.load_range
        return float(np.random.default_rng([engine_seed, self.load_stream]).uniform(low, high))


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
