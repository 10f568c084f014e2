"""Hostile input to the commands, run in this process (no Ray, no runs): one ``error:`` line naming the field or
option, the value and what is allowed, exit status 2; never a traceback, a hang or a memory blow-up."""

from __future__ import annotations

import pytest

from dcgym import catalog, evaluate, train
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import FAMILIES

SCENARIO = {"rack": "mm16", "lb": "lb_sim", "flow": "single_link_websearch", "colo": "osml_single"}
"""A small packaged scenario of each family."""


def one_error_line(capsys, status: int) -> str:
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), (status, err)
    return lines[0]


def test_every_family_has_a_scenario_here():
    assert set(SCENARIO) == set(FAMILIES)


@pytest.mark.parametrize("kind", sorted(SCENARIO))
def test_a_deeply_nested_scenario_file_is_refused_with_its_depth(tmp_path, capsys, kind):
    path = tmp_path / "deep.yaml"
    path.write_text(f"kind: {kind}\nx: " + "[" * 5_000 + "\n")  # PyYAML alone overflows the stack
    line = one_error_line(capsys, evaluate.run(["--scenario", str(path), "--out", str(tmp_path / "out")]))
    assert "deep.yaml" in line and "nested deeper than 200 levels" in line, line


@pytest.mark.parametrize("kind", sorted(SCENARIO))
def test_a_repeated_key_is_refused_naming_it_and_its_line(tmp_path, capsys, kind):
    path = tmp_path / "twice.yaml"
    path.write_text(f"kind: {kind}\ndescription: a\nkind: rack\n")
    line = one_error_line(capsys, evaluate.run(["--scenario", str(path), "--out", str(tmp_path / "out")]))
    assert "'kind' given twice" in line and "line 3" in line, line


def test_an_exponent_without_a_dot_is_a_number_in_files_and_in_set(tmp_path, capsys):
    from dcgym.envs.yaml_text import parse

    assert parse("a: 1e12\nb: -2E-3\nc: '1e12'\nd: 1_0e2") == {"a": 1e12, "b": -2e-3, "c": "1e12", "d": 1000.0}
    line = one_error_line(capsys, train.run(["--config", "smoke", "--set", "seed=1e30"]))
    assert line.startswith("error: seed: got 1e+30; allowed: an integer in"), line  # a number out of range


@pytest.mark.parametrize("seeds", ["99999999999999999999", "10001"])
def test_a_huge_seed_count_is_refused_before_any_run(tmp_path, capsys, seeds):
    line = one_error_line(capsys, evaluate.run(["--seeds", seeds, "--out", str(tmp_path)]))
    assert f'seeds: got "{seeds}"' in line and "a count at most 10000" in line, line


@pytest.mark.parametrize("hidden", ["[0]", "[-5]", "[64, 0]"])
def test_hidden_layer_sizes_are_checked_before_ray_starts(capsys, hidden):
    line = one_error_line(capsys, train.run(["--config", "smoke", "--set", f"hyperparameters.hidden={hidden}"]))
    assert "hyperparameters.hidden." in line and "allowed: an integer in [1, 65536]" in line, line


def test_an_unknown_list_names_what_can_be_listed(capsys):
    line = one_error_line(capsys, catalog.run(["bogus"]))
    assert line.startswith('error: what: got "bogus"; allowed: one of ') and "'zoo'" in line, line


def test_the_zoo_lists_what_each_policy_is_not_its_name_again(capsys):
    assert catalog.run(["zoo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(
        line.split("  ", 1)[1].strip() != line.split("  ", 1)[0].removeprefix("zoo:") for line in lines
    )
    assert any(" on rack_v0, scenario " in line for line in lines), lines


def test_ctrl_c_during_an_evaluation_leaves_out_as_it_was_and_says_how_far_it_got(tmp_path, capsys, monkeypatch):
    from dcgym.agents.evaluation import runner

    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("older")
    real, calls = runner.run_job, []

    def second_interrupted(job):
        calls.append(job)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(job)

    monkeypatch.setattr(runner, "run_job", second_interrupted)
    args = ["--scenario", "mm16", "--loads", "0.5,0.6", "--tasks", "2000", "--workers", "0", "--out", str(out)]
    assert evaluate.run(args) == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        err
        == f"interrupted after 1 of 2 runs: {out} left as it was (results are written only when every run has finished)"
    )
    assert [p.name for p in out.iterdir()] == ["results.json"] and (out / "results.json").read_text() == "older"
    monkeypatch.setattr(runner, "run_job", real)
    assert evaluate.run(args) == 0
    assert (out / "results.json").read_text() != "older" and not list(out.glob(".partial-*"))
    assert {"results.json", "results.csv", "summary.csv"} <= {p.name for p in out.iterdir()}


def test_an_out_folder_that_cannot_be_made_is_named_with_the_reason(tmp_path, capsys):
    (tmp_path / "a_file").write_text("x")
    line = one_error_line(capsys, evaluate.run(["--out", str(tmp_path / "a_file/sub")]))
    assert (
        line == f'error: --out: got "{tmp_path / "a_file/sub"}"; allowed: a folder that can be made (Not a directory)'
    )


def test_a_timeline_that_would_keep_gigabytes_of_samples_is_refused_with_the_shortest_period(tmp_path, capsys):
    line = one_error_line(capsys, evaluate.run(["--timeline", "0.001", "--out", str(tmp_path)]))
    assert line.startswith("error: sample_period_us (--timeline): got 0.001; allowed: a period of at least "), line
    assert "at most 1,000,000 load samples per run" in line, line


def test_a_colo_run_longer_than_a_day_is_refused_as_its_horizon_is(tmp_path, capsys):
    args = ["--scenario", SCENARIO["colo"], "--tasks", "1000000000000", "--out", str(tmp_path)]
    line = one_error_line(capsys, evaluate.run(args))
    assert line.startswith("error: tasks: got 1000000000000; allowed: seconds of simulated time per run >"), line
    assert "at most 86,400" in line, line


def test_list_policies_shows_every_rack_heuristic_the_engine_runs(capsys):
    from dcgym.envs.rack.dispatch import HEURISTICS

    assert catalog.run(["policies", "--family", "rack"]) == 0
    listed = [line.split("  ", 1)[0] for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert listed == list(HEURISTICS)


@pytest.mark.parametrize("kind", sorted(SCENARIO))
def test_an_evaluation_that_would_take_hours_is_refused_with_its_estimate(tmp_path, capsys, kind):
    # colo's runs are at most a day of simulated time: hours come from many of them
    tasks, seeds = ("86400", "400") if kind == "colo" else ("1000000000000", "1")
    args = ["--scenario", SCENARIO[kind], "--tasks", tasks, "--seeds", seeds, "--workers", "0"]
    line = one_error_line(capsys, evaluate.run([*args, "--out", str(tmp_path)]))
    assert line.startswith(f"error: tasks: got {tasks}; allowed: an evaluation estimated under 2 hours"), line
    assert "would take at least" in line and "(--force)" in line, line


def test_a_colo_timeline_that_would_hold_gigabytes_is_refused_with_its_estimate(tmp_path, capsys):
    args = ["--scenario", SCENARIO["colo"], "--tasks", "86400", "--timeline", "1000", "--workers", "0"]
    line = one_error_line(capsys, evaluate.run([*args, "--out", str(tmp_path)]))
    assert line.startswith("error: timeline: got 1 runs keeping "), line
    assert "estimated under 4 GB, or force (--force)" in line, line


def test_force_lets_a_large_evaluation_through_with_its_estimate():
    from dcgym.agents.evaluation.estimate import MAX_HOURS, check_size
    from dcgym.agents.evaluation.family import family_of

    rack = family_of("rack")
    work = int(2 * MAX_HOURS * 3600 * rack.fastest_rate)  # each run twice the limit on one worker
    with pytest.raises(InvalidConfigError, match="would take at least 12.0 hours on 1 worker"):
        check_size(rack, 3, work, parallel=1)
    hours, _ = check_size(rack, 3, work, parallel=3, force=True)
    assert hours == pytest.approx(2 * MAX_HOURS)


def test_a_training_whose_final_evaluation_would_take_hours_is_refused_before_ray(capsys):
    line = one_error_line(capsys, train.run(["--config", "smoke", "--set", "evaluation.tasks=1000000000000"]))
    assert line.startswith("error: evaluation.tasks: got 1000000000000; allowed: an evaluation estimated under"), line


@pytest.mark.parametrize(
    "policy,family",
    [("zoo:malcolm_homog_exp", "rack"), ("zoo:multilb_centr_lb_sim", "lb"), ("zoo:auto_websearch", "flow")],
)
def test_a_policy_file_without_scenario_is_evaluated_on_its_familys_default(policy, family):
    from dcgym.agents.evaluation.family import family_of
    from dcgym.evaluate import _trained_scenario

    assert _trained_scenario([policy]) == family_of(family).default_scenario


def test_a_folder_of_osml_files_without_scenario_is_evaluated_on_the_colo_default():
    from dcgym.agents.evaluation.family import family_of
    from dcgym.agents.policies.zoo import zoo_dir
    from dcgym.evaluate import _trained_scenario

    assert _trained_scenario([str(zoo_dir() / "osml_colo")]) == family_of("colo").default_scenario


def test_a_policy_file_of_another_family_is_named_as_one(tmp_path, capsys):
    args = ["--scenario", SCENARIO["rack"], "--policy", "zoo:multilb_distr_lb_sim", "--out", str(tmp_path)]
    line = one_error_line(capsys, evaluate.run(args))
    assert line.endswith("allowed: a policy trained on rack_v0; the file's settings say lb_v0"), line


@pytest.mark.parametrize(
    "config,key",
    [("auto_websearch", "actor_lr"), ("auto_lrla_websearch", "lr"), ("malcolm_homog_exp", "lr_actor")],
)
def test_a_hyperparameter_of_the_wrong_type_is_named_before_ray_starts(capsys, config, key):
    # learning systems whose hyperparameters are their RLlib config's training() settings, not a schema
    line = one_error_line(capsys, train.run(["--config", config, "--set", f"hyperparameters.{key}=abc"]))
    assert line.startswith(f'error: hyperparameters.{key}: got "abc"; allowed: a value of type Union[float, '), line


@pytest.mark.parametrize("kind", sorted(SCENARIO))
def test_the_load_axis_has_one_name_per_family(tmp_path, capsys, kind):
    wrong, right = ("--loads", "--mixes") if kind == "colo" else ("--mixes", "--loads")
    line = one_error_line(capsys, evaluate.run(["--scenario", SCENARIO[kind], wrong, "0", "--out", str(tmp_path)]))
    assert line.startswith(f'error: {wrong}: got "0"; allowed: nothing on a {kind} scenario: its axis is '), line
    assert line.endswith(f"({right})"), line
