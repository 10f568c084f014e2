"""The C++ learner (dcgym/runtime/learner.hpp) against the Python one (agents/malcolm/malcolm_learner.py).

Both learners get the same parameters and the same mini-batch; the C++
gradients and AdamW steps must equal RLlib's (float32 both) to ~1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dcgym.agents.malcolm import rack_config
from dcgym.agents.malcolm.malcolm import RackMultiAgentEnv
from dcgym.agents.malcolm.malcolm_learner import EPISODE_START, MIGRATE_COUNTS, STEAL_COUNTS
from dcgym.cpp_core import MalcolmLearner

from ...agents.malcolm.racks import THREE_NODES

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

NODES = ["node_0", "node_1", "node_2"]
D = 20


def _python_learner(variant: str):
    config = rack_config({"env": THREE_NODES, "seed": 3, "variant": variant, "gamma": 0.9})
    return config.build_learner(env=RackMultiAgentEnv(THREE_NODES)), config


def _parameters(learner) -> dict[str, np.ndarray]:
    """The Python modules' parameters stacked node by node, as the C++ binding takes them."""
    modules = [learner.module[mid].unwrapped() for mid in NODES]
    return {
        name: np.stack([getattr(m, f"{name}_weights").detach().numpy().copy() for m in modules])
        for name in ("critic", "migration", "stealing")
    }


def _batch(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """A mini-batch of D heartbeats: an episode starting at row 8 and, for the paper variant, a terminal row."""
    obs = rng.uniform(0.0, 20.0, (D + 1, n + 1)).astype(np.float32)
    migrate = rng.integers(0, 6, (D, n)).astype(np.float32)
    steal = rng.integers(0, 3, (D, n)).astype(np.float32)
    steal[3] = 0.0  # a heartbeat without a stealing decision (the code variant's 0 direction)
    start = np.zeros(D, np.float32)
    start[8] = 1.0
    terminated = np.zeros(D, np.float32)
    terminated[7] = 1.0
    return {
        "obs": obs[:-1],
        "new_obs": obs[1:],
        "rewards": -rng.uniform(0.0, 500.0, D).astype(np.float32),
        "terminateds": terminated,
        MIGRATE_COUNTS: migrate,
        STEAL_COUNTS: steal,
        EPISODE_START: start,
    }


def _cpp_step(cpp, i: int, b: dict[str, np.ndarray], apply: bool) -> dict[str, np.ndarray]:
    step = cpp.update if apply else cpp.compute_gradients
    return step(
        i,
        b["obs"],
        b["new_obs"],
        b["rewards"].astype(np.float64),
        b[MIGRATE_COUNTS],
        b[STEAL_COUNTS],
        episode_start=b[EPISODE_START],
        terminated=b["terminateds"],
    )


def _close(actual: np.ndarray, expected: np.ndarray, what: str, rtol: float = 1e-5) -> None:
    """Equal to rtol relative to the largest entry (float32 sums in a different order)."""
    scale = float(np.abs(expected).max())
    assert scale > 1e-4, f"{what}: the check is vacuous"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("variant", ["paper", "code"])
def test_gradients_and_two_adamw_steps_equal_the_python_learner(variant):
    learner, config = _python_learner(variant)
    assert (config.load_scale, config.reward_scale, config.lr_critic, config.lr_actor) == (0.1, 0.01, 2e-3, 1e-3)
    params = _parameters(learner)
    cpp = MalcolmLearner(3, {"variant": variant, "gamma": 0.9}, **params)
    for name, value in cpp.parameters().items():
        np.testing.assert_array_equal(value, params[name])
    rng = np.random.default_rng(11)
    if variant == "code":  # traces and R̄ left by an earlier mini-batch
        for i, mid in enumerate(NODES):
            trace = {name: rng.normal(size=params[name].shape[1:]).astype(np.float32) for name in params}
            learner._traces[mid] = {k: torch.tensor(v) for k, v in trace.items()}
            learner._reward_rate[mid] = -1.5
            cpp.set_trace(i, trace["critic"], trace["migration"], trace["stealing"], -1.5)

    for _ in range(2):  # the second step checks the moments and bias corrections after one step
        batch = {mid: _batch(rng, 3) for mid in NODES}
        torch_batch = {mid: {k: torch.tensor(v) for k, v in b.items()} for mid, b in batch.items()}
        fwd = learner.module.forward_train(torch_batch)
        grads = learner.compute_gradients(learner.compute_losses(fwd_out=fwd, batch=torch_batch))
        learner.apply_gradients(grads)
        for i, mid in enumerate(NODES):
            ours = _cpp_step(cpp, i, batch[mid], apply=True)
            module = learner.module[mid].unwrapped()
            for name in ("critic", "migration", "stealing"):
                _close(ours[name], grads[getattr(module, f"{name}_weights")].numpy(), f"{mid} {name} gradient")
            if variant == "code":
                trace = cpp.trace(i)
                assert trace["reward_rate"] == pytest.approx(learner._reward_rate[mid], rel=1e-5)
                for name in ("critic", "migration", "stealing"):
                    _close(trace[name], learner._traces[mid][name].numpy(), f"{mid} {name} trace")
        assert cpp.complete_round() is False  # consensus every 100 rounds by default
        after, before = _parameters(learner), params
        for name, value in cpp.parameters().items():
            # The step itself (~lr per entry) to 1e-4 of its size, not just the parameters.
            _close(value - before[name], after[name] - before[name], f"{name} AdamW step", rtol=1e-4)
        params = after


def test_consensus_equalises_critics_and_leaves_actors_alone():
    cpp = MalcolmLearner(4, {"consensus_period": 2}, seed=5)
    before = cpp.parameters()
    assert not np.array_equal(before["critic"][0], before["critic"][1])
    assert cpp.complete_round() is False  # round 1: nothing
    for name, value in cpp.parameters().items():
        np.testing.assert_array_equal(value, before[name])
    assert cpp.complete_round() is True  # round 2 = P: the critics are averaged
    after = cpp.parameters()
    mean = before["critic"].astype(np.float64).mean(axis=0)
    for i in range(4):
        np.testing.assert_allclose(after["critic"][i], mean, rtol=0, atol=1e-7)
        np.testing.assert_array_equal(after["critic"][i], after["critic"][0])
    np.testing.assert_array_equal(after["migration"], before["migration"])
    np.testing.assert_array_equal(after["stealing"], before["stealing"])
    assert cpp.num_updates == 2


def test_initial_parameters_are_uniform_in_the_fan_in_bound_and_seeded():
    n = 5
    f_c, f_a = n * (n + 7) // 2 + 1, 2 * n + 1
    params = MalcolmLearner(n, seed=1).parameters()
    assert params["critic"].shape == (n, f_c) and params["migration"].shape == (n, n, f_a)
    for name, f in (("critic", f_c), ("migration", f_a), ("stealing", f_a)):
        bound = 1.0 / np.sqrt(f)
        assert np.abs(params[name]).max() <= bound and np.abs(params[name]).max() > 0.9 * bound
        assert abs(float(params[name].mean())) < 0.2 * bound
    again, other = MalcolmLearner(n, seed=1).parameters(), MalcolmLearner(n, seed=2).parameters()
    np.testing.assert_array_equal(again["migration"], params["migration"])
    assert not np.array_equal(other["migration"], params["migration"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"variant": "papr"}, r"options.variant: unknown value 'papr'"),
        ({"lr_actor": 0.0}, r"lr_critic, lr_actor: must be > 0"),
        ({"minibatch": 10}, r"options.minibatch: unknown field; allowed: variant, gamma, "),
        ({"heartbeat_us": 100.0}, r"options.heartbeat_us: unknown field"),  # a controller option, not a learner's
        ({"trace_lambda": -0.5}, r"trace_lambda: must be None or in \[0, 1\], got -0.5"),
        ({"minibatch_size": 100001}, r"minibatch_size: must be in \[1, 100000\], got 100001"),
        ({"consensus_period": -1}, r"options.consensus_period: must be an integer in \[0, 4294967295\], got -1"),
    ],
)
def test_bad_options_name_the_field(options, message):
    with pytest.raises(ValueError, match=message):
        MalcolmLearner(2, options)


def test_the_learner_checks_its_size_and_node_indices():
    """The C++ learner's own checks (the deployment runtime meets them too), not the binding's."""
    for n in (0, 4097):
        with pytest.raises(ValueError, match=rf"num_nodes: must be in \[1, 4096\], got {n}"):
            MalcolmLearner(n)
    with pytest.raises(ValueError, match=r"num_nodes: must be >= 0, got -1"):
        MalcolmLearner(-1)
    learner = MalcolmLearner(2)
    with pytest.raises(ValueError, match=r"node: must be in \[0, 1\], got 2"):
        learner.trace(2)
