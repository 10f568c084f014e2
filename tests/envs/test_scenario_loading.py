"""Loading scenario files of every family: names, folders, kinds, renamed files, the documented minimal scenario."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import pytest
import yaml

from dcgym.envs.error import InvalidConfigError, UnknownScenarioError
from dcgym.envs.families import FAMILIES, load_entry_point
from dcgym.envs.scenario import RENAMED, list_scenarios, load_scenario, scenario_for, scenario_kind, scenario_path

# The minimal rack scenario of the scenario-file contract (docs/architecture.md), exactly as documented.
MINIMAL_RACK = """\
kind: rack
nodes:                      # groups of identical nodes
  - {count: 4, workers: 14, speed: 1.0}
  - {count: 10, workers: 3}
service: {dist: exp, mean_us: 75}           # exp | det | multimodal | hyperexp | lognormal | bounded_pareto | empirical
arrivals: {process: poisson}                # rate comes from the load: load x total capacity
intra_node: {discipline: fcfs}              # fcfs | ps (with quantum_us, switch_cost_us) | ...
dispatch: {policy: po2}                     # any heuristic name, with its parameters
load_info: {period_us: 100}                 # how stale the loads a dispatcher sees are
"""


def test_every_family_has_packaged_scenarios_in_its_own_folder_declaring_its_kind():
    every = list_scenarios()
    assert sorted(every) == sorted(name for kind in FAMILIES for name in list_scenarios(kind))
    for kind in FAMILIES:
        names = list_scenarios(kind)
        assert names, kind
        for name in names:
            assert scenario_kind(scenario_path(name).read_text(encoding="utf-8")) == kind, name


@pytest.mark.parametrize("kind", FAMILIES)
def test_a_scenario_loads_as_its_familys_class(kind):
    name = list_scenarios(kind)[0]
    scenario = load_scenario(name)
    assert isinstance(scenario, load_entry_point(FAMILIES[kind].scenario))
    assert scenario.kind == scenario.family == kind and scenario.name == name


def test_the_documented_minimal_rack_scenario_loads_as_written(tmp_path):
    page = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"```yaml\n{MINIMAL_RACK}```" in page, "docs/architecture.md's minimal rack scenario changed: update it here"
    path = tmp_path / "minimal.yaml"
    path.write_text(MINIMAL_RACK)
    scenario = load_scenario(path)
    assert scenario.kind == "rack" and scenario.description is None
    assert scenario.load_info.model == "periodic" and scenario.load_info.period_us == 100
    assert scenario.dispatch.label == "po2" and scenario.num_nodes == 14


def test_packaged_scenarios_keep_their_descriptions():
    for name in list_scenarios():
        assert load_scenario(name).description, name


@pytest.mark.parametrize("old,new", RENAMED.items())
def test_renamed_scenarios_still_load_under_their_old_names_with_a_warning_naming_the_new(old, new):
    with pytest.warns(FutureWarning, match=f"scenario {old} was renamed {new}: use {new}"):
        scenario = load_scenario(old)
    assert scenario == load_scenario(new) and scenario.name == new


def test_the_legacy_kind_of_the_multi_lb_family_is_accepted_with_a_warning(tmp_path):
    raw = yaml.safe_load(scenario_path("lb_sim").read_text())
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump({**raw, "kind": "multistage"}))
    with pytest.warns(FutureWarning, match="kind multistage is now called lb: write kind: lb"):
        assert load_scenario(path).kind == "lb"


@pytest.mark.parametrize("kind", FAMILIES)
def test_a_scenario_of_another_family_is_refused_naming_the_family_wanted(kind):
    other = next(name for name in list_scenarios() if name not in list_scenarios(kind))
    title = FAMILIES[kind].title or kind
    loader = getattr(import_module(f"dcgym.envs.{kind}.scenario"), f"load_{kind}_scenario")
    for load in (lambda: load_scenario(other, kind=kind), lambda: loader(other)):
        with pytest.raises(InvalidConfigError) as error:
            load()
        assert (error.value.field, error.value.value) == ("scenario", other)
        assert error.value.allowed.startswith(f"a {title} scenario (kind {kind}): {list_scenarios(kind)[0]}, ")
    assert loader(list_scenarios(kind)[0]) == load_scenario(list_scenarios(kind)[0])


def test_overriding_the_kind_names_the_kind():
    with pytest.raises(InvalidConfigError, match='^kind: got "lb"; allowed: rack'):
        load_scenario("mm1", {"kind": "lb"}, kind="rack")


def test_a_scenario_object_takes_no_overrides():
    scenario = load_scenario("lb_sim")
    assert scenario_for("lb", scenario, None) is scenario
    with pytest.raises(InvalidConfigError, match="^overrides: .*allowed: none when scenario is a LbScenario object"):
        scenario_for("lb", scenario, {"episode_us": 1})


@pytest.mark.parametrize(
    "text,field,allowed",
    [
        ("kind: flows\n", "kind", "one of rack, lb"),
        ("nodes: []\n", "kind", "got nothing; allowed: one of rack, lb"),
        ("kind: rack\n", "nodes", "a non-empty list"),
        ("- 1\n- 2\n", "x.yaml", "a YAML mapping"),
        ("kind: [rack\n", "x.yaml", "invalid YAML"),
    ],
)
def test_bad_files_get_one_line_naming_the_field(tmp_path, text, field, allowed):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(InvalidConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message and field in message and allowed in message, message


def test_a_file_that_is_not_utf8_is_named_in_the_error(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("kind: rack\ndescription: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InvalidConfigError, match=r"latin1\.yaml: got bytes that are not UTF-8 \(at byte 27\)"):
        load_scenario(path)


def test_an_unknown_name_suggests_the_closest_scenario():
    with pytest.raises(UnknownScenarioError, match='did you mean "lb_sim"'):
        load_scenario("lb_smi")
