"""The policy zoo, read: exported policies of finished training runs, by name (``zoo/``, zoo/README.md).

Each policy is ``NAME.dcpol`` (a policy file, docs/policy_format.md) beside ``NAME.md`` (its card: provenance,
its training run's evaluation table and the command that evaluates it). ``evaluate.py --policy zoo:NAME``
evaluates ``NAME.dcpol``. A scheduler made of several models is a folder ``NAME/`` of policy files beside its
``NAME.md``: OSML's Models A, B and C, which ``zoo:NAME`` runs on any colo scenario (:func:`resolve_zoo` with
``entry="folder"``).

The zoo folder is ``$DCGYM_ZOO`` when set, else the ``zoo/`` folder beside the ``dcgym`` sources: the
repository's top-level ``zoo/`` in a checkout or an editable install, and ``dcgym/zoo/`` in an installed wheel
that ships it. :mod:`dcgym.agents.export.zoo` writes entries.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dcgym.envs.error import InvalidConfigError, did_you_mean

__all__ = [
    "ENTRIES",
    "ENTRY_NAME",
    "SUFFIX",
    "ZOO_ENV",
    "ZOO_PREFIX",
    "list_zoo",
    "resolve_zoo",
    "trained_on",
    "zoo_dir",
]

ZOO_ENV = "DCGYM_ZOO"
"""Environment variable naming another zoo folder (tests, private zoos)."""
ZOO_PREFIX = "zoo:"
"""A policy spec ``zoo:NAME`` names the zoo's ``NAME.dcpol``."""
SUFFIX = ".dcpol"
"""The policy files' suffix."""

ENTRY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""What a zoo entry's name may be: 1 to 128 letters, digits, ``_``, ``-`` and ``.``."""


def zoo_dir(folder: str | Path | None = None) -> Path:
    """The zoo folder: ``folder`` if given, else ``$DCGYM_ZOO``, else the ``zoo/`` beside the dcgym sources."""
    if folder is not None:
        return Path(folder)
    if os.environ.get(ZOO_ENV):
        return Path(os.environ[ZOO_ENV])
    # This file is <repo>/agents/policies/zoo.py in a checkout or an editable install (agents/ -> dcgym.agents),
    # <site-packages>/dcgym/agents/policies/zoo.py in a wheel, which ships the zoo as dcgym/zoo.
    return Path(__file__).resolve().parents[2] / "zoo"


ENTRIES = ("file", "folder")
"""The zoo's two kinds of entry: a policy file ``NAME.dcpol``, or a folder ``NAME/`` of policy files."""


def list_zoo(folder: str | Path | None = None, entry: str = "file") -> list[str]:
    """The names of the zoo's policies, sorted: ``NAME.dcpol`` files (``entry="file"``) or ``NAME/`` folders holding
    policy files (``entry="folder"``: OSML's models); empty if there is no zoo folder."""
    where = zoo_dir(folder)
    if not where.is_dir():
        return []
    if entry == "folder":
        return sorted(p.name for p in where.iterdir() if p.is_dir() and any(p.glob(f"*{SUFFIX}")))
    return sorted(p.name.removesuffix(SUFFIX) for p in where.iterdir() if p.name.endswith(SUFFIX) and p.is_file())


def trained_on(name: str, folder: str | Path | None = None) -> str | None:
    """The scenario a zoo entry was trained on: the one its card's evaluate command names (``--scenario X``); None
    without a card or without one there."""
    card = zoo_dir(folder) / f"{name}.md"
    found = re.search(r"--scenario (\S+)", card.read_text(encoding="utf-8")) if card.is_file() else None
    return found.group(1) if found else None


def resolve_zoo(spec: str, folder: str | Path | None = None, entry: str = "file") -> Path:
    """The file of ``zoo:NAME`` (or ``NAME``), or with ``entry="folder"`` its folder of policy files;
    InvalidConfigError naming ``policy``, with the available names and a did-you-mean suggestion, if the zoo has
    no such policy."""
    name = spec.removeprefix(ZOO_PREFIX)
    where = zoo_dir(folder)
    path = where / (name if entry == "folder" else f"{name}{SUFFIX}")
    if (
        ENTRY_NAME.fullmatch(name)
        and name not in (".", "..")
        and (path.is_dir() if entry == "folder" else path.is_file())
    ):
        return path
    known = list_zoo(folder, entry)
    what = "a zoo folder of policy files" if entry == "folder" else "a zoo policy"
    allowed = (
        f"{what}, one of " + ", ".join(ZOO_PREFIX + k for k in known) if known else f"{what}, but the zoo has none"
    )
    suggestion = did_you_mean(name, known)
    raise InvalidConfigError(
        "policy",
        spec,
        f"{allowed} (zoo folder {where}; ${ZOO_ENV} sets another)",
        suggestion=None if suggestion is None else ZOO_PREFIX + suggestion,
    )
