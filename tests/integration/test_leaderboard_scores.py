"""The leaderboard's scores: role-named reference and top columns, a bound no complete run beats, aggregates."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from dcgym.agents.evaluation import evaluate
from dcgym.agents.evaluation.scores import SCORING
from dcgym.envs.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "leaderboard.md"


def _leaderboard():
    spec = importlib.util.spec_from_file_location("dcgym_test_leaderboard", ROOT / "benchmarks/leaderboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_flow_table_scores_every_cell_against_a_bound_no_run_beats(tmp_path):
    lb = _leaderboard()
    scenario = load_scenario("single_link_websearch")
    doc = evaluate(scenario, ["fair", "srpt", "qsjf"], loads=[0.5, 0.8], tasks=800, seeds=[1, 2], workers=0)
    docs = {"flow": [lb.with_scores(doc, scenario)]}
    assert lb.beaten_bounds("flow", docs["flow"]) == []
    text = lb.page(docs, "python benchmarks/leaderboard.py --family flow", 1.0, tmp_path / "page.md")
    assert "| fair (reference, 0) | srpt | qsjf | host-link bound (ideal, 1) |" in text
    assert re.search(
        r"\| single_link_websearch \| 0\.5 \| [\d.]+ ± [\d.]+ \[0\.00\] \| \**[\d.]+ ± [\d.]+ \[(0\.9\d|1\.00)\]", text
    )
    assert re.search(r"\| srpt \| (0\.9\d\d|1\.000) \[", text)  # SRPT is the optimum on one link: IQM near 1
    assert (tmp_path / "results" / "leaderboard_flow.png").is_file()
    # A run reported below its bound is named (and the generator refuses to write the page).
    row = next(r for r in doc["results"] if (r["policy"], r["load"], r["seed"]) == ("srpt", 0.5, 2))
    row["fct_ms"]["mean"] = doc["top"]["0.5"][1] * 0.999
    assert lb.beaten_bounds("flow", docs["flow"]) == [
        f"single_link_websearch srpt 0.5 seed 2: {row['fct_ms']['mean']} vs {doc['top']['0.5'][1]}"
    ]


def test_the_page_calls_no_beaten_column_ideal_and_no_policy_plain_oracle():
    """Every table of docs/leaderboard.md: a top column is named by its role; a column named ideal is never beaten
    by a complete (uncensored) cell of its row."""
    text = PAGE.read_text(encoding="utf-8")
    tables = [t for t in re.split(r"\n\n", text) if t.startswith("| scenario |")]
    assert tables
    for table in tables:
        lines = table.splitlines()
        headers = [h.strip() for h in lines[0].strip("|").split("|")]
        assert "oracle" not in headers and "ideal" not in headers
        ideal = [i for i, h in enumerate(headers) if "(ideal, 1)" in h]
        for line in lines[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            for i in ideal:
                bound = float(cells[i].replace(",", ""))
                for k, c in enumerate(cells[2:], start=2):
                    if k != i and c and c != "-" and "*" not in c:
                        assert float(c.split()[0].strip("*").replace(",", "")) >= bound, (cells[0], headers[k])
    assert all(kind in text for kind in SCORING)
