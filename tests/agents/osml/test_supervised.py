"""OSML's Models A and B: they learn a known mapping, Model-B's loss ignores zero labels, the labels follow
the data set's surface, and the command refuses bad input with one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from dcgym.agents.osml import supervised as sv


def _synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 10.0, size=(n, 9))
    # a smooth, known mapping of two outputs, like OAA cores and ways from the counters
    y = np.stack([2.0 + 0.8 * x[:, 0] + 0.3 * x[:, 3], 1.0 + 0.5 * x[:, 4] * x[:, 8] / 10.0], axis=1)
    return x, y, np.arange(n)


def test_model_a_learns_a_known_mapping():
    x, y, groups = _synthetic(4000, 0)
    model = sv.fit_model("A", x, y, groups, [f"f{i}" for i in range(9)], ["a", "b"], sv.TrainConfig(epochs=40))
    mae = model.metrics["test_mae"]
    # the outputs span about 10 and 5 units; a constant predictor errs by about 2.1 and 1.0 on average
    assert mae["a"] < 0.5 and mae["b"] < 0.3, mae
    assert model.metrics["test_rows"] == 1200


def test_models_round_trip_through_a_file(tmp_path):
    x, y, groups = _synthetic(600, 1)
    model = sv.fit_model("A", x, y, groups, [f"f{i}" for i in range(9)], ["a", "b"], sv.TrainConfig(epochs=2))
    model.save(tmp_path / "m.pt")
    back = sv.Model.load(tmp_path / "m.pt")
    np.testing.assert_array_equal(back.predict(x[:50]), model.predict(x[:50]))


def test_same_seed_same_bits():
    x, y, groups = _synthetic(500, 2)
    cfg = sv.TrainConfig(epochs=2, seed=3)
    a = sv.fit_model("A", x, y, groups, [f"f{i}" for i in range(9)], ["a", "b"], cfg).predict(x)
    b = sv.fit_model("A", x, y, groups, [f"f{i}" for i in range(9)], ["a", "b"], cfg).predict(x)
    np.testing.assert_array_equal(a, b)


def test_model_b_loss_ignores_zero_labels():
    pred = torch.tensor([[1.0, 5.0], [2.0, 0.5]])
    y = torch.tensor([[0.0, 4.0], [3.0, 0.0]])
    # only the two non-zero labels count: ((5 - 4)^2 + (2 - 3)^2) / 4
    assert sv.b_loss(pred, y).item() == pytest.approx(0.5, rel=1e-6)


def test_model_b_learns_a_known_mapping_with_missing_labels():
    rng = np.random.default_rng(4)
    x = rng.uniform(0.0, 1.0, size=(3000, 10))
    y = np.stack([np.round(4 * x[:, 0]), np.round(3 * x[:, 1])], axis=1)
    y[rng.random(len(y)) < 0.3, 1] = 0.0  # missing policies: labelled 0, must not pull the fit
    model = sv.fit_model(
        "B", x, y, np.arange(len(x)), [f"f{i}" for i in range(10)], ["c", "w"], sv.TrainConfig(epochs=40), loss="b"
    )
    pred = model.predict(x)
    has = y[:, 1] > 0
    # on rows with a label the error is well below one unit; the zero labels are not learned as zeros
    assert np.abs(pred[has] - y[has]).mean() < 0.5
    assert pred[~has, 1].mean() > 0.8


def test_deprivations_follow_the_surface():
    # a 4 x 4 surface (cores, ways 1..4): latency falls with cores, ways matter only below 3
    c, w = np.meshgrid(np.arange(1, 5), np.arange(1, 5), indexing="ij")
    c, w = c.ravel(), w.ravel()
    lat = 10.0 / c + np.where(w < 3, 5.0, 0.0)
    at = int(np.flatnonzero((c == 4) & (w == 4))[0])  # latency 2.5
    # 20%: nothing along cores (3 cores: 3.33 > 3.0); one way (w = 3 stays 2.5), then w = 2 adds 5
    assert sv.deprivations(c, w, lat, 100.0, at, 0.20) == [0, 1, 0, 0, 0, 0]
    # 40%: one core (3.33 <= 3.5) and the same way; the diagonal to (3, 3) also fits
    assert sv.deprivations(c, w, lat, 100.0, at, 0.40) == [0, 1, 1, 1, 1, 0]
    # QoS caps the bound
    assert sv.deprivations(c, w, lat, 2.6, at, 0.40) == [0, 1, 0, 0, 0, 0]


def test_bad_config_is_one_line_and_exit_2(tmp_path, capsys):
    assert sv.main([str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "root" in err[0]
    assert sv.main([str(tmp_path), "--out", str(tmp_path / "o"), "--epochs", "0"]) == 2
    assert "epochs" in capsys.readouterr().err


def _small_data_set(root):
    from dcgym.agents.osml import dataset as ds
    from dcgym.envs.colo import catalog as cc

    ds.collect(
        cc.load_catalog(),
        root,
        services=["img-dnn", "xapian"],
        threads=[36],
        rps={"img-dnn": [800.0, 1800.0], "xapian": [1100.0, 2300.0]},
        cores=[2, 6, 12, 18, 24, 36],
        ways=[1, 4, 10, 20],
        seed=1,
        workers=1,
        progress=False,
    )


def test_unseen_services_are_left_out_of_training_and_tested_on_every_row(tmp_path, capsys):
    _small_data_set(tmp_path / "data")
    out = tmp_path / "models"
    assert sv.main([str(tmp_path / "data"), "--out", str(out), "--epochs", "1", "--unseen", "xapian"]) == 0
    report = json.loads((out / "metrics.json").read_text())
    seen_a = sv.build_a(sv.cc.load_catalog(), tmp_path / "data", ["img-dnn"])
    unseen_a = sv.build_a(sv.cc.load_catalog(), tmp_path / "data", ["xapian"])
    for kind in ("A", "B"):
        assert list(report[kind]["test_mae_per_service"]) == ["img-dnn"]  # trained and held out: img-dnn only
        assert list(report[kind]["unseen_mae_per_service"]) == ["xapian"]
    assert report["A"]["train_rows"] + report["A"]["test_rows"] == len(seen_a["x"])
    # the unseen error is the model's on every xapian row
    model = sv.Model.load(out / "model_a.pt")
    mae = np.abs(model.predict(unseen_a["x"]) - unseen_a["y"]).mean(0).round(3)
    assert report["A"]["unseen_mae_per_service"]["xapian"] == dict(zip(sv.A_TARGETS, mae.tolist()))
    assert "Model-A on services it never saw (every row):\n  xapian: OAA_Core" in capsys.readouterr().out
    # an unseen service the data set lacks, or no service left to train on: one line, exit 2
    assert sv.main([str(tmp_path / "data"), "--out", str(out), "--unseen", "moses"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith('error: unseen: got "moses"'), err
    assert sv.main([str(tmp_path / "data"), "--out", str(out), "--unseen", "xapian", "img-dnn"]) == 2
    assert "none left to train" in capsys.readouterr().err


def test_the_scheduler_loads_models_a_and_b_prime_when_the_folder_holds_them(tmp_path):
    from dcgym.agents.osml.scheduler import OSML

    x, y, groups = _synthetic(300, 2)
    model = sv.fit_model("A", x, y, groups, [f"f{i}" for i in range(9)], ["a", "b"], sv.TrainConfig(epochs=1))
    for name in ("model_a", "model_b"):
        model.save(tmp_path / f"{name}.pt")
    plain = OSML(models=str(tmp_path))
    assert plain.model_a is not None and plain.model_a_shadow is None and plain.model_b_shadow is None
    for name in ("model_a_shadow", "model_b_shadow"):
        model.save(tmp_path / f"{name}.pt")
    both = OSML(models=str(tmp_path))
    np.testing.assert_array_equal(both.model_a_shadow.predict(x[:5]), model.predict(x[:5]))
    np.testing.assert_array_equal(both.model_b_shadow.predict(x[:5]), model.predict(x[:5]))
