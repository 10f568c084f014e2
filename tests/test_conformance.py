"""Conformance of everything the registries list, after Gymnasium's tests/envs/test_envs.py.

Every test is parametrized from a registry, never from a family's name:

- every versioned environment of every family (:func:`dcgym.envs.families.known_envs`), made through its
  module and through PettingZoo's parallel registry: PettingZoo's API and seed tests, a whole episode
  reproduced by its seed and by a pickled copy, every render mode;
- every single-agent Gymnasium id (:data:`dcgym.envs.registration.GYMNASIUM_IDS`): Gymnasium's env checker,
  a pickled copy taking the same steps, every render mode, and the vector entry point (where there is one) stepping exactly as Gymnasium's own
  synchronous vectorisation of the single environment;
- every packaged scenario of every family (:func:`dcgym.envs.scenario.list_scenarios`): it loads, and a tiny
  evaluation of its own policy at its first load gives a document of its family whose rows validate against
  the family's row model;
- every built-in baseline of every family (:func:`dcgym.agents.heuristics.baselines`): a tiny evaluation on a
  small scenario of its family gives finite statistics;
- the registries agree with each other (beyond what test_contracts.py checks).

A new family is covered by registering it. The budgets below are the only entries it adds: an environment,
a Gymnasium id or a family without one fails ``test_every_*_has_a_small_budget`` (and its own tests) with a
message naming the table.

Budgets: the whole file runs in under 10 s on one core (4 s of CPU). Each table entry says why its budget suffices.
"""

from __future__ import annotations

import math
import pickle
from typing import Any

import gymnasium
import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from pettingzoo.test import parallel_api_test, parallel_seed_test

import dcgym.envs  # noqa: F401  (registers every id)
from dcgym.agents.evaluation.core import evaluate
from dcgym.agents.evaluation.document import get_path
from dcgym.agents.evaluation.family import family_of
from dcgym.agents.heuristics import baselines
from dcgym.envs.families import FAMILIES, env_module, known_envs, load_entry_point
from dcgym.envs.registration import GYMNASIUM_IDS, PETTINGZOO_NAMESPACE
from dcgym.envs.scenario import list_scenarios, load_scenario

# ------------------------------------------------------------------ budgets: the only per-family entries

SMALL_ENVS: dict[str, dict[str, Any]] = {
    # 10 nodes, 5 heartbeats of 100 us (about 600 tasks arrive, 450 complete): every agent acts on a rack that is
    # neither empty nor idle, and the episode truncates, so the API test sees an episode's end and a reset after it.
    "rack_v0": {"scenario": "malcolm_homog_exp", "max_steps": 5},
    # 2 LBs over 8 servers, 6 decision periods of 0.5 s (about 3.5 flows per period at the default load, each of
    # about 1 s): flows start and end within the episode, so observations, rewards and infos carry numbers.
    "lb_v0": {"scenario": "lb_sim", "max_steps": 6},
    # lb_v0's budget played by its one central agent: the same flows start and end within the episode.
    "lb_central_v0": {"scenario": "lb_sim", "max_steps": 6},
    # OSML case A's three services, 6 decisions of 1 s (10 engine ticks each): services start under-provisioned
    # and violate QoS, so rewards, masks and the sampled resizes all move; the episode truncates.
    "colo_v0": {"scenario": "osml_case_a", "max_steps": 6},
    # AuTO's testbed at load 0.8, 5 intervals of 10 ms (about 95 flows arrive, half of them finish, a few become
    # long): both agents observe flows and get rewards other than the neutral 1, and the episode truncates.
    "flow_v0": {"scenario": "auto_websearch", "max_steps": 5},
}
"""Keyword arguments making each versioned environment small: every one of known_envs() needs an entry."""

SMALL_GYMNASIUM: dict[str, dict[str, Any]] = {
    # rack_v0's small budget: 5 heartbeats of 100 us, enough for check_env's reset and step determinism checks
    # and for two autoresets of the vector form within 12 steps.
    "dcgym/RackCentral-v0": {"scenario": "malcolm_homog_exp", "max_steps": 5},
    "dcgym/RackDispatch-v0": {"scenario": "malcolm_homog_exp", "max_steps": 5},
    # colo_v0's small budget: 6 decisions of 1 s, enough for check_env's determinism checks and for an
    # autoreset of the vector form within 12 steps.
    "dcgym/ColoCentral-v0": {"scenario": "osml_case_a", "max_steps": 6},
    # flow_v0's small budget: 5 intervals of 10 ms, flows finishing in each; two autoresets within 12 steps.
    "dcgym/FlowSrla-v0": {"scenario": "auto_websearch", "max_steps": 5},
    "dcgym/FlowLrla-v0": {"scenario": "auto_websearch", "max_steps": 5},
}
"""Keyword arguments making each Gymnasium id small: every id of GYMNASIUM_IDS needs an entry."""

SMALL_FAMILIES: dict[str, dict[str, Any]] = {
    # 2000 tasks, of which the scenario's warm-up fraction is excluded: about 1800 measured latencies, enough for
    # every reported percentile up to p99.9 to be a measured value (not null) and for a few tens of ms per run.
    "rack": {"tasks": 2000, "scenario": "malcolm_homog_exp"},
    # 300 flows, 10% warm-up: about 260 measured flows ended over 50 s of simulated time (100 decision periods),
    # enough for the mean, the percentiles and the served-flow statistics to hold numbers, at about 10 ms per run.
    "lb": {"tasks": 300, "scenario": "lb_sim"},
    # 12 s of simulated time (> the default hold_s of 5 s, the least a run may last): 120 ticks and 12 one-second
    # QoS samples, enough for every scheduler to act and for the row's fractions to be measured, in well under a
    # second per run (the Oracle's search included).
    "colo": {"tasks": 12, "scenario": "osml_case_a"},
    # 2000 web-search flows on one 1 Gbps link (every baseline runs there, LAS included), 10% warm-up, run to
    # completion: about 50 measured large flows, so every bucket's mean holds a number, at a few ms per run.
    "flow": {"tasks": 2000, "scenario": "single_link_websearch"},
}
"""Per family: the units of work of a tiny evaluation and the small scenario its baselines run on."""


def small(table: dict[str, dict[str, Any]], key: str, name: str) -> dict[str, Any]:
    """The entry of ``key`` in ``table``, or a failure saying which table needs one."""
    if key not in table:
        pytest.fail(f"{key} has no entry in {name} (tests/test_conformance.py): add the small arguments it runs with")
    return dict(table[key])


ENVS = sorted(known_envs())
GYMNASIUM = sorted(GYMNASIUM_IDS)
VECTOR = sorted(env_id for env_id, entry in GYMNASIUM_IDS.items() if "vector_entry_point" in entry)
SCENARIOS = [(kind, name) for kind in FAMILIES for name in list_scenarios(kind)]
BASELINES = [(kind, spec) for kind in FAMILIES for spec in baselines(kind)]


def _pettingzoo_id(name: str) -> str:
    return f"{PETTINGZOO_NAMESPACE}/{name}"


def test_every_environment_id_and_family_has_a_small_budget():
    assert set(known_envs()) <= set(SMALL_ENVS), "add the missing envs to SMALL_ENVS"
    assert set(GYMNASIUM_IDS) <= set(SMALL_GYMNASIUM), "add the missing ids to SMALL_GYMNASIUM"
    assert set(FAMILIES) <= set(SMALL_FAMILIES), "add the missing families to SMALL_FAMILIES"
    for kind, budget in SMALL_FAMILIES.items():
        assert budget["scenario"] in list_scenarios(kind), (kind, budget["scenario"])


# ------------------------------------------------------------------ the registries agree


def test_every_versioned_env_is_registered_with_pettingzoo_and_nothing_else_is():
    registered = {spec.id for spec in pettingzoo.parallel_registry.values() if spec.namespace == PETTINGZOO_NAMESPACE}
    expected = {pettingzoo.spec("parallel", _pettingzoo_id(name)).id for name in known_envs()}
    assert registered == expected
    for name, module in known_envs().items():
        assert pettingzoo.spec("parallel", _pettingzoo_id(name)).entry_point == f"{module}:parallel_env"


def test_every_dcgym_gymnasium_id_is_listed_and_loads():
    registered = {env_id for env_id, spec in gymnasium.registry.items() if spec.namespace == "dcgym"}
    assert registered == set(GYMNASIUM_IDS)
    for entry in GYMNASIUM_IDS.values():
        for key in ("entry_point", "vector_entry_point"):
            if key in entry:
                assert callable(load_entry_point(entry[key])), entry[key]


@pytest.mark.parametrize("name", ENVS)
def test_a_versioned_env_module_has_the_pettingzoo_layout(name):
    module = env_module(name)
    assert getattr(dcgym.envs, name) is module
    for attribute in ("env", "parallel_env", "raw_env"):
        assert callable(getattr(module, attribute)), attribute
    assert module.raw_env.metadata["name"] == name  # the name carries the version
    assert module.raw_env.metadata["is_parallelizable"] is True
    # Gymnasium's docstring sections (as its classic-control envs): a reader of one env knows every env.
    for section in ("Description", "Observation Space", "Action Space", "Rewards", "Termination", "Arguments"):
        assert f"## {section}" in module.__doc__, section
    assert "## Version History" in module.__doc__


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_each_family_evaluates_its_own_kind(kind):
    assert family_of(kind).kind == kind
    for legacy in FAMILIES[kind].legacy_kinds:
        assert family_of(legacy) is family_of(kind)
    assert baselines(kind), f"family {kind} has no built-in baseline"


# ------------------------------------------------------------------ PettingZoo environments


def _make_env(name: str, via: str, **overrides: Any):
    kwargs = {**small(SMALL_ENVS, name, "SMALL_ENVS"), **overrides}
    if via == "module":
        return getattr(dcgym.envs, name).parallel_env(**kwargs)
    return pettingzoo.make("parallel", _pettingzoo_id(name), **kwargs)


@pytest.mark.parametrize("via", ["module", "registry"])
@pytest.mark.parametrize("name", ENVS)
def test_parallel_api_test_passes(name, via):
    env = _make_env(name, via)
    assert isinstance(env, env_module(name).raw_env)
    # num_cycles is an upper bound above every small max_steps: each of the test's episodes runs to its end.
    parallel_api_test(env, num_cycles=50)


@pytest.mark.parametrize("via", ["module", "registry"])
@pytest.mark.parametrize("name", ENVS)
def test_parallel_seed_test_passes(name, via):
    parallel_seed_test(lambda: _make_env(name, via), num_cycles=10)


def _rollout(env, seed: int) -> list[tuple]:
    """Every output of an episode from reset(seed), the actions sampled from action spaces seeded with ``seed``."""
    trace = [env.reset(seed=seed)]
    for k, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + k)
    while env.agents:
        trace.append(env.step({a: env.action_space(a).sample() for a in env.agents}))
    return trace


@pytest.mark.parametrize("name", ENVS)
def test_a_seed_reproduces_a_whole_episode_and_another_seed_does_not(name):
    # PettingZoo's parallel_seed_test compares only the first step (it stops at any(terminations), a dict of
    # agent names); here the whole episode must repeat, through the module and the registry alike.
    first = _rollout(_make_env(name, "module"), seed=3)
    again = _rollout(_make_env(name, "registry"), seed=3)
    other = _rollout(_make_env(name, "module"), seed=4)
    assert len(first) == len(again) > 2
    assert data_equivalence(first, again)
    assert not data_equivalence(first, other)


@pytest.mark.parametrize("name", ENVS)
def test_a_pickled_env_runs_the_same_episode(name):
    # Ray and Gymnasium's async vectorisation ship environments pickled (before their first reset).
    env = _make_env(name, "module")
    assert data_equivalence(_rollout(pickle.loads(pickle.dumps(env)), seed=5), _rollout(env, seed=5))


@pytest.mark.parametrize("name", ENVS)
def test_every_render_mode_renders(name):
    for mode in env_module(name).raw_env.metadata["render_modes"]:
        env = _make_env(name, "module", render_mode=mode)
        env.reset(seed=1)
        env.step({a: env.action_space(a).sample() for a in env.agents})
        _check_render(env.render(), mode)
        env.close()


def _check_render(frame: Any, mode: str) -> None:
    if mode == "ansi":
        assert isinstance(frame, str) and frame.strip()
    elif mode == "rgb_array":
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.size > 0
    else:
        pytest.fail(f"render mode {mode!r} has no check here: add one")


# ------------------------------------------------------------------ Gymnasium ids


@pytest.mark.parametrize("env_id", GYMNASIUM)
def test_gymnasium_env_checker_passes(env_id):
    env = gymnasium.make(env_id, **small(SMALL_GYMNASIUM, env_id, "SMALL_GYMNASIUM"))
    check_env(env.unwrapped)  # the checker wants the bare env; make's wrappers are Gymnasium's own
    env.close()


@pytest.mark.parametrize("env_id", GYMNASIUM)
def test_a_pickled_gymnasium_env_takes_the_same_steps(env_id):
    env = gymnasium.make(env_id, **small(SMALL_GYMNASIUM, env_id, "SMALL_GYMNASIUM"))
    copy = pickle.loads(pickle.dumps(env))
    assert data_equivalence(env.reset(seed=5), copy.reset(seed=5))
    env.action_space.seed(5)
    ended = False
    while not ended:  # to the episode's end
        action = env.action_space.sample()
        out = env.step(action)
        assert data_equivalence(out, copy.step(action))
        ended = out[2] or out[3]


@pytest.mark.parametrize("env_id", GYMNASIUM)
def test_every_gymnasium_render_mode_renders(env_id):
    kwargs = small(SMALL_GYMNASIUM, env_id, "SMALL_GYMNASIUM")
    probe = gymnasium.make(env_id, **kwargs)
    modes = probe.metadata["render_modes"]
    probe.close()
    for mode in modes:
        env = gymnasium.make(env_id, render_mode=mode, **kwargs)
        env.reset(seed=1)
        env.step(env.action_space.sample())
        _check_render(env.render(), mode)
        env.close()


def _assert_same_infos(got: Any, want: Any, where: str) -> None:
    """Two vector infos (dicts of arrays, masks and nested dicts) equal key by key, value by value, dtype too."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (where, sorted(got), sorted(want))
        for key in want:
            _assert_same_infos(got[key], want[key], f"{where}: {key}")
    else:
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype, (where, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=where)


@pytest.mark.parametrize("env_id", VECTOR)
def test_vector_entry_point_steps_as_gymnasiums_sync_vectorisation(env_id):
    # Both reset copy k with seed s + k and autoreset in next-step mode, so under the same actions they must
    # agree exactly, infos included (a trainer reads them); 12 steps of 5- or 6-step episodes cover one or two
    # autoresets (drawn seeds, not given ones).
    kwargs = small(SMALL_GYMNASIUM, env_id, "SMALL_GYMNASIUM")
    steps = kwargs["max_steps"]  # an episode of m steps, then the step that resets it: ends at m - 1, 2m, ...
    ends = sum(1 for j in range(1, 13) if j * (steps + 1) - 1 <= 12)
    native = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    synced = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="sync", **kwargs)
    assert native.metadata["autoreset_mode"] == synced.metadata["autoreset_mode"]
    assert native.single_observation_space == synced.single_observation_space
    assert native.single_action_space == synced.single_action_space
    obs_n, info_n = native.reset(seed=11)
    obs_s, info_s = synced.reset(seed=11)
    np.testing.assert_array_equal(obs_n, obs_s)
    _assert_same_infos(info_n, info_s, "reset")
    assert obs_n in native.observation_space
    native.action_space.seed(11)
    truncated = 0
    for step in range(12):
        actions = native.action_space.sample()
        out_n, out_s = native.step(actions), synced.step(actions)
        for got, want in zip(out_n[:4], out_s[:4]):
            np.testing.assert_array_equal(got, want)
        _assert_same_infos(out_n[4], out_s[4], f"step {step}")
        assert out_n[0] in native.observation_space
        truncated += int(out_n[3].sum())
    assert truncated == 2 * ends and ends >= 1  # each copy truncated at steps m - 1, 2m, ...
    native.close()
    synced.close()


# ------------------------------------------------------------------ scenarios and baselines


def _tiny_evaluation(kind: str, scenario: Any, policies: Any = None) -> dict[str, Any]:
    budget = small(SMALL_FAMILIES, kind, "SMALL_FAMILIES")
    return evaluate(scenario, policies, loads=[scenario.loads[0]], tasks=budget["tasks"], workers=0, progress=False)


@pytest.mark.parametrize("kind,name", SCENARIOS, ids=[name for _, name in SCENARIOS])
def test_every_packaged_scenario_loads_and_evaluates(kind, name):
    # Scenario changes (dynamics) later than the tiny run are not reached; the engine's own tests cover them.
    scenario = load_scenario(name)
    assert scenario.kind == kind and scenario.name == name
    doc = _tiny_evaluation(kind, scenario)
    family = family_of(kind)
    assert doc["family"] == scenario.kind and doc["scenario"] == name
    assert doc[family.work] == SMALL_FAMILIES[kind]["tasks"]
    assert len(doc["results"]) == len(doc["summary"]) == 1
    for row in doc["results"]:
        family.row_model.model_validate(row)
        assert row["load"] == scenario.loads[0]


@pytest.mark.parametrize("kind,spec", BASELINES, ids=[f"{kind}-{spec}" for kind, spec in BASELINES])
def test_every_baseline_runs_on_a_small_scenario_of_its_family(kind, spec):
    scenario = load_scenario(small(SMALL_FAMILIES, kind, "SMALL_FAMILIES")["scenario"])
    assert scenario.kind == kind
    doc = _tiny_evaluation(kind, scenario, spec)
    family = family_of(kind)
    (row,) = doc["results"]
    family.row_model.model_validate(row)
    (cell,) = doc["summary"]
    for path in family.summary_paths(doc["results"]):
        value = get_path(cell, path)["mean"]
        assert value is not None and math.isfinite(value), (path, value)
