"""A new user's paths through the commands: relative paths from any folder, the installed commands, quick
failures, one-line errors that name the user's field or file, plain progress in a log, checkpoints that plain
RLlib restores."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcgym import evaluate, export, sweep, train

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
SMOKE = ROOT / "configs/experiments/smoke.yaml"


def run(*args: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=ENV)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder outside the repository with a tiny finished run under the relative path runs/."""
    folder = tmp_path_factory.mktemp("user")
    proc = run(
        sys.executable,
        ROOT / "train.py",
        "--config",
        SMOKE,
        "--out",
        "runs",
        "--set",
        "evaluation.enabled=false",
        cwd=folder,
    )
    assert proc.returncode == 0, proc.stderr
    return folder


def the_run(workdir: Path) -> str:
    (name,) = [p.name for p in (workdir / "runs").iterdir()]
    return f"runs/{name}/"


def test_relative_run_folders_work_for_evaluate_export_and_resume(workdir, cli_here, ray_session):
    """evaluate, export and resume in this process (``cli_here``, on the session's Ray) from the folder above
    runs/ (the run itself was trained by the command)."""
    run_path = the_run(workdir)
    proc = cli_here(
        "evaluate.py", "--policy", run_path, "--policy", "po2", "--loads", "0.8", "--tasks", "2000", "--workers", "0",
        "--out", "ev", "--json", cwd=workdir,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {r["policy"] for r in doc["results"]} == {"ppo (trained)", "po2"}
    assert (workdir / "ev/results.json").is_file()
    proc = cli_here("dcgym.export", run_path, "--out", "ppo.dcpol", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert (workdir / "ppo.dcpol").read_bytes()[:4] and "wrote ppo.dcpol" in proc.stdout
    proc = cli_here("train.py", "--resume", run_path.split("/")[1], "--out", "runs", "--iterations", "3", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    status = json.loads((workdir / run_path / "run.json").read_text())
    assert status["iteration"] == 3 and status["status"] == "finished"


def test_plain_rllib_restores_a_checkpoint_in_a_fresh_process(workdir):
    checkpoint = sorted((workdir / the_run(workdir) / "checkpoints").iterdir())[-1]
    script = (
        "import ray, sys\n"
        "from ray.rllib.algorithms.algorithm import Algorithm\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _node_ip_address='127.0.0.1')\n"
        f"algo = Algorithm.from_checkpoint({str(checkpoint)!r})\n"
        "print('iteration', algo.iteration)\n"
        "algo.stop(); ray.shutdown()\n"
    )
    proc = run(sys.executable, "-c", script, cwd=workdir, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "iteration" in proc.stdout


@pytest.mark.parametrize("command", ["dcgym", "dcgym-train", "dcgym-evaluate", "dcgym-export"])
def test_installed_commands_answer_help_and_version(command):
    path = shutil.which(command, path=str(BIN))
    assert path, f"{command} is not installed beside {sys.executable}"
    proc = run(path, "-h", cwd=ROOT)  # -h is --help (every command's context settings; a test of _app)
    assert proc.returncode == 0 and "usage" in proc.stdout.lower(), proc.stderr
    proc = run(path, "--version", cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("dcgym "), proc.stderr


@pytest.mark.parametrize("command", [train, sweep, evaluate, export])
def test_dash_h_and_dash_dash_help_print_the_same_usage(command, capsys):
    outputs = []
    for flag in ("-h", "--help"):
        assert command.run([flag], prog="cmd") == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "usage" in outputs[0].lower()


def test_python_m_dcgym_lists_scenarios_policies_experiments_and_the_zoo(cli_here):
    """In this process; the same entry starts as a process in the test of the installed ``dcgym`` command."""
    for what, expected in (
        ("scenarios", "malcolm_homog_exp"),
        ("policies", "po2"),
        ("experiments", "smoke"),
        ("zoo", "zoo:"),
    ):
        proc = cli_here("dcgym", "list", what)
        assert proc.returncode == 0 and expected in proc.stdout, (what, proc.stderr)
    proc = cli_here("dcgym", "list", "policies", "--family", "lb")
    assert "ecmp" in proc.stdout and "po2" not in proc.stdout


def test_a_dead_ray_address_fails_within_seconds_with_one_line(tmp_path):
    for command in (["evaluate.py", "--tasks", "1000", "--loads", "0.5,0.6"], ["train.py", "--config", str(SMOKE)]):
        start = time.monotonic()
        proc = run(
            sys.executable,
            ROOT / command[0],
            *command[1:],
            "--address",
            "127.0.0.1:1",
            "--out",
            "out",
            cwd=tmp_path,
            timeout=120,
        )
        line = one_error_line(proc)
        assert "address" in line and "127.0.0.1:1" in line, line
        assert time.monotonic() - start < 60  # the connect check, not Ray's minutes of retries


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--tasks", "10000000000000000000000"], "tasks: got 10000000000000000000000"),
        (["--tasks", "1e22"], '--tasks: got "1e22"; allowed: a valid integer'),  # the spelling
        (["--timeline", "x"], '--timeline: got "x"; allowed: a valid number'),
        (["--timeline", "0"], "--timeline: got 0"),
        (["--out", "a_file"], '--out: got "a_file"; allowed: a folder'),
        (["--scenario", "latin1.yaml"], "latin1.yaml: got bytes that are not UTF-8"),
    ],
)
def test_weak_inputs_get_messages_naming_the_users_field_or_file(tmp_path, monkeypatch, capsys, args, expected):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "latin1.yaml").write_bytes("kind: rack\ndescription: caf\xe9\n".encode("latin-1"))
    monkeypatch.chdir(tmp_path)
    status = evaluate.run(["--loads", "0.5", *args], prog="evaluate.py")  # in-process: the same code as the command
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), (status, err)
    assert expected in lines[0]


def test_a_value_of_the_wrong_type_for_train_names_the_option_and_the_value(tmp_path):
    proc = run(sys.executable, ROOT / "train.py", "--iterations", "many", cwd=tmp_path)
    assert one_error_line(proc) == 'error: --iterations: got "many"; allowed: a valid integer'


def test_a_scenario_given_as_an_experiment_says_so(tmp_path):
    proc = run(sys.executable, ROOT / "train.py", "--config", ROOT / "configs/scenarios/rack/mm1.yaml", cwd=tmp_path)
    assert "this is a scenario file (kind: rack)" in one_error_line(proc)


def test_a_change_after_the_end_of_the_run_is_named_and_progress_is_plain_lines_in_a_log(tmp_path):
    proc = run(
        sys.executable,
        ROOT / "evaluate.py",
        "--scenario",
        "malcolm_adapt_shift",
        "--policy",
        "po2",
        "--policy",
        "random",
        "--loads",
        "0.9",
        "--tasks",
        "20000",
        "--workers",
        "0",
        "--out",
        "out",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "dynamics.0 (split at 500000 us) comes after the end of the runs at load 0.9" in proc.stderr
    assert "\r" not in proc.stderr
    assert "malcolm_adapt_shift: 2/2 runs" in proc.stderr


def test_registered_ids_make_environments_in_a_fresh_process():
    script = (
        "import gymnasium, pettingzoo\n"
        "env = gymnasium.make('dcgym.envs:dcgym/RackCentral-v0', scenario='mm16', load=0.5)\n"  # imports dcgym.envs
        "assert env.spec.max_episode_steps == 1000\n"
        "obs, _ = env.reset(seed=1)\n"
        "lb = pettingzoo.make('parallel', 'dcgym/lb_v0')\n"
        "print(obs.shape, sorted(lb.possible_agents))\n"
    )
    proc = run(sys.executable, "-c", script, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "lb_0" in proc.stdout
