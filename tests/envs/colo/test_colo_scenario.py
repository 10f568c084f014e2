"""Colo scenario files: the packaged ones load, mixes become engine configs, bad fields are one line naming them."""

from __future__ import annotations

import pytest

from dcgym.cpp_core import ColoSim, check_colo_config
from dcgym.envs.colo import catalog as cc
from dcgym.envs.colo.scenario import ColoScenario, load_colo_scenario
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import list_scenarios, load_scenario


@pytest.mark.parametrize("name", list_scenarios("colo"))
def test_every_packaged_scenario_builds_every_mix(name):
    scenario = load_scenario(name)
    assert isinstance(scenario, ColoScenario) and scenario.loads == list(range(len(scenario.mixes)))
    for mix in scenario.loads:
        config = scenario.engine_config(mix=mix, seed=3)
        check_colo_config(config)
        assert [s["name"] for s in config["services"]] == scenario.agent_names(mix)


def test_case_a_is_osmls_case_a_at_the_codes_max_loads():
    scenario = load_colo_scenario("osml_case_a")
    config = scenario.engine_config(mix=0, seed=1)
    # Moses 40% of 1200, Img-dnn 60% of 5500, Xapian 50% of 8000 (OSML configs.py MAX_LOAD).
    assert [s["rps"] for s in config["services"]] == [480.0, 3300.0, 4000.0]
    assert scenario.load_fractions(0) == pytest.approx([0.4, 0.6, 0.5])
    assert config["platform"]["logical_cores"] == 36 and config["platform"]["ways"] == 20
    assert (config["dt_s"], config["seed"], config["mode"], config["sharing"]) == (0.1, 1, "online", True)
    assert str(scenario.scheduler) == "parties"


def test_mix_sets_have_the_sizes_their_descriptions_state():
    assert len(load_scenario("osml_mixes").mixes) == 125
    scaling = load_scenario("parties_scaling")
    sizes = [len(m) for m in scaling.mixes]
    assert [sizes.count(k) for k in range(2, 7)] == [15, 20, 15, 6, 1]
    levels = {s.rps for m in load_scenario("osml_mixes").mixes for s in m if s.service == "moses"}
    assert sorted(levels) == cc.rps_levels(cc.load_catalog(), "moses", "code")


def test_explicit_platform_and_service_parameters_reach_the_engine():
    scenario = load_colo_scenario(
        "osml_case_a",
        {"platform": {"cores": 8, "ways": 4}, "mixes.0.0.params": {"qos_ms": 20.0}, "mode": "fresh"},
    )
    config = scenario.engine_config(mix=0, seed=0)
    assert (config["platform"]["logical_cores"], config["platform"]["physical_cores"]) == (8, 4)
    assert config["platform"]["mb_per_way"] == 2.25  # the preset's
    assert config["services"][0]["qos_ms"] == 20.0 and config["mode"] == "fresh"
    assert ColoSim(config).qos_ms[0] == 20.0


def test_repeated_services_get_numbered_agent_names():
    scenario = load_colo_scenario("osml_case_a", {"mixes": [[{"service": "moses", "load": 0.2}] * 3]})
    assert scenario.agent_names(0) == ["moses", "moses_2", "moses_3"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"mixes.0.0.service": "mosess"}, 'mixes.0.0.service: got "mosess"; did you mean "moses"?'),
        ({"platform": "e5_2697"}, 'platform: got "e5_2697"; did you mean "e5_2697_v4"?'),
        ({"mixes.0.0.rps": 100}, "mixes.0.0.load: got 0.4; allowed: a fraction of max load in (0, 2], or rps"),
        ({"mixes.0.0.load": 3}, "mixes.0.0.load: got 3; allowed: a finite number in (0, 2] or null"),
        ({"horizon_s": 180.05}, "horizon_s: got 180.05; allowed: a whole number of ticks of 0.1 s"),
        ({"scheduler": "partie"}, 'scheduler.policy: got "partie"; did you mean "parties"?'),
        ({"platform": {"bogus": 1}}, "platform.bogus: got 1; allowed: one of the fields preset, cores"),
        ({"mode": "fast"}, 'mode: got "fast"; allowed: one of online, fresh'),
        ({"mixes.0.0.changes": [[5, 0.1], [2, 0.2]]}, "mixes.0.0.changes: got [[5.0, 0.1], [2.0, 0.2]]; allowed"),
        ({"mixes.0.1.end_s": 0}, "mixes.0.1.end_s: got 0"),
        ({"hold_s": 200}, "hold_s: got 200.0; allowed: a time < horizon_s (180)"),
    ],
)
def test_bad_fields_are_named_on_one_line(overrides, message):
    with pytest.raises(InvalidConfigError) as info:
        load_colo_scenario("osml_case_a", overrides)
    text = str(info.value)
    assert "\n" not in text and text.startswith(message), text


def test_a_mix_index_out_of_range_names_mix():
    scenario = load_colo_scenario("osml_case_a")
    with pytest.raises(InvalidConfigError, match=r"mix: got 1; allowed: a mix index in \[0, 0\]"):
        scenario.engine_config(mix=1, seed=0)


def test_a_scenario_of_another_family_is_refused_by_name():
    with pytest.raises(InvalidConfigError, match='scenario: got "lb_sim"; allowed: a colo scenario'):
        load_colo_scenario("lb_sim")
