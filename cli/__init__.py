"""dcgym: a reinforcement-learning gym and benchmark for datacenter scheduling.

This package holds the command-line fronts; the library is in the subpackages:

| import | what |
|---|---|
| ``dcgym.envs`` | scenario files and the environments, one folder per family |
| ``dcgym.agents`` | heuristics, learning systems, training, evaluation, export |
| ``dcgym.cpp_core`` | the C++ engine (pybind11) |

Commands (installed by ``pip install``, or ``python -m dcgym COMMAND``): ``dcgym-train``, ``dcgym-sweep``,
``dcgym-evaluate``, ``dcgym-export`` and ``dcgym list``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dcgym")
except PackageNotFoundError:  # pragma: no cover - running from sources that were never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
