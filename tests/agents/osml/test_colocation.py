"""Co-location sweeps (dcgym.agents.osml.colocation) and Models A' and B' trained on them: the neighbours' columns
are theirs, labels follow OSML's rule within a neighbourhood, the commands write what the scheduler reads."""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.agents.osml import colocation as co
from dcgym.agents.osml import dataset as ds
from dcgym.agents.osml import dataset_cli
from dcgym.agents.osml import supervised as sv
from dcgym.envs.colo import catalog as cc

HOOD = {
    "service": "img-dnn",
    "rps": 800.0,
    "neighbours": [{"service": "xapian", "rps": 1100.0, "cores": 10, "ways": 4}],
}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("coloc")
    path = co.sweep(cc.load_catalog(), root, HOOD, step=5)
    return root, path


def test_sweep_covers_what_the_neighbours_leave_and_records_their_counters(swept):
    root, path = swept
    assert path == root / "img-dnn" / "800+xapian@1100:10:4.csv"
    ((name, data),) = co.read_colocated(root, "img-dnn")
    assert name == path.stem
    cells = sorted({(int(c), int(w)) for c, w in zip(data["cores"], data["ways"])})
    # 36 - 10 cores and 20 - 4 ways are left: 1, 6, ..., 26 cores and 1, 6, 11, 16 ways
    assert cells == [(c, w) for c in range(1, 27, 5) for w in range(1, 17, 5)]
    assert len(data["Latency"]) == len(cells) * ds.SAMPLES
    mb_per_way = cc.platform_config(cc.load_catalog())["mb_per_way"]
    assert set(data["Neighbour_Allocated_Core"]) == {10.0}
    assert set(data["Neighbour_Allocated_Cache"]) == {4 * mb_per_way}
    assert (data["Neighbour_MBL"] > 0).all()
    np.testing.assert_array_equal(data["Allocated_Core"], data["cores"])
    mtime = path.stat().st_mtime_ns
    co.sweep(cc.load_catalog(), root, HOOD, step=5)  # there already: left alone
    assert path.stat().st_mtime_ns == mtime


def test_labels_are_osml_rule_within_the_neighbourhood(swept):
    root, _ = swept
    catalog = cc.load_catalog()
    ((_, data),) = co.read_colocated(root, "img-dnn")
    lab = co.labels(catalog, data, "img-dnn")
    cells = sorted({(int(c), int(w)) for c, w in zip(data["cores"], data["ways"])})
    mean = {cw: data["Latency"][(data["cores"] == cw[0]) & (data["ways"] == cw[1])].mean() for cw in cells}
    qos = cc.qos_ms(catalog, "img-dnn")
    meeting = [cw for cw in cells if mean[cw] < qos]
    cliff = min(meeting, key=lambda cw: (cw[0] + cw[1], cw[0], cw[1]))
    assert (lab["RCliff_Core"], lab["RCliff_Cache"]) == cliff
    assert (lab["OAA_Core"], lab["OAA_Cache"]) == (min(cliff[0] + 2, 26), min(cliff[1] + 2, 16))


def test_model_b_shadow_rows_are_the_slowdown_of_keeping_less(swept):
    root, _ = swept
    catalog = cc.load_catalog()
    rows = sv.build_b_shadow(catalog, root, ["img-dnn"])
    ((_, data),) = co.read_colocated(root, "img-dnn")
    assert rows["x"].shape[1] == len(sv.B_SHADOW_FEATURES) == 14
    qos = cc.qos_ms(catalog, "img-dnn")

    def lat(c, w):
        return data["Latency"][(data["cores"] == c) & (data["ways"] == w)].mean()

    for x, y in zip(rows["x"][:40], rows["y"][:40, 0]):
        c, w = x[sv.B_SHADOW_FEATURES.index("Allocated_Core")], x[sv.B_SHADOW_FEATURES.index("Allocated_Cache")]
        kc, kw = x[-2:]
        ways = w / cc.platform_config(catalog)["mb_per_way"]
        assert kc <= c and kw <= round(ways) and (kc, kw) != (c, round(ways))
        assert lat(c, round(ways)) < qos
        assert y == pytest.approx(min(lat(kc, kw) / lat(c, round(ways)) - 1, sv.MAX_SLOWDOWN))


class NotAsked:
    def predict(self, x):
        raise AssertionError("Model-A asked about a service among neighbours")


def test_commands_sweep_and_train_the_shadows_the_scheduler_uses(tmp_path, capsys):
    from dcgym.agents.osml.scheduler import OSML
    from dcgym.envs.colo.scenario import load_colo_scenario
    from dcgym.envs.colo.server import ColoServer

    assert dataset_cli.main(["colocate", str(tmp_path / "coloc"), "--quick", "--workers", "1"]) == 0
    assert sorted(p.parent.name for p in (tmp_path / "coloc").glob("*/*.csv")) == ["img-dnn"] * 2 + ["moses"] * 2
    ds.collect(
        cc.load_catalog(),
        tmp_path / "data",
        services=["img-dnn"],
        threads=[36],
        rps={"img-dnn": [800.0, 1800.0]},
        cores=[2, 8, 16, 36],
        ways=[1, 6, 20],
        workers=1,
        progress=False,
    )
    out = tmp_path / "models"
    args = [str(tmp_path / "data"), "--out", str(out), "--epochs", "1", "--colocated", str(tmp_path / "coloc")]
    assert sv.main([*args, "--shadows-only"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["metrics_shadow.json", "model_a_shadow.pt", "model_b_shadow.pt"]
    a, b = sv.Model.load(out / "model_a_shadow.pt"), sv.Model.load(out / "model_b_shadow.pt")
    assert a.features == sv.A_SHADOW_FEATURES and b.features == sv.B_SHADOW_FEATURES
    # the scheduler's co-location inputs are what the models were trained on: a placement among neighbours runs
    server = ColoServer(load_colo_scenario("osml_case_a").engine_config(mix=0, seed=1))
    server.advance(1.0)
    s = OSML()
    s.model_a, s.model_a_shadow, s.model_b_shadow = NotAsked(), a, b  # every service has neighbours: Model-A
    s.reset(server, np.random.default_rng(0))
    s.act(server)
    server.advance(1.0)
    s.act(server)
    assert s.decisions[:2] == ["probe", "place"] and (server.cores >= 1).all()
    capsys.readouterr()
    assert sv.main([str(tmp_path / "data"), "--out", str(out), "--shadows-only"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: shadows_only") and "--colocated" in line
