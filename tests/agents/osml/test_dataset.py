"""The OSML data-set tools (dcgym.agents.osml.dataset): the layout round-trips and the fit
recovers the parameters of data the model itself generated with its noise on.

Each case writes a reduced grid (every second core count, all 20 ways, two RPS
levels; Moses also at 20 threads) in OSML's layout and fits it. Tolerances:
the measured quantities (CPU time, instructions, traffic) within 2%, the
miss-rate curve within 3% at every way count, the cliff's position within one
way (the data only see whole ways), cv2 within 0.02, and mlp within 5% for
Moses (whose memory stalls are half its time); for services that hardly miss,
mlp is barely identifiable and not checked.
"""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.agents.osml import dataset as ds
from dcgym.envs.colo import catalog as cc

CATALOG = cc.load_catalog()

CASES = {
    "moses": {"rps": [400.0, 800.0], "threads": [36, 20]},
    "img-dnn": {"rps": [1300.0, 2300.0], "threads": [36]},
}


@pytest.fixture(scope="module", params=list(CASES))
def fitted(request, tmp_path_factory):
    service = request.param
    root = tmp_path_factory.mktemp(service)
    case = CASES[service]
    n = ds.generate(
        CATALOG,
        service,
        root,
        rps_levels=case["rps"],
        threads=case["threads"],
        cores=list(range(2, 37, 2)),
        ways=list(range(1, 21)),
        seed=1,
    )
    assert n == len(case["rps"]) * len(case["threads"]) * 18 * 20
    return service, ds.fit(ds.read_dataset(root, service), CATALOG, service)


def test_fit_recovers_the_parameters(fitted):
    service, got = fitted
    truth = cc.service_config(CATALOG, service)
    assert got["service_ms"] == pytest.approx(truth["service_ms"], rel=0.02)
    assert got["ipc"] == pytest.approx(truth["ipc"], rel=0.02)
    assert got["bytes_per_miss"] == pytest.approx(truth["bytes_per_miss"], rel=0.02)
    assert got["cv2"] == pytest.approx(truth["cv2"], abs=0.02)
    mb = np.arange(1, 21) * 2.25
    want = ds._mrc(np.array([truth["mrc"][k] for k in ("floor", "pow", "alpha", "hot", "hot_mb")]), mb)
    have = ds._mrc(np.array([got["mrc"][k] for k in ("floor", "pow", "alpha", "hot", "hot_mb")]), mb)
    np.testing.assert_allclose(have, want, rtol=0.03)
    if truth["mrc"]["hot"] > 0:
        assert abs(got["mrc"]["hot_mb"] - truth["mrc"]["hot_mb"]) <= 2.25
        assert got["mlp"] == pytest.approx(truth["mlp"], rel=0.05)
    else:
        assert got["mrc"]["hot"] == 0


def test_layout_matches_osml(tmp_path):
    # One file as collect_single.py names it: 0-based core and way indices, no extension.
    path = ds.cell_path(tmp_path, "moses", 36, 800, cores=6, ways=10)
    assert path.relative_to(tmp_path).as_posix() == "moses/36/800/moses+36+800+5+9"
    path.parent.mkdir(parents=True)
    path.write_text(",".join(ds.COLUMNS) + "\n" + "\n".join(",".join(["1.5"] * 9 + [str(30 + k)]) for k in range(10)))
    data = ds.read_dataset(tmp_path, "moses")
    assert data["cores"].tolist() == [6] * 10 and data["ways"].tolist() == [10] * 10
    assert data["Latency"].mean() == pytest.approx(34.5)


def test_missing_data_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="no data for 'moses'"):
        ds.read_dataset(tmp_path, "moses")
