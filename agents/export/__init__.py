"""Policy export: trained policies as self-contained policy files for the C++ runtime.

    python -m dcgym.agents.export runs/<run>/ --out malcolm.dcpol

:func:`export_policy` writes the policy file of a checkpoint or run folder
(:mod:`~dcgym.agents.export.exporter`); :mod:`~dcgym.agents.export.format`
writes and reads the format itself (docs/policy_format.md). The C++ side is
``cpp_core/include/dcgym/runtime/policy_file.hpp``, bound to Python as
``dcgym.cpp_core._engine.RuntimePolicy``.
:mod:`~dcgym.agents.export.in_engine` evaluates Malcolm's policy files inside
the engine (``evaluate.py --policy FILE``) and :mod:`~dcgym.agents.export.zoo`
keeps the policy zoo (``--policy zoo:NAME``, ``benchmarks/build_zoo.py``).
"""

from dcgym.agents.export.exporter import (
    demo_policy,
    export_policy,
    linear_pair_from_modules,
    mlp_from_modules,
    policy_from_checkpoint,
)
from dcgym.agents.export.format import (
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
    "linear_pair_from_modules",
    "mlp_from_modules",
    "policy_from_checkpoint",
    "read_policy",
    "to_bytes",
    "write_policy",
]
