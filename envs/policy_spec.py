"""The one grammar policies are named with on a command line and in scenario files: ``NAME:key=value,...``.

Every family names its heuristics this way (``po_d:d=3,replace=false``,
``qsjf:thresholds=pias_ws``, ``parties:variant=code``), and a policy file
takes options the same way (``zoo:NAME:heartbeat_us=50``). This module
splits such a text into the name and its options; what a name and each
option may be is the family's to check (its registry and parameter models),
and each caller says which error a malformed text raises, so every message
names the field, the value and what is allowed as the family's did::

    name, options = parse_spec("po_d:d=3", malformed)     # ("po_d", {"d": "3"})
    split_spec("zoo:lb_x:heartbeat_us=50", file=True)     # ("zoo:lb_x", "heartbeat_us=50")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["parse_options", "parse_spec", "scalar", "show_option", "spec_label", "split_spec"]


def split_spec(text: str, *, file: bool = False) -> tuple[str, str]:
    """``NAME:OPTIONS`` -> (NAME, OPTIONS), both stripped; OPTIONS is "" when there is no colon.

    A policy file's name may itself hold colons (``zoo:NAME``, a Windows path), so with ``file`` the options
    are what follows the last colon, and only if that holds ``=`` and no path separator.
    """
    if file:
        head, sep, tail = text.rpartition(":")
        if sep and "=" in tail and "/" not in tail and "\\" not in tail:
            return head, tail
        return text, ""
    name, _, rest = text.partition(":")
    return name.strip(), rest


def parse_options(text: str, error: Callable[[str], Exception], *, distinct: bool = True) -> dict[str, str]:
    """``key=value,key=value`` -> {key: value} (stripped text, in the order written; empty items skipped).

    An item without ``=`` or without a key (and, with ``distinct``, a key given twice; otherwise the last one
    holds) raises ``error(item)``.
    """
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = (s.strip() for s in item.partition("="))
        if not (key and eq) or (distinct and key in options):
            raise error(item)
        options[key] = value
    return options


def parse_spec(text: str, error: Callable[[str], Exception], *, distinct: bool = True) -> tuple[str, dict[str, str]]:
    """``NAME:key=value,...`` -> (NAME, its options as text); a malformed option raises ``error(item)``."""
    name, rest = split_spec(text)
    return name, parse_options(rest, error, distinct=distinct)


def scalar(text: str) -> Any:
    """An option's value as written on a command line: an integer, a number, true/false, or the text itself."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def show_option(value: Any) -> str:
    """An option's value the way the grammar writes it: ``false``, ``1e+06``, ``4194304``, a list as ``4;4;1;1``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):  # the shortest of %g's forms that reads back as the value (a label is exact)
        return next((t for t in (f"{value:.{p}g}" for p in range(6, 18)) if float(t) == value), repr(value))
    if isinstance(value, (list, tuple)):
        return ";".join(show_option(v) for v in value)
    return str(value)


def spec_label(name: str, options: Mapping[str, Any]) -> str:
    """The text that names a policy with its options: ``po_d:d=3,replace=false`` (``name`` alone without any)."""
    return name + (":" + ",".join(f"{k}={show_option(v)}" for k, v in options.items()) if options else "")
