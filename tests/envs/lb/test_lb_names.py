"""The lb family has one name: its engine is LbSim and check_lb_config, with no earlier name beside them."""

from __future__ import annotations

import dcgym.cpp_core as engine
from dcgym.cpp_core import _engine
from dcgym.envs import lb_v0


def test_the_engine_has_the_family_s_names_only():
    assert {"LbSim", "check_lb_config"} <= set(engine.__all__)
    for old in ("MultistageSim", "check_multistage_config"):
        assert not hasattr(engine, old) and not hasattr(_engine, old)


def test_the_env_s_earlier_name_is_the_same_class():
    assert lb_v0.MultiLbEnv is lb_v0.LbEnv
