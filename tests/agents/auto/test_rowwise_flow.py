"""A row-wise lRLA from its policy file in the engine (the runtime deciding every interval) makes the torch module's
greedy choices: the same run, bit for bit, as flow_v0 stepped in Python with them. Files of the two agents trained
with different lRLA settings join; a setting both act with must agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

from dcgym.agents.auto import PGConfig, PGRLModule
from dcgym.agents.auto.policy_file import lrla_policy
from dcgym.agents.evaluation import evaluate
from dcgym.agents.evaluation.flow import FlowFileJob, _Measured, histogram, measure, row
from dcgym.agents.policies import Source, Spec
from dcgym.agents.policies.file_settings import settings_for
from dcgym.agents.policies.flow import auto_policy_files
from dcgym.agents.policies.zoo import zoo_dir
from dcgym.agents.policy_format import read_policy, with_settings, write_policy
from dcgym.agents.rl.envs import make_env
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import scenario_path

FLOWS, WARMUP, SEED, LOAD = 400, 40, 7, 0.8
ENV = {
    "scenario": "auto_websearch",
    "load": LOAD,
    "overrides": {"long_flow_bytes": 1048576},
    "long_active": 24,
    "path_loads": True,
}


def rowwise_module(env, **training) -> PGRLModule:
    torch.manual_seed(2)
    config = PGConfig().training(
        hiddens=[16, 8],
        network="rowwise",
        row_width=env.game.lrla_row_width,
        rule_init=True,
        rule_stay=0.3,
        **training,
    )
    return PGRLModule(
        observation_space=env.observation_space("lrla"),
        action_space=env.action_space("lrla"),
        model_config=config._model_config_auto_includes,
    )


PIN = {"keep_level": True, "rule_levels": "pin", "rule_pin_bytes": 2 * 2**20}
"""The rule that leaves flows to MLFQ below 2 MiB sent and pins them to the last level from it."""


@pytest.mark.parametrize("rule", [{}, PIN], ids=["pinned", "keep_below_2MiB"])
def test_rowwise_file_in_the_engine_equals_python_stepping_with_the_modules_greedy_choices(tmp_path, rule):
    config = {**ENV, "keep_level": rule.get("keep_level", False)}
    env = make_env("flow_v0", config)
    module = rowwise_module(env, **rule)
    path = write_policy(lrla_policy(module), tmp_path / "rowwise.dcpol")
    from_file = FlowFileJob("rowwise (file)", LOAD, SEED, config, {"lrla": str(path)}, FLOWS, WARMUP).run()

    env = make_env("flow_v0", {**config, "max_steps": 2**62, "warmup_s": 0.0})
    env.game.scenario = _Measured(env.game.scenario, WARMUP, FLOWS)
    obs, _ = env.reset(seed=SEED)
    state = {"obs": obs["lrla"], "moves": 0, "kept": 0}

    def step() -> None:
        with torch.no_grad():
            choice = module.greedy(torch.as_tensor(state["obs"][None]))[0].numpy()
        listed = np.asarray(env.game.agents[0].flows) >= 0
        rows = state["obs"][: 24 * 9].reshape(24, 9)
        state["moves"] += int((choice.reshape(24, 3)[listed, 2] != np.rint(rows[listed, 2] * 3)).sum())
        state["kept"] += int((choice.reshape(24, 3)[listed, 0] == env.game.levels).sum())
        o, _, _ = env.game.step(None, env.game.check_lrla(choice)[None], [0])
        state["obs"] = o["lrla"][0]

    left = measure(env.sim, FLOWS, WARMUP, step=step)
    python_run = row("rowwise (file)", LOAD, SEED, env.sim, WARMUP, left, 0.0)
    assert state["moves"] > 10  # the network moved flows between paths
    assert (state["kept"] > 10) == bool(rule)  # and with the pin rule left flows below 2 MiB to MLFQ
    a, b = dict(from_file["result"]), dict(python_run)
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b
    for key, values in histogram(env.sim).items():
        np.testing.assert_array_equal(np.asarray(from_file["histogram"][key]), np.asarray(values))


def test_agents_trained_with_different_lrla_settings_join_and_shared_settings_must_agree(tmp_path):
    env = make_env("flow_v0", ENV)
    lrla = write_policy(
        with_settings(lrla_policy(rowwise_module(env)), settings_for("flow_v0", ENV)), tmp_path / "l.dcpol"
    )
    paths, _, settings = auto_policy_files(
        Spec(f"zoo:auto_websearch+{lrla}", Source.POLICY_FILE), "auto_websearch", LOAD
    )
    assert set(paths) == {"srla", "lrla"}
    assert (settings["long_active"], settings["path_loads"], settings["short_finished"]) == (24, True, 100)
    other = write_policy(
        with_settings(lrla_policy(rowwise_module(env)), settings_for("flow_v0", {**ENV, "interval_ms": 5})),
        tmp_path / "l5.dcpol",
    )
    with pytest.raises(InvalidConfigError, match="their interval_ms differ"):
        auto_policy_files(Spec(f"zoo:auto_websearch+{other}", Source.POLICY_FILE), "auto_websearch", LOAD)


def test_the_builder_takes_the_row_width_and_the_mlfq_thresholds_from_the_environment():
    from dcgym.agents.algorithms import build_config
    from dcgym.agents.training.experiment import load_experiment

    experiment = load_experiment(
        "auto_lrla_websearch",
        {
            "env_args.long_active": 16,
            "env_args.path_loads": True,
            "hyperparameters": {"hiddens": [24, 8], "network": "rowwise", "rule_init": True, "rule_levels": "mlfq"},
        },
    )
    config = build_config(experiment, experiment.env_config)
    config.validate()
    assert config.row_width == 6 + 3
    assert config.rule_level_bytes == pytest.approx([2114080.0, 10057940.0, 80459140.0])  # pias_ws, as flow_v0 holds
    env = make_env("flow_v0", experiment.env_config)
    module = PGRLModule(
        observation_space=env.observation_space("lrla"),
        action_space=env.action_space("lrla"),
        model_config=config._model_config_auto_includes,
    )
    assert (module.policy.rows, module.policy.row_width, module.policy.shared) == (16, 9, 70)


def test_the_builder_takes_the_keep_choice_from_the_environment_for_the_pin_rule():
    from dcgym.agents.algorithms import build_config
    from dcgym.agents.training.experiment import load_experiment

    hyper = {"hiddens": [24, 8], "network": "rowwise", "rule_init": True, "rule_levels": "pin", "rule_pin_bytes": 4e6}
    overrides = {"env_args.long_active": 16, "env_args.path_loads": True, "hyperparameters": hyper}
    experiment = load_experiment("auto_lrla_websearch", overrides)
    config = build_config(experiment, experiment.env_config)
    with pytest.raises(ValueError, match=r"it needs the environment's keep_level: true"):
        config.validate()
    experiment = load_experiment("auto_lrla_websearch", {**overrides, "env_args.keep_level": True})
    config = build_config(experiment, experiment.env_config)
    config.validate()
    assert config.keep_level and config._model_config_auto_includes["rule_pin"] == 4e6


def long_flow_file(tmp_path, name: str, env_config: dict) -> str:
    env = make_env("flow_v0", {**env_config, "scenario": "auto_websearch", "load": LOAD})
    policy = with_settings(lrla_policy(rowwise_module(env)), settings_for("flow_v0", env_config))
    return str(write_policy(policy, tmp_path / name))


def flow_rows(scenario: str, spec: str) -> list[dict]:
    doc = evaluate(scenario, [spec], [LOAD], seeds=[SEED], tasks=FLOWS, workers=0, progress=False)
    return [{k: v for k, v in r.items() if k not in ("policy", "wall_s")} for r in doc["results"]]


def test_a_file_recording_long_flow_bytes_runs_the_packaged_scenario_as_the_scenario_with_that_override(tmp_path):
    lrla = {"long_active": 24, "path_loads": True}
    recorded = long_flow_file(tmp_path, "long1m.dcpol", {**lrla, "long_flow_bytes": 1048576})
    unrecorded = long_flow_file(tmp_path, "scenario_s.dcpol", lrla)  # the same weights: rowwise_module seeds torch
    assert read_policy(recorded).settings["long_flow_bytes"] == "1048576"
    assert read_policy(unrecorded).settings["long_flow_bytes"] == "0"  # the scenario's own, as before the setting
    packaged = yaml.safe_load((scenario_path("auto_websearch")).read_text())
    overridden = tmp_path / "auto_websearch_long1m.yaml"
    overridden.write_text(yaml.safe_dump({**packaged, "long_flow_bytes": 1048576}))

    expected = flow_rows(str(overridden), unrecorded)
    assert flow_rows("auto_websearch", recorded) == expected  # bit for bit
    assert flow_rows("auto_websearch", unrecorded) != expected  # long from the last threshold (80 MB): other runs
    # a config that gives it as a scenario override records it too (lRLA's experiments do)
    assert settings_for("flow_v0", {"overrides": {"long_flow_bytes": 1048576}})["long_flow_bytes"] == "1048576"


def test_a_pair_disagreeing_on_long_flow_bytes_acts_with_lrla_s(tmp_path):
    lrla = long_flow_file(tmp_path, "l.dcpol", {**ENV, "long_flow_bytes": 1048576, "overrides": {}})
    srla = read_policy(zoo_dir() / "auto_websearch.dcpol")
    srla_2m = tmp_path / "s2m.dcpol"
    write_policy(with_settings(srla, {**srla.settings, "long_flow_bytes": "2097152"}), srla_2m)
    for given in (f"zoo:auto_websearch+{lrla}", f"{lrla}+zoo:auto_websearch", f"{srla_2m}+{lrla}", f"{lrla}+{srla_2m}"):
        _, _, settings = auto_policy_files(Spec(given, Source.POLICY_FILE), "auto_websearch", LOAD)
        assert settings["long_flow_bytes"] == 1048576, given
    _, _, settings = auto_policy_files(Spec(str(srla_2m), Source.POLICY_FILE), "auto_websearch", LOAD)
    assert settings["long_flow_bytes"] == 2097152  # alone, sRLA acts with its own


@pytest.mark.parametrize("bad", ["-1", "abc", "inf"])
def test_a_bad_long_flow_bytes_in_a_file_is_refused_naming_it(tmp_path, bad):
    path = long_flow_file(tmp_path, "l.dcpol", {**ENV, "overrides": {}})
    policy = read_policy(path)
    write_policy(with_settings(policy, {**policy.settings, "long_flow_bytes": bad}), path)
    with pytest.raises(InvalidConfigError) as err:
        auto_policy_files(Spec(path, Source.POLICY_FILE), "auto_websearch", LOAD)
    assert err.value.field == "long_flow_bytes"


def test_long_flow_bytes_that_contradicts_the_config_s_override_is_refused():
    with pytest.raises(InvalidConfigError) as err:
        make_env("flow_v0", {**ENV, "long_flow_bytes": 2097152})  # ENV overrides it with 1 MiB
    assert err.value.field == "long_flow_bytes" and "1048576" in str(err.value)
    assert make_env("flow_v0", {**ENV, "long_flow_bytes": 1048576}).game.scenario.long_flow_bytes == 1048576
