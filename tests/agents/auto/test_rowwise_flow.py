"""A row-wise lRLA from its policy file in the engine (the runtime deciding every interval) makes the torch module's
greedy choices: the same run, bit for bit, as flow_v0 stepped in Python with them. Files of the two agents trained
with different lRLA settings join; a setting both act with must agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dcgym.agents.auto import PGConfig, PGRLModule
from dcgym.agents.auto.policy_file import lrla_policy
from dcgym.agents.evaluation.flow import FlowFileJob, _Measured, histogram, measure, row
from dcgym.agents.policies import Source, Spec
from dcgym.agents.policies.file_settings import settings_for
from dcgym.agents.policies.flow import auto_policy_files
from dcgym.agents.policy_format import with_settings, write_policy
from dcgym.agents.rl.envs import make_env
from dcgym.envs.error import InvalidConfigError

FLOWS, WARMUP, SEED, LOAD = 400, 40, 7, 0.8
ENV = {
    "scenario": "auto_websearch",
    "load": LOAD,
    "overrides": {"long_flow_bytes": 1048576},
    "long_active": 24,
    "path_loads": True,
}


def rowwise_module(env) -> PGRLModule:
    torch.manual_seed(2)
    config = PGConfig().training(
        hiddens=[16, 8], network="rowwise", row_width=env.game.lrla_row_width, rule_init=True, rule_stay=0.3
    )
    return PGRLModule(
        observation_space=env.observation_space("lrla"),
        action_space=env.action_space("lrla"),
        model_config=config._model_config_auto_includes,
    )


def test_rowwise_file_in_the_engine_equals_python_stepping_with_the_modules_greedy_choices(tmp_path):
    env = make_env("flow_v0", ENV)
    module = rowwise_module(env)
    path = write_policy(lrla_policy(module), tmp_path / "rowwise.dcpol")
    from_file = FlowFileJob("rowwise (file)", LOAD, SEED, ENV, {"lrla": str(path)}, FLOWS, WARMUP).run()

    env = make_env("flow_v0", {**ENV, "max_steps": 2**62, "warmup_s": 0.0})
    env.game.scenario = _Measured(env.game.scenario, WARMUP, FLOWS)
    obs, _ = env.reset(seed=SEED)
    state = {"obs": obs["lrla"], "moves": 0}

    def step() -> None:
        with torch.no_grad():
            choice = module.greedy(torch.as_tensor(state["obs"][None]))[0].numpy()
        listed = np.asarray(env.game.agents[0].flows) >= 0
        rows = state["obs"][: 24 * 9].reshape(24, 9)
        state["moves"] += int((choice.reshape(24, 3)[listed, 2] != np.rint(rows[listed, 2] * 3)).sum())
        o, _, _ = env.game.step(None, env.game.check_lrla(choice)[None], [0])
        state["obs"] = o["lrla"][0]

    left = measure(env.sim, FLOWS, WARMUP, step=step)
    python_run = row("rowwise (file)", LOAD, SEED, env.sim, WARMUP, left, 0.0)
    assert state["moves"] > 10  # the network moved flows between paths
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
