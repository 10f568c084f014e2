"""QMIX-LB: monotone mixing, TD(lambda) targets and the loss against a plain recomputation, the episode replay."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from dcgym.agents.marl_lb.qmix import EpisodeReplay, head_of_server, pad_episodes
from dcgym.agents.marl_lb.qmix_learner import independent_loss, qmix_loss, td_lambda_targets
from dcgym.agents.marl_lb.qmix_rl_module import QmixAgentRLModule, QmixMixerRLModule, linear_epsilon
from dcgym.envs import lb_central_v0, lb_v0

M, N, L, F = 2, 3, 3, 4  # LBs, servers, weight levels, features per server
D = N * F


def agent_module(seed: int, gru_hidden: int = 6, head_of_server: list[int] | None = None) -> QmixAgentRLModule:
    torch.manual_seed(seed)
    return QmixAgentRLModule(
        observation_space=spaces.Box(0.0, np.inf, (D,), np.float32),
        action_space=spaces.MultiDiscrete([L] * N),
        model_config={
            "fc_hidden": 8,
            "gru_hidden": gru_hidden,
            "log_inputs": gru_hidden > 0,
            "head_of_server": head_of_server,
        },
    )


def mixer_module(seed: int = 7) -> QmixMixerRLModule:
    torch.manual_seed(seed)
    return QmixMixerRLModule(
        observation_space=spaces.Box(0.0, np.inf, (M * D,), np.float32),
        action_space=spaces.MultiDiscrete([L] * N),
        model_config={"num_agents": M, "mixing_embed": 5, "hypernet_hidden": 9},
    )


def batch(b: int = 3, t: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.exponential(1.0, (b, t + 1, M, D)).astype(np.float32),
        "actions": rng.integers(L, size=(b, t, M, N)),
        "rewards": rng.normal(-1.0, 0.5, (b, t, M)).astype(np.float32),
        "terminated": np.zeros((b, t), np.float32),
        "mask": np.ones((b, t), np.float32),
    }


# ------------------------------------------------------------------ mixing


def test_mixing_is_monotone_in_every_agents_utility():
    mixer = mixer_module()
    torch.manual_seed(1)
    for _ in range(20):
        qs = torch.randn(64, M, requires_grad=True) * 5
        state = torch.rand(64, M * D) * 10
        q_tot = mixer.mix(qs, state).sum()
        (grad,) = torch.autograd.grad(q_tot, qs)
        assert (grad >= 0).all()
    # and so a larger utility of one agent never lowers Q_tot, whatever the state
    qs = torch.randn(256, M)
    state = torch.rand(256, M * D) * 10
    for i in range(M):
        up = qs.clone()
        up[:, i] += torch.rand(256) * 3
        assert (mixer.mix(up, state) >= mixer.mix(qs, state) - 1e-6).all()


def test_each_lbs_greedy_action_is_the_per_server_argmax():
    module = agent_module(3)
    obs = torch.rand(5, 1, D) * 4
    out = module.forward_inference({"obs": obs, "state_in": {"h": torch.zeros(5, 6)}})
    q, _ = module.q_values(obs, torch.zeros(5, 6))
    assert torch.equal(out["actions"], q.argmax(-1))
    assert out["actions"].shape == (5, 1, N) and out["state_out"]["h"].shape == (5, 6)


def test_epsilon_decays_linearly_then_stays_and_explores_that_often():
    assert linear_epsilon(0, 1.0, 0.05, 100) == 1.0
    assert linear_epsilon(50, 1.0, 0.05, 100) == pytest.approx(0.525)
    assert linear_epsilon(10_000, 1.0, 0.05, 100) == pytest.approx(0.05, abs=1e-15)
    module = agent_module(4)
    torch.manual_seed(0)
    obs, h = torch.rand(4000, 1, D), torch.zeros(4000, 6)
    greedy = module.forward_inference({"obs": obs, "state_in": {"h": h}})["actions"]
    explored = module.forward_exploration({"obs": obs, "state_in": {"h": h}}, t=10**9)["actions"]
    changed = (greedy != explored).float().mean().item()
    assert changed == pytest.approx(0.05 * (L - 1) / L, abs=0.01)  # a random level differs 2 times in 3


# ------------------------------------------------------------------ targets and loss


def plain_td_lambda(rewards, terminated, target_qs, gamma, lam, mask=None):
    """y_t = r_t + gamma ((1 - lam) Q_{t+1} + lam y_{t+1}) over each episode's real steps (mask 1), from
    y_T = Q_T at its last state (nothing after a terminal step); 0 on padding."""
    b, t = rewards.shape
    out = np.zeros((b, t))
    for i in range(b):
        length = t if mask is None else int(mask[i].sum())
        g = 0.0 if terminated[i, :length].any() else target_qs[i, length]
        for k in range(length - 1, -1, -1):
            cont = 1.0 - terminated[i, k]
            g = rewards[i, k] + gamma * cont * ((1 - lam) * target_qs[i, k + 1] + lam * g)
            out[i, k] = g
    return out


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_td_lambda_targets_match_the_recursion_written_out(lam):
    rng = np.random.default_rng(2)
    rewards, target_qs = rng.normal(size=(4, 6)), rng.normal(size=(4, 7))
    terminated = np.zeros((4, 6))
    terminated[1, -1] = 1.0  # one episode ends in a terminal state: no bootstrap from its last state
    got = td_lambda_targets(
        torch.tensor(rewards), torch.tensor(terminated), torch.ones(4, 6), torch.tensor(target_qs), 0.9, lam
    )
    np.testing.assert_allclose(got.numpy(), plain_td_lambda(rewards, terminated, target_qs, 0.9, lam), rtol=1e-12)
    if lam == 0.0:  # one-step targets
        np.testing.assert_allclose(got.numpy()[0], rewards[0] + 0.9 * target_qs[0, 1:], rtol=1e-12)


def plain_mix(mixer: QmixMixerRLModule, qs: np.ndarray, state: np.ndarray, target: bool) -> float:
    """QMIX's mixing for one (utilities, state) written out with numpy from the hypernetworks' outputs."""
    net = mixer.target_mixer if target else mixer.mixer
    s = torch.log1p(torch.as_tensor(state, dtype=torch.float32))[None]
    with torch.no_grad():
        w1 = np.abs(net.hyper_w1(s).numpy().reshape(M, -1))
        b1 = net.hyper_b1(s).numpy().reshape(-1)
        w2 = np.abs(net.hyper_w2(s).numpy().reshape(-1))
        v = float(net.value(s).numpy().reshape(()))
    pre = qs @ w1 + b1
    hidden = np.where(pre > 0, pre, np.expm1(pre))  # ELU
    return float(hidden @ w2 + v)


def test_loss_equals_a_plain_recomputation_on_a_fixed_batch():
    agents, mixer = [agent_module(10), agent_module(11)], mixer_module()
    with torch.no_grad():  # targets that differ from the online networks, as between two copies
        for m in [*agents, mixer]:
            for p in (m.target_mixer if m is mixer else m.target_q_net).parameters():
                p.add_(0.1 * torch.randn_like(p))
    data = batch(b=3, t=4)
    data["mask"][2, 3] = 0.0  # episode 2 is one step shorter: padded, it bootstraps from its state at step 3
    gamma, lam = 0.95, 0.6
    loss, _ = qmix_loss(agents, mixer, data, gamma=gamma, td_lambda=lam, double_q=True)

    b, t = data["rewards"].shape[:2]
    obs = torch.as_tensor(data["obs"])
    with torch.no_grad():
        q = np.stack([m.q_values(obs[:, :, i], torch.zeros(b, 6))[0].numpy() for i, m in enumerate(agents)], 2)
        tq = np.stack(
            [m.q_values(obs[:, :, i], torch.zeros(b, 6), target=True)[0].numpy() for i, m in enumerate(agents)], 2
        )
    q_tot, target_tot = np.zeros((b, t)), np.zeros((b, t + 1))
    for i in range(b):
        for k in range(t + 1):
            state = data["obs"][i, k].reshape(-1)
            if k < t:
                chosen = [np.mean([q[i, k, a, j, data["actions"][i, k, a, j]] for j in range(N)]) for a in range(M)]
                q_tot[i, k] = plain_mix(mixer, np.array(chosen), state, target=False)
            best = q[i, k].argmax(-1)  # double Q: the online networks pick, the targets value
            target_tot[i, k] = plain_mix(
                mixer,
                np.array([np.mean([tq[i, k, a, j, best[a, j]] for j in range(N)]) for a in range(M)]),
                state,
                True,
            )
    mask = data["mask"]
    team = data["rewards"].astype(np.float64).mean(axis=-1)  # QMIX fits the mean of the LBs' rewards
    y = plain_td_lambda(team, data["terminated"], target_tot, gamma, lam, mask)
    expected = float(np.sum(mask * (q_tot - y) ** 2) / mask.sum())
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_loss_gradient_reaches_every_online_network_and_no_target():
    agents, mixer = [agent_module(1), agent_module(2)], mixer_module()
    loss, _ = qmix_loss(agents, mixer, batch(), gamma=0.99, td_lambda=0.6)
    loss.backward()
    for m in agents:
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in m.q_net.parameters())
        assert all(p.grad is None for p in m.target_q_net.parameters())
    assert all(p.grad is not None for p in mixer.mixer.parameters())
    assert all(p.grad is None for p in mixer.target_mixer.parameters())


def test_independent_loss_fits_each_lbs_own_reward_with_its_own_target():
    agents = [agent_module(20, gru_hidden=0), agent_module(21, gru_hidden=0)]  # Distr-LB's feed-forward networks
    with torch.no_grad():
        for m in agents:
            for p in m.target_q_net.parameters():
                p.add_(0.1 * torch.randn_like(p))
    data = batch(b=2, t=5, seed=3)
    loss, _ = independent_loss(agents, data, gamma=0.9, td_lambda=0.6)
    b, t = data["rewards"].shape[:2]
    obs = torch.as_tensor(data["obs"])
    total = 0.0
    for i, m in enumerate(agents):
        with torch.no_grad():
            q = m.q_values(obs[:, :, i])[0].numpy()
            tq = m.q_values(obs[:, :, i], target=True)[0].numpy()
        chosen = np.array(
            [[np.mean([q[e, k, j, data["actions"][e, k, i, j]] for j in range(N)]) for k in range(t)] for e in range(b)]
        )
        value = np.array(
            [[np.mean([tq[e, k, j, q[e, k, j].argmax()] for j in range(N)]) for k in range(t + 1)] for e in range(b)]
        )
        y = plain_td_lambda(data["rewards"][..., i].astype(np.float64), data["terminated"], value, 0.9, 0.6)
        total += np.mean((chosen - y) ** 2)
    assert loss.item() == pytest.approx(total, rel=1e-5)


def test_a_feed_forward_lb_network_is_stateless():
    module = agent_module(5, gru_hidden=0)
    assert not module.is_stateful()
    out = module.forward_inference({"obs": torch.rand(4, D)})
    assert out["actions"].shape == (4, N) and "state_out" not in out


@pytest.mark.parametrize("gru_hidden", [0, 6])
def test_servers_of_a_group_share_one_head_and_explore_together(gru_hidden):
    """heads=group: servers 0 and 2 read head 0, server 1 head 1; greedy and explored levels agree within a group,
    and exploration replaces a group's level with the per-head rate (not once per server)."""
    groups = [0, 1, 0]
    module = agent_module(8, gru_hidden, head_of_server=groups)
    assert module.q_net.head.out_features == 2 * L
    obs = torch.rand(3000, 1, D) * 4
    state = {"state_in": {"h": torch.zeros(3000, gru_hidden)}} if gru_hidden else {}
    q, _ = module.q_values(obs, torch.zeros(3000, gru_hidden) if gru_hidden else None)
    assert torch.equal(q[..., 0, :], q[..., 2, :]) and not torch.equal(q[..., 0, :], q[..., 1, :])
    greedy = module.forward_inference({"obs": obs, **state})["actions"]
    explored = module.forward_exploration({"obs": obs, **state}, t=0)["actions"]  # epsilon 1: every head random
    for a in (greedy, explored):
        assert torch.equal(a[..., 0], a[..., 2])
    assert (explored[..., 0] != explored[..., 1]).float().mean().item() == pytest.approx((L - 1) / L, abs=0.03)
    # a gradient through server 2's Q reaches the head rows of group 0 only
    q[:, 0, 2, 1].sum().backward()
    grad = module.q_net.head.weight.grad.abs().sum(dim=1)
    assert grad[1] > 0 and grad[L:].sum() == 0 and grad[0] == 0 and grad[2] == 0


def test_a_group_head_exports_as_one_block_per_server():
    """The policy file repeats a group's head for each of its servers: the file's layers give the module's Q."""
    module = agent_module(9, gru_hidden=0, head_of_server=[1, 0, 1])
    weight, bias = module.q_net.server_head()
    assert weight.shape == (N * L, 8) and bias.shape == (N * L,)
    obs = torch.rand(7, 1, D)
    hidden = torch.relu(module.q_net.fc2(torch.relu(module.q_net.fc(obs))))
    q, _ = module.q_values(obs)
    assert torch.allclose((hidden @ weight.T + bias).view(7, 1, N, L), q)
    with pytest.raises(ValueError, match="head_of_server"):
        agent_module(1, gru_hidden=0, head_of_server=[0, 2, 2])


# ------------------------------------------------------------------ replay


def test_replay_keeps_the_newest_episodes_and_pads_shorter_ones():
    replay = EpisodeReplay(capacity=2)
    for k, t in enumerate((3, 5, 4)):
        replay.add(
            {
                "obs": np.full((t + 1, M, D), k, np.float32),
                "actions": np.zeros((t, M, N), np.int64),
                "rewards": np.full((t, M), float(k), np.float32),
                "terminated": np.zeros(t, np.float32),
            }
        )
    assert len(replay) == 2 and replay.episodes[0]["rewards"][0, 0] == 1.0  # the first one dropped
    padded = pad_episodes(list(replay.episodes))
    assert padded["obs"].shape == (2, 6, M, D) and padded["actions"].shape == (2, 5, M, N)
    np.testing.assert_array_equal(padded["mask"], [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    sample = replay.sample(7, np.random.default_rng(0))
    assert sample["rewards"].shape == (7, 5, M)


def test_head_of_server_is_each_servers_group_and_each_lb_keeps_its_own_heads_in_the_central_game():
    assert head_of_server(lb_v0.parallel_env(scenario="lb_large")) == [0] * 10 + [1] * 10
    central = lb_central_v0.parallel_env(scenario="lb_sim")  # 2 LBs over 4 x 1-CPU + 4 x 2-CPU servers
    assert head_of_server(central) == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4


def test_any_mapping_of_servers_to_heads_is_read_as_given_even_a_permutation():
    """head_of_server [2, 0, 1]: as many heads as servers, yet server 0 reads head 2 (the mapping, not the count,
    says whether heads are shared), in the Q-values and in the policy file's rows."""
    module = agent_module(10, gru_hidden=0, head_of_server=[2, 0, 1])
    obs = torch.rand(4, 1, D)
    q, _ = module.q_values(obs)
    hidden = torch.relu(module.q_net.fc2(torch.relu(module.q_net.fc(obs))))
    raw = module.q_net.head(hidden).view(4, 1, N, L)
    assert torch.equal(q[..., 0, :], raw[..., 2, :]) and torch.equal(q[..., 1, :], raw[..., 0, :])
    weight, bias = module.q_net.server_head()
    assert torch.allclose((hidden @ weight.T + bias).view(4, 1, N, L), q)
