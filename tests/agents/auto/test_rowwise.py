"""lRLA's row-wise network (agents/auto/rowwise.py): the C++ runtime's choices equal the torch module's greedy ones,
its size does not grow with the listed flows, ``rule_init`` starts at pathbal's choice, and empty rows do not
enter the policy gradient."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from dcgym.agents import policy_format as fmt
from dcgym.agents.auto import PGConfig, PGRLModule
from dcgym.agents.auto.policy_file import lrla_policy
from dcgym.cpp_core import RuntimePolicy

LEVELS, CAPS, PATHS = 4, 4, 3
WIDTH = 6 + PATHS  # an active long flow's row with path_loads
SHARED = 70  # the m_l = 10 finished long flows, 7 features each


def module(rows: int, seed: int = 0, hiddens=(16, 16), **training) -> PGRLModule:
    torch.manual_seed(seed)
    config = PGConfig().training(hiddens=list(hiddens), network="rowwise", row_width=WIDTH, **training)
    level_choices = LEVELS + 1 if training.get("keep_level") else LEVELS  # flow_v0's keep_level: one more
    return PGRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (rows * WIDTH + SHARED,), np.float32),
        action_space=gym.spaces.MultiDiscrete([level_choices, CAPS, PATHS] * rows),
        model_config=config._model_config_auto_includes,
    )


def observations(rows: int, batch: int, seed: int) -> np.ndarray:
    """Random rows in [0, 1], each with a path index (path / P) as flow_v0 writes it."""
    obs = np.random.default_rng(seed).random((batch, rows * WIDTH + SHARED), dtype=np.float32)
    view = obs[:, : rows * WIDTH].reshape(batch, rows, WIDTH)
    view[..., 2] = np.random.default_rng(seed + 1).integers(0, PATHS, (batch, rows)) / np.float32(PATHS)
    return obs


@pytest.mark.parametrize("rows", [1, 37])
def test_runtime_choices_equal_the_modules_greedy_choices(rows):
    m = module(rows)
    with torch.no_grad():  # spread the logits so that the choices differ across rows
        m.policy.net[-1].weight.mul_(20.0)
    data = fmt.to_bytes(lrla_policy(m))
    assert data[8] == fmt.ROWS_VERSION
    runtime = RuntimePolicy.from_bytes(data)
    obs = observations(rows, 40, seed=rows)
    with torch.no_grad():
        greedy = m.greedy(torch.as_tensor(obs)).numpy()
        logits = m.logits(torch.as_tensor(obs))
    probs = torch.cat([torch.softmax(g, -1) for g in torch.split(logits, m.groups, -1)], -1).numpy()
    np.testing.assert_allclose(runtime.outputs(obs), probs, atol=1e-5)
    np.testing.assert_array_equal(runtime.act(obs), greedy)
    assert len({tuple(row) for row in greedy.reshape(-1, 3)}) > 3  # the choices vary: the comparison means something


def test_parameters_do_not_grow_with_the_listed_flows_and_rows_are_independent():
    small, large = module(8, seed=3), module(300, seed=3)
    count = [sum(p.numel() for p in x.parameters()) for x in (small, large)]
    assert count[0] == count[1]
    obs = observations(300, 4, seed=5)
    first = np.concatenate([obs[:, : 8 * WIDTH], obs[:, 300 * WIDTH :]], axis=1)  # the first 8 rows, the same shared
    with torch.no_grad():
        np.testing.assert_array_equal(
            small.greedy(torch.as_tensor(first)).numpy(), large.greedy(torch.as_tensor(obs)).numpy()[:, : 8 * 3]
        )


@pytest.mark.parametrize("stay", [0.0, 0.3])
def test_rule_init_chooses_the_least_loaded_path_unless_within_the_margin_the_last_level_and_no_cap(stay):
    rows = 50
    m = module(rows, hiddens=(16, 8), rule_init=True, rule_stay=stay)
    obs = observations(rows, 20, seed=7)
    with torch.no_grad():
        choice = m.greedy(torch.as_tensor(obs)).numpy().reshape(20, rows, 3)
    view = obs[:, : rows * WIDTH].reshape(20, rows, WIDTH)
    loads, current = view[..., 6:], np.rint(view[..., 2] * PATHS).astype(int)
    gain = np.take_along_axis(loads, current[..., None], -1)[..., 0] - loads.min(-1)
    # Away from the margin and from ties, where the small random weights decide.
    ordered = np.sort(loads, -1)
    clear = ((np.abs(gain - stay) > 0.01) | (gain == 0)) & (ordered[..., 1] - ordered[..., 0] > 0.01)
    expected = np.where(gain > stay, loads.argmin(-1), current)
    assert clear.mean() > 0.8
    np.testing.assert_array_equal(choice[..., 2][clear], expected[clear])
    assert (choice[..., 0] == LEVELS - 1).all() and (choice[..., 1] == 0).all()
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(lrla_policy(m)))
    np.testing.assert_array_equal(runtime.act(obs), choice.reshape(20, -1))


def test_rule_levels_pin_each_flow_to_the_level_mlfq_gives_its_bytes_sent():
    rows, thresholds = 40, [2.1e6, 1.0e7, 8.0e7]
    m = module(rows, hiddens=(24, 24), rule_init=True, rule_levels="mlfq", rule_level_bytes=thresholds)
    obs = observations(rows, 10, seed=11)
    sent = 10.0 ** np.random.default_rng(12).uniform(6, 9, (10, rows))  # 1 MB to 1 GB
    view = obs[:, : rows * WIDTH].reshape(10, rows, WIDTH)
    view[..., 4] = np.log10(1.0 + sent) / 10.0  # flow_v0's bytes feature
    with torch.no_grad():
        level = m.greedy(torch.as_tensor(obs)).numpy().reshape(10, rows, 3)[..., 0]
    expected = (sent[..., None] >= np.array(thresholds)).sum(-1)
    clear = (np.abs(np.log(sent[..., None] / np.array(thresholds))) > 0.01).all(-1)  # off the thresholds
    assert clear.mean() > 0.9 and len(np.unique(expected[clear])) == 4
    np.testing.assert_array_equal(level[clear], expected[clear])
    # No hidden unit is large, so that a step of about the learning rate on any weight (Adam's) moves the logits
    # little.
    rows_in = torch.cat(
        [
            torch.as_tensor(obs[:, : rows * WIDTH]).reshape(10, rows, WIDTH),
            torch.as_tensor(obs[:, rows * WIDTH :])[:, None].expand(10, rows, SHARED),
        ],
        -1,
    )
    with torch.no_grad():
        second = m.policy.net[:4](rows_in)
    assert m.policy.net[:2](rows_in).max() < 10 and second.max() < 10


def sent_bytes(obs: np.ndarray, rows: int, seed: int) -> np.ndarray:
    """Set every row's bytes feature to a random 1 MB to 1 GB sent (flow_v0's scaling); returns the bytes."""
    sent = 10.0 ** np.random.default_rng(seed).uniform(6, 9, (obs.shape[0], rows))
    obs[:, : rows * WIDTH].reshape(obs.shape[0], rows, WIDTH)[..., 4] = np.log10(1.0 + sent) / 10.0
    return sent


@pytest.mark.parametrize("pin", [4 * 2**20, 3.0e7])
def test_rule_pin_keeps_mlfqs_level_below_the_pinning_size_and_pins_the_last_level_from_it(pin):
    rows = 40
    m = module(
        rows, hiddens=(24, 24), rule_init=True, rule_stay=0.3, keep_level=True, rule_levels="pin", rule_pin_bytes=pin
    )
    obs = observations(rows, 10, seed=21)
    sent = sent_bytes(obs, rows, seed=22)
    with torch.no_grad():
        choice = m.greedy(torch.as_tensor(obs)).numpy().reshape(10, rows, 3)
    clear = np.abs(np.log(sent / pin)) > 0.01
    assert clear.mean() > 0.95 and 0.1 < (sent > pin).mean() < 0.9
    keep, last = LEVELS, LEVELS - 1  # keep_level's choice is the index one past the last level
    np.testing.assert_array_equal(choice[..., 0][clear], np.where(sent >= pin, last, keep)[clear])
    assert (choice[..., 1] == 0).all()  # no cap
    # The path rule is the one without the pin (the level ramps feed only the level logits).
    plain = module(rows, hiddens=(24, 24), rule_init=True, rule_stay=0.3, keep_level=True)
    with torch.no_grad():
        plain_choice = plain.greedy(torch.as_tensor(obs)).numpy().reshape(10, rows, 3)
    assert (plain_choice[..., 0] == last).all()  # the rules that pin every flow never keep
    loads = obs[:, : rows * WIDTH].reshape(10, rows, WIDTH)[..., 6:]
    ordered = np.sort(loads, -1)
    current = np.rint(obs[:, : rows * WIDTH].reshape(10, rows, WIDTH)[..., 2] * PATHS).astype(int)
    gain = np.take_along_axis(loads, current[..., None], -1)[..., 0] - loads.min(-1)
    apart = (np.abs(gain - 0.3) > 0.01) & (ordered[..., 1] - ordered[..., 0] > 0.01)
    np.testing.assert_array_equal(choice[..., 2][apart], plain_choice[..., 2][apart])
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(lrla_policy(m)))
    np.testing.assert_array_equal(runtime.act(obs), choice.reshape(10, -1))


def test_rule_pin_needs_the_keep_choice_and_a_size():
    with pytest.raises(ValueError, match=r"`rule_levels` \('pin'\) leaves levels to MLFQ: it needs"):
        PGConfig().training(network="rowwise", rule_init=True, rule_levels="pin", rule_pin_bytes=1e6).validate()
    with pytest.raises(ValueError, match=r"`rule_pin_bytes` \(None\) must be a number of bytes > 0"):
        PGConfig().training(network="rowwise", rule_init=True, rule_levels="pin", keep_level=True).validate()
    with pytest.raises(ValueError, match=r"rule_pin: leaves the level to MLFQ below the pinning size"):
        module(4, rule_init=True, rule_levels="pin", rule_pin_bytes=1e6)  # a space without the keep choice


def test_rule_init_refuses_rows_without_path_loads():
    with pytest.raises(
        ValueError, match=r"rule_init: needs rows of 6 \+ 3 features \(path_loads; \+ 3 more with path_loads_last\)"
    ):
        torch.manual_seed(0)
        config = PGConfig().training(hiddens=[16], network="rowwise", row_width=6, rule_init=True)
        PGRLModule(
            observation_space=gym.spaces.Box(0.0, 1.0, (4 * 6 + SHARED,), np.float32),
            action_space=gym.spaces.MultiDiscrete([LEVELS, CAPS, PATHS] * 4),
            model_config=config._model_config_auto_includes,
        )


def test_empty_rows_add_nothing_to_log_pi():
    rows = 6
    m = module(rows)
    obs = torch.as_tensor(observations(rows, 3, seed=9))
    obs[:, 4 * WIDTH : 6 * WIDTH] = 0.0  # rows 4 and 5 without a flow
    actions = torch.as_tensor(np.random.default_rng(0).integers(0, 3, (3, rows * 3)))
    actions[:, 12:] = 0
    dist_cls = m.get_train_action_dist_cls()
    dist = dist_cls.from_logits(m.forward_train({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS])
    # log pi is the occupied rows' part of the unmasked network's, to float32 rounding.
    groups = torch.split(m.logits(obs), m.groups, -1)
    own = torch.stack([torch.log_softmax(g, -1).gather(-1, actions[:, [i]])[:, 0] for i, g in enumerate(groups)], -1)
    np.testing.assert_allclose(dist.logp(actions).detach().numpy(), own[:, :12].sum(-1).detach().numpy(), rtol=1e-5)
    assert own[:, 12:].abs().min() > 0.01  # unmasked, the empty rows would have counted
    # Sampling never moves an empty row's choices from 0.
    torch.manual_seed(1)
    assert (dist.sample()[:, 12:] == 0).all()


def test_the_paper_network_is_the_default_and_an_unknown_one_is_refused():
    assert PGConfig().network == "paper"
    config = PGConfig().training(network="grid")
    with pytest.raises(ValueError, match=r"`network` \('grid'\) must be one of \['paper', 'rowwise'\]"):
        config.validate()
    with pytest.raises(ValueError, match=r"`rule_levels` \('first'\) must be 'last', 'mlfq' or 'pin'"):
        PGConfig().training(network="rowwise", rule_init=True, rule_levels="first").validate()
