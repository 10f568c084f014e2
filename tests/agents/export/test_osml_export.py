"""OSML's Models A, B and C exported as policy files (agents/export/osml_policies.py): the files round-trip, the C++
runtime's outputs agree with the trained PyTorch and RLlib models within 1e-5 of their scale, the scheduler run from
the files decides as it does from the models, and evaluate.py runs a folder of them (``osml:files=DIR``, ``zoo:NAME``)
or refuses a bad one with one line and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from dcgym.agents import policy_format as fmt
from dcgym.agents.export.osml_policies import export_osml, load_model_c, model_c_policy, supervised_policy
from dcgym.agents.osml import model_c as mc
from dcgym.agents.osml import supervised as sv
from dcgym.agents.osml.features import A_FEATURES, A_TARGETS, B_FEATURES, B_TARGETS
from dcgym.agents.osml.files import load_files
from dcgym.agents.osml.scheduler import OSML
from dcgym.cpp_core import RuntimePolicy
from dcgym.envs.colo.scenario import load_colo_scenario
from dcgym.envs.colo.server import COUNTERS, ColoServer
from dcgym.envs.error import InvalidConfigError

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _counters(seconds: int = 30) -> np.ndarray:
    """Real counters: every running service's row, every second of an equal split on osml_case_a's first mix."""
    server = ColoServer(load_colo_scenario("osml_case_a").engine_config(mix=0, seed=3))
    rows = []
    for t in range(seconds):
        server.advance(1.0)
        if t == 0:
            n = server.num_services
            server.allocate([12 - 2 * i for i in range(n)], [6 - i for i in range(n)])
        rows.append(server.counters[server.running])
    return np.concatenate(rows)


def _trained(kind: str, seed: int = 0) -> sv.Model:
    """Model-A or Model-B trained (2 epochs) on real counters with made-up targets of OSML's kind and scale: the
    export is under test, not the model. The frequency is constant on the colo model (2300 MHz), as in OSML's data."""
    raw = _counters()
    x = raw[:, [COUNTERS.index(k) for k in A_FEATURES]].astype(np.float64)
    rng = np.random.default_rng(seed)
    if kind == "B":
        x = np.concatenate([x, rng.choice(sv.B_SLOWDOWNS, size=(len(x), 1))], axis=1)
    names, targets = (A_FEATURES, A_TARGETS) if kind == "A" else (B_FEATURES, B_TARGETS)
    y = np.abs(rng.normal(size=(len(x), len(targets)))) * np.array([6, 3, 5, 2, 3000, 1][: len(targets)]) + 2
    if kind == "B":
        y[:, 0] = 0.0  # ways-only cores: always 0, as in the data
    return sv.fit_model(
        kind,
        x,
        y,
        np.arange(len(x)) // 3,
        list(names),
        list(targets),
        sv.TrainConfig(epochs=2, seed=seed),
        loss="b" if kind == "B" else "mse",
    )


def _model_c(seed: int = 0):
    from dcgym.agents.osml.model_c_rllib import ModelCModule

    space = gym.spaces.Dict(
        {
            "observation": gym.spaces.Box(0.0, np.finfo(np.float32).max, (8,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (49,), np.int8),
        }
    )
    model_config = {"hidden": [30, 30, 30], "init_std": 0.3, "epsilon": [(0, 0.05), (1, 0.05)], "seed": seed}
    return ModelCModule(observation_space=space, action_space=gym.spaces.Discrete(49), model_config=model_config)


def _trained_shadow(kind: str, seed: int) -> sv.Model:
    """Model-A' or Model-B' trained (2 epochs) on real counters, made-up neighbour inputs (and, for B', the cores
    and ways kept) and made-up targets (OAA and RCliff in cores and ways of OSML's scale; slowdowns large enough to tell units apart)."""
    raw = _counters()
    rng = np.random.default_rng(seed)
    own = raw[:, [COUNTERS.index(k) for k in A_FEATURES]].astype(np.float64)
    neighbours = rng.uniform(0, 1, (len(own), 3)) * np.array([8000.0, 30.0, 24.0])
    x = np.concatenate([own, neighbours], axis=1)
    if kind == "B'":
        x = np.concatenate([x, rng.integers(1, 12, (len(x), 2)).astype(np.float64)], axis=1)
        names, targets, y = sv.B_SHADOW_FEATURES, sv.B_SHADOW_TARGETS, 12 + rng.uniform(0, 10, (len(x), 1))
    else:
        names, targets = sv.A_SHADOW_FEATURES, A_TARGETS
        y = np.abs(rng.normal(size=(len(x), len(targets)))) * np.array([6, 3, 5, 2, 3000]) + 2
    return sv.fit_model(kind, x, y, np.arange(len(x)) // 3, list(names), list(targets), sv.TrainConfig(2, seed=seed))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A models folder (model_a.pt, model_b.pt and Models A' and B'), a Model-C module folder, and their export."""
    root = tmp_path_factory.mktemp("osml")
    (root / "models").mkdir()
    _trained("A", 0).save(root / "models" / "model_a.pt")
    _trained("B", 1).save(root / "models" / "model_b.pt")
    _trained_shadow("A'", 3).save(root / "models" / "model_a_shadow.pt")
    _trained_shadow("B'", 4).save(root / "models" / "model_b_shadow.pt")
    _model_c(2).save_to_path(str(root / "model_c"))
    export_osml(root / "models", root / "model_c", root / "files")
    return root


def _inputs(model: sv.Model, n: int, seed: int) -> np.ndarray:
    """Random rows over 1.5x the model's training range (each counter's, around its min); a counter constant in
    training keeps its value, as on the colo model."""
    rng = np.random.default_rng(seed)
    span = model.x_max - model.x_min
    return model.x_min - 0.25 * span + rng.uniform(0, 1.5, (n, len(span))) * span


@pytest.mark.parametrize("kind", ["a", "b", "a_shadow", "b_shadow"])
def test_models_a_and_b_and_their_shadows_agree_with_the_trained_models(trained, kind):
    model = sv.Model.load(trained / "models" / f"model_{kind}.pt")
    runtime = RuntimePolicy.from_file(str(trained / "files" / f"model_{kind}.dcpol"))
    assert (runtime.kind, runtime.head, runtime.num_inputs) == ("mlp", "identity", len(model.features))
    x = _inputs(model, 2000, seed=7)
    want = model.predict(x)
    got = runtime.outputs(x.astype(np.float32))
    assert got.shape == want.shape
    assert np.abs(want).max() > 10  # outputs in the data set's units (cores, ways, MB/s), not normalized ones
    # within 1e-5 of each output's training range (the network's own, normalized, output): float32 carries 7
    # digits, and both sides round the bandwidth (MB/s, a range of thousands) to a few thousandths
    span = np.where(model.y_max > model.y_min, model.y_max - model.y_min, 1.0)
    err = np.abs(got - want) / span
    assert err.max() < 1e-5, err.max()
    # and the Python reader reads what the runtime reads: the same layers, the scaling layer first
    policy = fmt.read_policy(trained / "files" / f"model_{kind}.dcpol")
    assert [layer.activation for layer in policy.networks[0]] == ["identity", "relu", "relu", "relu", "identity"]


def test_model_c_agrees_with_the_trained_module(trained):
    from ray.rllib.core.rl_module.rl_module import RLModule

    module = RLModule.from_checkpoint(str(trained / "model_c"))
    runtime = RuntimePolicy.from_file(str(trained / "files" / "model_c.dcpol"))
    rng = np.random.default_rng(11)
    obs = (rng.uniform(0, 1, (2000, 8)) ** 3 * mc.FEATURE_MAX).astype(np.float32)  # small values common, as counters
    mask = (rng.random((2000, 49)) < 0.6).astype(np.int8)
    with torch.no_grad():
        want = module.compute_q_values(
            {"obs": {"observation": torch.as_tensor(obs), "action_mask": torch.as_tensor(mask)}}
        )["qf_preds"].numpy()
    got = runtime.outputs(mc.normalize(obs).astype(np.float32))
    allowed = mask > 0
    # within 1e-5 of the observation's largest |Q| (float32 rounding scales with the terms summed)
    scale = np.maximum(1.0, np.abs(got).max(1, keepdims=True))
    err = np.abs(got - want)[allowed] / np.broadcast_to(scale, got.shape)[allowed]
    assert err.max() < 1e-5, err.max()
    assert np.isinf(want[~allowed]).all()
    # the scheduler's reader masks as the module does
    _, _, q_values = load_files(trained / "files")
    q = q_values(obs, mask)
    assert np.isinf(q[~allowed]).all() and np.array_equal(q.argmax(1), want.argmax(1))


def test_round_trip_keeps_every_parameter(trained):
    model = sv.Model.load(trained / "models" / "model_a.pt")
    policy = supervised_policy(model)
    back = fmt.from_bytes(fmt.to_bytes(policy))
    assert back.head == "identity" and back.num_inputs == 9 and back.num_outputs == 5
    for a, b in zip(policy.networks[0], back.networks[0]):
        np.testing.assert_array_equal(np.asarray(a.weight, np.float32), b.weight)
        np.testing.assert_array_equal(np.asarray(a.bias, np.float32), b.bias)
    module = load_model_c(trained / "model_c")
    c = fmt.from_bytes(fmt.to_bytes(model_c_policy(module)))
    assert (c.num_inputs, c.num_outputs, len(c.networks[0])) == (8, 49, 4)
    weights = [m.weight.detach().numpy() for m in module.qnet if isinstance(m, torch.nn.Linear)]
    for w, layer in zip(weights, c.networks[0]):
        np.testing.assert_array_equal(w, layer.weight)


def _decisions(scheduler: OSML, seconds: int = 40) -> tuple[list[str], list[tuple[list[int], list[int]]]]:
    server = ColoServer(load_colo_scenario("osml_case_a").engine_config(mix=0, seed=5))
    scheduler.reset(server, np.random.default_rng(5))
    allocations = []
    for _ in range(seconds):
        scheduler.act(server)
        allocations.append((server.cores.tolist(), server.ways.tolist()))
        server.advance(1.0)
    return scheduler.decisions, allocations


def test_scheduler_from_files_decides_as_from_the_trained_models(trained):
    from_models = _decisions(OSML(models=str(trained / "models"), model_c=str(trained / "model_c")))
    files = OSML(files=str(trained / "files"))
    assert files.model_a_shadow is not None and files.model_b_shadow is not None  # Models A' and B' from files too
    from_files = _decisions(files)
    decisions = from_models[0]
    # every model had a say: Model-A placed the services, Model-C resized them
    assert "place" in decisions and {"upsize", "downsize"} & set(decisions), decisions
    assert from_files == from_models


def test_a_folder_records_the_schedulers_parameters_and_a_parameter_given_overrides_them(trained, tmp_path):
    out = tmp_path / "files"
    export_osml(trained / "models", trained / "model_c", out, {"reclaim": "code", "rule": "code"})
    assert fmt.read_policy(out / "model_c.dcpol").settings == {"model": "model_c", "reclaim": "code", "rule": "code"}
    recorded = OSML(files=str(out))
    assert (recorded.rule, recorded.reclaim) == ("code", "code")
    given = OSML(files=str(out), reclaim="always")
    assert (given.rule, given.reclaim) == ("code", "always")
    plain = OSML(files=str(trained / "files"))
    assert (plain.rule, plain.reclaim) == ("paper", "always")  # nothing recorded: the defaults
    assert plain.model_a_shadow is not None and plain.model_b_shadow is not None  # shadows on by default
    export_osml(trained / "models", trained / "model_c", out, {"shadows": "off"})
    off = OSML(files=str(out))
    assert off.model_a_shadow is None and off.model_b_shadow is None  # in the folder, but left unused
    assert OSML(files=str(out), shadows="on").model_a_shadow is not None
    with pytest.raises(InvalidConfigError, match='reclaim: got "sometimes"; allowed: one of always, code'):
        export_osml(trained / "models", trained / "model_c", tmp_path / "bad", {"reclaim": "sometimes"})
    with pytest.raises(InvalidConfigError, match="slowdown: .*a parameter among rule, reclaim"):
        export_osml(trained / "models", trained / "model_c", tmp_path / "bad", {"slowdown": "0.1"})
    assert not (tmp_path / "bad").exists()


def test_bad_folders_and_files_are_refused_naming_files(trained, tmp_path):
    with pytest.raises(InvalidConfigError, match="files: got .*nowhere.*allowed: a folder"):
        OSML(files=str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidConfigError, match="holding model_a.dcpol"):
        OSML(files=str(tmp_path / "empty"))
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in ("model_a.dcpol", "model_b.dcpol"):
        (bad / f).write_bytes((trained / "files" / f).read_bytes())
    (bad / "model_c.dcpol").write_bytes((trained / "files" / "model_a.dcpol").read_bytes())  # A's file as C's
    with pytest.raises(InvalidConfigError, match="model_c.dcpol is an mlp with the identity head, 8 inputs and 49"):
        OSML(files=str(bad))
    data = bytearray((trained / "files" / "model_b.dcpol").read_bytes())
    data[-1] ^= 0xFF
    (bad / "model_b.dcpol").write_bytes(bytes(data))
    with pytest.raises(InvalidConfigError, match="model_b.dcpol is a valid policy file .*checksum"):
        OSML(files=str(bad))
    with pytest.raises(InvalidConfigError, match="files: .*instead of models"):
        OSML(files=str(trained / "files"), models=str(trained / "models"))


def _evaluate(cli_here, *args: str, zoo: Path | None = None) -> subprocess.CompletedProcess:
    """evaluate.py on OSML's case A, run in this process (tests/conftest.py, ``cli_here``)."""
    return cli_here(
        "evaluate.py", "--scenario", "osml_case_a", "--tasks", "20", "--seed", "1", "--workers", "0", *args,
        env={"DCGYM_ZOO": str(zoo)} if zoo else {},
    )  # fmt: skip


def test_evaluate_runs_a_folder_and_a_zoo_entry(trained, tmp_path, cli_here):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    (zoo / "osml_test").mkdir()
    for f in (trained / "files").glob("*.dcpol"):  # A, B, C and Models A' and B'
        (zoo / "osml_test" / f.name).write_bytes(f.read_bytes())
    proc = _evaluate(
        cli_here, "--policy", f"osml:files={trained / 'files'}", "--policy", "zoo:osml_test", "--policy", str(trained / "files"),
        "--out", str(tmp_path / "o"), "--json", zoo=zoo,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    doc = json.loads(proc.stdout)
    rows = {r["policy"]: r for r in doc["results"]}
    assert set(rows) == {f"osml:files={trained / 'files'}", "osml_test (zoo)", "files (files)"}
    a, b, c = rows.values()
    assert a["final_cores"] == b["final_cores"] == c["final_cores"] and a["actions"] == b["actions"] == c["actions"] > 0


def test_evaluate_refuses_a_bad_folder_with_one_line_and_exit_2(trained, tmp_path, cli_here):
    zoo = tmp_path / "zoo"
    (zoo / "osml_bad").mkdir(parents=True)
    (zoo / "osml_bad" / "model_a.dcpol").write_bytes(b"DCGYMPOL" + bytes(10))
    for spec, field in (
        (f"osml:files={tmp_path / 'missing'}", "files"),
        ("zoo:osml_bad", "model_b.dcpol"),
        ("zoo:osml_nothere", "zoo:osml_bad"),  # the error lists the zoo's folders
        (str(trained / "files" / "model_a.dcpol"), "zoo:NAME of OSML's models"),
    ):
        proc = _evaluate(cli_here, "--policy", spec, "--out", str(tmp_path / "o"), zoo=zoo)
        assert proc.returncode == 2, (spec, proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0], (spec, proc.stderr)


def _fake_model_c_run(root: Path, module_dir: Path) -> Path:
    """A train.py run folder of osml_dqn around a saved Model-C module (what build_zoo.py reads of a run)."""
    import json
    import shutil

    run = root / "osml_single__osml_dqn__1__123"
    checkpoint = run / "checkpoints" / "iter_000003"
    shutil.copytree(module_dir, checkpoint / "learner_group" / "learner" / "rl_module" / "shared")
    (checkpoint / "dcgym_checkpoint.json").write_text(json.dumps({"iteration": 3, "timesteps": 600}))
    (run / "run.json").write_text(
        json.dumps(
            {
                "commands": ["train.py --config configs/experiments/osml_dqn_single.yaml --out runs"],
                "run_name": run.name,
                "status": "finished",
            }
        )
    )
    (run / "config.yaml").write_text(
        "env: colo_v0\nscenario: osml_single\nalgorithm: osml_dqn\nseed: 1\nbudget: {iterations: 3}\n"
    )
    return run


def test_build_zoo_makes_an_osml_folder_with_its_card_and_the_leaderboard_runs_it(trained, tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import build_zoo
        import leaderboard
    finally:
        sys.path.pop(0)
    from dcgym.agents.policies.zoo import ZOO_ENV, list_zoo, resolve_zoo

    run = _fake_model_c_run(tmp_path, trained / "model_c")
    zoo = tmp_path / "zoo"
    args = ["--osml-models", str(trained / "models"), str(run), "--name", "osml_t", "--out", str(zoo)]
    assert build_zoo.run([*args, "--commit", "0123abc", "--made-with", "python step_one.py"]) == 0
    for f in ("model_a.dcpol", "model_b.dcpol", "model_c.dcpol", "model_a_shadow.dcpol", "model_b_shadow.dcpol"):
        assert (zoo / "osml_t" / f).read_bytes() == (trained / "files" / f).read_bytes(), f
        assert (zoo / "osml_t" / f).stat().st_size < 300_000  # the zoo is in git
    card = (zoo / "osml_t.md").read_text()
    for part in ("config `configs/experiments/osml_dqn_single.yaml`", "seed 1", "commit 0123abc", "iter_000003",
                 "python step_one.py", "--policy zoo:osml_t", "Model-A trained on"):  # fmt: skip
        assert part in card, part
    monkeypatch.setenv(ZOO_ENV, str(zoo))
    assert list_zoo() == [] and list_zoo(entry="folder") == ["osml_t"]
    assert resolve_zoo("zoo:osml_t", entry="folder") == zoo / "osml_t"
    assert leaderboard.zoo_policies("osml_case_a", "colo") == ["zoo:osml_t"]
    assert leaderboard.zoo_policies("lb_sim", "lb") == []
    # one run and a name, or one line and exit 2
    assert build_zoo.run(["--osml-models", str(trained / "models"), str(run), "--out", str(zoo)]) == 2
    assert build_zoo.run(["--osml-models", str(tmp_path), str(run), "--name", "x", "--out", str(zoo)]) == 2


def test_export_cli_writes_the_three_files_or_one_line_and_exit_2(trained, tmp_path, cli_here):
    def export(*args: str) -> subprocess.CompletedProcess:
        return cli_here("dcgym.export", *args)

    out = tmp_path / "out"
    proc = export(str(trained / "model_c"), "--osml-models", str(trained / "models"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("wrote ") == 5  # A, B, C and Models A' and B'
    for f in ("model_a.dcpol", "model_b.dcpol", "model_c.dcpol", "model_a_shadow.dcpol", "model_b_shadow.dcpol"):
        assert (out / f).read_bytes() == (trained / "files" / f).read_bytes(), f
    proc = export(str(trained / "model_c"), "--osml-models", str(tmp_path / "none"), "--out", str(tmp_path / "o2"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: models: got "), proc.stderr
    proc = export(str(tmp_path), "--osml-models", str(trained / "models"), "--out", str(tmp_path / "o3"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: model_c: got "), proc.stderr
    assert not (tmp_path / "o3").exists()  # nothing written when a model is missing


def test_the_zoo_entry_runs_with_the_schedulers_parameters():
    from dcgym.agents.evaluation import evaluate

    doc = evaluate(
        "osml_case_a",
        ["zoo:osml_colo:rule=code", "osml:files=zoo/osml_colo,rule=code", "zoo:osml_colo"],
        tasks=30,
        seeds=[2],
        workers=0,
        progress=False,
    )
    a, b, c = doc["results"]
    assert (a["policy"], c["policy"]) == ("osml_colo:rule=code (zoo)", "osml_colo (zoo)")
    same = ("final_cores", "final_ways", "actions", "qos_met_fraction")
    assert all(a[k] == b[k] for k in same)  # the options are the scheduler's parameters
    with pytest.raises(InvalidConfigError, match="other than files, models, model_c"):
        evaluate("osml_case_a", ["zoo:osml_colo:files=x"], tasks=10, workers=0, progress=False)
