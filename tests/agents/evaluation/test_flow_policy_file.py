"""Exported AuTO agents evaluated from their policy files (the whole run in C++, the runtime deciding every
interval) make the decisions the same networks make stepping flow_v0 in Python: same seed, same flows. lRLA's
choices are indices: the same row, bit for bit. sRLA's thresholds come out of the runtime in float32 (within 1e-5
of flow_v0's map in double, checked every interval), which can move a flow at a boundary to another queue: the rows
agree within 2%. Both agents from their files, against Python stepping flow_v0 with the same files' decisions: bit
for bit."""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

from dcgym.agents.auto.policy_file import lrla_policy, srla_policy
from dcgym.agents.evaluation.flow import FlowFileJob, _Measured, histogram, measure, row
from dcgym.agents.policy_format import write_policy
from dcgym.agents.rl.envs import make_env

FLOWS, WARMUP, SEED, LOAD = 300, 30, 7, 0.8
ENV = {"scenario": "auto_websearch", "load": LOAD}


def _python_run(agent: str, decide, file_policy=None) -> dict:
    """flow_v0 stepped in Python, ``agent`` acting through ``decide(obs)``, the other held by the rules."""
    env = make_env("flow_v0", {**ENV, "max_steps": 2**62, "warmup_s": 0.0})
    env.game.scenario = _Measured(env.game.scenario, WARMUP, FLOWS)
    observations, _ = env.reset(seed=SEED)
    state = {"obs": observations[agent]}

    def step() -> None:
        action = decide(state["obs"])
        if agent == "srla":
            obs, _, _ = env.game.step(env.game.check_srla(action)[None], None, [0])
            from_file = np.asarray(file_policy.act(np.asarray(state["obs"], np.float32)), np.float64)
            np.testing.assert_allclose(from_file, env.sim.thresholds, rtol=1e-5)
        else:
            obs, _, _ = env.game.step(None, env.game.check_lrla(action)[None], [0])
        state["obs"] = obs[agent][0]

    left = measure(env.sim, FLOWS, WARMUP, step=step)
    return {"result": row("python", LOAD, SEED, env.sim, WARMUP, left, 0.0), "histogram": histogram(env.sim)}


def _same(file_run: dict, python_run: dict, exact: bool) -> None:
    a, b = dict(file_run["result"]), dict(python_run["result"])
    for r in (a, b):
        r.pop("policy"), r.pop("wall_s")
    if not exact:
        assert a["flows_completed"] == b["flows_completed"] and a["flows_in_flight"] == b["flows_in_flight"]
        assert a["fct_ms"]["mean"] == pytest.approx(b["fct_ms"]["mean"], rel=0.02)
        return
    diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    assert not diff, diff
    h1, h2 = file_run["histogram"], python_run["histogram"]
    assert h1.keys() == h2.keys()
    for key in h1:
        np.testing.assert_array_equal(np.asarray(h1[key]), np.asarray(h2[key]))


@pytest.mark.parametrize("agent", ["srla", "lrla"])
def test_policy_file_run_equals_python_stepping_with_the_same_network(tmp_path, agent):
    env = make_env("flow_v0", ENV)
    n_obs = int(np.prod(env.observation_space(agent).shape))
    torch.manual_seed(3)
    if agent == "srla":
        k = env.action_space(agent).shape[0]
        actor = torch.nn.Sequential(
            torch.nn.Linear(n_obs, 16), torch.nn.ReLU(), torch.nn.Linear(16, k), torch.nn.Tanh()
        )
        with torch.no_grad():
            actor[2].weight.mul_(20.0)  # spread the thresholds so they change between intervals
        module = types.SimpleNamespace(actor=actor, num_obs=n_obs)
        policy = srla_policy(module, env.game.config.threshold_range_bytes)

        def decide(obs):
            with torch.no_grad():
                return actor(torch.as_tensor(obs[None], dtype=torch.float32))[0].numpy().astype(np.float64)
    else:
        nvec = [int(v) for v in env.action_space(agent).nvec]
        net = torch.nn.Sequential(torch.nn.Linear(n_obs, 16), torch.nn.ReLU(), torch.nn.Linear(16, sum(nvec)))
        module = types.SimpleNamespace(policy=net, groups=nvec)
        policy = lrla_policy(module)
        bounds = np.cumsum([0, *nvec])

        def decide(obs):
            with torch.no_grad():
                logits = net(torch.as_tensor(obs[None], dtype=torch.float32))[0].numpy()
            return np.array([int(np.argmax(logits[lo:hi])) for lo, hi in zip(bounds[:-1], bounds[1:])], np.int64)

    path = write_policy(policy, tmp_path / f"{agent}.dcpol")
    job = FlowFileJob(f"{agent} (file)", LOAD, SEED, ENV, {agent: str(path)}, FLOWS, WARMUP)
    from_file = job.run()
    assert from_file["result"]["flows_completed"] > 0
    from dcgym.cpp_core import RuntimePolicy

    _same(from_file, _python_run(agent, decide, RuntimePolicy.from_file(str(path))), exact=agent == "lrla")


def test_both_agents_from_files_in_the_engine_equal_python_stepping_bit_for_bit(tmp_path):
    from dcgym.cpp_core import RuntimePolicy

    env = make_env("flow_v0", ENV)
    torch.manual_seed(4)
    n_s, n_l = (int(np.prod(env.observation_space(a).shape)) for a in ("srla", "lrla"))
    k = env.action_space("srla").shape[0]
    actor = torch.nn.Sequential(torch.nn.Linear(n_s, 16), torch.nn.ReLU(), torch.nn.Linear(16, k), torch.nn.Tanh())
    with torch.no_grad():
        actor[2].weight.mul_(20.0)
    nvec = [int(v) for v in env.action_space("lrla").nvec]
    net = torch.nn.Sequential(torch.nn.Linear(n_l, 16), torch.nn.ReLU(), torch.nn.Linear(16, sum(nvec)))
    srla = write_policy(
        srla_policy(types.SimpleNamespace(actor=actor, num_obs=n_s), env.game.config.threshold_range_bytes),
        tmp_path / "s.dcpol",
    )
    lrla = write_policy(lrla_policy(types.SimpleNamespace(policy=net, groups=nvec)), tmp_path / "l.dcpol")
    job = FlowFileJob("joint (file)", LOAD, SEED, ENV, {"srla": str(srla), "lrla": str(lrla)}, FLOWS, WARMUP)
    from_file = job.run()

    # The reference: flow_v0 stepped in Python, each interval's decisions read from the same files.
    s_file, l_file = RuntimePolicy.from_file(str(srla)), RuntimePolicy.from_file(str(lrla))
    env = make_env("flow_v0", {**ENV, "max_steps": 2**62, "warmup_s": 0.0})
    env.game.scenario = _Measured(env.game.scenario, WARMUP, FLOWS)
    obs, _ = env.reset(seed=SEED)
    state = {"obs": obs, "thresholds": set()}

    def step() -> None:
        thresholds = [float(t) for t in np.asarray(s_file.act(state["obs"]["srla"]))]
        state["thresholds"].add(tuple(thresholds))
        env.sim.set_thresholds(thresholds)
        choices = env.game.check_lrla(np.asarray(l_file.act(state["obs"]["lrla"]), np.int64))
        o, _, _ = env.game.step(None, choices[None], [0])
        state["obs"] = {a: o[a][0] for a in o}

    left = measure(env.sim, FLOWS, WARMUP, step=step)
    python_run = {"result": row("python", LOAD, SEED, env.sim, WARMUP, left, 0.0), "histogram": histogram(env.sim)}
    assert len(state["thresholds"]) > 5  # the thresholds changed from interval to interval
    _same(from_file, python_run, exact=True)


def test_two_files_of_one_agent_or_a_wrong_head_are_refused(tmp_path):
    from dcgym.agents.policies import Source, Spec
    from dcgym.agents.policies.flow import auto_policy_files
    from dcgym.envs.error import InvalidConfigError

    env = make_env("flow_v0", ENV)
    nvec = [int(v) for v in env.action_space("lrla").nvec]
    n_l = int(np.prod(env.observation_space("lrla").shape))
    net = torch.nn.Sequential(torch.nn.Linear(n_l, 4), torch.nn.ReLU(), torch.nn.Linear(4, sum(nvec)))
    path = write_policy(lrla_policy(types.SimpleNamespace(policy=net, groups=nvec)), tmp_path / "l.dcpol")
    with pytest.raises(InvalidConfigError, match="one file per agent; two are lrla policies"):
        auto_policy_files(Spec(f"{path}+{path}", Source.POLICY_FILE), "auto_websearch", LOAD)
    paths, label, _ = auto_policy_files(Spec(str(path), Source.POLICY_FILE), "auto_websearch", LOAD)
    assert paths == {"lrla": str(path)} and label == "l (file)"


def test_a_file_and_a_zoo_entry_join_in_either_order():
    """``srla.dcpol+zoo:NAME`` (a file of one agent and the zoo's other) is a policy-file spec as ``zoo:A+zoo:B``
    and ``A.dcpol+B.dcpol`` are; a heuristic with options or an empty part is not."""
    from dcgym.agents.policies.sources import is_policy_file_spec

    for spec in ("s.dcpol+zoo:auto_websearch_lrla", "zoo:auto_websearch+l.dcpol", "zoo:a+zoo:b", "s.dcpol+l.dcpol"):
        assert is_policy_file_spec(spec), spec
    for spec in ("pathbal:flows=11,demote=true", "s.dcpol+", "s.dcpol+pathbal"):
        assert not is_policy_file_spec(spec), spec


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("zoo:malcolm_homog_exp", 'error: policy: got "zoo:malcolm_homog_exp"; allowed: an AuTO agent exported with'),
        ("no/such.dcpol", 'error: policy: got "no/such.dcpol"; allowed: an existing policy file'),
    ],
)
def test_a_policy_file_that_is_not_an_auto_agent_exits_2_with_one_line(tmp_path, policy, message):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [
            sys.executable,
            str(root / "evaluate.py"),
            "--scenario",
            "auto_websearch",
            "--policy",
            policy,
            "--tasks",
            "100",
        ]
        + ["--workers", "0", "--out", str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith(message), line
