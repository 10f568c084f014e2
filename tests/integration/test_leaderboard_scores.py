"""The leaderboard's scores: role-named reference and top columns, a bound no complete run beats, aggregates."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from dcgym.agents.evaluation import evaluate
from dcgym.envs.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]


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
    assert lb.page_problems(text) == []
    # A run reported below its bound is named (and the generator refuses to write the page).
    row = next(r for r in doc["results"] if (r["policy"], r["load"], r["seed"]) == ("srpt", 0.5, 2))
    row["fct_ms"]["mean"] = doc["top"]["0.5"][1] * 0.999
    assert lb.beaten_bounds("flow", docs["flow"]) == [
        f"single_link_websearch srpt 0.5 seed 2: {row['fct_ms']['mean']} vs {doc['top']['0.5'][1]}"
    ]


def test_a_page_with_a_bare_oracle_column_or_a_beaten_ideal_is_refused():
    lb = _leaderboard()
    good = "| scenario | load | fair (reference, 0) | srpt | host-link bound (ideal, 1) |\n|---|---:|---:|---:|---:|\n"
    assert lb.page_problems(good + "| s | 0.5 | 30.1 ± 2.0 [0.00] | **20.9 ± 1.9 [1.00]** | 20.876 |") == []
    assert lb.page_problems(good + "| s | 0.5 | 30.1 * | 20.0 ± 1.9 * | 20.876 |") == []  # censored: no evidence
    assert lb.page_problems(good + "| s | 0.5 | 30.1 | **20.1 ± 1.9 [1.04]** | 20.876 |") == [
        "s 0.5: srpt 20.1 below host-link bound (ideal, 1) 20.876"
    ]
    bare = "| scenario | load | sed | oracle |\n|---|---:|---:|---:|\n| s | 0.5 | 1.0 | 2.0 |"
    assert lb.page_problems(bare) == ["column 'oracle' does not say its role"]


def test_lb_rows_have_the_fixed_weight_search_of_the_scenario_and_say_its_role():
    """The lb leaderboard runs the group-pattern bandit's pick beside the heuristics: on lb_sim the search's
    pattern is SED with one weight per server group, and its column says it is the search."""
    lb = _leaderboard()
    scenario = load_scenario("lb_sim")
    chosen = lb.policies("lb", scenario)
    search = [p for p in chosen if str(p).startswith("sed:weights=")]
    assert len(search) == 1 and re.fullmatch(r"sed:weights=[\d.]+;[\d.]+", search[0]), chosen
    assert chosen.index(search[0]) < len(chosen) - len(lb.zoo_policies("lb_sim", "lb"))  # before the zoo's
    doc = {"results": [{"policy": search[0]}, {"policy": "sed"}], "summary": [{"policy": search[0]}], "scores": []}
    assert lb.label_search(doc) == {
        "results": [{"policy": "fixed-weight search"}, {"policy": "sed"}],
        "summary": [{"policy": "fixed-weight search"}],
        "scores": [],
        "fixed_weights": search[0],
    }  # one column, whatever pattern each scenario's search picked
    assert not any(str(p).startswith("sed:weights=") for p in lb.policies("rack", load_scenario("mm16")))


def test_the_published_leaderboard_scores_every_family_and_no_run_beats_an_ideal():
    lb = _leaderboard()
    text = (ROOT / "docs/leaderboard.md").read_text(encoding="utf-8")
    assert lb.page_problems(text) == []
    sections = {s.splitlines()[0].split(":")[0]: s for s in text.split("\n## ")[1:]}
    assert {"rack", "lb", "flow", "colo", "Overall"} <= set(sections), sorted(sections)
    for family in ("rack", "lb", "flow", "colo"):
        section = sections[family]
        assert "(reference, 0)" in section, family  # every table names its reference
        assert "| policy | IQM [95% CI] | optimality gap [95% CI] |" in section, family
        assert (ROOT / "docs" / f"results/leaderboard_{family}.png").is_file(), family
    for family in ("rack", "lb", "flow"):
        assert "(ideal, 1)" in sections[family], family  # a bound: drained rack and lb runs, flow's host links
    assert "| scenario | mix |" in sections["colo"]
    assert "| fixed-weight search |" in sections["lb"]  # the weight-setting learners' action-space column
    assert "fixed-weight search: SED with one fixed weight per server group" in sections["lb"]
    assert "not yet regenerated" not in text.lower()


def test_the_held_out_suite_runs_the_familys_zoo_where_it_applies_and_gets_its_own_table(tmp_path):
    """lb's test suite: each scenario's document is marked as the suite's, the zoo's 2-LB, 8-server policies run on
    the test scenario of their shape and not on the 1-LB one, and the page puts the suite in a table of its own."""
    lb = _leaderboard()
    docs = lb.held_out("lb", {"lb": 300}, 1, 0)
    assert [d["scenario"] for d in docs] == ["lb_test_sim_backlog16", "lb_test_reference_backlog256"]
    assert all(d["suite"] == "test" for d in docs)
    ran = [{r["policy"] for r in d["results"]} for d in docs]
    assert "multilb_distr_lb_sim (zoo)" in ran[0] and not any("(zoo)" in p for p in ran[1]), ran
    assert "multilb_distr_lb_large (zoo)" not in ran[0]  # 6 LBs, 20 servers: not this shape
    assert {"sed", "wcmp", "fixed-weight search"} <= ran[0] & ran[1]
    text = lb.page({"lb": docs}, "python benchmarks/leaderboard.py --family lb", 1.0, tmp_path / "page.md")
    suite = text.split("### lb: the held-out test suite")[1]
    assert "| lb_test_sim_backlog16 |" in suite and "| policy | IQM [95% CI] |" in suite


PAGE = """# Leaderboard

Regenerate: `python benchmarks/leaderboard.py --out docs/leaderboard.md` (110 min).

## rack: racks

| scenario | load | sed | a (zoo) | bound (ideal, 1) |
|---|---:|---:|---:|---:|
| s | 0.5 | **1.0 [0.9]** | 2.0 [0.1] | 0.9 |

| policy | IQM [95% CI] |
|---|---:|
| sed | 0.9 |
| a (zoo) | 0.1 |

## lb: balancers

| scenario | load | sed |
|---|---:|---:|
| t | 0.6 | 3.0 |

## Overall

| policy | IQM [95% CI] |
|---|---:|
| sed | 0.8 |
"""


def test_one_familys_part_replaces_its_own_and_keeps_the_rest_unless_more_than_the_zoo_changed():
    """--family on a page of several families: the family's part is spliced in, the rest (lb, Overall, header)
    kept; refused when a non-zoo cell or row changed (the Overall table could be stale), bold marks and the
    order of aggregate rows aside."""
    lb = _leaderboard()
    rack_only = PAGE.split("## lb:")[0].replace("(110 min)", "(19 min)") + "## Overall\n\nrack's own\n"
    new = rack_only.replace("**1.0 [0.9]** | 2.0 [0.1]", "1.0 [0.9] | **0.95 [0.95]**").replace(
        "| sed | 0.9 |\n| a (zoo) | 0.1 |", "| a (zoo) | 0.95 |\n| sed | 0.9 |"
    )
    out = lb.splice(PAGE, new, ["rack"])
    assert "**0.95 [0.95]**" in out and "| a (zoo) | 0.95 |\n| sed | 0.9 |" in out
    assert out.split("## lb:")[1] == PAGE.split("## lb:")[1]  # lb and Overall as they were
    assert "(110 min)" in out and "rack's own" not in out
    changed = new.replace("1.0 [0.9] |", "1.1 [0.8] |")
    with pytest.raises(ValueError, match="rack: results other than the zoo's changed"):
        lb.splice(PAGE, changed, ["rack"])
    with pytest.raises(ValueError, match="rack: results other than the zoo's changed"):
        lb.splice(PAGE, new.replace("| sed | 0.9 |", "| sed | 0.7 |"), ["rack"])
    with pytest.raises(ValueError, match="no section of the family colo"):
        lb.splice(PAGE, new, ["colo"])


def test_the_family_option_on_the_published_page_keeps_the_others_or_refuses(tmp_path, capsys):
    """A quick rack run against a copy of the published page: its rack rows are not the page's (tiny runs), so the
    splice is refused with one line and the page is left as it was."""
    lb = _leaderboard()
    page = tmp_path / "leaderboard.md"
    page.write_text((ROOT / "docs" / "leaderboard.md").read_text(encoding="utf-8"), encoding="utf-8")
    before = page.read_bytes()
    assert lb.main(["--family", "rack", "--quick", "--workers", "0", "--out", str(page)]) == 1
    assert "rack: results other than the zoo's changed" in capsys.readouterr().err
    assert page.read_bytes() == before
