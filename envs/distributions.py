"""Service-time distributions of scenario files, one model per ``dist``.

The workloads of the papers are all of these forms: Exp(75), Bimodal and
HyperExp mixtures (Malcolm §7.1), Exp(50), Bimodal and Trimodal fixed values
(RackSched §4.1). Times are work at speed 1, in microseconds; the engine
samples them (cpp_core/include/dcgym/kernel/distribution.hpp).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dcgym.envs.error import InvalidConfigError

PositiveUs = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
_SUM_TOLERANCE = 1e-6  # the engine's tolerance on mixture probabilities


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_sums_to_one(pairs: list[tuple[float, float]], what: str) -> list[tuple[float, float]]:
    total = sum(p for p, _ in pairs)
    if abs(total - 1.0) > _SUM_TOLERANCE:
        raise InvalidConfigError("", pairs, f"{what} whose probabilities sum to 1, not {total:g}")
    return pairs


class Exp(_Dist):
    """Exponential: ``{dist: exp, mean_us: 75}`` is Malcolm's Exp(75)."""

    dist: Literal["exp"] = Field(description="the distribution family")
    mean_us: PositiveUs = Field(description="mean service time (us)")


class Det(_Dist):
    """Deterministic: every task takes ``value_us``."""

    dist: Literal["det"] = Field(description="the distribution family")
    value_us: PositiveUs = Field(description="the service time (us)")


class Multimodal(_Dist):
    """Fixed values with probabilities: RackSched's Bimodal(90%-50, 10%-500) is ``[[0.9, 50], [0.1, 500]]``."""

    dist: Literal["multimodal"] = Field(description="the distribution family")
    modes: list[tuple[Probability, PositiveUs]] = Field(
        min_length=1, description="[probability, value_us] pairs; probabilities sum to 1; each mode is a task class"
    )

    @field_validator("modes")
    @classmethod
    def _sum(cls, modes: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return _check_sums_to_one(modes, "[probability, value_us] pairs")


class Hyperexp(_Dist):
    """A mixture of exponentials: Malcolm's HyperExp-1 is ``[[0.5, 50], [0.5, 500]]``."""

    dist: Literal["hyperexp"] = Field(description="the distribution family")
    phases: list[tuple[Probability, PositiveUs]] = Field(
        min_length=1, description="[probability, mean_us] pairs; probabilities sum to 1; each phase is a task class"
    )

    @field_validator("phases")
    @classmethod
    def _sum(cls, phases: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return _check_sums_to_one(phases, "[probability, mean_us] pairs")


class Lognormal(_Dist):
    """Lognormal with the given mean and the standard deviation ``sigma`` of its logarithm."""

    dist: Literal["lognormal"] = Field(description="the distribution family")
    mean_us: PositiveUs = Field(description="mean service time (us)")
    sigma: float = Field(gt=0, le=10, description="standard deviation of log(service time)")


class BoundedPareto(_Dist):
    """Pareto with shape ``alpha`` truncated to [low_us, high_us]."""

    dist: Literal["bounded_pareto"] = Field(description="the distribution family")
    alpha: float = Field(gt=0, allow_inf_nan=False, description="tail index")
    low_us: PositiveUs = Field(description="smallest service time (us)")
    high_us: PositiveUs = Field(description="largest service time (us), above low_us")

    @field_validator("high_us")
    @classmethod
    def _above_low(cls, high: float, info) -> float:
        low = info.data.get("low_us")
        if low is not None and not high > low:
            raise InvalidConfigError("", high, f"a number > low_us ({low:g})")
        return high


class Empirical(_Dist):
    """A piecewise-linear CDF through the given points (e.g. a measured trace)."""

    dist: Literal["empirical"] = Field(description="the distribution family")
    cdf: list[tuple[Annotated[float, Field(ge=0, allow_inf_nan=False)], Probability]] = Field(
        min_length=2,
        description="[value_us, cumulative probability] points, non-decreasing in both, from probability 0 to 1",
    )

    @field_validator("cdf")
    @classmethod
    def _is_cdf(cls, cdf: list[tuple[float, float]]) -> list[tuple[float, float]]:
        allowed = "points non-decreasing in value and probability, from probability 0 to 1, with a positive mean"
        ordered = all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(cdf, cdf[1:]))
        mean = sum((b[1] - a[1]) * (a[0] + b[0]) / 2 for a, b in zip(cdf, cdf[1:]))
        if not ordered or cdf[0][1] != 0 or cdf[-1][1] != 1 or not mean > 0:
            raise InvalidConfigError("", cdf, allowed)
        return cdf


Service = Annotated[
    Exp | Det | Multimodal | Hyperexp | Lognormal | BoundedPareto | Empirical, Field(discriminator="dist")
]
"""Any service-time distribution, chosen by its ``dist`` key."""
