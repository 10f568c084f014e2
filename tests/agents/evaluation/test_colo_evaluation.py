"""evaluate.py on colo scenarios: schedulers x mixes x seeds, the rows' fields, plots, and one-line refusals."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from dcgym.agents.evaluation import evaluate, write_plots
from dcgym.agents.evaluation.colo import ColoRow, short_labels
from dcgym.agents.policies.sources import Source, classify
from dcgym.envs.error import InvalidConfigError

ROOT = Path(__file__).resolve().parents[3]


def test_schedulers_on_case_a_give_rows_the_row_model_accepts(tmp_path):
    doc = evaluate("osml_case_a", ["oracle", "equal"], tasks=30, seeds=[1, 2], workers=0, progress=False)
    assert doc["family"] == "colo" and doc["seconds"] == 30 and len(doc["results"]) == 4
    rows = {(r["policy"], r["seed"]): r for r in doc["results"]}
    for row in doc["results"]:
        ColoRow.model_validate(row)
        assert row["load"] == 0 and row["services"] == ["moses", "img-dnn", "xapian"]
        assert row["sim_time_s"] == pytest.approx(30.0)
    for seed in (1, 2):
        oracle, equal = rows[("oracle", seed)], rows[("equal", seed)]
        # The Oracle's allocation meets every target within seconds with less than the server (OSML §6.2:
        # OSML itself saves 3 cores and 9 ways on this case); an equal split starves Img-dnn.
        assert oracle["converged"] and oracle["convergence_s"] <= 15 and oracle["emu"] == pytest.approx(1.5)
        assert oracle["cores_used"] <= 34 and oracle["ways_used"] <= 14 and oracle["actions"] == 1
        assert not equal["converged"] and equal["emu"] is None and equal["p99_over_target"]["img-dnn"] > 10
        assert (equal["cores_used"], equal["ways_used"]) == (36, 20)
    cell = {c["policy"]: c for c in doc["summary"]}
    assert cell["oracle"]["converged"]["mean"] == 1.0 and cell["equal"]["converged"]["mean"] == 0.0
    assert cell["oracle"]["convergence_s"]["mean"] <= 15
    assert "convergence_s" not in cell["equal"] and "emu" not in cell["equal"]  # no run converged: no statistic
    assert len(doc["timelines"]) == 2  # the first seed of the first mix, per scheduler
    paths = write_plots(doc, tmp_path)
    assert set(paths) == {"convergence_cdf", "latency", "allocation"} and all(
        p.stat().st_size > 0 for p in paths.values()
    )


def test_same_seed_same_rows():
    a = evaluate("osml_case_a", ["parties"], tasks=20, seed=3, workers=0, progress=False)
    b = evaluate("osml_case_a", ["parties"], tasks=20, seed=3, workers=0, progress=False)
    strip = lambda d: [{k: v for k, v in r.items() if k != "wall_s"} for r in d["results"]]
    assert strip(a) == strip(b)


def test_loads_are_mix_indices():
    doc = evaluate("parties_scaling", ["equal"], loads=[0, 56], tasks=10, workers=0, progress=False)
    assert [r["load"] for r in doc["results"]] == [0, 56]
    assert len(doc["results"][1]["services"]) == 6
    with pytest.raises(InvalidConfigError, match=r"^mix: got 57; allowed: a mix index in \[0, 56\]"):
        evaluate("parties_scaling", ["equal"], loads=[57], tasks=10, workers=0, progress=False)
    with pytest.raises(InvalidConfigError, match=r"^loads.0: got 0.5"):
        evaluate("parties_scaling", ["equal"], loads=[0.5], tasks=10, workers=0, progress=False)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("partie", 'policy: got "partie"; did you mean "parties"?'),
        ("clite:samples=3", "policy.samples: got 3; allowed: a parameter of clite"),
        ("osml:rule=both", 'policy.rule: got "both"; allowed: one of paper, code'),
        ("zoo:malcolm_homog_exp", 'policy: got "zoo:malcolm_homog_exp"; allowed: a zoo folder of policy files'),
        ("malcolm.dcpol", 'policy: got "malcolm.dcpol"; allowed: zoo:NAME of OSML\'s models, osml:files=DIR'),
    ],
)
def test_bad_policies_are_refused_before_any_run(policy, message):
    with pytest.raises(InvalidConfigError) as info:
        evaluate("osml_case_a", [policy], tasks=10, workers=0, progress=False)
    assert str(info.value).startswith(message), str(info.value)


def test_evaluate_cli_end_to_end_and_one_line_errors(tmp_path, cli_here):
    """evaluate.py's command line, run in this process (tests/conftest.py, ``cli_here``)."""
    cli = functools.partial(cli_here, "evaluate.py")
    proc = cli(
        "--scenario", "osml_case_a", "--policy", "oracle", "--policy", "unmanaged", "--tasks", "20", "--workers", "0",
        "--out", "out", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [r["policy"] for r in doc["results"]] == ["oracle", "unmanaged"]
    assert doc["results"][1]["cores_used"] == 36 and not doc["results"][1]["converged"]
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {"results.json", "convergence_cdf.png"}
    for args, message in [
        (("--policy", "parties:variant=both"), 'error: policy.variant: got "both"; allowed: one of paper, code'),
        (("--mixes", "3"), "error: mix: got 3; allowed: a mix index in [0, 0]"),
        (
            ("--loads", "0.5"),
            'error: --loads: got "0.5"; allowed: nothing on a colo scenario: its axis is mix indices (--mixes)',
        ),
        (
            ("--tasks", "4"),
            "error: tasks: got 4; allowed: seconds of simulated time per run > the scenario's hold_s (5) and at "
            "most 86,400 (a day, as horizon_s)",
        ),
    ]:
        proc = cli("--scenario", "osml_case_a", "--workers", "0", "--out", "bad", *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [message.strip()], proc.stderr


def test_a_policy_whose_parameters_name_policy_files_is_that_policy_not_a_file():
    for spec in ("osml:files=zoo/osml_colo,model_c=/tmp/c.dcpol", "osml:model_c=/tmp/c.dcpol"):
        assert classify(spec).source is Source.HEURISTIC, spec
    assert classify("zoo/osml_colo/model_c.dcpol:reclaim=code").source is Source.POLICY_FILE


def test_short_labels_drop_shared_parameters_and_cut_paths():
    specs = [
        "osml:models=/tmp/m,model_c=/tmp/osml_mc_single",
        "osml:models=/tmp/m,model_c=/tmp/osml_mc_mixes/,reclaim=code",
        "parties",
        "oracle:search=greedy",
    ]
    assert short_labels(specs) == {
        specs[0]: "osml:model_c=osml_mc_single",
        specs[1]: "osml:model_c=osml_mc_mixes,reclaim=code",
        "parties": "parties",
        "oracle:search=greedy": "oracle:search=greedy",  # the only oracle: its parameter stays
    }
    # two specs that differ only in a path's folder would read the same: they keep their full specs
    same = ["osml:model_c=/a/mc", "osml:model_c=/b/mc"]
    assert short_labels(same) == {s: s for s in same}
