"""OSML's Model-C on RLlib's DQN: the loss is §4.3's on a fixed batch, masked actions are never taken, and a short
training brings a service that starts short of cores to QoS."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dcgym.agents.algorithms import build_config, check_env, trained_agents
from dcgym.agents.osml import model_c
from dcgym.agents.training.experiment import load_experiment
from dcgym.envs.colo import colo_v0
from dcgym.envs.error import InvalidConfigError

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

EXPERIMENT = "configs/experiments/osml_dqn_single.yaml"
MIXES = "configs/experiments/osml_dqn_mixes.yaml"
MIXES_SMALL = {
    "hyperparameters.learning_starts": 20,
    "hyperparameters.steps_per_iteration": 40,
    "hyperparameters.train_batch_size": 16,
    "hyperparameters.target_sync": 40,
}
"""Three services, learning from the first iteration's end, a target copy every iteration (also in test_determinism)."""


def _algo_of(path: str, overrides: dict):
    exp = load_experiment(path, {"resources.num_env_runners": 0, **overrides})
    return build_config(exp).build_algo()


def _algo(**overrides):
    return _algo_of(EXPERIMENT, overrides)


def test_loss_equals_a_plain_recomputation(ray_session, storage):
    from ray.rllib.core.columns import Columns

    algo = _algo()
    try:
        learner = algo.learner_group._learner
        module = learner.module["shared"].unwrapped()
        rng = np.random.default_rng(0)
        n = 16
        obs = rng.uniform(0, 1, (n, 8)) * model_c.FEATURE_MAX
        nxt = rng.uniform(0, 1, (n, 8)) * model_c.FEATURE_MAX
        mask = (rng.random((n, 49)) < 0.7).astype(np.int8)
        mask[:, 24] = 1
        next_mask = (rng.random((n, 49)) < 0.7).astype(np.int8)
        next_mask[:, 24] = 1
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        rewards = rng.normal(size=n)
        done = rng.random(n) < 0.25
        # a target network that differs from the policy network
        with torch.no_grad():
            for p in module._target_qnet.parameters():
                p.add_(0.05)
        t = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt)  # noqa: E731
        batch = {
            Columns.OBS: {"observation": t(obs), "action_mask": t(mask, torch.int8)},
            Columns.NEXT_OBS: {"observation": t(nxt), "action_mask": t(next_mask, torch.int8)},
            Columns.ACTIONS: t(actions, torch.int64),
            Columns.REWARDS: t(rewards),
            Columns.TERMINATEDS: t(done, torch.bool),
        }
        fwd = module.forward_train(batch)
        loss = learner.compute_loss_for_module(module_id="shared", config=learner.config, batch=batch, fwd_out=fwd)

        # plain numpy: the same weights, ReLU MLP, -inf where masked, r + 0.9 max Q_target(s') (0 if done)
        def mlp(net, x):
            layers = [m for m in net if isinstance(m, torch.nn.Linear)]
            for i, lin in enumerate(layers):
                x = x @ lin.weight.detach().double().numpy().T + lin.bias.detach().double().numpy()
                if i < len(layers) - 1:
                    x = np.maximum(x, 0.0)
            return x

        q = mlp(module.qnet, model_c.normalize(obs))
        qt = np.where(next_mask > 0, mlp(module._target_qnet, model_c.normalize(nxt)), -np.inf)
        target = rewards + 0.9 * np.where(done, 0.0, qt.max(1))
        want = np.mean((target - q[np.arange(n), actions]) ** 2)
        assert float(loss.detach()) == pytest.approx(want, rel=1e-4)  # float32 forward pass against float64
        assert torch.isinf(fwd["qf_preds"][mask == 0]).all()
    finally:
        algo.stop()


def _greedy_steps_to_qos(module, seed: int, max_steps: int = 20) -> int | None:
    env = colo_v0.parallel_env(scenario="osml_single", interval_s=1.0, max_steps=max_steps, start=[4, 2])
    obs, _ = env.reset(seed=seed)
    for k in range(max_steps):
        actions = {}
        for a in env.agents:
            batch = {
                "obs": {
                    "observation": torch.as_tensor(np.array(obs[a]["observation"][None])),
                    "action_mask": torch.as_tensor(np.array(obs[a]["action_mask"][None])),
                }
            }
            actions[a] = int(module.forward_inference(batch)["actions"][0])
        obs, _, _, _, infos = env.step(actions)
        if all(i["qos_met"] for i in infos.values()):
            return k + 1
    return None


def test_start_violates_qos_and_no_change_stays_violating():
    env = colo_v0.parallel_env(scenario="osml_single", interval_s=1.0, max_steps=10, start=[4, 2])
    env.reset(seed=5)
    for _ in range(10):
        _, _, _, _, infos = env.step({a: colo_v0.NO_CHANGE for a in env.agents})
    assert not infos["img-dnn"]["qos_met"]
    assert infos["img-dnn"]["cores"] == 4 and infos["img-dnn"]["ways"] == 2


def test_short_training_brings_the_service_to_qos(ray_session, storage):
    """18 iterations of 200 steps (seed 1) with the ``qos`` reward: the greedy Model-C meets QoS within 10 decisions
    on 3 unseen seeds.

    Holding the start allocation never meets QoS (the test above); adding 3 cores a decision meets it in 3; the
    trained policy took 2 on each seed when this test was written, as did one trained with seed 2."""
    algo = _algo(**{"env_args.reward": "qos"})  # the paper's reward may trade QoS for resources freed
    try:
        for _ in range(18):
            algo.train()
        module = algo.get_module("shared")
        steps = [_greedy_steps_to_qos(module, seed) for seed in (101, 102, 103)]
    finally:
        algo.stop()
    assert all(s is not None and s <= 10 for s in steps), steps


def test_each_services_transitions_are_replayed_and_the_env_runner_acts_with_the_learned_network(ray_session, storage):
    """Three services share the Model-C: each one's transitions are stored (three per env step), the target network
    is copied every ``target_sync`` steps, and the env runner acts with the learner's network (two runs of one seed
    train the same weights: tests/agents/training/test_determinism.py)."""
    algo = _algo_of(MIXES, MIXES_SMALL)
    try:
        module = algo.learner_group._learner.module["shared"]
        initial = np.array(module.get_state()["_target_qnet.0.weight"], copy=True)
        for _ in range(2):
            result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] == 80
        assert len(algo.local_replay_buffer) == 3 * 80
        assert np.isfinite(result["learners"]["shared"]["qf_loss"])
        state = module.get_state()
        assert not np.array_equal(state["_target_qnet.0.weight"], initial)
        acting = algo.env_runner_group.local_env_runner.module["shared"].get_state()
        assert set(acting) == {k for k in state if k.startswith("qnet.")}
        assert all(np.array_equal(value, state[key]) for key, value in acting.items())
    finally:
        algo.stop()


def test_bad_hyperparameters_and_env_are_refused():
    with pytest.raises(InvalidConfigError, match="hyperparameters.gamma"):  # its spec's schema, before any build
        load_experiment(EXPERIMENT, {"hyperparameters.gamma": 1.5})
    with pytest.raises(InvalidConfigError, match="env"):
        check_env("osml_dqn", "rack_v0")
    with pytest.raises(InvalidConfigError, match="start"):
        colo_v0.parallel_env(scenario="osml_single", start=[0, 2])


def test_a_model_c_checkpoint_and_its_exported_file_give_the_same_rows(ray_session, storage, tmp_path):
    """The colo round trip by the front commands' libraries: an osml_dqn checkpoint evaluated as OSML (its Model-C,
    the zoo's Models A and B), exported by ``python -m dcgym export RUN --out FILE``, the file evaluated alike."""
    from dcgym import export
    from dcgym.agents.evaluation import evaluate
    from dcgym.agents.policies.checkpoints import write_meta

    algo = _algo()
    checkpoint = tmp_path / "run" / "checkpoints" / "iter_000001"
    try:
        algo.save_to_path(str(checkpoint))  # untrained weights: the round trip is under test, not the training
    finally:
        algo.stop()
    experiment = load_experiment(EXPERIMENT)
    agents = trained_agents(experiment.algorithm, experiment.env, experiment.env_config)
    write_meta(
        checkpoint,
        {
            "iteration": 1,
            "experiment": experiment.model_dump(mode="json"),
            "env_config": experiment.env_config,
            "agent_to_module": dict.fromkeys(agents, "shared"),
        },
    )
    file = tmp_path / "model_c.dcpol"
    assert export.run([str(tmp_path / "run"), "--out", str(file)]) == 0
    doc = evaluate("osml_single", [str(tmp_path / "run"), str(file)], tasks=60, workers=0, progress=False)
    rows: dict[str, list] = {}
    for row in doc["results"]:
        rows.setdefault(row["policy"], []).append({k: v for k, v in row.items() if k not in ("policy", "wall_s")})
    assert list(rows) == ["osml_dqn (trained)", "model_c (file)"]
    assert rows["osml_dqn (trained)"] == rows["model_c (file)"]
    # one file twice with other options is two policies, labelled apart (the label carries the options)
    doc = evaluate("osml_single", [str(file), f"{file}:reclaim=code"], tasks=60, workers=0, progress=False)
    assert list(dict.fromkeys(row["policy"] for row in doc["results"])) == [
        "model_c (file)",
        "model_c:reclaim=code (file)",
    ]


@pytest.mark.parametrize("epsilon", [0.0, 0.5, 1.0])
def test_exploration_draws_rllibs_dqn_actions_with_the_same_random_numbers(epsilon):
    """ModelCModule's own exploration against RLlib's DefaultDQNTorchRLModule._forward_exploration on the same
    module, from the same torch seed, 200 calls of 5 rows with some actions masked: the same actions, and the
    generator left in the same state."""
    from gymnasium.spaces import Box, Dict, Discrete
    from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
    from ray.rllib.core.columns import Columns

    from dcgym.agents.osml.model_c_rllib import ModelCModule

    n_in, n_out = len(model_c.FEATURE_MIN), 49
    module = ModelCModule(
        observation_space=Dict({"observation": Box(0.0, 1.0, (n_in,)), "action_mask": Box(0.0, 1.0, (n_out,))}),
        action_space=Discrete(n_out),
        model_config={"epsilon": [(0, epsilon), (1, epsilon)], "hidden": [30, 30, 30], "init_std": 0.1, "seed": 1},
    )
    rng = np.random.default_rng(0)
    for call in range(200):
        mask = (rng.random((5, n_out)) < 0.3).astype(np.float32)
        mask[:, call % n_out] = 1.0
        batch = {
            Columns.OBS: {
                "observation": torch.as_tensor(rng.random((5, n_in)), dtype=torch.float32),
                "action_mask": torch.as_tensor(mask),
            }
        }
        torch.manual_seed(call)
        ours = module._forward_exploration(batch, t=call)[Columns.ACTIONS]
        after = torch.rand(1)
        torch.manual_seed(call)
        rllibs = DefaultDQNTorchRLModule._forward_exploration(module, batch, t=call)[Columns.ACTIONS]
        assert torch.equal(ours, rllibs) and torch.equal(after, torch.rand(1))
        assert np.all(mask[np.arange(5), ours.numpy()] > 0)  # never a masked action
