"""The fill head's online learner (dcgym/runtime/fill_learner.hpp) against the torch fill actor's learner
(agents/malcolm/malcolm_learner.py's fill loss), zero learning rates against no learning in the engine, and its
refusals by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dcgym.agents import policy_format as fmt
from dcgym.agents.malcolm import rack_config
from dcgym.agents.malcolm.fill import water_fill_policy
from dcgym.agents.malcolm.fill_rl_module import TASK_ARRIVALS, TASK_DEST, TASK_LEVELS, TASK_MASK
from dcgym.agents.malcolm.malcolm import RackMultiAgentEnv
from dcgym.agents.malcolm.malcolm_learner import EPISODE_START, MIGRATE_COUNTS, STEAL_COUNTS
from dcgym.agents.malcolm.policy_file import fill_from_modules
from dcgym.agents.policies.rack import game_engine_config
from dcgym.cpp_core import FillController, FillLearner
from dcgym.envs.scenario import load_scenario

from ...agents.malcolm.racks import THREE_NODES

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

NODES = ["node_0", "node_1", "node_2"]
N = 3
D = 20
RTOL = 1e-5  # float32 parameters and critic; the tables in float64 in both, summed in another order


def _close(actual: np.ndarray, expected: np.ndarray, what: str, rtol: float = RTOL) -> None:
    """Equal to rtol relative to the largest entry."""
    scale = float(np.abs(expected).max())
    assert scale > 1e-6, f"{what}: the check is vacuous"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


def _batch(rng: np.random.Generator, obs_dim: int, offered_index: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """D + 1 rack_v0-like observations (levels with zeros and ties, an offered load) and one mini-batch."""
    obs = np.zeros((D + 1, obs_dim), np.float32)
    obs[:, :N] = rng.exponential(2.0, (D + 1, N)) * rng.integers(0, 2, (D + 1, N))
    obs[::5, 1] = obs[::5, 2]  # ties
    obs[:, offered_index] = rng.uniform(0.3, 1.2, D + 1)
    migrate = rng.integers(0, 6, (D, N)).astype(np.float32)
    migrate[4] = 0.0  # a heartbeat without a migration decision
    return obs, {
        "obs": obs[:-1],
        "new_obs": obs[1:],
        "rewards": -rng.uniform(0.0, 500.0, D).astype(np.float32),
        "terminateds": np.zeros(D, np.float32),
        MIGRATE_COUNTS: migrate,
        STEAL_COUNTS: rng.integers(0, 3, (D, N)).astype(np.float32),
        EPISODE_START: np.zeros(D, np.float32),
    }


def _torch_and_cpp_learners(variant: str, *, per_task: bool, rng: np.random.Generator):
    """The torch fill learner of a 3-node rack (``variant``, per task or not) with random gains (uniform in
    ±0.3, drawn from ``rng``: every part of the table's gradient acts), and the C++ FillLearner of its exported
    file with the same critics: (config, learner, modules, policy, cpp)."""
    params = {"env": THREE_NODES, "seed": 3, "actor": "fill", "fill_steal": True, "fill_per_task": per_task}
    params |= {"variant": variant, "trace_lambda": 0.0} if variant == "code" else {}
    config = rack_config(params)
    learner = config.build_learner(env=RackMultiAgentEnv(config.env_config))
    modules = [learner.module[mid].unwrapped() for mid in NODES]
    with torch.no_grad():
        for m in modules:
            for p in m.actor_parameters().values():
                p.copy_(torch.as_tensor(rng.uniform(-0.3, 0.3, tuple(p.shape))))
    policy = fill_from_modules(modules, level_scale=1 / 75)
    cpp = FillLearner(fmt.to_bytes(policy), {"variant": variant, "trace_lambda": 0.0})
    for i, m in enumerate(modules):
        cpp.set_critic(i, m.critic_weights.detach().numpy())
    return config, learner, modules, policy, cpp


def _same_gradients(cpp, modules, batches, grads, index, arrivals_per_load, tasks=None) -> None:
    """One C++ update per node on the batches the torch learner's ``grads`` came from: the critic's and every
    learned gain part's gradients agree to RTOL (the mix and steal-margin rows are not learned: 0); ``tasks`` per
    node for a per-task batch."""
    for i, (mid, m) in enumerate(zip(NODES, modules, strict=True)):
        obs, b = batches[mid]
        ours = cpp.update(
            i,
            obs[:, :N] * np.float32(0.1),
            obs[:-1, :N].astype(np.float64),
            obs[:-1, index].astype(np.float64) * arrivals_per_load,
            b["rewards"].astype(np.float64),
            b[MIGRATE_COUNTS],
            tasks=None if tasks is None else tasks[mid],
        )
        _close(ours["critic"], grads[m.critic_weights].numpy(), f"{mid} critic gradient")
        g = ours["gains"]
        assert not g[1:3].any()
        _close(g[0], grads[m.volume_gains].numpy()[0], f"{mid} volume gradient")
        _close(g[3 : 3 + N], grads[m.capacity_gains].numpy(), f"{mid} capacity gradient")
        _close(g[3 + N :], grads[m.level_gains].numpy(), f"{mid} level gradient")


@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("variant", ["paper", "code"])
def test_one_update_equals_the_torch_fill_learner(variant):
    """The same gains (random, so every part of the table's gradient acts), critics and mini-batch: the C++
    gradients of the critic and of the gains equal torch's autograd through water_fill_torch to 1e-5 of their
    largest entry, and so does each of two AdamW steps (the second checks the moments)."""
    rng = np.random.default_rng(7)
    config, learner, modules, policy, cpp = _torch_and_cpp_learners(variant, per_task=False, rng=rng)
    assert (config.load_scale, modules[0].load_scale, config.reward_scale) == (0.1, 0.1, 0.01)
    index = modules[0].offered_load_index
    total = float(np.asarray(policy.capacity, np.float32).astype(np.float64).sum())
    hs = float(np.float32(policy.heartbeat_services))

    for _ in range(2):
        before = cpp.parameters()
        batches = {mid: _batch(rng, modules[0].observation_space.shape[0], index) for mid in NODES}
        torch_batch = {mid: {k: torch.tensor(v) for k, v in b.items()} for mid, (_, b) in batches.items()}
        fwd = learner.module.forward_train(torch_batch)
        grads = learner.compute_gradients(learner.compute_losses(fwd_out=fwd, batch=torch_batch))
        learner.apply_gradients(grads)
        _same_gradients(cpp, modules, batches, grads, index, total * hs)
        after = cpp.parameters()
        torch_gains = fill_from_modules(modules, level_scale=1 / 75).gains
        torch_critic = np.stack([m.critic_weights.detach().numpy() for m in modules])
        _close(after["gains"] - before["gains"], torch_gains - before["gains"], "gains AdamW step", rtol=1e-4)
        _close(after["critic"] - before["critic"], torch_critic - before["critic"], "critic AdamW step", rtol=1e-4)


@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("variant", ["paper", "code"])
def test_one_per_task_update_equals_the_torch_fill_learner(variant):
    """train.py's per-task fill actor (``fill_per_task``: rack_v0's fill actions, each decision at its own levels)
    against the C++ learner's per-task batch: the same random gains, critic and decisions (levels that differ from
    the heartbeat's, a heartbeat without decisions, padding to the batch's most decisions): the gradients of the
    critic and of every gain part agree to 1e-5 of their largest entry."""
    rng = np.random.default_rng(8)
    config, learner, modules, policy, cpp = _torch_and_cpp_learners(variant, per_task=True, rng=rng)
    assert config.env_config["action_type"] == "fill" and policy.per_task
    index = modules[0].offered_load_index
    total = float(np.asarray(policy.capacity, np.float32).astype(np.float64).sum())
    hs = float(np.float32(policy.heartbeat_services))
    batches, tasks = {}, {}
    for mid in NODES:
        obs, b = _batch(rng, modules[0].observation_space.shape[0], index)
        per = b[MIGRATE_COUNTS].sum(axis=1).astype(int)
        width = per.max()
        dest = np.zeros((D, width), np.int64)
        levels = np.zeros((D, width, N))
        arrivals = np.ones((D, width))
        mask = np.zeros((D, width), np.float32)
        for t in range(D):
            k = per[t]
            dest[t, :k] = np.repeat(np.arange(N), b[MIGRATE_COUNTS][t].astype(int))
            levels[t, :k] = obs[t, :N] + rng.uniform(0, 1, (k, N))  # each decision at levels of its own moment
            arrivals[t, :k] = obs[t, index] * total * hs * rng.uniform(0.9, 1.1, k)
            mask[t, :k] = 1
        b |= {TASK_DEST: dest, TASK_LEVELS: levels, TASK_ARRIVALS: arrivals, TASK_MASK: mask}
        batches[mid] = (obs, b)
        keep = mask.astype(bool)
        tasks[mid] = {
            "offsets": np.concatenate([[0], np.cumsum(per)]).astype(np.uint32),
            "levels": levels[keep],
            "arrivals": arrivals[keep],
            "dest": dest[keep].astype(np.uint32),
        }
    torch_batch = {mid: {k: torch.tensor(v) for k, v in b.items()} for mid, (_, b) in batches.items()}
    fwd = learner.module.forward_train(torch_batch)
    grads = learner.compute_gradients(learner.compute_losses(fwd_out=fwd, batch=torch_batch))
    _same_gradients(cpp, modules, batches, grads, index, total * hs, tasks)


@pytest.mark.parametrize("per_task", [False, True])
def test_zero_learning_rates_run_bit_for_bit_as_no_learning(per_task):
    """Learning with lr 0 (the whole update path runs, every parameter step is exactly 0) and no learning: the
    same tasks, decisions and latencies, bit for bit; a positive rate moves the gains and changes the run. Per
    task (the zoo's form: nominal_wait levels, horizon 0.5) learning records each decision with the levels it
    acted on."""
    scenario = load_scenario("malcolm_hetero_paper_exp")
    metric = "nominal_wait" if per_task else "expected_wait"
    rule = {"per_task": True, "horizon": 0.5, "metric": metric} if per_task else {}
    data = fmt.to_bytes(water_fill_policy(scenario, steal=True, **rule))
    config = game_engine_config(scenario, 0.94, 3, warmup=2000, load_metric=metric)
    plain = FillController(config, data, 100.0).run(100)
    zero = FillController(config, data, options={"learn": True, "lr_actor": 0.0, "lr_critic": 0.0})
    learned0 = zero.run(100)
    assert learned0.pop("num_updates") == 5 and learned0.pop("heartbeats") == 100
    learned0.pop("imbalance_mean"), learned0.pop("reward_mean")
    for doc in (plain, learned0):
        doc.pop("wall_time_s", None)
    assert learned0.keys() == plain.keys()
    np.testing.assert_equal(learned0, plain)  # exact, arrays included
    assert not zero.parameters()["gains"].any()
    moving = FillController(config, data, options={"learn": True, "lr_actor": 0.05})
    moved = moving.run(100)
    assert np.abs(moving.parameters()["gains"]).max() > 0
    assert moving.parameters()["critic"].any()
    assert moved["latency_us"]["p99"] != plain["latency_us"]["p99"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lr_actor": -1.0}, "lr_actor: must be >= 0, got -1"),
        ({"lr_critic": float("nan")}, "lr_critic: must be >= 0"),
        ({"trace_lambda": 0.5}, "trace_lambda: must be 0 with the fill head"),
        ({"variant": "code"}, r"trace_lambda: must be 0 with the fill head \(TD\(0\)\), got 0.6"),
        ({"gamma": 2.0}, r"gamma: must be in \[0, 1\]"),
        ({"minibatch_size": 0}, "minibatch_size: must be in"),
        ({"lr_actr": 0.1}, "lr_actr"),
    ],
)
def test_bad_learning_settings_are_refused_by_name(options, message):
    data = fmt.to_bytes(water_fill_policy(load_scenario("malcolm_hetero_paper_exp")))
    with pytest.raises(ValueError, match=message):
        FillLearner(data, options)
    config = game_engine_config(load_scenario("malcolm_hetero_paper_exp"), 0.7, 1)
    with pytest.raises(ValueError, match=message):
        FillController(config, data, options={"learn": True, **options})


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_a_per_task_batch_whose_decisions_saw_the_heartbeat_levels_is_the_heartbeat_batch(variant):
    """A per-task batch lists each decision with the levels and arrivals it acted on. Decisions that all acted on
    their heartbeat's levels give the heartbeat batch's gradients (counts per destination), to float rounding; a
    decision that saw other levels changes them."""
    rng = np.random.default_rng(3)
    policy = fmt.FillPolicy(
        level_scale=1 / 75,
        heartbeat_services=100 / 75,
        horizon=0.5,
        mix=0.1,
        steal=True,
        capacity=np.array([4.0, 2.0, 2.0]),
        gains=rng.uniform(-0.3, 0.3, (N, 2 * N + 3, fmt.FILL_FEATURES)),
        settings={"env": "rack_v0"},
        per_task=True,
    )
    d = 4
    x = rng.uniform(0, 1, (d + 1, N)).astype(np.float32)
    levels = rng.exponential(1.0, (d, N))
    arrivals = rng.uniform(5, 20, d)
    rewards = rng.normal(0, 1, d)
    counts = rng.integers(0, 4, (d, N)).astype(np.float32)
    counts[2] = 0  # a heartbeat without decisions
    dest = np.concatenate([np.repeat(np.arange(N), counts[t].astype(int)) for t in range(d)]).astype(np.uint32)
    per = counts.sum(axis=1).astype(int)
    tasks = {
        "offsets": np.concatenate([[0], np.cumsum(per)]).astype(np.uint32),
        "levels": np.repeat(levels, per, axis=0),
        "arrivals": np.repeat(arrivals, per),
        "dest": dest,
    }
    options = {"variant": variant, "trace_lambda": 0.0}
    data = fmt.to_bytes(policy)
    heartbeat = FillLearner(data, options).update(0, x, levels, arrivals, rewards, counts)
    per_task = FillLearner(data, options).update(0, x, levels, arrivals, rewards, counts, tasks=tasks)
    _close(per_task["critic"], heartbeat["critic"], "critic gradient")
    _close(per_task["gains"], heartbeat["gains"], "gains gradient")
    moved = {**tasks, "levels": tasks["levels"] + rng.uniform(0, 1, tasks["levels"].shape)}
    other = FillLearner(data, options).update(0, x, levels, arrivals, rewards, counts, tasks=moved)
    assert not np.allclose(other["gains"], heartbeat["gains"], rtol=1e-3)
    bad = {**tasks, "dest": np.full_like(dest, N)}
    with pytest.raises(ValueError, match="task_dest must be < N"):
        FillLearner(data, options).update(0, x, levels, arrivals, rewards, counts, tasks=bad)
    with pytest.raises(ValueError, match="tasks.offsets"):
        FillLearner(data, options).update(
            0, x, levels, arrivals, rewards, counts, tasks={**tasks, "offsets": tasks["offsets"][::-1].copy()}
        )
