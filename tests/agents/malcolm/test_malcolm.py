"""Malcolm on RLlib: basis functions, Algorithm 1's gradients against numpy, consensus, checkpoints, learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dcgym.agents.evaluation import evaluate
from dcgym.agents.malcolm import MalcolmConfig, rack_config
from dcgym.agents.malcolm.basis import BASES, features, num_features
from dcgym.agents.malcolm.malcolm import RackMultiAgentEnv
from dcgym.agents.malcolm.malcolm_learner import EPISODE_START, MIGRATE_COUNTS, STEAL_COUNTS
from dcgym.agents.policies.checkpoints import list_checkpoints
from dcgym.agents.training import resume, train
from dcgym.agents.training.experiment import load_experiment
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import load_scenario

from .racks import THREE_NODES, assert_group_acts_as_each_alone

# Every Algorithm built re-registers RLlib's env wrapper with Gymnasium, which warns from the second one on.
pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

# A tiny heterogeneous rack: a 4-worker node and a 1-worker node, 80% of the clients' tasks sent to the slow one.
TWO_NODES = {
    "scenario": "malcolm_hetero_paper_exp",
    "overrides": {
        "nodes": [{"count": 1, "workers": 4, "queue_capacity": 128}, {"count": 1, "workers": 1, "queue_capacity": 32}],
        "entry": {"kind": "nodes", "split": [0.2, 0.8]},
    },
    "load": 0.8,
    "max_steps": 1000,
}


# ------------------------------------------------------------------- basis


def test_basis_feature_counts_match_section_6_2():
    for n in (1, 2, 3, 14, 64):
        assert num_features("customized", n) == n * (n + 7) // 2 + 1
        assert num_features("sort", n) == 2 * n + 1
        assert num_features("raw", n) == n + 1
        x = torch.rand(5, n, dtype=torch.float64)
        for name in BASES:
            assert features(name, x).shape == (5, num_features(name, n))
    assert num_features("customized", 14) == 148 and num_features("sort", 14) == 29


def test_basis_values_on_a_hand_example():
    x = torch.tensor([[3.0, 1.0, 2.0]], dtype=torch.float64)
    customized = [3, 1, 2, 9, 1, 4, 27, 1, 8, 81, 1, 16, 3 * 1, 3 * 2, 1 * 2, 1]
    np.testing.assert_allclose(features("customized", x)[0].numpy(), customized, atol=1e-12)
    # Sorted descending: node 0 is rank 0 (most loaded), node 2 rank 1, node 1 rank 2 (least loaded).
    h = 0.5 * math.log(3)
    ranks = [(math.log(1) - h) / h, (math.log(3) - h) / h, (math.log(2) - h) / h]
    np.testing.assert_allclose(features("sort", x)[0].numpy(), [*ranks, 3, 1, 2, 1], atol=1e-12)
    assert ranks[0] == -1.0 and abs(ranks[1] - 1.0) < 1e-12  # the most loaded node -1, the least +1
    np.testing.assert_allclose(features("raw", x)[0].numpy(), [3, 1, 2, 1], atol=1e-12)
    np.testing.assert_allclose(features("quadratic", x)[0].numpy(), [3, 1, 2, 9, 1, 4, 3, 6, 2, 1], atol=1e-12)
    # Ties go to the lower node id: equal loads get ranks 0 and 1 in id order.
    tied = features("sort", torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64))[0, :3].numpy()
    np.testing.assert_allclose(tied, [-1.0, (math.log(2) - h) / h, 1.0], atol=1e-12)


# ---------------------------------------------------------- gradients (numpy)


def _build_learner(**training):
    config = rack_config({"env": THREE_NODES, "seed": 3, **training})
    learner = config.build_learner(env=RackMultiAgentEnv(THREE_NODES))
    for mid in learner.module.keys():
        learner.module[mid].unwrapped().double()  # compare in float64; the parameters stay the same objects
    return learner, config


def _fixed_batch(rng: np.random.Generator, d: int, n: int, episode_start: list[int]) -> dict[str, torch.Tensor]:
    obs = rng.uniform(0.0, 20.0, (d + 1, n + 1))
    migrate = rng.integers(0, 6, (d, n)).astype(float)
    steal = rng.integers(0, 3, (d, n)).astype(float)
    steal[3] = 0.0  # a heartbeat without a stealing decision
    start = np.zeros(d)
    start[episode_start] = 1.0
    return {
        "obs": torch.tensor(obs[:-1]),
        "new_obs": torch.tensor(obs[1:]),
        "rewards": torch.tensor(-rng.uniform(0.0, 500.0, d)),
        "terminateds": torch.zeros(d),
        MIGRATE_COUNTS: torch.tensor(migrate),
        STEAL_COUNTS: torch.tensor(steal),
        EPISODE_START: torch.tensor(start),
    }


def _closed_form(module, batch, config, *, reward_rate, traces):
    """Algorithm 1 (paper) or the authors' code, one heartbeat at a time, in numpy."""
    variant, gamma, lam, eta = config.variant, config.gamma, config.resolved_trace_lambda, config.average_reward_step
    th = module.critic_weights.detach().numpy()
    w = {"migration": module.migration_weights.detach().numpy(), "stealing": module.stealing_weights.detach().numpy()}
    x, x_next = batch["obs"][:, :3] * config.load_scale, batch["new_obs"][:, :3] * config.load_scale
    phi_c = features(config.critic_basis, x).numpy()
    phi_c_next = features(config.critic_basis, x_next).numpy()
    phi_a = features(config.actor_basis, x).numpy()
    counts = {"migration": batch[MIGRATE_COUNTS].numpy(), "stealing": batch[STEAL_COUNTS].numpy()}
    r, start = batch["rewards"].numpy() * config.reward_scale, batch[EPISODE_START].numpy()
    d = len(r)
    kappa = lam if variant == "code" else gamma * lam
    e = {k: (np.zeros_like(v) if traces is None else traces[k].copy()) for k, v in (("critic", th), *w.items())}
    g = {k: np.zeros_like(v) for k, v in e.items()}
    rbar = reward_rate
    for t in range(d):
        v, v_next = phi_c[t] @ th, phi_c_next[t] @ th
        if variant == "code":
            delta = r[t] - rbar + v_next - v
            rbar += eta * delta
        else:
            delta = r[t] + gamma * v_next - v
        step = {"critic": phi_c[t]}
        for name in w:
            z = w[name] @ phi_a[t]
            pi = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            c = counts[name][t]
            if variant == "code":
                step[name] = np.outer(c / c.sum() - pi, phi_a[t]) if c.sum() > 0 else np.zeros_like(w[name])
            else:
                step[name] = np.outer(c - c.sum() * pi, phi_a[t])
        for k in e:
            e[k] = (0.0 if start[t] else kappa) * e[k] + step[k]
            g[k] += delta * e[k] / d
    return g, e, rbar


@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("variant", ["paper", "code"])
def test_gradients_equal_closed_form(variant):
    """The learner's gradients (critic and both actors) are minus Algorithm 1's ascent direction, to 1e-6."""
    learner, config = _build_learner(variant=variant, gamma=0.9)
    rng = np.random.default_rng(7)
    d = 20
    assert config.resolved_trace_lambda == (0.6 if variant == "code" else 0.0)
    assert (config.load_scale, config.reward_scale, config.gamma) == (0.1, 0.01, 0.9)
    batch = {mid: _fixed_batch(rng, d, 3, [8]) for mid in learner.module.keys()}  # an episode starts at row 8
    previous = {}
    for mid in learner.module.keys():
        module = learner.module[mid].unwrapped()
        if variant == "code":  # a trace and R̄ left by an earlier mini-batch
            previous[mid] = {
                "critic": rng.normal(size=module.critic_weights.shape),
                "migration": rng.normal(size=module.migration_weights.shape),
                "stealing": rng.normal(size=module.stealing_weights.shape),
            }
            learner._traces[mid] = {k: torch.tensor(v) for k, v in previous[mid].items()}
            learner._reward_rate[mid] = -1.5

    fwd = learner.module.forward_train(batch)
    losses = learner.compute_losses(fwd_out=fwd, batch=batch)
    grads = learner.compute_gradients(losses)

    for mid in learner.module.keys():
        module = learner.module[mid].unwrapped()
        expected, trace, rbar = _closed_form(module, batch[mid], config, reward_rate=-1.5, traces=previous.get(mid))
        params = {
            "critic": module.critic_weights,
            "migration": module.migration_weights,
            "stealing": module.stealing_weights,
        }
        for name, param in params.items():
            np.testing.assert_allclose(grads[param].numpy(), -expected[name], rtol=1e-6, atol=1e-6, err_msg=name)
            assert np.abs(expected[name]).max() > 1e-3  # the check is not vacuous
        if variant == "code":  # the learner keeps the trace and R̄ for the next mini-batch
            for name in params:
                np.testing.assert_allclose(learner._traces[mid][name].numpy(), trace[name], rtol=1e-6, atol=1e-6)
            assert learner._reward_rate[mid] == pytest.approx(rbar, abs=1e-9)
        else:
            assert mid not in learner._traces and mid not in learner._reward_rate


# ---------------------------------------------------------------- consensus


@pytest.mark.usefixtures("ray_session")
def test_consensus_averages_critics_and_leaves_actors_alone():
    learner, _ = _build_learner(consensus_period=2)
    modules = [learner.module[mid].unwrapped() for mid in sorted(learner.module.keys())]
    critics = [m.critic_weights.detach().clone() for m in modules]
    actors = [(m.migration_weights.detach().clone(), m.stealing_weights.detach().clone()) for m in modules]
    assert not torch.equal(critics[0], critics[1])
    learner.apply_gradients({})  # update 1: no consensus yet
    assert all(torch.equal(m.critic_weights, c) for m, c in zip(modules, critics))
    learner.apply_gradients({})  # update 2 = P: consensus
    mean = torch.stack(critics).mean(dim=0)
    for m, (mig, steal) in zip(modules, actors):
        torch.testing.assert_close(m.critic_weights.detach(), mean, rtol=0, atol=1e-12)
        assert torch.equal(m.migration_weights, mig) and torch.equal(m.stealing_weights, steal)
    assert learner.num_updates == 2


# ---------------------------------------------------- sampling and execution


@pytest.mark.usefixtures("ray_session")
def test_actions_are_each_nodes_own_logits_and_counts_reach_the_batch(storage):
    algo = rack_config({"env": THREE_NODES, "seed": 1}).build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=30)
        runner_module = algo.env_runner.module
        batch = algo.learner_group._learner._learner_connector(
            rl_module=algo.learner_group._learner.module, batch={}, episodes=episodes, shared_data={}
        )
        for episode in episodes:
            for agent, sa in episode.agent_episodes.items():
                obs = torch.as_tensor(np.asarray(sa.get_observations(slice(0, len(sa)))))
                # Decentralized execution: node i's action is its module's output on its own observation.
                out = runner_module[agent].forward_exploration({"obs": obs})["action_dist_inputs"].numpy()
                np.testing.assert_allclose(np.asarray(sa.get_actions()), out, rtol=1e-6, atol=1e-6)
                assert np.abs(out).max() <= 10.0  # centred logits fit the env's clip
        for agent in ("node_0", "node_1", "node_2"):
            infos = [i for e in episodes for i in e.agent_episodes[agent].get_infos()[1:]]
            counts = batch[agent][MIGRATE_COUNTS].numpy()
            np.testing.assert_array_equal(counts, np.stack([i["migrate"] for i in infos]))
            np.testing.assert_array_equal(batch[agent][STEAL_COUNTS].numpy(), np.stack([i["steal"] for i in infos]))
            assert counts.sum() > 0
        assert batch["node_0"][EPISODE_START].numpy().tolist() == [1.0] + [0.0] * 29
    finally:
        algo.stop()


# -------------------------------------------------------------- checkpoints


@pytest.mark.usefixtures("ray_session")
def test_checkpoint_restores_weights_and_learner_state_and_training_continues(storage):
    from dcgym.agents.malcolm import Malcolm

    algo = rack_config({"env": THREE_NODES, "seed": 2, "variant": "code", "consensus_period": 3}).build_algo()
    try:
        for _ in range(4):
            algo.train()
        learner = algo.learner_group._learner
        weights = {
            mid: {k: np.array(v, copy=True) for k, v in algo.get_module(mid).get_state().items()}
            for mid in learner.module.keys()
        }
        state = (
            learner.num_updates,
            dict(learner._reward_rate),
            {m: {k: v.clone() for k, v in t.items()} for m, t in learner._traces.items()},
        )
        path = algo.save_to_path(str(storage / "checkpoint"))
    finally:
        algo.stop()

    restored = Malcolm.from_checkpoint(path)
    try:
        learner = restored.learner_group._learner
        for mid, expected in weights.items():
            for key, value in restored.get_module(mid).get_state().items():
                np.testing.assert_array_equal(value, expected[key])
        assert learner.num_updates == state[0] == 4 and learner._reward_rate == state[1]
        for mid, trace in state[2].items():
            for key, value in trace.items():
                assert torch.equal(learner._traces[mid][key], value)
        restored.train()
        assert learner.num_updates == 5
        assert not np.array_equal(
            restored.get_module("node_0").get_state()["migration_weights"], weights["node_0"]["migration_weights"]
        )
    finally:
        restored.stop()


# ----------------------------------------------------------------- learning


@pytest.mark.usefixtures("ray_session")
def test_training_lowers_the_latency_of_a_two_node_rack(tmp_path):
    """3000 heartbeats (0.3 s simulated) of Algorithm 1, trained by train.py's library and evaluated by the
    evaluation as any checkpoint is: the p99 and mean latency of 12 000 tasks (the same tasks for both
    checkpoints) fall from the policy after one iteration to the policy after 150, bit for bit the same every run."""
    experiment = load_experiment(
        {
            "env": "rack_v0",
            "scenario": TWO_NODES["scenario"],
            "env_args": {k: v for k, v in TWO_NODES.items() if k != "scenario"},
            "algorithm": "malcolm",
            "budget": {"iterations": 1},
            "checkpoint_every": 0,  # the final checkpoint of each invocation only: iterations 1 and 150
            "evaluation": {"enabled": False},
        }
    )
    first = train(experiment, out=tmp_path, progress=False).run_dir
    resume(first, overrides={"budget.iterations": 150}, progress=False)  # 150 x 20 heartbeats
    before, after = list_checkpoints(first)
    scenario = load_scenario(TWO_NODES["scenario"], TWO_NODES["overrides"])
    doc = evaluate(scenario, [str(before), str(after)], [0.8], tasks=12_000, seed=123, workers=0, progress=False)
    rows = {r["policy"]: r for r in doc["results"]}
    early, late = rows["malcolm@iter_000001"], rows["malcolm@iter_000150"]
    assert late["latency_us"]["p99"] < 0.9 * early["latency_us"]["p99"], (early, late)
    assert late["latency_us"]["mean"] < early["latency_us"]["mean"], (early, late)


# --------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("training", "message"),
    [
        (
            {"train_batch_size_per_learner": 30},
            r"`train_batch_size_per_learner` \(30\) must be a multiple of `minibatch_size` \(20\)",
        ),
        ({"variant": "papr"}, r"`variant` \('papr'\) must be one of \['paper', 'code'\]"),
        ({"critic_basis": "cubic"}, r"`critic_basis` \('cubic'\) must be one of"),
        ({"trace_lambda": 1.5}, r"`trace_lambda` \(1.5\) must be None or in \[0, 1\]"),
        ({"consensus_period": -1}, r"`consensus_period` \(-1\) must be an integer >= 0"),
        ({"lr_critic": 0.0}, r"`lr_critic` \(0.0\) must be > 0"),
    ],
)
def test_validate_names_the_field_and_value(training, message):
    config = MalcolmConfig().environment(RackMultiAgentEnv, env_config=THREE_NODES).training(**training)
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_validate_refuses_parallel_sampling():
    config = MalcolmConfig().environment(RackMultiAgentEnv, env_config=THREE_NODES).env_runners(num_env_runners=2)
    with pytest.raises(ValueError, match=r"`num_env_runners` \(2\) must be 0 or 1"):
        config.validate()


def test_rack_config_maps_hyperparameters_and_refuses_unknown_keys():
    config = rack_config(
        {
            "env": THREE_NODES,
            "seed": 4,
            "variant": "code",
            "lr_actor": 5e-4,
            "minibatch_size": 10,
            "train_batch_size_per_learner": 40,
        }
    )
    assert (config.variant, config.lr_actor, config.minibatch_size, config.seed) == ("code", 5e-4, 10, 4)
    assert list(config.policies) == ["node_0", "node_1", "node_2"]
    assert config.policy_mapping_fn("node_2") == "node_2"
    assert config.env_config["reward"] == "imbalance_delta"  # the code variant's reward unless given
    with pytest.raises(InvalidConfigError, match='lr_critc: got 0.1; did you mean "lr_critic"'):
        rack_config({"env": THREE_NODES, "lr_critc": 0.1})
    with pytest.raises(InvalidConfigError, match="^env.load: got -0.5"):
        rack_config({"env": {**THREE_NODES, "load": -0.5}})


# ------------------------------------------------------------------ acting as a group


def _node_modules(n: int, seed: int) -> list:
    from gymnasium.spaces import Box

    from dcgym.agents.malcolm.malcolm_rl_module import MalcolmRLModule

    torch.manual_seed(seed)
    return [
        MalcolmRLModule(
            observation_space=Box(0.0, 100.0, (n + 2,), np.float32),
            action_space=Box(-10.0, 10.0, (2 * n,), np.float32),
            model_config={"load_scale": 0.5},
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("rows", [1, 3, "mixed"])
def test_nodes_acting_as_a_group_give_each_nodes_own_bits(rows):
    """MalcolmRLModule.group_act (what BulkEnvRunner calls for a rack's nodes) against each node's own
    forward pass and RLlib's GetActions: equal bit for bit, exploring or not, with 1 or 3 rows (env copies) per node and
    with uneven rows, over 20 draws of loads with ties."""
    n = 14
    rng = np.random.default_rng(7)
    modules = _node_modules(n, seed=7)
    counts = [1 + i % 4 for i in range(n)] if rows == "mixed" else [rows] * n
    assert modules[0].group_key() == modules[-1].group_key() is not None
    for _ in range(20):
        obs = [torch.as_tensor(rng.integers(0, 6, (c, n + 2)).astype(np.float32)) for c in counts]  # many ties
        assert_group_acts_as_each_alone(modules, obs, explore=bool(rng.integers(2)))


def test_aligned_blocks_start_where_new_tensors_do_and_hold_the_rows():
    from dcgym.agents.rl.apis.group_act_api import ALIGNMENT_BYTES, aligned_blocks

    rows = torch.randn(20, 29)
    blocks = aligned_blocks(rows[1:], [1, 5, 2, 11])  # from an unaligned view
    assert [b.shape for b in blocks] == [(1, 29), (5, 29), (2, 29), (11, 29)]
    assert all(b.is_contiguous() and b.data_ptr() % ALIGNMENT_BYTES == 0 for b in blocks)
    assert torch.equal(torch.cat(blocks), rows[1:])
