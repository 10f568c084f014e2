"""Where a policy comes from: one interface over every source a policy spec can name.

A spec (``evaluate.py --policy``, an experiment's heuristics) is a heuristic the scenario's family knows
(``po2``, ``jbt:threshold=30``, ``ecmp``, a mapping), a checkpoint or run folder written by ``train.py``
(:mod:`.checkpoints`: acts through its environment), or a policy file: ``FILE.dcpol`` or ``zoo:NAME``
(:mod:`.zoo`), run by the C++ runtime, with options after a last ``:`` for what the file does not store.
:func:`classify` tells which; each family's evaluation then asks the family's module here how that source
acts on its engine (:mod:`.rack`, :mod:`.lb`, :mod:`.flow`, :mod:`.colo`).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcgym.agents.policies.checkpoints import CHECKPOINTS_DIR, META_FILE
from dcgym.agents.policies.zoo import SUFFIX, ZOO_PREFIX
from dcgym.envs.policy_spec import split_spec

__all__ = ["Source", "Spec", "classify", "is_checkpoint_spec", "is_policy_file_spec"]


class Source(enum.Enum):
    """Where a policy comes from."""

    HEURISTIC = "heuristic"  # a name the family's engine or heuristics know: po2, jsq, ecmp, ...
    CHECKPOINT = "checkpoint"  # a checkpoint or run folder written by train.py, run through its environment
    POLICY_FILE = "policy file"  # an exported policy (FILE.dcpol or zoo:NAME), run inside the engine


@dataclass(frozen=True)
class Spec:
    """A policy spec as the user gave it, with its source."""

    given: Any
    source: Source


def classify(spec: Any) -> Spec:
    """The source of a policy spec: a policy file (``zoo:NAME``, ``*.dcpol``, a path to a file), a checkpoint or
    run folder (a path to a folder, or a name of one), else a heuristic (a name, a mapping or a parsed policy)."""
    if isinstance(spec, (str, Path)) and is_policy_file_spec(spec):
        return Spec(spec, Source.POLICY_FILE)
    if isinstance(spec, (str, Path)) and is_checkpoint_spec(spec):
        return Spec(spec, Source.CHECKPOINT)
    return Spec(spec, Source.HEURISTIC)


_PARAMETERIZED = re.compile(r"^[A-Za-z_][\w-]*:[A-Za-z_]\w*=")


def is_checkpoint_spec(spec: Any) -> bool:
    """Whether a policy spec names a checkpoint or run folder (a path) rather than a heuristic."""
    if isinstance(spec, Path):
        return True
    if not isinstance(spec, str):
        return False
    path = Path(spec)
    if _PARAMETERIZED.match(spec) and not path.exists():
        return False  # a policy with parameters whose values are paths: osml:models=/tmp/m,model_c=/tmp/c
    return "/" in spec or "\\" in spec or (path / META_FILE).is_file() or (path / CHECKPOINTS_DIR).is_dir()


def is_policy_file_spec(spec: Any) -> bool:
    """Whether a policy spec names a policy file: ``zoo:NAME``, a path ending in ``.dcpol``, or a path (with a
    folder separator) to a file; options after a last ``:`` (``FILE:heartbeat_us=50``) allowed; or several of
    them joined by ``+`` (AuTO's two agents, ``srla.dcpol+zoo:NAME``)."""
    if isinstance(spec, Path):
        return spec.suffix == SUFFIX or spec.is_file()
    if not isinstance(spec, str):
        return False
    if "+" in spec and not Path(spec).exists():  # AuTO's two agents' files joined: FILE.dcpol+zoo:NAME, ...
        return all(part and is_policy_file_spec(part) for part in spec.split("+"))
    if _PARAMETERIZED.match(spec) and not Path(spec).exists():
        return False  # a policy with parameters whose values are files: osml:files=DIR,model_c=C.dcpol
    path, _ = split_spec(spec, file=True)
    if path.startswith(ZOO_PREFIX):
        return True
    return path.endswith(SUFFIX) or (("/" in path or "\\" in path) and Path(path).is_file())
