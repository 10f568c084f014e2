"""Policy export: trained policies as self-contained policy files for the C++ runtime, and the policy zoo.

    dcgym-export runs/<run>/ --out malcolm.dcpol

:func:`export_policy` writes the policy file of a checkpoint or run folder
(:mod:`~dcgym.agents.export.exporter`); :mod:`dcgym.agents.policy_format`
writes and reads the format itself (docs/policy_format.md), its names are
re-exported here. The C++ side is ``cpp_core/include/dcgym/runtime/policy_file.hpp``,
bound to Python as ``dcgym.cpp_core.RuntimePolicy``. :mod:`~dcgym.agents.export.zoo`
builds zoo entries (``benchmarks/build_zoo.py``) and
:mod:`~dcgym.agents.export.osml_policies` OSML's folder of three models.
"""

from dcgym.agents.export.exporter import demo_policy, export_policy, policy_from_checkpoint
from dcgym.agents.policy_format import (
    InputSpec,
    Layer,
    LinearPairPolicy,
    LinearValuePolicy,
    MlpPolicy,
    from_bytes,
    read_policy,
    to_bytes,
    write_policy,
)

__all__ = [
    "InputSpec",
    "Layer",
    "LinearPairPolicy",
    "LinearValuePolicy",
    "MlpPolicy",
    "demo_policy",
    "export_policy",
    "from_bytes",
    "policy_from_checkpoint",
    "read_policy",
    "to_bytes",
    "write_policy",
]
