"""The flow engine's single_link mode against exact M/G/1 theory.

single_link is an M/G/1 queue (Poisson arrivals, sizes from a piecewise-linear
CDF, one link), so each discipline has an exact answer (flow_theory.py):
processor sharing (fair, one level), foreground-background (las), SRPT
(srpt), the first level of MLFQ, and the Pollaczek-Khinchine unfinished work
every work-conserving discipline shares. Statistics and tolerances are
explained in flow_checks.py (16 seeds, Z = 4.5, a bound on SE per check).

Run lengths: 10^6 flows per seed (1/20 of them warm-up: an empty start
relaxes within a few busy periods, each ~E[S]/(C(1-rho)^2) ~ 0.35 s here,
far shorter than the ~850 s a 50,000-flow warm-up lasts). The web search
sizes are heavy (1 KB - 30 MB), so per-size estimates for the largest flows
are the noisiest; their SE bounds say so.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from dcgym.cpp_core import flow_workloads

sys.path.insert(0, str(Path(__file__).parent))
import flow_theory as T  # noqa: E402
from flow_checks import GBPS, check_estimate, per_bin, run_seeds, single_link, tabulate  # noqa: E402

FLOWS = 1_000_000
WARMUP = FLOWS // 20
WS = flow_workloads()["web_search"]
PACKET = 1460.0
PIAS_WS = [46, 1084, 1717, 1943, 1989, 1999, 2001]  # PIAS's web-search thresholds, packets


def link(cdf=WS, load: float = 0.8) -> T.Link:
    return T.Link(T.Sizes(cdf, GBPS), load)


def size_edges(lk: T.Link, quantiles=(0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.99, 1.0)) -> np.ndarray:
    return np.array(T.bins_by_quantile(lk, list(quantiles))) * GBPS


# Bound on SE relative to the theory, per size bin, for web search at load 0.8 with 16 x 10^6 flows.
PS_SE = [0.006] * 8
SIZE_AWARE_SE = [0.001, 0.001, 0.001, 0.0015, 0.003, 0.005, 0.01, 0.012]


def check_per_size(runs, lk: T.Link, func, max_se, what: str, bias: float = 0.0) -> None:
    theory = tabulate(func, lk, WS[-1][0], [x for x, _ in WS if x > 0])
    for (lo, hi, est, th), se in zip(per_bin(runs, size_edges(lk), theory), max_se):
        check_estimate(est, float(th.mean()), max_rel_se=se, bias=bias, what=f"{what}, sizes ({lo:.0f}, {hi:.0f}] B")


def test_ps_mean_fct_per_size_is_x_over_one_minus_rho() -> None:
    lk = link()
    runs = run_seeds(single_link("fair", "web_search", 0.8, warmup=WARMUP, record_flows=True), FLOWS)
    check_per_size(runs, lk, T.ps_response, PS_SE, "PS E[T(x)] = x/(1-rho)")


def test_ps_mean_slowdown_is_one_over_one_minus_rho_in_every_bucket() -> None:
    runs = run_seeds(single_link("fair", "web_search", 0.8, warmup=WARMUP), FLOWS)
    expected = T.ps_slowdown(link())  # 5.0: insensitive to the size, so in any set of sizes too
    for bucket in ("all", "small", "medium", "large"):
        values = [r["results"]["slowdown"][bucket]["mean"] for r in runs]
        check_estimate(values, expected, max_rel_se=0.006, what=f"PS mean slowdown ({bucket})")


def test_las_mean_fct_per_size_matches_foreground_background() -> None:
    lk = link()
    runs = run_seeds(single_link("las", "web_search", 0.8, warmup=WARMUP, record_flows=True), FLOWS)
    check_per_size(runs, lk, T.fb_response, SIZE_AWARE_SE, "LAS (FB) E[T(x)]")


def test_srpt_mean_fct_per_size_matches_schrage_miller() -> None:
    lk = link()
    runs = run_seeds(single_link("srpt", "web_search", 0.8, warmup=WARMUP, record_flows=True), FLOWS)
    check_per_size(runs, lk, T.srpt_response, SIZE_AWARE_SE, "SRPT E[T(x)]")


def test_mlfq_with_one_level_is_processor_sharing() -> None:
    """K = 1: no thresholds, so MLFQ is fair sharing; same seed, same bits as `fair`."""
    mlfq = run_seeds(single_link("pias", "web_search", 0.8, levels=1, warmup=WARMUP), FLOWS, seeds=range(1, 4))
    fair = run_seeds(single_link("fair", "web_search", 0.8, levels=1, warmup=WARMUP), FLOWS, seeds=range(1, 4))
    for m, f in zip(mlfq, fair):
        assert m["results"]["fct_s"] == f["results"]["fct_s"]
        assert m["results"]["slowdown"] == f["results"]["slowdown"]


def test_mlfq_first_level_is_processor_sharing_on_truncated_work() -> None:
    """Flows that finish in level 1 (x <= alpha_1) see M/G/1-PS of load lam E[min(S, alpha_1)]."""
    lk = link()
    alpha1 = PIAS_WS[0] * PACKET
    runs = run_seeds(
        single_link(
            "pias",
            "web_search",
            0.8,
            levels=8,
            thresholds=[p * PACKET for p in PIAS_WS],
            warmup=WARMUP,
            record_flows=True,
        ),
        FLOWS,
    )
    theory = lambda sizes: sizes / GBPS / (1.0 - lk.rho_truncated(alpha1 / GBPS))  # noqa: E731
    edges = np.array([1.0, 1e4, 2e4, 3e4, 5e4, alpha1])
    for lo, hi, est, th in per_bin(runs, edges, theory):
        check_estimate(est, float(th.mean()), max_rel_se=0.0015, what=f"MLFQ level 1, sizes ({lo:.0f}, {hi:.0f}] B")


def test_mlfq_with_a_threshold_at_every_packet_is_las() -> None:
    """Sizes of 0-8 packets, thresholds at packets 1..7: MLFQ is FB quantised to packets. Within a packet
    band MLFQ shares equally where FB serves the least attained first, so per packet-sized bin the two may
    differ by a sliver: bias 1% (the runs differ from FB by at most 0.4%), while PS differs by -75%..+132%."""
    cdf = [[0.0, 0.0], [8 * PACKET, 1.0]]
    lk = link(cdf, 0.8)
    runs = run_seeds(
        single_link(
            "pias",
            {"cdf": cdf},
            0.8,
            levels=8,
            thresholds=[k * PACKET for k in range(1, 8)],
            warmup=20_000,
            record_flows=True,
        ),
        400_000,
    )
    fb = tabulate(T.fb_response, lk, 8 * PACKET, np.arange(1, 9) * PACKET)
    ps = tabulate(T.ps_response, lk, 8 * PACKET)
    for lo, hi, est, th in per_bin(runs, np.arange(0, 9) * PACKET, fb):
        check_estimate(
            est,
            float(th.mean()),
            max_rel_se=0.005,
            bias=0.01,
            what=f"MLFQ every packet vs FB, sizes ({lo:.0f}, {hi:.0f}] B",
        )
    far = [abs(est.mean() - t.mean()) / t.mean() for _, _, est, t in per_bin(runs, np.arange(0, 9) * PACKET, ps)]
    assert min(far) > 0.02 and max(far) > 0.5  # and it is nothing like PS


DISCIPLINES = {
    "fair": {"levels": 1},
    "pias": {"levels": 8, "thresholds": [p * PACKET for p in PIAS_WS]},
    "qsjf": {"levels": 4, "thresholds": [1e5, 1e6, 1e7]},
    "las": {},
    "srpt": {},
}


@pytest.mark.parametrize("discipline", sorted(DISCIPLINES))
def test_unfinished_work_is_pollaczek_khinchine_for_every_discipline(discipline: str) -> None:
    """Time-average unfinished bytes = C lam E[S^2] / (2 (1 - rho)) for any work-conserving discipline."""
    lk = link()
    runs = run_seeds(single_link(discipline, "web_search", 0.8, warmup=WARMUP, **DISCIPLINES[discipline]), FLOWS)
    values = [r["results"]["mean_unfinished_bytes"] for r in runs]
    check_estimate(values, T.pk_unfinished_work(lk) * GBPS, max_rel_se=0.006, what=f"{discipline} unfinished work")


def test_unfinished_work_is_the_same_path_for_every_discipline() -> None:
    """Work conservation pathwise: on one link with the same arrivals (common random numbers), every
    discipline leaves the same unfinished work at every instant, so the time averages agree to rounding."""
    means = {}
    for discipline, extra in DISCIPLINES.items():
        runs = run_seeds(single_link(discipline, "web_search", 0.8, warmup=WARMUP, **extra), FLOWS, seeds=range(1, 3))
        means[discipline] = np.array([r["results"]["mean_unfinished_bytes"] for r in runs])
    for discipline, m in means.items():
        np.testing.assert_allclose(m, means["fair"], rtol=1e-9, err_msg=discipline)
