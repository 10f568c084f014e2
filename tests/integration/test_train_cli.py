"""Smoke runs of train.py (and evaluate.py on its checkpoints) as users run them, with tiny budgets."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from subprocess import PIPE

import pytest
import yaml

from dcgym import train as train_cli
from dcgym.agents.evaluation import family_of
from dcgym.agents.policies.checkpoints import TrainedPolicy
from dcgym.agents.training.experiment import load_experiment

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "configs/experiments/smoke.yaml")
AUTO = str(ROOT / "configs/experiments/auto_websearch.yaml")
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
RESULT_FIELDS = {
    "policy",
    "load",
    "seed",
    "throughput_ktps",
    "latency_us",
    "tasks_completed",
    "tasks_dropped",
    "tasks_warmup",
    "migrations",
    "steals",
    "failed_steals",
    "events",
    "sim_time_us",
    "wall_s",
}
FAMILY_FIELDS = {  # (completed count, the statistic with percentiles, offered rate, evaluation plots) per family
    "rack": ("tasks_completed", "latency_us", "offered_ktps", ("p99_vs_load.png", "latency_cdf.png")),
    "lb": ("flows_completed", "fct_s", "offered_flows_per_s", ("fct_vs_load.png", "fct_cdf.png")),
}

# Each algorithm's smallest run: 2 iterations, a short evaluation at two loads.
TINY = {
    "ppo": ["--config", SMOKE],
    "sac": [
        "--config",
        str(ROOT / "configs/experiments/sac_lb.yaml"),
        "--iterations",
        "2",
        "--set",
        "env_args.max_steps=10",
        "--set",
        "hyperparameters.learning_starts=8",
        "--set",
        "hyperparameters.steps_per_iteration=10",
        "--set",
        "hyperparameters.hidden=[16]",
        "--set",
        "evaluation.tasks=200",
        "--set",
        "evaluation.loads=[0.7,0.9]",
        "--set",
        "evaluation.heuristics=[ecmp,sed]",
        "--set",
        "evaluation.workers=0",
        "--set",
        "checkpoint_every=1",
    ],
    "malcolm": [
        "--config",
        SMOKE,
        "--set",
        "algorithm=malcolm",
        "--set",
        "hyperparameters={}",
        "--set",
        "env_args.max_steps=20",  # an iteration is 20 heartbeats: one episode each
        "--set",
        "env_args.load_range=[0.5,0.95]",
    ],  # trained across loads, evaluated at each
}
HEURISTICS = {"ppo": ["po2", "jsq"], "sac": ["ecmp", "sed"], "malcolm": ["po2", "jsq"]}


def train(*args: str, cwd: Path = ROOT, timeout: float = 150) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )


def evaluate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )


def run_folder(proc: subprocess.CompletedProcess) -> Path:
    """The run folder train.py names on its last line of standard output."""
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("run folder: "), proc.stdout
    return Path(last.removeprefix("run folder: "))


def metrics(run: Path) -> list[dict[str, str]]:
    with (run / "metrics.csv").open(newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------------ smoke runs


# AuTO's agents, each trained alone on flow_v0 (the other held by the environment's rules): 1 tiny iteration.
TINY_AUTO = {
    "auto_srla": [
        "--set",
        "hyperparameters={actor_hiddens: [16], critic_hiddens: [16], critic_merge_hidden: 16, "
        "num_steps_sampled_before_learning_starts: 20}",
    ],
    "auto_lrla": [
        "--set",
        "algorithm=auto_lrla",
        "--set",
        "hyperparameters={hiddens: [16], train_batch_size_per_learner: 20}",
    ],
}


def _flat(row: dict, prefix: str = "") -> dict[str, float]:
    """A result row's numbers by dotted key, without the policy's name and the wall time."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        elif key not in ("policy", "wall_s") and value is not None and not isinstance(value, (str, list)):
            out[prefix + key] = float(value)
    return out


@pytest.mark.parametrize("algorithm", TINY_AUTO)
def test_tiny_auto_run_trains_one_agent_and_evaluates_it_against_the_flow_heuristics(
    tmp_path, algorithm, cli_here, ray_session, storage
):
    """train.py, export, evaluate and build_zoo by their command lines in this process (``cli_here``, on the
    session's Ray cluster; the tiny runs below start train.py as a command)."""
    proc = cli_here(
        "train.py",
        "--config",
        AUTO,
        "--iterations",
        "1",
        *TINY_AUTO[algorithm],
        "--set",
        "env_args.max_steps=20",
        "--set",
        "evaluation.tasks=300",
        "--set",
        "evaluation.heuristics=[qsjf,pias]",
        "--set",
        "evaluation.workers=0",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = run_folder(proc)
    assert run.name.split("__")[1:3] == [algorithm, "1"] and "(trained)" in proc.stdout
    assert "(trained) against the best other policy at each load: mean flow completion time (ms)" in proc.stdout
    agent = algorithm.removeprefix("auto_")
    meta = json.loads((run / "checkpoints/iter_000001/dcgym_checkpoint.json").read_text())
    assert meta["agent_to_module"] == {agent: "default_policy"} and meta["partial_agents"] is True
    assert list(meta["observation_sizes"]) == [agent]
    assert float(metrics(run)[0]["timesteps"]) > 0
    doc = json.loads((run / "evaluation/results.json").read_text())
    assert doc["family"] == "flow"
    assert sorted(r["policy"] for r in doc["results"]) == sorted([f"{algorithm} (trained)", "qsjf", "pias"])
    for r in doc["results"]:
        family_of("flow").row_model.model_validate(r)
        assert r["load"] == 0.8 and r["flows_completed"] > 0

    # exported (the increasing or multi_categorical head) and evaluated from the file like a heuristic
    policy_file = tmp_path / f"{agent}.dcpol"
    proc = cli_here("dcgym.export", run, "--out", policy_file)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "from_file"
    proc = cli_here(
        "evaluate.py", "--scenario", "auto_websearch", "--policy", str(policy_file), "--policy", str(run), "--loads", "0.8",
        "--tasks", "300", "--workers", "0", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {r["policy"]: r for r in json.loads((out / "results.json").read_text())["results"]}
    from_file, trained = rows[f"{agent} (file)"], rows[f"{algorithm} (trained)"]
    # The C++ runtime acts as the torch module: the same flows end at the same times. Means and utilisations agree
    # to 1e-6 (the engine adds them up in other pieces when a checkpoint steps it through the environment).
    file_fields, trained_fields = _flat(from_file), _flat(trained)
    assert file_fields == pytest.approx(trained_fields, rel=1e-6), (file_fields, trained_fields)

    # a zoo entry: the card shows the mean FCT table and the command that evaluates it in the engine
    zoo = tmp_path / "zoo"
    proc = cli_here("benchmarks/build_zoo.py", run, "--out", zoo, "--name", agent)
    assert proc.returncode == 0, proc.stderr
    card = (zoo / f"{agent}.md").read_text()
    assert "mean flow completion time (ms)" in card and f"| {algorithm} (trained) | " in card
    assert f"python evaluate.py --policy zoo:{agent} --scenario auto_websearch" in card


def test_sac_on_flow_v0_trains_srla_alone_and_evaluates_it(tmp_path, cli_here, ray_session, storage):
    # lRLA's per-flow choices are discrete: SAC trains sRLA's thresholds, long flows held by the rules
    proc = cli_here(
        "train.py", "--config", str(ROOT / "configs/experiments/sac_flow.yaml"), "--iterations", "1",
        "--set", "hyperparameters={hidden: [16], learning_starts: 10, steps_per_iteration: 20}",
        "--set", "env_args.max_steps=20", "--set", "evaluation.tasks=300", "--set", "evaluation.heuristics=[qlas]",
        "--set", "evaluation.workers=0", "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = run_folder(proc)
    meta = json.loads((run / "checkpoints/iter_000001/dcgym_checkpoint.json").read_text())
    assert meta["agent_to_module"] == {"srla": "default_policy"} and meta["partial_agents"] is True
    rows = json.loads((run / "evaluation/results.json").read_text())["results"]
    assert sorted(r["policy"] for r in rows) == ["qlas", "sac (trained)"]
    assert all(r["flows_completed"] > 0 for r in rows)


@pytest.mark.parametrize(
    "algorithm",
    [
        "ppo",
        "sac",
        "malcolm",
    ],
)
def test_tiny_run_leaves_a_complete_run_folder(tmp_path, algorithm, cli_here, ray_session, storage):
    """In this process, on the session's Ray (the tests of the real process are the Ctrl-C and same-weights ones)."""
    proc = cli_here("train.py", *TINY[algorithm], "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = run_folder(proc)
    assert run.parent == tmp_path and run.name.split("__")[1:3] == [algorithm, "1"]
    assert "(trained)" in proc.stdout  # the evaluation table
    assert re.search(r"return=-?[0-9.]+(e[+-]?[0-9]+)? imbalance=[0-9.]", proc.stderr), proc.stderr[-500:]

    experiment = load_experiment(run / "config.yaml")  # the resolved config loads back as it was
    assert experiment.algorithm == algorithm and experiment.budget.iterations == 2
    status = json.loads((run / "run.json").read_text())
    assert (status["status"], status["iteration"], status["checkpoint"]) == ("finished", 2, "checkpoints/iter_000002")

    rows = metrics(run)
    assert [float(r["iteration"]) for r in rows] == [1.0, 2.0]
    assert float(rows[1]["timesteps"]) > float(rows[0]["timesteps"]) > 0
    tail = "charts/p99_us" if algorithm != "sac" else "charts/p99_fct_s"  # sac trains on lb_v0: flows, seconds
    for column in ("charts/return", "charts/imbalance", tail, "charts/episode_length"):
        assert rows[-1][column], column
    if algorithm != "sac":  # SAC learns only after its first steps; its first rows may have no losses
        assert any(k.startswith("losses/") and rows[-1][k] for k in rows[-1])
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))

    checkpoint = run / "checkpoints/iter_000002"
    meta = json.loads((checkpoint / "dcgym_checkpoint.json").read_text())
    assert (meta["iteration"], meta["experiment"]["algorithm"]) == (2, algorithm)
    assert (checkpoint / "rllib_checkpoint.json").is_file()
    assert (checkpoint / "learner_group/learner/rl_module").is_dir()

    doc = json.loads((run / "evaluation/results.json").read_text())
    policies = [f"{algorithm} (trained)", *HEURISTICS[algorithm]]
    assert sorted({r["policy"] for r in doc["results"]}) == sorted(policies)
    completed, statistic, offered, plots = FAMILY_FIELDS[doc["family"]]
    for r in doc["results"]:
        family_of(doc["family"]).row_model.model_validate(r)  # every field of the family's row, no other
        assert r[completed] > 0 and r[statistic]["p99"] > 0
        same_load = [h for h in doc["results"] if h["load"] == r["load"]]
        assert {h[offered] for h in same_load} == {r[offered]}  # at the grid's load
    for plot in ("learning_curve.png", *plots):
        assert (run / "plots" / plot).read_bytes().startswith(b"\x89PNG")
    assert (run / "rllib").is_dir()  # RLlib's own log folder is in the run folder, not in ~/ray_results


def test_two_runs_of_one_seed_train_the_same_weights_in_separate_processes(tmp_path):
    """RLlib orders a multi-agent batch by sets of agent ids, whose order changes with Python's hash seed from one
    process to the next: train.py fixes it (dcgym._app.reproducible_hashes), so the same command trains the same
    weights bit for bit. Real processes, without a hash seed of their own, as a user starts them."""
    env = {k: v for k, v in ENV.items() if k != "PYTHONHASHSEED"}
    command = [
        sys.executable,
        str(ROOT / "train.py"),
        "--config",
        "configs/experiments/smoke.yaml",
        "--iterations",
        "1",
    ]
    command += ["--set", "evaluation.enabled=false", "--out"]
    # the two at once: each is mostly the start of Python, torch and Ray, partly waiting
    procs = [
        subprocess.Popen(command + [str(tmp_path / str(k))], cwd=ROOT, stdout=PIPE, stderr=PIPE, text=True, env=env)
        for k in (1, 2)
    ]
    weights, returns = [], []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=150)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, stderr
        run = run_folder(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
        weights.append(
            (run / "checkpoints/iter_000001/learner_group/learner/rl_module/shared/module_state.pkl").read_bytes()
        )
        returns.append(metrics(run)[0]["charts/return"])
    assert returns[0] == returns[1] and returns[0]
    assert weights[0] == weights[1]


def test_ctrl_c_writes_a_checkpoint_and_resume_continues(tmp_path, cli_here, ray_session, storage):
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "--config",
            SMOKE,
            "--out",
            str(tmp_path),
            "--set",
            "budget.iterations=10000",
            "--set",
            "checkpoint_every=0",
            "--set",
            "evaluation.enabled=false",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        # A shell's background job inherits SIGINT ignored, and Python then keeps it ignored: give the child
        # the default disposition so that it turns SIGINT into KeyboardInterrupt however pytest was started.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            rows = [m for run in tmp_path.glob("*__ppo__*") if (run / "metrics.csv").is_file() for m in metrics(run)]
            if len(rows) >= 2:
                break
            time.sleep(0.2)
        else:
            pytest.fail("no training iterations within 90 s")
        proc.send_signal(signal.SIGINT)
        # Writing the checkpoint and stopping Ray take a few seconds; minutes on a loaded machine.
        _, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # reap it and close its pipes
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1].startswith("interrupted at iteration ")
    (run,) = tmp_path.glob("*__ppo__*")
    status = json.loads((run / "run.json").read_text())
    assert status["status"] == "interrupted"
    stopped = status["iteration"]
    assert stopped >= 2 and status["checkpoint"] == f"checkpoints/iter_{stopped:06d}"

    # resumed in this process, on the session's Ray (the interrupted process is gone, as a user's would be)
    resumed = cli_here("train.py", "--resume", run, "--iterations", stopped + 1, "--set", "evaluation.enabled=false")
    assert resumed.returncode == 0, resumed.stderr
    status = json.loads((run / "run.json").read_text())
    assert (status["status"], status["iteration"]) == ("finished", stopped + 1)
    rows = metrics(run)
    assert [float(r["iteration"]) for r in rows] == [float(k) for k in range(1, stopped + 2)]
    steps = [float(r["timesteps"]) for r in rows]
    assert steps == sorted(set(steps))  # the env-step counter continued (an interrupted iteration's steps count)
    assert steps[-1] >= (stopped + 1) * 100
    assert yaml.safe_load((run / "config.yaml").read_text())["budget"]["iterations"] == stopped + 1


# ------------------------------------------------------------------------------ in-process: resume, evaluation


@pytest.fixture(scope="module")
def smoke_run(ray_session, tmp_path_factory):
    """One tiny PPO run (2 iterations, no evaluation), trained in this process."""
    from dcgym.agents.training import train as train_experiment

    experiment = load_experiment(SMOKE, {"evaluation.enabled": False})
    return train_experiment(experiment, out=tmp_path_factory.mktemp("runs"), progress=False).run_dir


def test_resume_restores_weights_and_advances_the_iteration(ray_session, smoke_run, tmp_path):
    import shutil

    import numpy as np
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule

    from dcgym.agents.training import Trainer

    run = tmp_path / smoke_run.name
    shutil.copytree(smoke_run, run)
    saved = MultiRLModule.from_checkpoint(str(run / "checkpoints/iter_000002/learner_group/learner/rl_module"))
    (run / "evaluation").mkdir()
    (run / "evaluation/results.json").write_text("{}")  # an earlier end's: stale once training continues
    experiment = load_experiment(run / "config.yaml", {"budget.iterations": 3})
    trainer = Trainer(experiment, run, resuming=True, progress=False)
    trainer.setup()
    try:
        assert (trainer.iteration, trainer.timesteps) == (2, 200)
        assert not (run / "evaluation").exists()
        restored = trainer.algo.learner_group.get_weights()["shared"]
        for name, tensor in saved["shared"].state_dict().items():
            np.testing.assert_array_equal(np.asarray(restored[name]), tensor.numpy(), err_msg=name)
        result = trainer.run()
    finally:
        trainer.close()
    assert (result.iteration, result.timesteps, result.status) == (3, 300, "finished")
    assert [float(r["iteration"]) for r in metrics(run)] == [1.0, 2.0, 3.0]
    assert (run / "checkpoints/iter_000003/dcgym_checkpoint.json").is_file()


@pytest.mark.parametrize("damage", ["learner_group", "run.json"])
def test_a_damaged_run_is_refused_naming_the_file_before_ray_starts(smoke_run, tmp_path, damage):
    import shutil

    from dcgym.agents.training import Trainer
    from dcgym.envs.error import InvalidConfigError

    run = tmp_path / smoke_run.name
    shutil.copytree(smoke_run, run)
    if damage == "run.json":
        (run / "run.json").write_text("")
    else:
        shutil.rmtree(run / "checkpoints/iter_000002/learner_group")
    trainer = Trainer(load_experiment(run / "config.yaml", {"budget.iterations": 3}), run, resuming=True)
    with pytest.raises(InvalidConfigError) as caught:
        trainer.setup()
    if damage == "run.json":
        assert str(caught.value).startswith(f"{run / 'run.json'}: got a file that is not JSON"), caught.value
    else:
        assert "iter_000002" in str(caught.value) and "has no learner_group/learner/rl_module" in str(caught.value)
        with pytest.raises(InvalidConfigError, match="^policy: .* has no learner_group"):
            TrainedPolicy(run)  # evaluate and export: the same line, not RLlib's error on the hole
    assert trainer.algo is None


def test_evaluate_checkpoint_runs_the_policy_on_the_same_tasks_as_the_heuristics(smoke_run):
    from dcgym.agents.evaluation import evaluate_checkpoint

    doc = evaluate_checkpoint(smoke_run, loads=[0.9], tasks=3000, heuristics=["po2"])
    assert doc["scenario"] == "malcolm_homog_exp"
    trained, po2 = doc["results"]
    assert (trained["policy"], po2["policy"]) == ("ppo (trained)", "po2")
    assert trained["offered_ktps"] == pytest.approx(po2["offered_ktps"], rel=1e-12)  # the 4-node rack, load 0.9
    assert trained["tasks_warmup"] == po2["tasks_warmup"] == 300
    # 2700 measured arrivals; the policy acts per heartbeat (48 arrivals), so the run may overshoot by one.
    assert 0 < trained["tasks_completed"] + trained["tasks_dropped"] <= 2700 + 48
    again = evaluate_checkpoint(smoke_run, loads=[0.9], tasks=3000)
    assert {k: v for k, v in again["results"][0].items() if k != "wall_s"} == {
        k: v for k, v in trained.items() if k != "wall_s"
    }  # deterministic actions, same seed: same numbers


def test_evaluate_cli_takes_a_run_folder_or_a_checkpoint(smoke_run, tmp_path):
    proc = evaluate(
        "--policy",
        str(smoke_run),
        "--policy",
        str(smoke_run / "checkpoints/iter_000001"),
        "--policy",
        "po2",
        "--loads",
        "0.8",
        "--tasks",
        "2000",
        "--workers",
        "0",
        "--json",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["scenario"] == "malcolm_homog_exp"  # the policy's scenario, with its 4-node override
    assert [r["policy"] for r in doc["results"]] == ["ppo@iter_000002", "ppo@iter_000001", "po2"]
    assert all(RESULT_FIELDS <= r.keys() and r["tasks_completed"] > 0 for r in doc["results"])
    assert (tmp_path / "p99_vs_load.png").read_bytes().startswith(b"\x89PNG")


def test_evaluate_cli_refuses_a_checkpoint_for_another_rack(smoke_run, tmp_path):
    proc = evaluate(
        "--scenario",
        "malcolm_hetero_paper_exp",
        "--policy",
        str(smoke_run),
        "--loads",
        "0.8",
        "--tasks",
        "1000",
        "--workers",
        "0",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: policy: ") and "trained with 4" in line


# ------------------------------------------------------------------------------ bad input


BAD_INPUTS = {
    "invalid yaml": ["--config", "broken.yaml"],
    "unknown field": ["--config", "unknown_field.yaml"],
    "missing config file": ["--config", "no/such.yaml"],
    "unknown packaged experiment": ["--config", "smoek"],
    "no config": [],
    "zero iterations": ["--config", SMOKE, "--iterations", "0"],
    "non-numeric iterations": ["--config", SMOKE, "--iterations", "abc"],
    "negative seed": ["--config", SMOKE, "--seed", "-1"],
    "negative workers": ["--config", SMOKE, "--workers", "-1"],
    "set without equals": ["--config", SMOKE, "--set", "budget.iterations"],
    "set unknown key": ["--config", SMOKE, "--set", "budget.iteratons=3"],
    "set unknown top-level key": ["--config", SMOKE, "--set", "nosuch=1"],
    "set bad value": ["--config", SMOKE, "--set", "budget.iterations=-3"],
    "set unknown hyperparameter": ["--config", SMOKE, "--set", "hyperparameters.lrr=0.1"],
    "set bad hyperparameter": ["--config", SMOKE, "--set", "hyperparameters.lr=-1"],
    "inconsistent hyperparameters": ["--config", SMOKE, "--set", "hyperparameters.minibatch_size=500"],
    "unknown algorithm": ["--config", SMOKE, "--set", "algorithm=ppp"],
    "unknown scenario": ["--config", SMOKE, "--set", "scenario=malcom_homog_exp"],
    "unknown env argument": ["--config", SMOKE, "--set", "env_args.lod=0.9"],
    "bad env argument": ["--config", SMOKE, "--set", "env_args.load=-1"],
    "bad heuristic": ["--config", SMOKE, "--set", "evaluation.heuristics=[po2,jqs]"],
    "sac with discrete actions": [
        "--config",
        str(ROOT / "configs/experiments/sac_lb.yaml"),
        "--set",
        "env_args.action_type=discrete",
    ],
    "auto: unknown hyperparameter": ["--config", AUTO, "--set", "hyperparameters.actor_hidens=[8]"],
    "auto: a hyperparameter out of range": ["--config", AUTO, "--set", "hyperparameters.tau=0"],
    "auto: another env": ["--config", AUTO, "--set", "env=lb_v0", "--set", "scenario=lb_sim"],
    "auto: bad env argument": ["--config", AUTO, "--set", "env_args.load=-0.5"],
    "auto: bad heuristic": ["--config", AUTO, "--set", "evaluation.heuristics=[qsjf,pais]"],
    "auto_lrla with a DDPG setting": ["--config", AUTO, "--set", "algorithm=auto_lrla"],
    "config and resume": ["--config", SMOKE, "--resume", "somewhere"],
    "resume a non-run folder": ["--resume", "no_such_run"],
    "unknown option": ["--config", SMOKE, "--bogus"],
}


@pytest.mark.parametrize("args", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_prints_one_error_line_and_exits_2(tmp_path, monkeypatch, capsys, args):
    """In-process (the checks run before Ray starts; the test below runs the command itself)."""
    (tmp_path / "broken.yaml").write_text("env: rack_v0\nbudget: {iterations: 2\n")
    smoke = yaml.safe_load(Path(SMOKE).read_text())
    (tmp_path / "unknown_field.yaml").write_text(yaml.safe_dump({**smoke, "budgett": {"iterations": 2}}))
    monkeypatch.chdir(tmp_path)
    status = train_cli.run([*args, "--out", str(tmp_path / "runs")], prog="train.py")
    out, err = capsys.readouterr()
    assert status == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # no half run folder


def test_bad_input_from_the_command_line_is_one_line_and_status_2(tmp_path):
    proc = train("--config", SMOKE, "--set", "budget.iteratons=3", "--out", str(tmp_path), timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (
        'error: budget.iteratons: got 3; did you mean "iterations"?; allowed: one of the fields iterations, '
        "timesteps, wall_time_s"
    )


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed")
def test_wandb_without_the_package_says_how_to_install_it(tmp_path):
    proc = train("--config", SMOKE, "--wandb", "--out", str(tmp_path), timeout=60)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: --wandb") and "pip install wandb" in line


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "configs/experiments").glob("*.yaml")))
def test_every_packaged_experiment_is_valid(name):
    from dcgym.agents.training import check_experiment

    experiment = load_experiment(name)
    agents = check_experiment(experiment)
    # check_experiment builds the environment and fits the algorithm to it; some runs train one agent (AuTO,
    # Centr-LB, a single-service colo scenario).
    assert agents, name
