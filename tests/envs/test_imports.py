"""The environment layer stands alone: importing it (every environment included) loads neither torch nor Ray."""

from __future__ import annotations

import subprocess
import sys

from dcgym.envs.families import known_envs
from dcgym.envs.registration import GYMNASIUM_IDS

HEAVY = ("torch", "ray")


def test_importing_every_environment_loads_neither_torch_nor_ray():
    entry_points = {
        spec[key] for spec in GYMNASIUM_IDS.values() for key in ("entry_point", "vector_entry_point") if key in spec
    }
    registered = sorted({e.partition(":")[0] for e in entry_points})
    modules = ["dcgym.envs", *known_envs().values(), *registered, "dcgym.envs.colo.vector", "dcgym.envs.vector"]
    code = "".join(f"import {m}\n" for m in modules)  # import statements: -X importtime reports what they load
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True)
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert len(imported) > 100 and "dcgym.envs.colo.vector" in imported  # the report is read as intended
    assert [name for name in imported if name.split(".")[0] in HEAVY] == []
