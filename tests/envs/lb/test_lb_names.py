"""The lb family has one name; its earlier names still import, as the same objects."""

from __future__ import annotations

import dcgym.cpp_core as engine
from dcgym.envs import lb_v0


def test_earlier_names_are_the_same_objects():
    assert engine.MultistageSim is engine.LbSim
    assert engine.check_multistage_config is engine.check_lb_config
    assert lb_v0.MultiLbEnv is lb_v0.LbEnv


def test_the_public_names_are_the_family_s():
    assert "LbSim" in engine.__all__ and "check_lb_config" in engine.__all__
    assert "MultistageSim" not in engine.__all__
