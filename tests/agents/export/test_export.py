"""Exported policies act as the RLlib modules they come from (tiny Malcolm and PPO runs, fresh SAC / PPO modules)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import Columns

from dcgym.agents.export import export_policy, read_policy, to_bytes
from dcgym.agents.policies.checkpoints import TrainedPolicy, trained_env_config
from dcgym.agents.rl.default_modules import mlp_from_modules
from dcgym.agents.training.experiment import load_experiment
from dcgym.cpp_core import RuntimePolicy
from dcgym.export import run as export_cli

ROOT = Path(__file__).resolve().parents[3]
SMOKE = ROOT / "configs/experiments/smoke.yaml"
QUIET = {"evaluation.enabled": False, "budget.iterations": 1}


def tiny_run(tmp_path_factory, name: str, overrides: dict) -> Path:
    from dcgym.agents.training import train

    experiment = load_experiment(SMOKE, {**QUIET, **overrides})
    return train(experiment, out=tmp_path_factory.mktemp(name), progress=False).run_dir


@pytest.fixture(scope="module")
def malcolm_run(ray_session, tmp_path_factory):
    return tiny_run(
        tmp_path_factory, "malcolm", {"algorithm": "malcolm", "hyperparameters": {}, "env_args.max_steps": 20}
    )


@pytest.fixture(scope="module")
def ppo_run(ray_session, tmp_path_factory):
    return tiny_run(tmp_path_factory, "ppo", {})


def rollout(trained: TrainedPolicy, steps: int, seed: int = 3):
    """(raw beliefs (N, N) in us, observations) of rack_v0 under the trained policy, step by step."""
    from dcgym.agents.rl.envs import make_env

    env = make_env("rack_v0", {**trained_env_config(trained.meta), "max_steps": steps + 1})
    observations, _ = env.reset(seed=seed)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    for _ in range(steps):
        yield env, env.game.sims[0].beliefs(), observations
        observations, *_ = env.step(trained.act(observations, spaces))


# ------------------------------------------------------------------------------ Malcolm


def test_malcolm_export_gives_the_modules_probabilities_and_values(malcolm_run, tmp_path):
    path = export_policy(malcolm_run, tmp_path / "malcolm.dcpol")
    runtime = RuntimePolicy.from_file(str(path))
    trained = TrainedPolicy(malcolm_run)
    n = runtime.num_agents
    assert (runtime.kind, runtime.num_inputs, n) == ("linear_pair", 4, 4)
    policy = read_policy(path)
    module = trained.modules["node_0"]
    assert (
        (policy.input.basis, policy.critic_basis) == (module.actor_basis, module.critic_basis) == ("sort", "customized")
    )
    max_logit = policy.max_logit
    assert max_logit == 10.0  # rack_v0's default logit clip

    compared = 0
    for env, beliefs, observations in rollout(trained, 60):
        # the Normaliser reproduces rack_v0's observation of the loads x module.load_scale
        game = env.game
        for i, agent in enumerate(env.possible_agents):
            obs = observations[agent]
            np.testing.assert_allclose(obs[:n], np.clip(beliefs[i] * game.scale, 0, game.config.obs_clip), rtol=1e-6)
            batch = {Columns.OBS: torch.from_numpy(obs[None].astype(np.float32))}
            module = trained.modules[agent]
            with torch.no_grad():
                logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0].double().numpy()
                value = float(module.compute_values(batch)[0])
            # the environment's distributions: each half clipped to ±max_logit, softmax
            want = [np.exp(np.clip(h, -max_logit, max_logit)) for h in (logits[:n], logits[n:])]
            want = [w / w.sum() for w in want]
            migration, stealing = runtime.probabilities(i, beliefs[i])
            np.testing.assert_allclose(migration, want[0], atol=1e-5)
            np.testing.assert_allclose(stealing, want[1], atol=1e-5)
            assert runtime.value(i, beliefs[i]) == pytest.approx(value, abs=1e-5, rel=1e-5)
            compared += 1
    assert compared == 60 * n

    # loads beyond obs_clip are clipped the same way on both sides
    raw = np.random.default_rng(0).uniform(0, 3 * game.config.obs_clip / game.scale, (100, n))
    obs = np.concatenate([np.clip(raw * game.scale, 0, game.config.obs_clip), np.zeros((100, 1))], axis=1)
    with torch.no_grad():
        logits = (
            trained.modules["node_2"]
            .forward_inference({Columns.OBS: torch.from_numpy(obs.astype(np.float32))})[Columns.ACTION_DIST_INPUTS]
            .double()
            .numpy()
        )
    want = np.exp(np.clip(logits[:, :n], -max_logit, max_logit))
    np.testing.assert_allclose(runtime.probabilities(2, raw)[0], want / want.sum(axis=1, keepdims=True), atol=1e-5)


# ------------------------------------------------------------------------------ PPO


def test_ppo_export_gives_the_trained_policys_actions(ppo_run, tmp_path):
    path = export_policy(ppo_run, tmp_path / "ppo.dcpol")
    runtime = RuntimePolicy.from_file(str(path))
    trained = TrainedPolicy(ppo_run)
    assert (runtime.kind, runtime.head, runtime.num_agents, runtime.num_inputs) == ("mlp", "unsquash", 4, 5)
    policy = read_policy(path)
    assert len(policy.networks) == 1 and policy.agent_network == [0, 0, 0, 0]  # one shared network
    assert [layer.activation for layer in policy.networks[0]] == ["tanh", "identity"]  # hidden [16], tanh
    assert policy.networks[0][-1].weight.shape == (8, 16)  # the Gaussian's mean rows only
    steps = 0
    for env, _, observations in rollout(trained, 30):
        spaces = {a: env.action_space(a) for a in env.possible_agents}
        want = trained.act(observations, spaces)
        for i, agent in enumerate(env.possible_agents):
            np.testing.assert_allclose(runtime.act(observations[agent], i), want[agent], atol=1e-5, rtol=1e-5)
        steps += 1
    assert steps == 30


# ------------------------------------------------------------------------------ other RLlib modules


def build_module(algorithm: str, obs_space, action_space, model_config: dict):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.sac import SACConfig

    config = (PPOConfig() if algorithm == "ppo" else SACConfig()).rl_module(model_config=model_config)
    torch.manual_seed(7)
    return config.get_rl_module_spec(spaces={"default_policy": (obs_space, action_space)}).build()


OBS = gym.spaces.Box(-10, 10, (6,), np.float32)


@pytest.mark.parametrize("sharing", [False, True])
def test_ppo_discrete_module_exports_its_probabilities_and_argmax(sharing):
    module = build_module(
        "ppo",
        OBS,
        gym.spaces.Discrete(5),
        {"fcnet_hiddens": [12, 8], "fcnet_activation": "relu", "vf_share_layers": sharing},
    )
    runtime = RuntimePolicy.from_bytes(to_bytes(mlp_from_modules({"m": module}, ["m"], gym.spaces.Discrete(5))))
    assert runtime.head == "softmax"
    obs = np.random.default_rng(1).uniform(-10, 10, (64, 6)).astype(np.float32)
    with torch.no_grad():
        logits = module.forward_inference({Columns.OBS: torch.from_numpy(obs)})[Columns.ACTION_DIST_INPUTS]
    np.testing.assert_allclose(runtime.outputs(obs), torch.softmax(logits, -1).numpy(), atol=1e-5)
    np.testing.assert_array_equal(runtime.act(obs), logits.argmax(-1).numpy())


def test_sac_module_exports_its_tanh_squashed_mean():
    space = gym.spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([2.0, 5.0], np.float32))
    module = build_module("sac", OBS, space, {"fcnet_hiddens": [16], "fcnet_activation": "relu"})
    policy = mlp_from_modules({"a": module, "b": module}, ["a", "b", "a"], space)
    assert (policy.head, len(policy.networks), policy.agent_network) == ("tanh", 2, [0, 1, 0])
    runtime = RuntimePolicy.from_bytes(to_bytes(policy))
    obs = np.random.default_rng(2).uniform(-10, 10, (64, 6)).astype(np.float32)
    with torch.no_grad():
        inputs = module.forward_inference({Columns.OBS: torch.from_numpy(obs)})[Columns.ACTION_DIST_INPUTS]
        dist = module.get_inference_action_dist_cls().from_logits(inputs)
        squashed = dist._squash(dist.loc).numpy()  # the squashed Gaussian's mode in [-1, 1]
    want = space.low + (squashed + 1) * (space.high - space.low) / 2  # RLlib's unsquash_action to the bounds
    for agent in range(3):
        np.testing.assert_allclose(runtime.act(obs, agent), want, atol=1e-5)


def test_unsupported_modules_are_refused_by_name():
    module = build_module("ppo", OBS, gym.spaces.Discrete(3), {"fcnet_hiddens": [4]})
    with pytest.raises(ValueError, match=r"action space: got Box.*expected Discrete"):
        mlp_from_modules({"m": module}, ["m"], OBS)
    module.encoder.actor_encoder.net.mlp.append(torch.nn.LayerNorm(4))
    with pytest.raises(ValueError, match=r"m: layer LayerNorm\(.*is not supported by the policy file"):
        mlp_from_modules({"m": module}, ["m"], gym.spaces.Discrete(3))


# ------------------------------------------------------------------------------ the command line


def test_cli_exports_a_run_folder(malcolm_run, tmp_path):
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    out = tmp_path / "m.dcpol"
    proc = subprocess.run(
        [sys.executable, "-m", "dcgym", "export", str(malcolm_run), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {out}: linear_pair, 4 agents, {out.stat().st_size} bytes"
    assert RuntimePolicy.from_file(str(out)).num_agents == 4


def test_cli_bad_input_is_one_error_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    cases = [
        ([], "error: RUN: got null; allowed: a checkpoint or run folder written by train.py (or --demo-file)"),
        ([str(tmp_path / "missing"), "--out", "x"], "error: RUN: got "),
        ([str(tmp_path / "empty"), "--out", "x"], "error: policy: got "),
        ([str(tmp_path)], "error: --out: got null; allowed: the policy file to write"),
        (["--demo-file", "d", "--out", "x"], 'error: --demo-file: got "d"; allowed: nothing else'),
        (["--bogus"], "error: No such option: --bogus"),
    ]
    for argv, message in cases:
        assert export_cli(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(message) and err.count("\n") == 1, (argv, err)
    proc = subprocess.run(
        [sys.executable, "-m", "dcgym", "export", str(tmp_path / "missing"), "--out", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: RUN: got ")


def test_cli_demo_file_loads_in_the_runtime(tmp_path, capsys):
    out = tmp_path / "demo.dcpol"
    assert export_cli(["--demo-file", str(out)]) == 0
    assert "linear_pair, 4 agents" in capsys.readouterr().out
    runtime = RuntimePolicy.from_file(str(out))
    migration, stealing = runtime.probabilities(0, np.array([0.0, 75.0, 150.0, 300.0]))
    assert migration.sum() == pytest.approx(1.0) and stealing.sum() == pytest.approx(1.0)
    assert out.read_bytes() == to_bytes(read_policy(out))  # deterministic, and the reader reads it exactly
