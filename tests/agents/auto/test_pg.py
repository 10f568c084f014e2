"""AuTO's lRLA (REINFORCE with a baseline): the network of §5.2.2, eq. (2)'s loss and gradient against plain torch,
the baseline as learner state, learning on a small per-flow choice task."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from dcgym.agents.auto import PG, PGConfig, PGRLModule, reinforce_loss

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")


class FlowChoices(gym.Env):
    """Two "flows" per step, each with (level in 0..2, path in 0..1); the observation says which path is free.

    Reward: 1 per flow sent on the free path at level 0, 0.5 on the free path at another level, 0 otherwise,
    over 2 flows. 10 steps per episode. The best greedy policy scores 1.0 per step; a uniform one 0.25."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.MultiDiscrete([3, 2, 3, 2])
        self.free, self.t = 0, 0

    def _obs(self):
        return np.eye(2, dtype=np.float32)[self.free]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.free, self.t = int(self.np_random.integers(2)), 0
        return self._obs(), {}

    def step(self, action):
        reward = 0.0
        for level, path in ((action[0], action[1]), (action[2], action[3])):
            if path == self.free:
                reward += 1.0 if level == 0 else 0.5
        self.t += 1
        self.free = int(self.np_random.integers(2))
        return self._obs(), reward / 2, False, self.t >= 10, {}


def _config(**training) -> PGConfig:
    return PGConfig().environment(FlowChoices).training(**{"hiddens": [16], **training}).debugging(seed=5)


def test_network_is_the_papers_by_default_with_one_logit_per_choice():
    obs, act = gym.spaces.Box(0.0, 1.0, (136,), np.float32), gym.spaces.MultiDiscrete([4, 4, 3] * 11)
    module = PGRLModule(observation_space=obs, action_space=act, model_config=PGConfig()._model_config_auto_includes)
    linears = [(m.in_features, m.out_features) for m in module.policy if isinstance(m, torch.nn.Linear)]
    assert linears == [(136, 300)] + [(300, 300)] * 9 + [(300, 11 * 11)]  # §5.2.2: 10 x 300, 136 inputs
    x = torch.rand(4, 136)
    greedy = module.greedy(x)
    logits = module.forward_inference({Columns.OBS: x})[Columns.ACTION_DIST_INPUTS]
    assert greedy.shape == (4, 33)
    assert torch.equal(greedy[:, 3], logits[:, 11:15].argmax(-1)) and torch.equal(
        greedy[:, 5], logits[:, 19:22].argmax(-1)
    )


def test_loss_and_gradient_equal_a_plain_torch_recomputation():
    config = _config(hiddens=[8, 8])
    learner = config.build_learner(env=FlowChoices())
    module = learner.module["default_policy"].unwrapped()
    rng = np.random.default_rng(3)
    obs = torch.tensor(rng.random((12, 2)), dtype=torch.float32)
    actions = torch.tensor(np.stack([rng.integers(0, n, 12) for n in (3, 2, 3, 2)], 1))
    returns = torch.tensor(rng.uniform(0, 3, 12), dtype=torch.float32)
    learner._baselines["default_policy"] = (20, 1.5)  # 20 earlier returns of mean 1.5
    batch = {Columns.OBS: obs, Columns.ACTIONS: actions, Columns.RETURNS_TO_GO: returns}
    fwd = module.forward_train(batch)
    loss = learner.compute_loss_for_module(module_id="default_policy", config=config, batch=batch, fwd_out=fwd)
    expected_b = (20 * 1.5 + returns.double().sum().item()) / 32
    assert learner._baselines["default_policy"] == (32, pytest.approx(expected_b, rel=1e-12))
    module.zero_grad()
    loss.backward()

    # Plain torch: the network by hand, log π = Σ over the four categoricals of log softmax at the taken choice.
    params = [p.detach().clone().requires_grad_() for p in module.policy.parameters()]
    h = obs
    for i in range(0, len(params) - 2, 2):
        h = torch.relu(h @ params[i].T + params[i + 1])
    z = h @ params[-2].T + params[-1]
    logp = torch.zeros(12)
    for g, (lo, hi) in enumerate(((0, 3), (3, 5), (5, 8), (8, 10))):
        logp = logp + torch.log_softmax(z[:, lo:hi], dim=1).gather(1, actions[:, g : g + 1]).squeeze(1)
    expected = -(logp * (returns - expected_b)).mean()
    assert torch.allclose(loss, expected.float(), rtol=1e-5, atol=1e-7)
    assert torch.allclose(reinforce_loss(logp, returns, expected_b), expected, rtol=1e-6)
    grads = torch.autograd.grad(expected, params)
    for p, g in zip(module.policy.parameters(), grads, strict=True):
        torch.testing.assert_close(p.grad, g, rtol=1e-5, atol=1e-7)


def test_validate_names_the_bad_field():
    with pytest.raises(ValueError, match="`hiddens` \\(\\[0\\]\\)"):
        _config(hiddens=[0]).validate()
    with pytest.raises(ValueError, match="`gamma` \\(2\\)"):
        _config(gamma=2).validate()


def test_pg_learns_per_flow_choices_and_the_baseline_survives_a_checkpoint(ray_session, storage):
    """Uniform choices score 0.25 per step (return 2.5 per 10-step episode); after 40 updates of 200 steps the
    greedy policy must pick the free path at level 0 for both flows in both states (return 10)."""
    algo = _config(lr=3e-2, gamma=0.5).build_algo()
    try:
        for _ in range(40):
            algo.train()
        module = algo.learner_group._learner.module["default_policy"].unwrapped()
        with torch.no_grad():
            greedy = module.greedy(torch.eye(2)).tolist()
        assert greedy == [[0, 0, 0, 0], [0, 1, 0, 1]]
        count, mean = algo.learner_group._learner._baselines["default_policy"]
        assert count == 40 * 200 and 0.0 < mean < 2.0  # returns of γ = 0.5: at most 1 / (1 - 0.5) = 2
        path = algo.save_to_path(str(storage / "checkpoint"))
        weights = {k: np.array(v, copy=True) for k, v in module.get_state().items()}
    finally:
        algo.stop()
    restored = PG.from_checkpoint(path)
    try:
        learner = restored.learner_group._learner
        assert learner._baselines["default_policy"] == (count, mean)
        for key, value in learner.module["default_policy"].get_state().items():
            np.testing.assert_array_equal(value, weights[key])
    finally:
        restored.stop()
