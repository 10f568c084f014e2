"""Package attributes imported on first use (PEP 562), so that importing a learning system's package stays light.

The registry imports every learning system's ``system.py``, which runs the package's ``__init__`` first; an
``__init__`` that re-exports the learner's classes eagerly would load Ray and torch for ``train.py --help``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``name`` from its submodule ``exports[name]``."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    return __getattr__
