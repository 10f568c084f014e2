"""benchmarks/multilb_static_weights.py (the analysis behind docs/results/multilb.md) runs in its smoke mode and
its ceiling never loses to the heuristics it contains (SED's own weights and LSQ's equal ones are patterns)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks/multilb_static_weights.py"


def run(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_ceiling_quick_names_every_scenario_and_the_switch():
    lines = run("ceiling", "--quick").strip().splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "lb_sim",
        "lb_sim_cpu75_io25",
        "lb_sim_cpu50_io50",
        "lb_sim_cpu25_io75",
        "lb_capacity_change",
    ]
    assert "best switched" in lines[-1]
    # 1 / 1 is LSQ with SED's divisors all equal: the best fixed pattern is never worse than LSQ.
    for line in lines:
        lsq = float(re.search(r"LSQ (\S+)", line).group(1))
        best = float(re.search(r"best fixed \S+ / \S+ (\S+)", line).group(1))
        assert best <= lsq + 1e-12, line


def test_rewards_quick_tables_every_reward_without_and_with_noise_and_how_each_ranks_the_patterns():
    blocks = [b.strip().splitlines() for b in run("rewards", "--quick").split("\n\n") if b.strip().startswith("|")]
    assert len(blocks) == 3  # noise 0, noise 0.25, the ranking summary
    for table in blocks[:2]:
        assert table[0].startswith("| weights (1-CPU / 2-CPU) | mean FCT (s) | vbf | log_vbf |")
        assert table[0].endswith("| jain | fct |")
        assert len(table) == 2 + 2 and all(line.count("|") == 11 for line in table)
    summary = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in blocks[2][2:]}
    assert list(summary) == ["vbf", "log_vbf", "vbf_log_vbf", "pbf_normalized", "makespan", "cv", "jain", "fct"]
    # fct is the FCT's own ranking: the lower-FCT pattern (1 / 1.5 on lb_sim) gets the higher return, noise or not
    fct_gaps = [float(summary["fct"][k]) for k in (1, 4)]
    assert all(gap > 0 for gap in fct_gaps), summary["fct"]


def test_a_fixed_weight_pattern_runs_in_the_engine_as_sed_with_weights_per_group():
    from dcgym.agents.evaluation import evaluate
    from dcgym.envs.error import InvalidConfigError

    def rows(*specs):
        doc = evaluate("lb_sim", list(specs), [0.845], tasks=300, workers=0, progress=False)
        return {r["policy"]: {k: v for k, v in r.items() if k not in ("policy", "wall_s")} for r in doc["results"]}

    got = rows("sed", "sed:weights=1;2", "sed:weights=1;1.5")
    assert got["sed:weights=1;2"] == got["sed"]  # SED's own divisors: workers x speed, 1 : 2 on lb_sim
    assert got["sed:weights=1;1.5"] != got["sed"]
    for bad in ("sed:weights=1", "lsq:weights=1;2", "sed:weights=1;-1", "sed:w=1;2"):
        with pytest.raises(InvalidConfigError, match="sed or wcmp:weights=W1;...;W2"):
            rows(bad)


def test_bandit_quick_tables_each_round_and_compares_its_pick_with_sed():
    """Rounds keep ceil(half) of the patterns (9, 5, 3, 2 on two groups), and the summary's percentage is the one its
    two mean FCTs give."""
    out = run("bandit", "--quick")
    rounds = [line for line in out.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [sum(cell.strip() != "" for cell in r.split("|")[3:-1]) for r in rounds] == [9, 5, 3, 2]
    m = re.search(r"picked (\S+) / (\S+) after (\d+) episodes: mean FCT (\S+) s against SED's (\S+) s \((\S+)%", out)
    assert m, out
    assert int(m[3]) == 9 + 5 * 2 + 3 * 4 + 2 * 8
    assert float(m[6]) == pytest.approx(100 * (float(m[4]) / float(m[5]) - 1), abs=0.06)


def test_multilb_results_quick_rows_are_the_arithmetic_of_their_means():
    """benchmarks/multilb_results.py --quick: one lb_sim row; the best heuristic is named, and the gap closed is
    (best - learner) / (best - Oracle) of the printed means (to their rounding)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/multilb_results.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| `lb_sim` |")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    best = re.fullmatch(r"(ECMP|WCMP|LSQ|SED) ([\d.]+)", cells[2])
    assert best and re.fullmatch(r"[\d.]+ / [\d.]+: [\d.]+", cells[3])
    b, learner, oracle = float(best[2]), float(cells[4]), float(cells[5])
    if b > oracle:
        assert float(cells[8].rstrip("%")) == pytest.approx(
            100 * (b - learner) / (b - oracle), abs=0.5 + 0.05 / (b - oracle)
        )
