"""Scenario suites: a seeded training generator, a held-out test suite, evaluate.py --suite."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from dcgym.__main__ import main as dcgym
from dcgym.agents.evaluation.suites import applies, generate, held_out, read_suite, suite_families, suite_scenarios
from dcgym.agents.policies.zoo import list_zoo, trained_on, zoo_dir
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import list_scenarios

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("family", suite_families())
def test_the_test_suite_lies_outside_training_and_every_zoo_policy_s_scenario(family):
    train = read_suite(family)["train"]
    cards = " ".join((zoo_dir() / f"{name}.md").read_text() for name in list_zoo())
    entries = suite_scenarios(f"{family}:test")
    assert entries and len({e.name for e in entries}) == len(entries)
    for entry in entries:
        assert entry.load().kind == family and held_out(entry, train)
        assert entry.name not in list_scenarios() and f"--scenario {entry.name}" not in cards
    generated = generate(family, 7, 4)
    assert generated == generate(family, 7, 4)  # same seed, same scenarios
    assert not any(held_out(g, train) for g in generated)
    assert {g.base for g in generated} <= set(train["bases"])
    generated[0].load()


def test_bad_suites_are_refused_naming_suite():
    for bad in ("flow:tset", "nope:test", "rack:train:1:0", "rack:train:x:2", "rack"):
        with pytest.raises(InvalidConfigError) as err:
            suite_scenarios(bad)
        assert err.value.field == "suite"


def test_a_policy_for_a_fixed_rack_applies_only_to_test_scenarios_of_its_shape(tmp_path):
    entries = {e.name: e for e in suite_scenarios("rack:test")}
    same = entries["rack_test_homog_exp_mean30"].write(tmp_path)
    other = entries["rack_test_sim_exp_mean200"].write(tmp_path)
    assert applies("zoo:malcolm_homog_exp", same, 0.8)
    assert not applies("zoo:malcolm_homog_exp", other, 0.7)
    assert applies("po2", other, 0.7)


def test_evaluate_runs_a_suite_into_one_folder_per_scenario(tmp_path, capsys):
    out = tmp_path / "suite"
    argv = ["evaluate", "--suite", "lb:test", "--policy", "wcmp", "--policy", "oracle", "--tasks", "300"]
    assert dcgym([*argv, "--workers", "0", "--out", str(out)]) == 0
    for entry in suite_scenarios("lb:test"):
        assert (out / entry.name / "results.json").is_file() and (out / entry.name / f"{entry.name}.yaml").is_file()
    assert "score" in capsys.readouterr().out
    assert dcgym([*argv, "--scenario", "lb_sim", "--out", str(out)]) == 2


def test_every_zoo_card_reports_its_held_out_gap(tmp_path):
    """Each card's section names its training scenario, the test scenarios it runs on and the gap (or why none),
    and rewriting the section replaces it (benchmarks/zoo_gaps.py)."""
    for name in [*list_zoo(), *list_zoo(entry="folder")]:
        card = (zoo_dir() / f"{name}.md").read_text()
        _, section = card.split("## Held-out gap", 1)
        trained = re.search(r"--scenario (\S+)", card).group(1)
        assert f"training scenario `{trained}`" in section
        assert "train minus test" in section or "no test scenario" in section or "no gap" in section
    spec = importlib.util.spec_from_file_location("dcgym_test_zoo_gaps", ROOT / "benchmarks/zoo_gaps.py")
    gaps = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gaps)
    card = tmp_path / "x.md"
    card.write_text("# x\n\nintro\n")
    for text in ("## Held-out gap\n\nfirst\n", "## Held-out gap\n\nsecond\n"):
        gaps.write(card, text)
    assert card.read_text() == "# x\n\nintro\n\n## Held-out gap\n\nsecond\n"


def test_trained_on_is_the_scenario_a_cards_evaluate_command_names(tmp_path):
    (tmp_path / "a.md").write_text(
        "# a\n\nEvaluate: `python evaluate.py --policy zoo:a --scenario lb_sim --policy sed`.\n"
    )
    (tmp_path / "b.md").write_text("# b\n\nno command\n")
    assert trained_on("a", tmp_path) == "lb_sim"
    assert trained_on("b", tmp_path) is None and trained_on("missing", tmp_path) is None
