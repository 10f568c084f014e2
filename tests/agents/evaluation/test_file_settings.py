"""Policy files carry the settings they were trained under (docs/policy_format.md, "Settings").

Every zoo entry gives the same rows from its file by path, by ``zoo:NAME`` and by its card's command; a spec
that contradicts a file's settings is refused in one line naming both values; a file written before format
version 3 acts with its environment's defaults or the spec's options. Runs are short (a few hundred flows or
tasks): rows must be identical, bit for bit, whatever their length.
"""

from __future__ import annotations

import re
import struct

import pytest

from dcgym.agents.evaluation import evaluate
from dcgym.agents.osml.files import SCHEDULER_SETTINGS
from dcgym.agents.policies.file_settings import ENV_SETTINGS, resolve
from dcgym.agents.policies.zoo import list_zoo, zoo_dir
from dcgym.agents.policy_format import read_policy, to_bytes
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import load_scenario

ENTRIES = [(name, "file") for name in list_zoo()] + [(name, "folder") for name in list_zoo(entry="folder")]
WORK = {"rack": 3000, "lb": 300, "flow": 300, "colo": 20}  # short runs: tasks, flows, flows, seconds


def card_command(name: str) -> tuple[str, str]:
    """The ``--policy`` spec and ``--scenario`` of the card's evaluate command."""
    card = (zoo_dir() / f"{name}.md").read_text(encoding="utf-8")
    found = re.search(rf"`python evaluate\.py --scenario (\S+) --policy (zoo:{re.escape(name)}\S*?) ", card)
    if found:
        return found.group(2), found.group(1)
    found = re.search(rf"`python evaluate\.py --policy (zoo:{re.escape(name)}\S*) --scenario (\S+?)[ `]", card)
    assert found, f"{name}: no evaluate command in its card"
    return found.group(1), found.group(2)


def rows(scenario: str, spec: str) -> list[dict]:
    """The result rows of ``spec`` at the scenario's first load (first mix), without the policy's label and the
    wall-clock time."""
    loaded = load_scenario(scenario)
    doc = evaluate(loaded, [spec], [loaded.loads[0]], tasks=WORK[loaded.kind], workers=0, progress=False)
    return [{k: v for k, v in row.items() if k not in ("policy", "wall_s")} for row in doc["results"]]


@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[n for n, _ in ENTRIES])
def test_every_zoo_entry_gives_the_same_rows_by_path_by_name_and_by_its_card(name, entry):
    card_spec, scenario = card_command(name)
    assert card_spec == f"zoo:{name}", f"{name}: the card's command needs no options (the file records them)"
    path = zoo_dir() / name
    by_path = f"osml:files={path}" if entry == "folder" else f"{path}.dcpol"
    expected = rows(scenario, f"zoo:{name}")
    assert rows(scenario, by_path) == expected, name


def test_every_zoo_file_records_its_training_environment():
    for name, entry in ENTRIES:
        files = sorted((zoo_dir() / name).glob("*.dcpol")) if entry == "folder" else [zoo_dir() / f"{name}.dcpol"]
        for f in files:
            settings = read_policy(f).settings
            if entry == "folder":  # Model-C's file may also record the scheduler's parameters the entry runs with
                assert settings["model"] == f.stem and set(settings) <= {"model", *SCHEDULER_SETTINGS}, f
            else:
                assert set(settings) == {"env", *ENV_SETTINGS[settings["env"]]}, f


def test_a_spec_that_contradicts_the_file_is_refused_in_one_line_naming_both():
    with pytest.raises(InvalidConfigError) as info:
        evaluate("lb_sim", ["zoo:multilb_distr_lb_sim:dispatch=weights"], tasks=300, workers=0, progress=False)
    message = str(info.value)
    assert len(message.splitlines()) == 1 and 'got "weights"' in message and "allowed: sed, the dispatch" in message
    with pytest.raises(InvalidConfigError, match=r'option heartbeat_us: got "50"; allowed: 100, the heartbeat_us'):
        evaluate("malcolm_homog_exp", ["zoo:malcolm_homog_exp:heartbeat_us=50"], tasks=1000, workers=0, progress=False)
    # agreeing with the file is no contradiction (100 = 100.0)
    assert resolve("x", "rack_v0", {"heartbeat_us": "100"}, "heartbeat_us=100.0")["heartbeat_us"] == 100


def test_a_file_without_settings_acts_with_the_defaults_or_the_options(tmp_path):
    policy = read_policy(zoo_dir() / "multilb_distr_lb_sim.dcpol")
    policy.settings = {}
    old = tmp_path / "old.dcpol"
    old.write_bytes(to_bytes(policy))
    assert struct.unpack_from("<I", old.read_bytes(), 8)[0] == 1  # as written before format version 3
    assert resolve(str(old), ("lb_v0", "lb_central_v0"), {}, "") == {"dispatch": "weights"}
    sed = rows("lb_sim", f"{old}:dispatch=sed")
    assert sed == rows("lb_sim", "zoo:multilb_distr_lb_sim")
    assert rows("lb_sim", str(old)) != sed  # lb_v0's default, weights: not how it was trained
    with pytest.raises(InvalidConfigError, match="a policy trained on rack_v0; the file's settings say lb_v0"):
        resolve("x", "rack_v0", {"env": "lb_v0"}, "")


def test_an_osml_file_whose_settings_name_another_model_is_refused(tmp_path):
    import shutil

    from dcgym.agents.osml.files import load_files
    from dcgym.agents.policy_format import write_policy

    folder = tmp_path / "osml"
    shutil.copytree(zoo_dir() / "osml_colo", folder)
    policy = read_policy(folder / "model_c.dcpol")
    policy.settings = {"model": "model_a"}
    write_policy(policy, folder / "model_c.dcpol")
    with pytest.raises(InvalidConfigError, match="model_c.dcpol is OSML's model_c; its settings say model=model_a"):
        load_files(folder)
