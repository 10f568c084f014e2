"""Malcolm's fill actor (``actor: fill``): its torch tables against the numpy reference and the C++ runtime, zero
gains = water_fill, the policy gradient through the table, training, export and evaluation in the engine."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.spaces import Box

from dcgym.agents import policy_format as fmt
from dcgym.agents.evaluation import evaluate
from dcgym.agents.export import policy_from_checkpoint
from dcgym.agents.malcolm import rack_config
from dcgym.agents.malcolm.fill import fill_tables, water_fill_table
from dcgym.agents.malcolm.fill_rl_module import MIGRATION_LOGP, MalcolmFillRLModule
from dcgym.agents.malcolm.malcolm import RackMultiAgentEnv
from dcgym.agents.malcolm.policy_file import fill_from_modules
from dcgym.agents.policies.checkpoints import TrainedPolicy
from dcgym.agents.training import train
from dcgym.agents.training.experiment import load_experiment
from dcgym.cpp_core._engine import RuntimePolicy
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.rack.game import fill_rows
from dcgym.envs.scenario import load_scenario

from .racks import THREE_NODES as RACK
from .racks import assert_group_acts_as_each_alone

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

CAPACITY = [14.0, 14.0, 3.0, 3.0, 3.0]
N = len(CAPACITY)
HEARTBEAT_SERVICES = 100 / 75
TOLERANCE = 1e-9  # the same float64 operations, summed in another order: far below a table's float32 rounding
THREE_NODES = {**{k: v for k, v in RACK.items() if k != "load"}, "load_range": [0.5, 0.95]}
"""The learner tests' 3-node rack, trained across loads."""


def modules(steal: bool = False, scale: float = 0.0, seed: int = 0) -> list[MalcolmFillRLModule]:
    """One fill module per node of a 5-node rack, gains uniform in ±scale."""
    rng = np.random.default_rng(seed)
    out = []
    for node in range(N):
        m = MalcolmFillRLModule(
            observation_space=Box(0.0, 100.0, (N + 2,), np.float32),
            action_space=Box(0.0, 1.0, (2 * N,), np.float32),
            model_config={
                "node": node,
                "capacity": CAPACITY,
                "heartbeat_services": HEARTBEAT_SERVICES,
                "horizon": 2.0,
                "mix": 0.1,
                "steal": steal,
                "offered_load_index": N + 1,
            },
        )
        with torch.no_grad():
            for p in m.actor_parameters().values():
                p.copy_(torch.as_tensor(rng.uniform(-scale, scale, tuple(p.shape))))
        out.append(m)
    return out


def observations(rng: np.random.Generator, rows: int) -> np.ndarray:
    """rack_v0-like observations: N levels (some 0, some tied), the own level, the offered load."""
    levels = rng.exponential(2.0, (rows, N)) * rng.integers(0, 2, (rows, N))
    levels[::4, 1] = levels[::4, 3]  # ties
    obs = np.concatenate([levels, np.zeros((rows, 1)), rng.uniform(0.3, 1.2, (rows, 1))], axis=1)
    return obs.astype(np.float32)


def arrivals(policy: fmt.FillPolicy, offered: float) -> float:
    """The rack's arrivals per heartbeat the file sees at this offered load (as the engine's rate x heartbeat)."""
    total = float(np.asarray(policy.capacity, np.float32).astype(np.float64).sum())
    return offered * total * float(np.float32(policy.heartbeat_services))


@pytest.mark.parametrize("steal", [False, True])
def test_torch_tables_equal_numpy_reference_and_cpp_runtime_of_the_exported_file(steal):
    rng = np.random.default_rng(3)
    nodes = modules(steal=steal, scale=0.6, seed=4)
    policy = fill_from_modules(nodes, level_scale=1 / 75)
    back = fmt.from_bytes(fmt.to_bytes(policy))
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(policy))
    obs = observations(rng, 16)
    for node, m in enumerate(nodes):
        with torch.no_grad():
            migration, stealing = (t.numpy() for t in m.tables(torch.from_numpy(obs)))
        for k, row in enumerate(obs.astype(np.float64)):
            levels, a = row[:N], arrivals(back, row[N + 1])
            m_ref, s_ref = fill_tables(back, node, levels, a)
            np.testing.assert_allclose(migration[k], m_ref, rtol=0, atol=TOLERANCE)
            np.testing.assert_array_equal(stealing[k], s_ref)
            m_cpp, s_cpp = runtime.fill_tables(node, levels, a)
            np.testing.assert_allclose(migration[k], m_cpp, rtol=0, atol=TOLERANCE)
            np.testing.assert_array_equal(stealing[k], s_cpp)
    assert fill_tables(back, 0, obs[0, :N].astype(np.float64), 50.0)[0].min() > 0


def test_zero_gains_are_water_filling():
    rng = np.random.default_rng(5)
    obs = observations(rng, 8)
    (m, *_) = modules()
    with torch.no_grad():
        migration, stealing = m.tables(torch.from_numpy(obs))
    cap = np.asarray(CAPACITY)
    for k, row in enumerate(obs.astype(np.float64)):
        volume = 2.0 * row[N + 1] * cap.sum() * float(np.float32(HEARTBEAT_SERVICES))
        expected = water_fill_table(row[:N], cap, volume, float(np.float32(0.1)))
        np.testing.assert_allclose(migration[k].numpy(), expected, rtol=0, atol=TOLERANCE)
    np.testing.assert_array_equal(stealing.numpy(), np.tile(np.eye(N)[0], (8, 1)))  # no steals


def test_policy_gradient_through_the_table_matches_finite_differences():
    """d/dw sum_j c_j log p_j by autograd against central differences of the numpy reference, for every learned
    gain of one node (random counts c; random levels, almost surely away from the table's kinks)."""
    rng = np.random.default_rng(7)
    (m, *_) = modules(scale=0.3, seed=8)
    m.double()
    obs = observations(rng, 1)
    counts = torch.as_tensor(rng.integers(0, 5, (1, N)), dtype=torch.float64)
    objective = (counts * m._forward_train({"obs": torch.from_numpy(obs)})[MIGRATION_LOGP]).sum()
    objective.backward()

    def reference(params: dict[str, np.ndarray]) -> float:
        gains = np.concatenate([params["volume"], np.zeros((2, 4)), params["capacity"], params["level"]])
        policy = fmt.FillPolicy(1.0, HEARTBEAT_SERVICES, 2.0, 0.1, False, np.asarray(CAPACITY), np.stack([gains] * N))
        row = obs[0].astype(np.float64)
        table, _ = fill_tables(policy, 0, row[:N], arrivals(policy, row[N + 1]))
        return float((counts.numpy()[0] * np.log(table)).sum())

    params = {k: p.detach().numpy().copy() for k, p in m.actor_parameters().items()}
    eps = 1e-3  # the reference rounds gains to float32 (~1e-8): differences over 2e-3 keep 1e-5 of precision
    for name, p in m.actor_parameters().items():
        numeric = np.zeros_like(params[name])
        for idx in np.ndindex(params[name].shape):
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[name][idx] += eps
            minus[name][idx] -= eps
            numeric[idx] = (reference(plus) - reference(minus)) / (2 * eps)
        np.testing.assert_allclose(p.grad.numpy(), numeric, rtol=1e-3, atol=1e-4, err_msg=name)
        assert np.abs(numeric).max() > 1e-2, name  # the objective does depend on every part


@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("per_task", [False, True])
def test_trained_fill_actor_exports_its_tables_and_runs_in_the_engine_as_its_file(tmp_path, per_task):
    """train.py's library with ``actor: fill`` on a 3-node rack, per heartbeat (the actions are each node's fill
    tables) and per task (the actions are its gains, each decision learned at its own levels): the gains move from
    0, the exported ``fill`` file (per task or not, as trained) has tables (C++ runtime) equal to the modules' on
    random observations, and evaluating the run folder runs that file in the engine: the same row as the file
    itself (bit for bit but the wall time)."""
    experiment = load_experiment(
        {
            "env": "rack_v0",
            "scenario": THREE_NODES["scenario"],
            "env_args": {k: v for k, v in THREE_NODES.items() if k != "scenario"},
            "algorithm": "malcolm",
            "hyperparameters": {"actor": "fill", "fill_steal": True, "fill_per_task": per_task},
            "budget": {"iterations": 10},
            "checkpoint_every": 0,
            "evaluation": {"enabled": False},
        }
    )
    run_dir = train(experiment, out=tmp_path, progress=False).run_dir
    policy = policy_from_checkpoint(run_dir)
    assert isinstance(policy, fmt.FillPolicy) and policy.steal and policy.settings["heartbeat_us"] == "100"
    assert policy.per_task == per_task
    assert np.abs(policy.gains).max() > 0  # learned: the gains left water_fill
    assert not policy.gains[:, 1:3].any()  # the mix and steal-margin rows are not learned

    trained = TrainedPolicy(run_dir)
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(policy))
    rng = np.random.default_rng(11)
    obs = np.concatenate([rng.exponential(2.0, (10, 3)), np.zeros((10, 1)), rng.uniform(0.3, 1.2, (10, 1))], 1)
    total = float(np.asarray(policy.capacity, np.float32).astype(np.float64).sum())
    for node in range(3):
        module = trained.modules[f"node_{node}"]
        with torch.no_grad():
            migration, stealing = (t.numpy() for t in module.tables(torch.from_numpy(obs.astype(np.float32))))
        for k, row in enumerate(obs.astype(np.float32).astype(np.float64)):
            a = row[4] * total * float(np.float32(policy.heartbeat_services))
            m_cpp, s_cpp = runtime.fill_tables(node, row[:3], a)
            np.testing.assert_allclose(migration[k], m_cpp, rtol=0, atol=TOLERANCE)
            np.testing.assert_array_equal(stealing[k], s_cpp)

    path = fmt.write_policy(policy, tmp_path / "trained.dcpol")
    scenario = load_scenario(THREE_NODES["scenario"], THREE_NODES["overrides"])
    doc = evaluate(scenario, [str(run_dir), str(path)], [0.9], tasks=5_000, seed=5, workers=0, progress=False)
    run_row, file_row = doc["results"]
    assert run_row["policy"] == "malcolm (trained)" and file_row["policy"] == "trained (file)"
    for key in ("latency_us", "tasks_completed", "tasks_dropped", "migrations", "steals", "events"):
        assert run_row[key] == file_row[key], key
    assert run_row["steals"] > 0 and run_row["migrations"] > 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"actor": "fill", "variant": "code"}, r"`trace_lambda` \(0.6\) must be 0 with `actor` 'fill'"),
        ({"actor": "fill", "fill_mix": 0.0}, r"`fill_mix` \(0.0\) must be in \(0, 1\]"),
        ({"actor": "linear"}, r"`actor` \('linear'\) must be one of \['paper', 'fill'\]"),
    ],
)
def test_fill_settings_are_validated_by_name(params, message):
    config = rack_config({"env": THREE_NODES, **params})
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_fill_actor_needs_probabilities_as_actions():
    with pytest.raises(InvalidConfigError) as info:
        rack_config({"env": {**THREE_NODES, "action_type": "logits"}, "actor": "fill"})
    assert info.value.field == "env.action_type" and "probabilities with actor: fill" in str(info.value)
    config = rack_config({"env": THREE_NODES, "actor": "fill"})
    assert config.env_config["obs_extras"] == ("offered_load",) and config.env_config["action_type"] == "probabilities"
    env = RackMultiAgentEnv(config.env_config)
    obs, _ = env.reset(seed=1)
    load = obs["node_0"][-1]
    assert 0.5 <= load <= 0.95 and all(o[-1] == load for o in obs.values())  # the episode's load from load_range
    fixed = RackMultiAgentEnv({**config.env_config, "load_range": None, "load": 0.83})
    obs, _ = fixed.reset(seed=2)
    obs, *_ = fixed.step({a: np.ones(6, np.float32) for a in obs})
    assert obs["node_2"][-1] == pytest.approx(0.83, rel=1e-6)  # rate x mean service time / capacity = the load


@pytest.mark.parametrize(
    ("env", "params", "field", "message"),
    [
        ({"action_type": "probabilities"}, {}, "env.action_type", "fill with actor: fill, fill_per_task: True"),
        ({"load_metric": "queue"}, {}, "env.load_metric", "one of ['expected_wait', 'nominal_wait']"),
        ({"fill": {"horizon": 2.0, "mix": 0.1, "steal": True}}, {"fill_horizon": 0.5}, "env.fill", "fill_*"),
    ],
)
def test_per_task_fill_actor_sets_rack_v0s_fill_actions_and_refuses_others(env, params, field, message):
    """``fill_per_task``: rack_v0 acts with the gains (``action_type: fill``) of the rule the ``fill_*`` settings
    give; a contradicting environment argument is refused by name."""
    base = {"env": THREE_NODES, "actor": "fill", "fill_per_task": True, "fill_steal": True, "fill_horizon": 0.5}
    config = rack_config(base)
    assert config.env_config["action_type"] == "fill"
    assert config.env_config["fill"] == {"horizon": 0.5, "mix": 0.1, "steal": True}
    with pytest.raises(InvalidConfigError) as info:
        rack_config({**base, **params, "env": {**THREE_NODES, **env}})
    assert info.value.field == field and message in str(info.value)


def test_per_task_nodes_acting_as_a_group_give_each_nodes_own_bits():
    """MalcolmFillRLModule.group_act per task (the demo's nodes in BulkEnvRunner) against each node's own
    forward_exploration and RLlib's GetActions, with uneven rows per node; with tables, each node acts alone."""
    from ray.rllib.core.columns import Columns

    rng = np.random.default_rng(3)
    width = fill_rows(N) * fmt.FILL_FEATURES
    nodes = []
    for m in modules(scale=0.5, seed=3):
        node = MalcolmFillRLModule(
            observation_space=m.observation_space,
            action_space=Box(-10.0, 10.0, (width,), np.float32),
            model_config={**m.model_config, "per_task": True},
        )
        node.load_state_dict(m.state_dict())
        nodes.append(node)
    assert modules()[0].group_key() is None and nodes[0].group_key() == nodes[-1].group_key() is not None
    obs = [torch.as_tensor(observations(rng, c)) for c in (1, 3, 2, 1, 4)]
    group = assert_group_acts_as_each_alone(nodes, obs)
    assert not torch.equal(group[Columns.ACTIONS][0], group[Columns.ACTIONS][1])  # the nodes' own gains
