"""Colo scenario files (``kind: colo``): a server, mixes of latency-critical services, a scheduler.

A colo scenario describes one server (a platform preset of ``catalog.yaml``
or explicit values), a list of **mixes** (each a set of services with their
loads, launched together or in turn: one evaluation point each), the tick
and the length of a run, the engine's mode (``online`` or ``fresh``
samples, docs/colo.md) and the default scheduler::

    kind: colo
    platform: e5_2697_v4
    mixes:
      - [{service: moses, load: 0.4}, {service: img-dnn, load: 0.6}, {service: xapian, load: 0.5}]
    tick_s: 0.1
    horizon_s: 180
    scheduler: {policy: parties}

A service's load is ``load`` (a fraction of its maximum load, OSML Table 1 by
default or its code's MAX_LOAD with ``variant: code``) or ``rps``
(requests/s). Every default of a platform or a service comes from the
catalog (:mod:`dcgym.envs.colo.catalog`); ``params`` overrides a service's
parameters (``{qos_ms: 5, percentile: 0.95}``) and the engine checks them.

**Loads.** The evaluation's load axis is the mix index: ``loads`` is
``[0, 1, ..., len(mixes) - 1]`` and ``engine_config(mix=k, seed=s)`` builds
mix k's engine config. Schedulers are agents
(:mod:`dcgym.agents.heuristics.colo`); the scenario names one
(:data:`SCHEDULERS`) with its parameters, which the scheduler checks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PlainSerializer, PlainValidator, model_validator

from dcgym.cpp_core import ColoSim
from dcgym.envs.colo import catalog as cc
from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.policy_spec import parse_spec, scalar
from dcgym.envs.scenario import load_scenario
from dcgym.envs.schema import ScenarioBase, Seed
from dcgym.envs.schema import Schema as _Schema
from dcgym.envs.validation import validate

__all__ = [
    "MAX_HORIZON_S",
    "SCHEDULERS",
    "ColoScenario",
    "MixService",
    "Noise",
    "Platform",
    "SchedulerSpec",
    "load_colo_scenario",
    "parse_scheduler",
]

SCHEDULERS: dict[str, str] = {
    "unmanaged": "every running service on every core and way: one share group, the OS schedules (OSML §6.2)",
    "equal": "an equal split of the cores and ways among the running services",
    "parties": "PARTIES (ASPLOS'19 Alg. 1): one unit of one resource at a time, by slack, with wheels and reverts",
    "clite": "CLITE (HPCA'20): Bayesian optimisation of the partition (GP, Matern kernel, expected improvement)",
    "oracle": "the cheapest allocation meeting every QoS target, by exhaustive search over the steady state",
    "osml": "OSML (FAST'23): Models A and B place a service, Model-C corrects (dcgym.agents.osml.scheduler)",
}
"""The schedulers a scenario may name (``agents/heuristics/colo.py`` implements them), with one line each."""

LIMITS = ColoSim.limits
"""The engine's bounds of a colo config (colo/*.hpp), which the fields below take as theirs."""

MAX_HORIZON_S = 86_400
"""The longest run, s (a day of simulated time): a scenario's horizon_s and an evaluation's run length."""

_PLATFORMS = tuple(cc.load_catalog()["platforms"])
_SERVICES = tuple(cc.load_catalog()["services"])


def _choice(field: str, value: Any, allowed: tuple[str, ...] | Mapping[str, Any]) -> str:
    if not isinstance(value, str) or value not in allowed:
        suggestion = did_you_mean(value, allowed) if isinstance(value, str) else None
        raise InvalidConfigError(field, value, "one of " + ", ".join(allowed), suggestion=suggestion)
    return value


class SchedulerSpec(dict):
    """A scheduler as a mapping: ``policy`` (one of :data:`SCHEDULERS`) and its parameters."""

    @property
    def policy(self) -> str:
        return self["policy"]

    @property
    def params(self) -> dict[str, Any]:
        return {k: v for k, v in self.items() if k != "policy"}

    def __str__(self) -> str:
        params = self.params
        return self.policy + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")


def parse_scheduler(value: Any) -> SchedulerSpec:
    """``parties``, ``parties:variant=code,interval_s=0.1`` or ``{policy: parties, variant: code}``."""
    if isinstance(value, SchedulerSpec):
        return value
    if isinstance(value, str):
        text = value
        name, options = parse_spec(
            text,
            lambda item: InvalidConfigError("", text, "NAME or NAME:key=value,key=value (a scheduler and parameters)"),
            distinct=False,
        )
        value = {"policy": name, **{key: scalar(option) for key, option in options.items()}}
    if not isinstance(value, Mapping) or "policy" not in value:
        raise InvalidConfigError(
            "", value, "a scheduler name or a mapping with policy: one of " + ", ".join(SCHEDULERS)
        )
    _choice("policy", value["policy"], SCHEDULERS)
    return SchedulerSpec(value)


Scheduler = Annotated[
    SchedulerSpec,
    PlainValidator(parse_scheduler, json_schema_input_type=str | dict[str, Any]),
    PlainSerializer(dict, return_type=dict),
]


class Platform(_Schema):
    """A server: a preset of the catalog with any of its values replaced (logical cores, ways, bandwidth, ...)."""

    preset: str = Field(cc.load_catalog()["default_platform"], description="the catalog preset the rest defaults to")
    cores: int | None = Field(
        None, ge=1, le=LIMITS["logical_cores"], description="logical cores (OSML counts these: 36 on 18 physical)"
    )
    physical_cores: int | None = Field(
        None, ge=1, le=LIMITS["logical_cores"], description="physical cores: cores (no SMT) or half of them"
    )
    ways: int | None = Field(None, ge=1, le=LIMITS["ways"], description="LLC ways (Intel CAT)")
    mb_per_way: float | None = Field(None, gt=0, allow_inf_nan=False, description="LLC capacity of one way, MB")
    mem_bw_gbs: float | None = Field(None, gt=0, allow_inf_nan=False, description="peak memory bandwidth, GB/s")
    freq_min_mhz: float | None = Field(None, gt=0, allow_inf_nan=False, description="lowest core frequency, MHz")
    freq_max_mhz: float | None = Field(None, gt=0, allow_inf_nan=False, description="highest core frequency, MHz")
    mem_latency_ns: float | None = Field(None, gt=0, allow_inf_nan=False, description="unloaded LLC-miss latency, ns")
    smt_gain: float | None = Field(
        None, ge=1, le=LIMITS["smt_gain"], description="throughput of two busy hyperthreads over one, per physical core"
    )
    mba: bool | None = Field(None, description="memory bandwidth allocation (Intel MBA) available")

    @model_validator(mode="after")
    def _known_preset(self) -> Platform:
        _choice("preset", self.preset, _PLATFORMS)
        p = self.engine()
        if p["logical_cores"] not in (p["physical_cores"], 2 * p["physical_cores"]):
            allowed = f"physical_cores ({p['physical_cores']}) or twice it: one or two hyperthreads per core"
            raise InvalidConfigError("cores", p["logical_cores"], allowed)
        if p["freq_max_mhz"] < p["freq_min_mhz"]:
            raise InvalidConfigError("freq_max_mhz", p["freq_max_mhz"], f"a frequency >= {p['freq_min_mhz']:g} MHz")
        return self

    def engine(self) -> dict[str, Any]:
        """The engine's platform dict: the preset's values, then the ones given."""
        given = self.model_dump(exclude={"preset"}, exclude_none=True)
        if "cores" in given:
            given["logical_cores"] = given.pop("cores")
            given.setdefault("physical_cores", given["logical_cores"] // 2 or 1)
        return cc.platform_config(cc.load_catalog(), self.preset, **given)


def _parse_platform(value: Any) -> Platform:
    if isinstance(value, str):
        return Platform(preset=_choice("", value, _PLATFORMS))
    return validate(Platform, value)


PlatformField = Annotated[
    Platform,
    PlainValidator(_parse_platform, json_schema_input_type=str | dict[str, Any]),
    PlainSerializer(lambda p: p.model_dump(exclude_none=True), return_type=dict),
]


class MixService(_Schema):
    """One service of a mix: which, how loaded, when it runs (OSML's workload-file line)."""

    service: str = Field(description="a service of the catalog (OSML Table 1: moses, img-dnn, xapian, ...)")
    load: float | None = Field(
        None, gt=0, le=2, allow_inf_nan=False, description="offered load as a fraction of the service's max load"
    )
    rps: float | None = Field(None, gt=0, allow_inf_nan=False, description="offered load, requests/s (instead of load)")
    threads: int | None = Field(
        None, ge=1, le=LIMITS["threads"], description="worker threads; null = the platform's logical cores"
    )
    launch_s: float = Field(0.0, ge=0, allow_inf_nan=False, description="launch time, s")
    end_s: float | None = Field(None, gt=0, allow_inf_nan=False, description="end time, s; null = runs to the end")
    changes: list[tuple[float, float]] = Field(
        [], description="[[time_s, load], ...]: later loads, in the unit of load or rps (OSML's CHANGE_RPS)"
    )
    params: dict[str, Any] = Field({}, description="service parameters replacing the catalog's (engine names)")

    @model_validator(mode="after")
    def _one_load(self) -> MixService:
        _choice("service", self.service, _SERVICES)
        if (self.load is None) == (self.rps is None):
            raise InvalidConfigError("load", self.load, "a fraction of max load in (0, 2], or rps instead (not both)")
        if self.end_s is not None and self.end_s <= self.launch_s:
            raise InvalidConfigError("end_s", self.end_s, f"a time > launch_s ({self.launch_s:g})")
        times = [t for t, _ in self.changes]
        for k, (t, x) in enumerate(self.changes):
            if not (math.isfinite(t) and t >= 0 and math.isfinite(x) and x > 0):
                raise InvalidConfigError(f"changes.{k}", [t, x], "[time_s >= 0, load > 0]")
        if times != sorted(times):
            raise InvalidConfigError("changes", [list(c) for c in self.changes], "changes in time order")
        return self

    def rate(self, x: float, variant: str) -> float:
        """A load in this entry's unit as requests/s."""
        return float(x) if self.rps is not None else x * cc.max_rps(cc.load_catalog(), self.service, variant)

    def fraction(self, variant: str) -> float:
        """The initial load as a fraction of the service's max load."""
        return self.rate(self.rps or self.load, variant) / cc.max_rps(cc.load_catalog(), self.service, variant)


Mix = Annotated[list[MixService], Field(min_length=1, max_length=LIMITS["services"])]


class Noise(_Schema):
    """Measurement error (docs/colo.md, Measurement)."""

    latency: float = Field(1.0, ge=0, allow_inf_nan=False, description="scale of the latency counter's sampling error")
    counters: float = Field(
        0.02, ge=0, le=LIMITS["noise_counters"], allow_inf_nan=False, description="relative error of the other counters"
    )


class ColoScenario(ScenarioBase):
    """A colo scenario file (``kind: colo``)."""

    kind: Literal["colo"] = Field(description="the family of the scenario")
    platform: PlatformField = Field(
        Platform(), description="a catalog preset (e5_2697_v4, ...) or {preset, cores, ways, ...}"
    )
    variant: Literal["paper", "code"] = Field(
        "paper", description="max loads of OSML's paper (Table 1) or code (MAX_LOAD), for load fractions"
    )
    mixes: list[Mix] = Field(min_length=1, description="the service mixes, each one evaluation point (its index)")
    tick_s: float = Field(
        0.1, gt=0, le=LIMITS["dt_s"], allow_inf_nan=False, description="the engine's tick, s (OSML: 0.1 s)"
    )
    horizon_s: float = Field(
        180.0, gt=0, le=MAX_HORIZON_S, allow_inf_nan=False, description="length of a run, s (OSML gives up after 3 min)"
    )
    hold_s: float = Field(
        5.0,
        ge=1,
        allow_inf_nan=False,
        description="a run converged once every service met QoS at each 1-s sample of hold_s seconds in a row",
    )
    mode: Literal["online", "fresh"] = Field(
        "online", description="online: backlogs persist; fresh: every allocation change starts with empty queues"
    )
    noise: Noise = Field(Noise(), description="measurement error of the counters")
    latency_window_s: float = Field(1.0, gt=0, allow_inf_nan=False, description="window of the Latency counter, s")
    scheduler: Scheduler = Field(SchedulerSpec(policy="parties"), description="the default scheduler (SCHEDULERS)")

    @model_validator(mode="after")
    def _consistent(self) -> ColoScenario:
        ticks = self.horizon_s / self.tick_s  # inf for a tick too small to count: refused, not an overflow
        if not math.isfinite(ticks) or abs(ticks - round(ticks)) > 1e-6 * ticks:
            raise InvalidConfigError("horizon_s", self.horizon_s, f"a whole number of ticks of {self.tick_s:g} s")
        if self.hold_s >= self.horizon_s:
            raise InvalidConfigError("hold_s", self.hold_s, f"a time < horizon_s ({self.horizon_s:g})")
        if self.latency_window_s < self.tick_s:
            raise InvalidConfigError("latency_window_s", self.latency_window_s, f"a time >= tick_s ({self.tick_s:g})")
        if self.latency_window_s / self.tick_s > LIMITS["window_ticks"]:
            allowed = f"a window of at most {LIMITS['window_ticks']:g} ticks of {self.tick_s:g} s"
            raise InvalidConfigError("latency_window_s", self.latency_window_s, allowed)
        return self

    @property
    def loads(self) -> list[int]:
        """The evaluation grid: every mix index."""
        return list(range(len(self.mixes)))

    def mix(self, index: int) -> list[MixService]:
        """Mix ``index``; InvalidConfigError naming ``mix`` if there is none."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.mixes):
            raise InvalidConfigError("mix", index, f"a mix index in [0, {len(self.mixes) - 1}]")
        return self.mixes[index]

    def agent_names(self, index: int) -> list[str]:
        """One name per service of mix ``index``: the service's, suffixed _2, _3, ... when it repeats."""
        names, seen = [], {}
        for entry in self.mix(index):
            seen[entry.service] = seen.get(entry.service, 0) + 1
            names.append(entry.service if seen[entry.service] == 1 else f"{entry.service}_{seen[entry.service]}")
        return names

    def load_fractions(self, index: int) -> list[float]:
        """Each service's initial load as a fraction of its max load (EMU is their sum)."""
        return [e.fraction(self.variant) for e in self.mix(index)]

    def engine_config(self, mix: int, seed: int, mode: str | None = None) -> dict[str, Any]:
        """The config dict ``ColoSim`` takes for mix ``mix`` with ``seed`` (``mode`` replaces the scenario's)."""
        catalog = cc.load_catalog()
        services = []
        for name, e in zip(self.agent_names(mix), self.mix(mix)):
            svc = cc.service_config(
                catalog,
                e.service,
                rps=e.rate(e.rps or e.load, self.variant),
                variant=self.variant,
                threads=e.threads,
                launch_s=e.launch_s,
                end_s=e.end_s,
                changes=[(t, e.rate(x, self.variant)) for t, x in e.changes],
                **e.params,
            )
            svc["name"] = name
            services.append(svc)
        return cc.sim_config(
            catalog,
            services,
            platform=self.platform.engine(),
            dt_s=self.tick_s,
            seed=validate(Seed, seed, "seed"),
            mode=_choice("mode", self.mode if mode is None else mode, ("online", "fresh")),
            sharing=True,  # the Unmanaged scheduler shares everything in one group
            noise=self.noise.model_dump(),
            latency_window_s=self.latency_window_s,
        )


def load_colo_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> ColoScenario:
    """:func:`dcgym.envs.scenario.load_scenario` of a colo scenario (``kind: colo``): a packaged name or a path."""
    return load_scenario(name_or_path, overrides, kind="colo")
