"""Each family's scenario schema and its engine's check accept and refuse the same configs.

A bound is defined once, in the engine (``RackSim.limits``, ...), and checked twice: by the scenario schema,
for the user's one-line error, and by the engine's ``Validate()``, for every caller of the engine. Hypothesis
draws configs of each family with their bounded fields at ordinary values, except one or two fields at or
one step past a bound (the least or greatest allowed value; for a float, the next float past it), puts the
values in a valid scenario and in the engine config that scenario makes, and asserts that the schema
(validating the scenario and making its engine config) accepts them exactly when ``check_<family>_config``
accepts the engine config. Bounds over several fields (nodes in all, links of a topology, samples of the
reservoirs) are reached by the fields they combine. The examples are derandomized: CI draws the same ones
every run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcgym.cpp_core import (
    MAX_LOAD,
    ColoSim,
    FlowSim,
    LbSim,
    RackSim,
    check_colo_config,
    check_flow_config,
    check_lb_config,
    check_rack_config,
)
from dcgym.envs.colo import catalog as cc
from dcgym.envs.colo.scenario import ColoScenario
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.flow.scenario import FlowScenario
from dcgym.envs.lb.scenario import LbScenario
from dcgym.envs.rack.scenario import RackScenario
from dcgym.envs.validation import validate

AGREEMENT = settings(max_examples=80, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Field = tuple[st.SearchStrategy, st.SearchStrategy]
"""A field's draws: at or one step past a bound, and ordinary."""


def count(lo: int, hi: int, ordinary: tuple[int, int], *, below: bool = True) -> Field:
    """An integer field allowed in [lo, hi] (below=False: never lo - 1, which the engine takes for "unset")."""
    return st.sampled_from([lo - 1, lo, hi, hi + 1] if below else [lo, hi, hi + 1]), st.integers(*ordinary)


def number(lo: float, hi: float, ordinary: tuple[float, float], *, open_lo: bool = False) -> Field:
    """A float field allowed in [lo, hi], or (lo, hi] with open_lo."""
    edges = [lo] if open_lo else [math.nextafter(lo, -math.inf), lo]
    return st.sampled_from([*edges, hi, math.nextafter(hi, math.inf)]), st.floats(*ordinary)


@st.composite
def draw_fields(draw, fields: dict[str, Field]) -> dict[str, Any]:
    """Every field ordinary but one or two, at or past a bound."""
    values = {name: draw(ordinary) for name, (_, ordinary) in fields.items()}
    for name in draw(st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=2, unique=True)):
        values[name] = draw(fields[name][0])
    return values


def agree(schema: Callable[[], Any], engine: Callable[[], Any]) -> None:
    """The schema and the engine both accept, or both refuse (saying which did what otherwise)."""
    try:
        schema()
        schema_error = None
    except InvalidConfigError as exc:
        schema_error = str(exc)
    try:
        engine()
        engine_error = None
    except ValueError as exc:
        engine_error = str(exc)
    assert (schema_error is None) == (engine_error is None), f"schema: {schema_error}; engine: {engine_error}"


# ---------------------------------------------------------------------------------------------------- rack

RACK = RackSim.limits
RACK_BASE = {"kind": "rack", "nodes": [{"count": 4, "workers": 2}], "service": {"dist": "exp", "mean_us": 10.0}}
RACK_FIELDS = {
    "count": count(1, RACK["nodes"], (1, 8)),
    "second_count": count(1, RACK["nodes"], (0, 8)),  # 0: one group
    "workers": count(1, RACK["workers"], (1, 4)),
    "balancers": count(1, RACK["balancers"], (0, 8)),  # 0: entry switch
    "d": count(1, RACK["d"], (1, 4)),
    "bound": count(1, RACK["bound"], (1, 4)),
    "load": number(0, RACK["load"], (0.1, 1.0), open_lo=True),
}


@AGREEMENT
@given(draw_fields(RACK_FIELDS), st.sampled_from(["po_d", "jbsq"]))
def test_rack_schema_and_engine_agree(v, policy):
    counts = [v["count"]] + ([v["second_count"]] if v["second_count"] else [])
    scenario = dict(RACK_BASE, nodes=[{"count": c, "workers": v["workers"]} for c in counts])
    engine = RackScenario.model_validate(RACK_BASE).engine_config(0.5, seed=1)
    engine["nodes"] = [{"count": c, "workers": v["workers"], "speed": 1.0, "queue_capacity": -1} for c in counts]
    if v["balancers"]:
        scenario["entry"] = {"kind": "balancers", "count": v["balancers"]}
        engine["entry"] = {"kind": "balancers", "count": v["balancers"], "split": []}
    param = "d" if policy == "po_d" else "bound"
    scenario["dispatch"] = engine["dispatch"] = {"policy": policy, param: v[param]}
    engine["load"] = v["load"]
    agree(lambda: validate(RackScenario, scenario).engine_config(v["load"], seed=1), lambda: check_rack_config(engine))


# ------------------------------------------------------------------------------------------------------ lb

LB = LbSim.limits
LB_BASE = {
    "kind": "lb",
    "servers": [{"count": 4, "workers": 2}],
    "application": {"stages": 1, "cpu": {"dist": "exp", "mean_us": 1000.0}},
    "policy": "lsq",
}
LB_FIELDS = {
    "count": count(1, LB["servers"], (1, 8)),
    "second_count": count(1, LB["servers"], (0, 8)),  # 0: one group
    "workers": count(1, LB["workers"], (1, 4)),
    "mp_level": count(1, LB["mp_level"], (1, 4)),
    "stages": count(1, LB["stages"], (1, 5)),
    "lbs": count(1, LB["lbs"], (1, 4)),
    "backlog": count(0, LB["backlog"], (1, 100)),
    "reservoir_size": count(1, LB["reservoir_size"], (1, 64)),
    "fd_density": count(0, LB["fd_density"], (0, 4)),
    "load": number(0, LB["load"], (0.1, 1.0), open_lo=True),
}


@AGREEMENT
@given(draw_fields(LB_FIELDS))
def test_lb_schema_and_engine_agree(v):
    counts = [v["count"]] + ([v["second_count"]] if v["second_count"] else [])
    servers = [{"count": c, "workers": v["workers"], "mp_level": v["mp_level"]} for c in counts]
    application = {"stages": v["stages"], "cpu": {"dist": "exp", "mean_us": 1000.0}}
    if v["stages"] > 1:
        application["io"] = {"dist": "exp", "mean_us": 1000.0}
    observation = {"reservoir_size": v["reservoir_size"], "fd_density": v["fd_density"]}
    scenario = dict(
        LB_BASE, servers=servers, application=application, lbs=v["lbs"], backlog=v["backlog"], observation=observation
    )
    engine = LbScenario.model_validate(LB_BASE).engine_config(0.5, seed=1)
    engine["servers"] = [dict(g, speed=1.0) for g in servers]
    engine["application"] = dict(engine["application"], **application)
    engine["lbs"] = [engine["lbs"][0]] * v["lbs"]
    engine["backlog"] = v["backlog"]
    engine["observation"] = dict(engine["observation"], **observation)
    engine["load"] = v["load"]
    agree(lambda: validate(LbScenario, scenario).engine_config(v["load"], seed=1), lambda: check_lb_config(engine))


# ---------------------------------------------------------------------------------------------------- flow

FLOW = FlowSim.limits
FLOW_BASE = {"kind": "flow", "topology": {"kind": "big_switch", "hosts": 4}, "scheduling": "fair"}
FLOW_TOPOLOGY = {  # each kind's fields
    "single_link": {"senders": count(1, FLOW["hosts"], (1, 8))},
    "big_switch": {"hosts": count(2, FLOW["hosts"], (2, 16))},
    "planes": {"hosts": count(2, FLOW["hosts"], (2, 16)), "planes": count(1, FLOW["planes"], (1, 4))},
    "leaf_spine": {
        "racks": count(1, FLOW["hosts"], (1, 4)),
        "hosts_per_rack": count(1, FLOW["hosts"], (1, 8)),
        "spines": count(1, FLOW["spines"], (1, 4)),
        "oversubscription": number(0, FLOW["oversubscription"], (0.5, 4.0), open_lo=True),
    },
}
FLOW_FIELDS = {
    "link_gbps": number(0, FLOW["link_gbps"], (0.1, 100.0), open_lo=True),
    "priorities": count(1, FLOW["levels"], (1, 8)),
    "base_rtt_us": number(0, FLOW["base_rtt_us"], (0.0, 100.0)),
    # The engine bounds each group's load, load x relative_load: at load 10, a relative load of 6.4 reaches it.
    "relative_load": (st.sampled_from([6.4, math.nextafter(6.4, math.inf), 10.0]), st.floats(0.5, 2.0)),
}


def _hosts(topology: dict[str, Any]) -> int:
    if topology["kind"] == "leaf_spine":
        return topology["racks"] * topology["hosts_per_rack"]
    return topology.get("senders", topology.get("hosts"))


@AGREEMENT
@given(
    st.sampled_from(sorted(FLOW_TOPOLOGY)).flatmap(
        lambda kind: st.tuples(st.just(kind), draw_fields({**FLOW_TOPOLOGY[kind], **FLOW_FIELDS}))
    ),
    st.sampled_from([1.0, MAX_LOAD]),
    st.booleans(),
)
def test_flow_schema_and_engine_agree(drawn, load, groups):
    kind, v = drawn
    topology = {"kind": kind, "link_gbps": v["link_gbps"], **{k: v[k] for k in FLOW_TOPOLOGY[kind]}}
    n = _hosts(topology)
    scenario = dict(FLOW_BASE, topology=topology, priorities=v["priorities"], base_rtt_us=v["base_rtt_us"])
    engine = FlowScenario.model_validate(FLOW_BASE).engine_config(0.5, seed=1)
    engine.update(topology=topology, base_rtt_us=v["base_rtt_us"])
    engine["scheduling"] = {"discipline": "fair", "levels": v["priorities"]}
    engine["workload"] = {"sizes": "web_search", "load": load}
    if groups and n >= 2:  # two groups: 1 host at the run's load, the rest at relative_load times it
        scenario["workload"] = {"groups": [{"hosts": 1}, {"hosts": n - 1, "relative_load": v["relative_load"]}]}
        engine["workload"] = {
            "groups": [
                {"hosts": 1, "sizes": "web_search", "load": load},
                {"hosts": n - 1, "sizes": "web_search", "load": load * v["relative_load"]},
            ]
        }
    agree(lambda: validate(FlowScenario, scenario).engine_config(load, seed=1), lambda: check_flow_config(engine))


# ---------------------------------------------------------------------------------------------------- colo

COLO = ColoSim.limits
COLO_BASE = {"kind": "colo", "mixes": [[{"service": "moses", "load": 0.4}]]}
COLO_FIELDS = {
    "cores": count(1, COLO["logical_cores"], (1, 64)),
    "ways": count(1, COLO["ways"], (1, 20)),
    "smt_gain": number(1, COLO["smt_gain"], (1.0, 1.5)),
    "tick_s": number(0, COLO["dt_s"], (0.05, 1.0), open_lo=True),
    "window_ticks": number(1, COLO["window_ticks"], (1.0, 100.0)),
    "counters": number(0, COLO["noise_counters"], (0.0, 0.1)),
    "services": count(1, COLO["services"], (1, 4)),
    "threads": count(1, COLO["threads"], (1, 64), below=False),  # the engine's threads 0 is the schema's null
}


@AGREEMENT
@given(draw_fields(COLO_FIELDS), st.sampled_from(["one thread per core", "two", "neither"]))
def test_colo_schema_and_engine_agree(v, smt):
    cores, tick = v["cores"], v["tick_s"]
    physical = {"one thread per core": cores, "two": cores // 2, "neither": cores - 1}[smt]
    platform = {"cores": cores, "physical_cores": physical, "ways": v["ways"], "smt_gain": v["smt_gain"]}
    window = tick * v["window_ticks"]
    # Whole ticks, past hold_s, within the schema's day (a tick too small to count in floats: any time is whole).
    horizon = tick * math.ceil(10 / tick) if tick >= 1e-6 else 10.0
    mix = [{"service": "moses", "load": 0.4, "threads": v["threads"]}] * v["services"]
    scenario = dict(
        COLO_BASE,
        platform=platform,
        mixes=[mix],
        tick_s=tick,
        horizon_s=horizon,
        latency_window_s=window,
        noise={"counters": v["counters"]},
    )
    engine = ColoScenario.model_validate(COLO_BASE).engine_config(0, seed=1)
    engine["platform"].update(logical_cores=cores, physical_cores=physical, ways=v["ways"], smt_gain=v["smt_gain"])
    service = dict(engine["services"][0], threads=v["threads"])
    engine["services"] = [dict(service, name=f"moses_{i}") for i in range(v["services"])]
    engine.update(dt_s=tick, latency_window_s=window, noise=dict(engine["noise"], counters=v["counters"]))
    agree(lambda: validate(ColoScenario, scenario).engine_config(0, seed=1), lambda: check_colo_config(engine))


# ------------------------------------------------------------------------------------- names and bounds


@pytest.mark.parametrize("sim", [RackSim, LbSim, FlowSim, ColoSim])
def test_every_family_exports_its_bounds(sim):
    limits = sim.limits
    assert limits and all(isinstance(v, (int, float)) and v > 0 for v in limits.values()), limits
    limits.clear()
    assert sim.limits, "a fresh mapping each time: nobody can change the engine's"


def test_the_colo_catalog_gives_the_engine_s_fields():
    """The catalog's field lists come from the engine: every preset and service gives each of them, and what
    the engine takes beyond them is the name, the percentile and the catalog's shared reference point."""
    catalog = cc.load_catalog()
    for name, preset in catalog["platforms"].items():
        assert set(cc.PLATFORM_FIELDS) <= set(preset), name
    for name, service in catalog["services"].items():
        assert set(cc.SERVICE_FIELDS) <= set(service), name
    reference = {f"ref_{k}" for k in catalog["reference"]}
    assert set(ColoSim.service_fields) - set(cc.SERVICE_FIELDS) == {"name", "percentile", *reference}
    assert set(ColoSim.platform_fields) - set(cc.PLATFORM_FIELDS) == {"name"}
